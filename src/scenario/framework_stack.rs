//! Settings of the training frameworks of issue 12's "stack" lane: LitGPT, torchtune, DeepSpeed
//! ZeRO. Each is read only when `implementation.profile` (or the ZeRO stage) selects it; the rules
//! they feed are in `estimator/memory/frameworks/`, derived in docs/frameworks/<name>.md.

use serde::{Deserialize, Serialize};

/// LitGPT's fine-tuning step (litgpt 0.5.13, `litgpt/finetune/{full,lora}.py` `fit()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LitGpt {
    /// Tokens per LM-head chunk: `model(input_ids, lm_head_chunk_size=128)` returns a list of logit
    /// chunks and `chunked_cross_entropy` takes one log-softmax per chunk (`litgpt/utils.py`). 0 =
    /// one unchunked logits tensor (`lm_head_chunk_size=0`). Valid: 0 ..= 1,048,576.
    pub lm_head_chunk_tokens: u32,
}

impl Default for LitGpt {
    /// 128, what `fit()` passes.
    fn default() -> Self {
        LitGpt {
            lm_head_chunk_tokens: 128,
        }
    }
}

/// torchtune's single-device and distributed recipes (torchtune 0.6.1, `recipes/*_finetune_*.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Torchtune {
    /// `CEWithChunkedOutputLoss(num_output_chunks)` and `model.set_num_output_chunks`: the output
    /// projection runs per chunk and each chunk's loss is an FP32 `cross_entropy`
    /// (`torchtune/modules/loss/ce_chunked_output_loss.py`). Default 8, the configs' value.
    /// Valid: 1 ..= 4096.
    pub output_chunks: u32,
    /// `enable_activation_offloading`: `torchtune/training/_activation_offloading.py`
    /// `OffloadActivations` moves every saved tensor to pinned CPU memory in forward and brings it
    /// back in backward; only the tensors of the layer being computed stay on the GPU (modelled
    /// as one layer's saved tensors; the recipes pair it with activation checkpointing). Derived
    /// from source, not measured.
    pub activation_offloading: bool,
    /// `optimizer_in_bwd`: each parameter's optimizer step runs from a post-accumulate-grad hook
    /// (`torchtune/training/memory.py` `register_optim_in_bwd_hooks`), so its gradient is freed
    /// at once: one parameter's gradient and step temporaries at a time. Measured on CPU
    /// (tests/data/measured/torchtune-full-cpu-steps.json).
    pub optimizer_in_backward: bool,
    /// `compile`: the recipes compile every decoder layer (`training.compile_model`) and the
    /// loss's upcast + cross-entropy (`training.compile_loss`). The loss is modelled from a CPU
    /// probe (tests/data/measured/torchtune-compiled-loss-probe.json: the compiled kernel saves the
    /// logits chunk and two FP32 values per row instead of the FP32 log-softmax); the compiled
    /// layers' saved tensors are not (they follow the eager rules: inductor's fused
    /// intermediates are not measured yet), their time runs fused elementwise kernels
    /// (`timing.parts.elementwise` `Auto`).
    pub compile: bool,
    /// How the model's builder places the RoPE cache, an FP32 buffer of `max_positions` × head
    /// dim elements (`torchtune/modules/position_embeddings.py`).
    pub rope_cache: RopeCache,
    /// torchtune 0.1's loss (April 2024, ff594c231; the Llama 2 LoRA and QLoRA tutorials): the
    /// model returns FP32 logits (`torchtune/modules/transformer.py` line 210,
    /// `self.output(h).float()`), the recipe shifts them with a `.contiguous()` copy and keeps it in
    /// a local through backward and the optimizer step (`recipes/lora_finetune_single_device.py`
    /// lines 447–453: no chunks, no `del logits`), and `CrossEntropyLoss` takes the log-softmax
    /// over the transposed copy. `output_chunks` and `compile` do not apply, and it implies
    /// `legacy_rms_norm` (0.1's RMSNorm cast back too). Files without it load with it off (the
    /// 0.6.1 recipes).
    pub legacy_loss: bool,
    /// torchtune before 25 November 2024 (#2054; releases up to 0.4.0 and main before it, whose
    /// version.txt may already say 0.5.0): `RMSNorm.forward` casts the
    /// normalised x back to the input type before multiplying by `scale`, as Hugging Face's does.
    /// From 0.5.0 it is `F.rms_norm(x.float(), …, weight=scale).to(x.dtype)`, which keeps the FP32
    /// normalised x for the scale's gradient (measured). Files without it load with it off (0.5.0+).
    pub legacy_rms_norm: bool,
}

