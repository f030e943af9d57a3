//! The settings of LitGPT, torchtune, DeepSpeed ZeRO and PyTorch FSDP (docs/frameworks/), under the framework
//! picked in `framework.rs`.

use egui::Ui;

use crate::scenario::{
    Implementation, LossCall, MoeDispatcher, Profile, ReduceDtype, RopeCache, Scenario, Sharding,
};
use crate::ui::widgets::{
    Choice, choice, count_slider, documented, documented_real, int_slider, opt, toggle,
};

const DISPATCHERS: [Choice<MoeDispatcher>; 2] = [
    opt(
        MoeDispatcher::AllGather,
        "All-gather",
        "allgather, Megatron's default: each rank gathers its TP × EP group's tokens into the \
         persistent global buffer and keeps a routing map over all of them.",
    ),
    opt(
        MoeDispatcher::AllToAll,
        "All-to-all",
        "alltoall, what most expert-parallel runs choose: each rank sends its own routed rows \
         to their experts' ranks; no global buffer, the router's weights and map of its own \
         tokens kept.",
    ),
];

const SHARDING: [Choice<Sharding>; 4] = [
    opt(
        Sharding::Generic,
        "ZeRO paper",
        "States divided by the data-parallel degree, no buffers of an implementation.",
    ),
    opt(
        Sharding::DeepSpeed,
        "DeepSpeed ZeRO",
        "DeepSpeed 0.19.8: FP32 master partition even for FP32 models, reduce buckets \
         (5e8 elements by default), stage 3's persistent bucket and gradient partition.",
    ),
    opt(
        Sharding::Fsdp1,
        "PyTorch FSDP1",
        "FullyShardedDataParallel (torch 2.15) under ZeRO-3: one block unsharded at a time plus \
         the prefetched next, the root kept through backward, one block's reduce-scatter; \
         NO_SHARD at one rank.",
    ),
    opt(
        Sharding::Fsdp2,
        "PyTorch FSDP2",
        "fully_shard (torch 2.15) under ZeRO-3: FSDP1's units plus one held all-gather buffer; \
         unsharded copies even at one rank.",
    ),
];

const ROPE_CACHE: [Choice<RopeCache>; 2] = [
    opt(
        RopeCache::PerLoraAttention,
        "One per LoRA layer",
        "Llama 2 / Llama 3 / Mistral / Qwen2 / Gemma / Phi-3 builders: every LoRA attention builds \
         its own FP32 cache of max_positions × head dim (one per model without LoRA).",
    ),
    opt(
        RopeCache::Shared,
        "One shared",
        "Llama 3.1 / 3.2 / 3.3 builders: one Llama3ScaledRoPE for every layer.",
    ),
];

const REDUCE: [Choice<ReduceDtype>; 3] = [
    opt(
        ReduceDtype::Default,
        "Default (None)",
        "FSDP1: the compute type; FSDP2 (torch 2.15): the sharded parameters' type.",
    ),
    opt(
        ReduceDtype::Compute,
        "Compute type",
        "reduce_dtype=bfloat16 (FSDP2 before torch 2.15).",
    ),
    opt(
        ReduceDtype::Fp32,
        "FP32",
        "reduce_dtype=float32 (torchtitan).",
    ),
];

const LOSS_CALL: [Choice<LossCall>; 3] = [
    opt(
        LossCall::Auto,
        "Auto (profile)",
        "torchtune, LitGPT and post-training (DPO, GRPO, PPO): after the forward; Hugging Face \
         and Megatron: inside it.",
    ),
    opt(
        LossCall::InModelForward,
        "Inside the forward",
        "model(input_ids, labels=...) computes the loss (Hugging Face Trainer).",
    ),
    opt(
        LossCall::AfterModelForward,
        "After the forward",
        "The model returns logits; the loop computes the loss (torchtune, torchtitan, LitGPT).",
    ),
];