impl Default for Torchtune {
    fn default() -> Self {
        Torchtune {
            output_chunks: 8,
            activation_offloading: false,
            optimizer_in_backward: false,
            compile: false,
            rope_cache: RopeCache::default(),
            legacy_loss: false,
            legacy_rms_norm: false,
        }
    }
}

/// Where torchtune's model builders put the RoPE module and its cache
/// (`torchtune/models/<family>/_component_builders.py`, read at v0.6.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RopeCache {
    /// `llama2`, `llama3`, `mistral`, `qwen2`, `gemma`, `gemma2`, `phi3`: one module shared by the
    /// layers of a full model, but every LoRA attention (`lora_<family>_self_attention`) builds its
    /// own, so a LoRA model holds one cache per layer. torchtune 0.1 (`_get_clones` deep-copies
    /// one built layer) held one per layer in every model.
    #[default]
    PerLoraAttention,
    /// `llama3_1`, `llama3_2`, `llama3_2_vision` (and the Llama 3.3 models built on `llama3_1`):
    /// one `Llama3ScaledRoPE` passed to every layer, LoRA or not.
    Shared,
}

/// Whose code shards the model states when `strategies.zero` is on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sharding {
    /// The ZeRO paper's accounting (Rajbhandari et al. 2020 §5): states divided by the DP degree,
    /// no buffers of an implementation.
    #[default]
    Generic,
    /// DeepSpeed ZeRO 0.19.8 (docs/frameworks/deepspeed.md): its FP32 master partition even for an
    /// FP32 model, its gradient partition and reduce buckets (`implementation.deepspeed`).
    DeepSpeed,
    /// PyTorch FSDP1 (`FullyShardedDataParallel`, torch 2.15.0, docs/frameworks/fsdp.md): one flat
    /// parameter per transformer block, unsharded one unit at a time plus the prefetched next, the
    /// root unit kept from forward to backward; NO_SHARD at one rank (`implementation.fsdp`).
    Fsdp1,
    /// PyTorch FSDP2 (`fully_shard`, torch 2.15.0, docs/frameworks/fsdp.md): FSDP1's units plus one
    /// held all-gather buffer; at one rank it still copies the shards into unsharded parameters
    /// (`implementation.fsdp`).
    Fsdp2,
}

impl Sharding {
    /// Whether Megatron-Core's own optimizer steps the model: the Megatron profile with its own
    /// data parallelism (DDP, the distributed optimizer, Megatron-FSDP), not DeepSpeed's or
    /// PyTorch FSDP's. Its mixed-precision step copies 16-bit gradients to FP32
    /// (`megatron/core/optimizer/optimizer.py` `_copy_model_grads_to_main_grads`, d98e8a6) and its
    /// CPU offload (`cpu_offloading/hybrid_optimizer.py`) keeps the gradient buffer on the GPU.
    pub fn megatron_optimizer(self, profile: super::Profile) -> bool {
        profile == super::Profile::Megatron && self == Sharding::Generic
    }

    /// Whether Megatron's step makes an FP32 copy of the gradients: its own optimizer, an FP32
    /// master (`master_bytes` ≥ 4) and a 16-bit `main_grad` buffer (`grad_bytes` < 4); with an
    /// FP32 buffer `.float()` returns the buffer itself. Read by the memory and the time model.
    pub fn megatron_fp32_grad_copy(
        self,
        profile: super::Profile,
        master_bytes: f64,
        grad_bytes: f64,
    ) -> bool {
        self.megatron_optimizer(profile) && master_bytes >= 4.0 && grad_bytes < 4.0
    }
}