/// The selected stack profile's settings and the ZeRO implementation (the profile itself is
/// picked in `framework.rs`).
pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let moe_training = s.model.moe.experts > 0 && s.mode == crate::scenario::Mode::Training;
    let i = &mut s.implementation;
    match i.profile {
        Profile::LitGpt => {
            int_slider(
                ui,
                &mut i.litgpt.lm_head_chunk_tokens,
                documented("implementation.litgpt.lm_head_chunk_tokens", 0..=4096),
                false,
                "LM-head chunk",
                "tokens",
                "lm_head_chunk_size of fit() (128); 0 = one logits tensor.",
            );
        }
        Profile::Torchtune => torchtune(ui, &mut i.torchtune),
        Profile::HuggingFace => {
            toggle(
                ui,
                &mut i.loss_parallel,
                "DTensor loss parallel",
                "PyTorch's loss_parallel() under tensor parallelism (torchtitan's default): the \
             logits stay sharded over the vocabulary; its decomposed log-softmax holds 14 B per \
             BF16 logit in forward and 16 in the loss backward (measured on CPU). Read with TP > 1.",
            );
        }
        Profile::Megatron => megatron(ui, i, moe_training),
    }
    if s.mode == crate::scenario::Mode::Inference {
        toggle(
            ui,
            &mut i.auto_tp,
            "DeepSpeed AutoTP",
            "init_inference with a TP size, no kernel injection (v0.8.2): TP slices only the \
             blocks' linears; the embeddings and the head stay whole on every GPU, and every GPU \
             computes all the logits. Read with TP > 1.",
        );
    }
    choice(
        ui,
        &mut i.sharding,
        &SHARDING,
        "ZeRO implementation",
        "Whose code shards the model states when a ZeRO stage is on.",
    );
    if i.sharding == Sharding::DeepSpeed {
        deepspeed(ui, &mut i.deepspeed);
    }
    if matches!(i.sharding, Sharding::Fsdp1 | Sharding::Fsdp2) {
        fsdp(ui, &mut i.fsdp, i.sharding == Sharding::Fsdp2);
    }
}

/// Megatron-Core's own layers, and the MoE token dispatcher of a mixture of experts in training
/// (the only case it is read).
fn megatron(ui: &mut Ui, i: &mut Implementation, moe_training: bool) {
    toggle(
        ui,
        &mut i.megatron_local_layers,
        "Megatron's own layers",
        "--transformer-impl local instead of Transformer Engine: attention is Megatron's \
         DotProductAttention (materialised scores), whose score input and the \
         sequence-parallel linears' gathered input live in its persistent global buffer.",
    );
    toggle(
        ui,
        &mut i.megatron_grad_reduce_in_bf16,
        "Reduce gradients in BF16",
        "--grad-reduce-in-bf16. Off (Megatron's default under --bf16): the gradients accumulate \
         in an FP32 main_grad buffer and reduce in FP32, 4 bytes a parameter. Read with BF16 \
         master-weight training under ZeRO none or 1 (Megatron-FSDP, ZeRO 2 and 3, keeps the \
         parameters' type). On: 2-byte gradients, and the optimizer step makes an FP32 copy \
         of them (4 bytes a parameter of the shard).",
    );
    if moe_training {
        choice(
            ui,
            &mut i.megatron_moe_dispatcher,
            &DISPATCHERS,
            "MoE token dispatcher",
            "--moe-token-dispatcher-type: what each mixture-of-experts layer keeps beside its \
             experts (measured with Megatron-Core 0.16.1's own MoELayer).",
        );
    }
}

/// FSDP's options (`implementation.fsdp`).
fn fsdp(ui: &mut Ui, f: &mut crate::scenario::Fsdp, fsdp2: bool) {
    toggle(
        ui,
        &mut f.reshard_after_forward,
        "Reshard after forward",
        "FULL_SHARD / reshard_after_forward=True (default). Off: SHARD_GRAD_OP, every block \
         stays unsharded from its forward to its backward.",
    );
    choice(
        ui,
        &mut f.reduce_dtype,
        &REDUCE,
        "Reduce dtype",
        "MixedPrecision reduce_dtype: the type of one block's reduce-scatter.",
    );
    toggle(
        ui,
        &mut f.custom_sharded_layers,
        "Embedding and head sharded separately",
        "torchtune custom_sharded_layers ['tok_embeddings', 'output']: their own FSDP units \
         (untied embeddings), unsharded only around their forward and backward with reshard \
         after forward; without it FSDP2 holds the head's all-gather output at the loss \
         (measured on CPU).",
    );
    choice(
        ui,
        &mut f.loss,
        &LOSS_CALL,
        "Loss computed",
        "Where the training loop computes the loss: inside the model's forward (Hugging Face \
         Trainer) or after it (torchtune, torchtitan, LitGPT). After it FSDP has freed its \
         held all-gather output at the loss and prefetches nothing in the loss's backward \
         (measured on CPU). Auto follows the implementation profile.",
    );
    // FSDP1 never reshards its root; without resharding nothing is.
    if fsdp2 && f.reshard_after_forward {
        toggle(
            ui,
            &mut f.root_reshard_after_forward,
            "Root resharded after forward",
            "torch ≥ 2.8: the root's fully_shard given reshard_after_forward=True explicitly \
             (torchtune's shard_model does; accelerate does not) shards the embedding and head \
             again when the model's forward returns; up to torch 2.7 the root stays unsharded. \
             Frees them at a loss computed after the forward; the backward all-gathers them \
             again, which can raise its peak.",
        );
    }
}

/// `implementation.deepspeed`'s switches (docs/frameworks/deepspeed.md).
fn deepspeed(ui: &mut Ui, d: &mut crate::scenario::DeepSpeedZero) {
    toggle(
        ui,
        &mut d.overlap_comm,
        "overlap_comm",
        "A second reduce bucket in stages 1–2.",
    );
    toggle(
        ui,
        &mut d.bf16_master_weights_and_grads,
        "bf16_master_weights_and_grads",
        "DeepSpeed ≥ 0.18.4: the master partition and the step's gradient cast in BF16 (stage 3 \
         copies even BF16 weights into it).",
    );
    toggle(
        ui,
        &mut d.bf16_optimizer_states,
        "bf16_optimizer_states",
        "DeepSpeed ≥ 0.18.4: the optimizer states in BF16 (needs \
         bf16_master_weights_and_grads).",
    );
    for (value, label, field, hover) in [
        (
            &mut d.stage3_max_reuse_distance,
            "stage3_max_reuse_distance",
            "implementation.deepspeed.stage3_max_reuse_distance",
            "Stage 3 keeps a parameter gathered from its forward to its backward when less than \
             half this many elements of parameters are used in between (the head, and the last \
             blocks of a model under 5e8 parameters: all of them; measured).",
        ),
        (
            &mut d.stage3_prefetch_bucket_size,
            "stage3_prefetch_bucket_size",
            "implementation.deepspeed.stage3_prefetch_bucket_size",
            "Stage 3 all-gathers the next parameters up to this many elements ahead of use \
             (at least one whole parameter).",
        ),
        (
            &mut d.stage3_max_live_parameters,
            "stage3_max_live_parameters",
            "implementation.deepspeed.stage3_max_live_parameters",
            "The prefetch stops where the gathered parameters would pass this many elements.",
        ),
        (
            &mut d.stage3_param_persistence_threshold,
            "stage3_param_persistence_threshold",
            "implementation.deepspeed.stage3_param_persistence_threshold",
            "Parameters this small are whole on every rank and never gathered (norms, biases).",
        ),
    ] {
        let range = documented_real(field, 0.0..=1e12);
        count_slider(ui, value, range, label, "elements", hover);
    }
}

/// torchtune's settings (`implementation.torchtune`).
fn torchtune(ui: &mut Ui, t: &mut crate::scenario::Torchtune) {
    int_slider(
        ui,
        &mut t.output_chunks,
        documented("implementation.torchtune.output_chunks", 1..=64),
        false,
        "Output chunks",
        "",
        "CEWithChunkedOutputLoss num_output_chunks (8).",
    );
    toggle(
        ui,
        &mut t.activation_offloading,
        "Activation offloading",
        "Saved tensors go to pinned CPU memory; one layer's stay on the GPU (derived).",
    );
    toggle(
        ui,
        &mut t.compile,
        "Compile (torchtune)",
        "compile=True: the loss keeps the logits chunks instead of an FP32 log-softmax \
         (measured on CPU); the compiled layers follow the eager rules (not measured).",
    );
    choice(
        ui,
        &mut t.rope_cache,
        &ROPE_CACHE,
        "RoPE cache",
        "Where the model's builder puts the RoPE cache (torchtune 0.6.1 builders); its \
         length is the model's max positions.",
    );
    toggle(
        ui,
        &mut t.legacy_loss,
        "torchtune 0.1 loss",
        "April 2024's recipes: FP32 logits from the model, a shifted copy kept through backward \
         and the optimizer step, one unchunked cross-entropy (derived from ff594c231).",
    );
    toggle(
        ui,
        &mut t.legacy_rms_norm,
        "RMSNorm before 0.5",
        "torchtune up to 0.4.0 (main before 25 Nov 2024) cast the normalised x back to the \
         model's type before the scale (#2054 switched to F.rms_norm, which keeps it in FP32 for \
         the scale's gradient: measured). Implied by the 0.1 loss.",
    );
    toggle(
        ui,
        &mut t.optimizer_in_backward,
        "Optimizer in backward",
        "Each parameter steps from its gradient hook: one gradient alive at a time \
         (measured on CPU).",
    );
}