/// FSDP's options (read when `sharding` is `Fsdp1` or `Fsdp2` and `strategies.zero` is stage 3;
/// torch 2.15.0, `torch/distributed/fsdp/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fsdp {
    /// FSDP2 `reshard_after_forward` (default True) / FSDP1 `FULL_SHARD` (true) vs
    /// `SHARD_GRAD_OP` (false): false keeps every unit's unsharded parameters from its forward
    /// to its backward (`_fsdp_param_group.py` `post_forward`, `_runtime_utils.py`
    /// `_post_forward_reshard`).
    pub reshard_after_forward: bool,
    /// The type a unit's gradients are reduce-scattered in (`MixedPrecision(reduce_dtype)`).
    pub reduce_dtype: ReduceDtype,
    /// torchtune's `custom_sharded_layers: ['tok_embeddings', 'output']` (torchtune 0.6.1
    /// `training.shard_model` with `get_shard_conditions`): the embedding and the untied head are
    /// `fully_shard` units of their own, unsharded only around their forward and backward instead
    /// of for the whole step in the root unit (with `reshard_after_forward`; without it they stay
    /// unsharded as in the root, but FSDP2 holds the head's all-gather output at the loss instead
    /// of the last block's). Read with untied embeddings only (a tied table is used at both ends of
    /// the step). Measured on CPU (tests/data/measured/fsdp-custom-sharded-cpu-steps.json).
    /// Default false.
    pub custom_sharded_layers: bool,
    /// Where the training loop computes the loss: inside the root module's forward (Hugging Face:
    /// the Trainer passes `labels` to the model) or after it (torchtune, torchtitan and LitGPT
    /// recipes: the model returns the logits). After it, FSDP's root post-forward has already freed
    /// the held all-gather output (`_fsdp_state.py` `_post_forward`, every torch since 2.4) and no
    /// pre-backward hook has run during the loss's backward, so nothing is prefetched there
    /// (measured: tests/data/measured/fsdp-loss-outside-cpu-steps.json). Default `Auto`: the
    /// implementation profile's loop, and after the forward for post-training (`LossCall`).
    pub loss: LossCall,
    /// FSDP2's root resharded after its forward: torch ≥ 2.8 when the root's `fully_shard` is
    /// given `reshard_after_forward=True` explicitly (torchtune 0.6.1 `training.shard_model`
    /// does); up to torch 2.7, and when the argument is left out, `_lazy_init` keeps the root
    /// unsharded (`_fsdp_state.py`: `if self._auto_reshard_after_forward`, added in 2.8; accelerate
    /// 1.16.0's `fsdp2_prepare_model` leaves the root's argument out). The embedding and the head
    /// are then sharded at a loss computed after the forward ([`LossCall`]), and the root's
    /// pre-backward all-gathers them again, its flat output beside the unsharded parameters: the
    /// forward's peak can fall and the backward's rise. Read with FSDP2 and
    /// `reshard_after_forward`. Default false.
    pub root_reshard_after_forward: bool,
}

/// Where a training loop computes the loss relative to the model's (FSDP's root module's) forward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LossCall {
    /// From `implementation.profile` and `post_training`: torchtune, LitGPT and any post-training
    /// algorithm (log probabilities from the returned logits) → `AfterModelForward`; Hugging Face
    /// and Megatron-Core → `InModelForward`.
    #[default]
    Auto,
    /// The model's forward computes the loss (Hugging Face `model(input_ids, labels=...)`).
    InModelForward,
    /// The model returns the logits and the loop computes the loss (torchtune, torchtitan,
    /// LitGPT).
    AfterModelForward,
}

impl Default for Fsdp {
    fn default() -> Self {
        Fsdp {
            reshard_after_forward: true,
            reduce_dtype: ReduceDtype::Default,
            custom_sharded_layers: false,
            loss: LossCall::Auto,
            root_reshard_after_forward: false,
        }
    }
}

/// FSDP's `reduce_dtype` (torch 2.15.0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceDtype {
    /// `reduce_dtype=None`: FSDP1 reduces in `param_dtype` (the compute type); FSDP2 since 2.15
    /// follows the parameter's `grad_dtype`, the sharded parameters' own type (FP32 under
    /// autocast-style mixed precision; `_fully_shard/_fsdp_api.py` `MixedPrecisionPolicy`).
    #[default]
    Default,
    /// `reduce_dtype` = the compute type (`torch.bfloat16`, FSDP2's behaviour before 2.15).
    Compute,
    /// `reduce_dtype=torch.float32` (torchtitan's `mixed_precision_reduce` default).
    Fp32,
}

/// DeepSpeed's `zero_optimization` buffers (deepspeed 0.19.8, `deepspeed/runtime/zero/config.py`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeepSpeedZero {
    /// `reduce_bucket_size`, elements of the gradient type: the IPG bucket gradients are copied
    /// into for reduction (`stage_1_and_2.py` `setup_buckets`, allocated at the first gradient of
    /// each backward; `stage3.py` line 782, allocated once and kept). Default 5e8 (`config.py`
    /// line 113). Valid: 0 ..= 1e12.
    pub reduce_bucket_size: f64,
    /// `overlap_comm`: stages 1–2 allocate a second reduce bucket (`stage_1_and_2.py` lines
    /// 3273–3277). DeepSpeed's default is off for stages 1–2.
    pub overlap_comm: bool,
    /// `bf16.bf16_master_weights_and_grads` (DeepSpeed PR #7700, 0.18.4,
    /// `deepspeed/runtime/precision_config.py`): the ZeRO master partition and the step's
    /// gradient partition in BF16 (`base_optimizer.py` `_configure_master_weights`). Stages 1–3.
    pub bf16_master_weights_and_grads: bool,
    /// `bf16.bf16_optimizer_states` (0.18.4): the optimizer states in BF16 (they are `zeros_like`
    /// the BF16 master partition). DeepSpeed asserts it needs `bf16_master_weights_and_grads`
    /// (`runtime/config.py` line 990); without it this has no effect.
    pub bf16_optimizer_states: bool,
    /// `sub_group_size`, elements: stage 3 steps its partition one sub-group at a time
    /// (`stage3.py` `_create_fp16_sub_groups` closes a sub-group once it reaches this many
    /// elements), and each sub-group's gradients are flattened and cast to the master's type for
    /// its step only (`_prepare_fp32_grad_for_sub_group`, released in `_release_sub_group`).
    /// Default 1e9 (`zero/config.py` line 174, 0.18.4). Valid: 1 ..= 1e12.
    pub sub_group_size: f64,
    /// `stage3_prefetch_bucket_size`, elements: after fetching a module's parameters, stage 3
    /// all-gathers the next parameters of the traced order until this many elements are in
    /// flight (whole parameters, so at least one; `partitioned_param_coordinator.py`
    /// `_fetch_sub_module_impl`, 0.19.8). Default 5e7 (`zero/config.py`). 0: no prefetch.
    pub stage3_prefetch_bucket_size: f64,
    /// `stage3_max_live_parameters`, elements: the prefetch stops where the gathered parameters
    /// would pass this many (it does not release what is held). Default 1e9.
    pub stage3_max_live_parameters: f64,
    /// `stage3_max_reuse_distance`, elements: a parameter is not released after its use when it
    /// is used again within this many elements of parameter traffic (`__params_to_release`): in
    /// training, a module whose forward is followed by less than half this many elements before
    /// its backward keeps its parameters gathered from forward to backward (measured at world
    /// size 2, tests/data/measured/deepspeed-ws2-cpu-steps.json). Default 1e9. 0: release after
    /// every use.
    pub stage3_max_reuse_distance: f64,
    /// `stage3_param_persistence_threshold`, elements: parameters this small are never
    /// partitioned (`partition_parameters.py` `ds_persist`): whole on every rank, never
    /// gathered. Default 1e5.
    pub stage3_param_persistence_threshold: f64,
}

impl Default for DeepSpeedZero {
    fn default() -> Self {
        DeepSpeedZero {
            reduce_bucket_size: 5e8,
            overlap_comm: false,
            bf16_master_weights_and_grads: false,
            bf16_optimizer_states: false,
            sub_group_size: 1e9,
            stage3_prefetch_bucket_size: 5e7,
            stage3_max_live_parameters: 1e9,
            stage3_max_reuse_distance: 1e9,
            stage3_param_persistence_threshold: 1e5,
        }
    }
}
