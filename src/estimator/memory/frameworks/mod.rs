//! Framework profiles' own rules (issue 12): the Hugging Face family's ([`hf`]: attention
//! implementation, PEFT, bitsandbytes, TRL, fused losses), and what LitGPT ([`litgpt`]),
//! torchtune ([`torchtune`]), DeepSpeed ([`deepspeed`]), PyTorch FSDP ([`fsdp`]) and Megatron-Core ([`megatron`]) keep alive
//! beyond the kernels they share with Hugging Face eager/SDPA PyTorch. Each rule is
//! derived from the framework's source at a named version and held to its CPU-measured records
//! (docs/frameworks/<name>.md, tests/framework_stack.rs). The memory model calls in here at a few
//! points: a layer's saved tensors, the loss, what is held beyond the loss, module buffers.

pub mod deepspeed;
pub mod dtensor;
pub mod fsdp;
pub mod hf;
pub mod litgpt;
pub mod megatron;
pub mod torchtune;

use super::activations::{LayerActs, Sizes};
use super::ctx::Ctx;
use super::peft::Ext;
use crate::estimator::Diagnostics;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{
    DeepSpeedZero, Fsdp, LitGpt, Mode, MoeDispatcher, PeftMethod, Profile, Scenario, Sharding,
    Torchtune, validate::field,
};
use crate::tensor::Dtype;

/// The framework the user runs and its resolved settings (a field of `Ctx`).
#[derive(Clone, Copy, Debug)]
pub struct Framework {
    pub profile: Profile,
    pub litgpt: LitGpt,
    pub torchtune: Torchtune,
    pub sharding: Sharding,
    pub deepspeed: DeepSpeedZero,
    pub fsdp: Fsdp,
    /// PyTorch's DTensor `loss_parallel()` (`implementation.loss_parallel`, [`dtensor`]).
    pub loss_parallel: bool,
    /// DeepSpeed AutoTP in inference (`implementation.auto_tp`, [`deepspeed::auto_tp`]).
    pub auto_tp: bool,
    /// Megatron-Core's own layers (`implementation.megatron_local_layers`, [`megatron::gather_buffer`]).
    pub megatron_local: bool,
    /// Megatron-Core's MoE token dispatcher (`Implementation::megatron_dispatcher`: `None` under
    /// other profiles; [`megatron::dispatcher_tensors`]).
    pub megatron_dispatcher: Option<MoeDispatcher>,
    /// The model's `max_positions` (the length torchtune's RoPE cache is built for).
    pub max_positions: f64,
    /// A LoRA/QLoRA training step (torchtune builds a LoRA model's attention differently).
    pub lora: bool,
    /// LitGPT's `lora_dropout` (`workload.dropout` under the LitGPT profile, whose models have no
    /// dropout of their own: `Ctx::dropout` is false there).
    pub adapter_dropout: bool,
    /// LitGPT QLoRA through Lightning's `BitsandbytesPrecision` with bitsandbytes ≤ 0.43.1
    /// (`implementation.hf.bitsandbytes.version`; LitGPT pinned 0.42.0 through 2024): every frozen
    /// 4-bit linear, the LM head included, keeps its input (`litgpt::legacy_inputs`).
    pub bnb_legacy: bool,
    /// The LoRA targets (which frozen 4-bit linears' inputs an adapter already saves).
    pub lora_targets: crate::scenario::LoraTargets,
    /// The LoRA rank (FSDP2 reduce-scatters only the adapters' gradients: `fsdp::grad_elements`).
    pub lora_rank: u32,
    /// Bits per weight of a LoRA base's block matrices as stored when they are quantized (QLoRA's
    /// NF4, or LoRA over a quantized format), else `None`: FSDP gathers them in that form
    /// (`fsdp::unit_bytes`).
    pub quantized_base_bits: Option<f64>,
}

impl Framework {
    /// LoRA trains no adapter on the MLP's down projection: its weight is frozen, so nothing saves
    /// its input for a weight gradient.
    pub fn frozen_down(&self) -> bool {
        self.lora && !self.lora_targets.down
    }

    /// Megatron-Core's `alltoall` token dispatcher.
    pub fn megatron_alltoall(&self) -> bool {
        self.megatron_dispatcher == Some(MoeDispatcher::AllToAll)
    }

    pub fn of(sc: &Scenario) -> Framework {
        let i = &sc.implementation;
        Framework {
            profile: i.profile,
            litgpt: i.litgpt,
            torchtune: i.torchtune,
            sharding: i.sharding,
            deepspeed: i.deepspeed,
            fsdp: i.fsdp,
            loss_parallel: i.loss_parallel && i.profile == Profile::HuggingFace,
            auto_tp: i.auto_tp && sc.mode == Mode::Inference,
            megatron_local: i.megatron_local_layers && i.profile == Profile::Megatron,
            megatron_dispatcher: i.megatron_dispatcher(),
            max_positions: f64::from(sc.model.transformer.max_positions),
            lora: sc.mode == Mode::Training && sc.peft.method != PeftMethod::Full,
            adapter_dropout: i.profile == Profile::LitGpt
                && sc.mode == Mode::Training
                && sc.peft.method != PeftMethod::Full
                && sc.workload.dropout,
            bnb_legacy: i.profile == Profile::LitGpt
                && sc.mode == Mode::Training
                && sc.peft.method == PeftMethod::Qlora
                && i.hf.bitsandbytes.version == crate::scenario::BnbVersion::Legacy0_43_1,
            lora_targets: sc.peft.targets,
            lora_rank: sc.peft.rank,
            quantized_base_bits: quantized_base_bits(sc),
        }
    }
}

/// The stored bits per weight of a LoRA training step's quantized base (the format `peft::Ext`
/// uses: NF4 under QLoRA, `quantization.weights` under LoRA), `None` for a full-precision base.
fn quantized_base_bits(sc: &Scenario) -> Option<f64> {
    if sc.mode != Mode::Training || sc.peft.method == PeftMethod::Full {
        return None;
    }
    let format = super::peft::layer_format(sc, sc.peft.method, true);
    super::peft::layer_bits(sc, format, sc.model.transformer.hidden)
}

/// `implementation.litgpt` with every number in range.
pub fn resolve_litgpt(l: &LitGpt, d: &mut Diagnostics) -> LitGpt {
    let LitGpt {
        lm_head_chunk_tokens,
    } = l;
    LitGpt {
        lm_head_chunk_tokens: const { field("implementation.litgpt.lm_head_chunk_tokens") }
            .clamp_u32(*lm_head_chunk_tokens, d),
    }
}

/// `implementation.torchtune` with every number in range.
pub fn resolve_torchtune(t: &Torchtune, d: &mut Diagnostics) -> Torchtune {
    let Torchtune {
        output_chunks,
        activation_offloading,
        optimizer_in_backward,
        compile,
        rope_cache,
        legacy_loss,
        legacy_rms_norm,
    } = t;
    Torchtune {
        output_chunks: const { field("implementation.torchtune.output_chunks") }
            .clamp_u32(*output_chunks, d),
        activation_offloading: *activation_offloading,
        optimizer_in_backward: *optimizer_in_backward,
        compile: *compile,
        rope_cache: *rope_cache,
        legacy_loss: *legacy_loss,
        legacy_rms_norm: *legacy_rms_norm,
    }
}

/// `implementation.deepspeed` with every number in range.
pub fn resolve_deepspeed(z: &DeepSpeedZero, d: &mut Diagnostics) -> DeepSpeedZero {
    let DeepSpeedZero {
        reduce_bucket_size,
        overlap_comm,
        bf16_master_weights_and_grads,
        bf16_optimizer_states,
        sub_group_size,
        stage3_prefetch_bucket_size,
        stage3_max_live_parameters,
        stage3_max_reuse_distance,
        stage3_param_persistence_threshold,
    } = z;
    let default = DeepSpeedZero::default();
    DeepSpeedZero {
        reduce_bucket_size: const { field("implementation.deepspeed.reduce_bucket_size") }.clamp(
            *reduce_bucket_size,
            default.reduce_bucket_size,
            d,
        ),
        overlap_comm: *overlap_comm,
        bf16_master_weights_and_grads: *bf16_master_weights_and_grads,
        bf16_optimizer_states: *bf16_optimizer_states,
        sub_group_size: const { field("implementation.deepspeed.sub_group_size") }.clamp(
            *sub_group_size,
            default.sub_group_size,
            d,
        ),
        stage3_prefetch_bucket_size: const {
            field("implementation.deepspeed.stage3_prefetch_bucket_size")
        }
        .clamp(
            *stage3_prefetch_bucket_size,
            default.stage3_prefetch_bucket_size,
            d,
        ),
        stage3_max_live_parameters: const {
            field("implementation.deepspeed.stage3_max_live_parameters")
        }
        .clamp(
            *stage3_max_live_parameters,
            default.stage3_max_live_parameters,
            d,
        ),
        stage3_max_reuse_distance:
            const { field("implementation.deepspeed.stage3_max_reuse_distance") }.clamp(
                *stage3_max_reuse_distance,
                default.stage3_max_reuse_distance,
                d,
            ),
        stage3_param_persistence_threshold: const {
            field("implementation.deepspeed.stage3_param_persistence_threshold")
        }
        .clamp(
            *stage3_param_persistence_threshold,
            default.stage3_param_persistence_threshold,
            d,
        ),
    }
}

/// An RMSNorm that multiplies its weight in FP32 (LitGPT's, torchtune's from 0.5.0) keeps its
/// normalised x in FP32 for the weight's gradient where the Hugging Face rule keeps it in the
/// residual type: the (4 − e_r)·b·s·h bytes more of one norm (nothing in FP32).
pub fn fp32_normalised_x(c: &Ctx, z: &Sizes) -> f64 {
    (4.0 - c.er).max(0.0) * z.bsh / z.tr * c.saved_scale()
}

/// One layer's saved tensors: the Hugging Face rules `a` adjusted where the framework's modules
/// save differently.
pub fn layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, a: LayerActs) -> LayerActs {
    match c.framework.profile {
        Profile::LitGpt => litgpt::layer(c, m, z, a),
        Profile::Torchtune => torchtune::layer(c, m, z, a),
        Profile::HuggingFace | Profile::Megatron => a,
    }
}

/// What one norm saves beyond the Hugging Face rule under the framework's own RMSNorm (the same
/// for each of a layer's norms; [`layer`] adds it twice).
pub fn norm_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    match c.framework.profile {
        Profile::LitGpt => litgpt::norm_extra(c, m, z),
        Profile::Torchtune => torchtune::norm_extra(c, m, z),
        Profile::HuggingFace | Profile::Megatron => 0.0,
    }
}

/// A LoRA layer's saved tensors after `peft::lora_layer`.
pub fn lora_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, x: &Ext, a: LayerActs) -> LayerActs {
    match c.framework.profile {
        Profile::LitGpt => litgpt::lora_layer(c, m, z, x, a),
        Profile::Torchtune => torchtune::lora_layer(c, m, z, x, a),
        Profile::HuggingFace | Profile::Megatron => a,
    }
}

/// The loss of the last stage, when the framework's differs from Hugging Face's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Loss {
    /// Saved for backward (the log-probabilities).
    pub saved: f64,
    /// Live at the loss in forward beside the saved tensors (logits, copies).
    pub forward: f64,
    /// Live in the loss backward beside the saved tensors.
    pub backward: f64,
}

pub fn loss(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> Option<Loss> {
    match c.framework.profile {
        Profile::LitGpt => Some(litgpt::loss(c, m, z)),
        Profile::Torchtune => Some(torchtune::loss(c, z)),
        Profile::Megatron => Some(megatron::loss(c, z)),
        Profile::HuggingFace => dtensor::applies(c).then(|| dtensor::loss(c, z)),
    }
}

/// Held on the last stage from the loss through backward and the optimizer step (LitGPT's logit
/// chunks and torchtune 0.1's FP32 logits, locals of their training loops).
pub fn held(c: &Ctx, m: &ResolvedModel, z: &Sizes, last: bool) -> f64 {
    if !last || !super::activations::has_lm_loss(m) {
        return 0.0;
    }
    match c.framework.profile {
        Profile::LitGpt => litgpt::held_logits(c, z),
        Profile::Torchtune => torchtune::held_logits(c, z),
        _ => 0.0,
    }
}

/// [`StageExtra::kept_by_graph`] of a stage.
fn kept_by_graph(c: &Ctx, m: &ResolvedModel, z: &Sizes, st: super::training::Stage) -> f64 {
    match c.framework.profile {
        Profile::LitGpt => litgpt::kept_by_graph(c, m, z, st.layers, st.last),
        _ => 0.0,
    }
}

/// Module buffers the framework keeps on the device (RoPE caches), on the first stage.
pub fn buffers(c: &Ctx, m: &ResolvedModel, first: bool) -> f64 {
    if !first {
        return 0.0;
    }
    match c.framework.profile {
        Profile::Torchtune => torchtune::rope_cache(c, m),
        _ => 0.0,
    }
}

/// The last stage's output-layer backward, beside the layers' saved tensors, when it is larger
/// than what the Hugging Face rules see (torchtune's per-chunk output projections).
pub fn output_backward(c: &Ctx, m: &ResolvedModel, z: &Sizes, last: bool) -> f64 {
    if !last || !super::activations::has_lm_loss(m) {
        return 0.0;
    }
    match c.framework.profile {
        Profile::Torchtune => torchtune::output_backward(c, m, z),
        _ => 0.0,
    }
}

/// The final norm of the last stage beside the Hugging Face rule: LitGPT's FP32 RMSNorm; under
/// LoRA (frozen norm weight and head: measured in both frameworks' records, `ln_f` / `norm`
/// keep only their input and statistics) neither the normalised x nor the head's input is saved.
/// Exactly the two terms the Hugging Face rule (`activations::hf_norm`, one consumer) counts for
/// them: the normalised x in the residual type (an RMSNorm's only: LayerNorm saves none) and the
/// head's input (its 16-bit autocast copy under AMP, else the norm output itself).
pub fn final_norm(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    match c.framework.profile {
        Profile::LitGpt | Profile::Torchtune if c.framework.lora => {
            let normalised = if m.norm == crate::scenario::NormKind::RmsNorm {
                c.er
            } else {
                0.0
            };
            let head_input = if c.amp { c.ec } else { c.er };
            // A legacy 4-bit head keeps its input (`litgpt::legacy_inputs`).
            let head_input = if c.framework.bnb_legacy {
                0.0
            } else {
                head_input
            };
            -(normalised / z.tr + head_input / z.lin_tr) * z.bsh * c.saved_scale()
        }
        Profile::LitGpt => litgpt::norm_extra(c, m, z),
        Profile::Torchtune => torchtune::norm_extra(c, m, z),
        _ => 0.0,
    }
}

/// The first stage beside the Hugging Face rule: under LoRA the embedding is frozen, so layer 0's
/// input needs no gradient and its first RMSNorm saves nothing (its FP32 input and statistics;
/// measured: `norm_1` / `sa_norm` saves in 3 of 4 layers). Without checkpointing and under
/// selective recomputation, which recomputes only the attention core and keeps the norms' saves
/// (under full or per-op checkpointing the norm saves nothing in any layer).
pub fn first_stage(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    lora_first_norm(c, m, z)
}

fn lora_first_norm(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let lora_framework = matches!(c.framework.profile, Profile::LitGpt | Profile::Torchtune);
    if !lora_framework
        || !c.framework.lora
        || !matches!(
            c.checkpointing,
            crate::scenario::Checkpointing::None | crate::scenario::Checkpointing::Selective
        )
        || m.norm != crate::scenario::NormKind::RmsNorm
    {
        return 0.0;
    }
    // Only where layer 0 has a pre-norm (a pattern may start with empty layers).
    if !super::layer_kinds::first_layer_norm_and_attention(m).0 {
        return 0.0;
    }
    -(4.0 * z.bsh + 4.0 * z.bs) / z.tr * c.saved_scale()
}

/// Element bytes of LoRA adapters, their gradients and optimizer states when the framework keeps
/// them in the model's type: LitGPT `bf16-true` (`model.to(dtype)`, measured: BF16 AdamW states)
/// and torchtune (adapters built in the model's dtype). `None`: PEFT's FP32 adapters.
pub fn adapter_bytes(c: &Ctx) -> Option<f64> {
    adapter_element_bytes(c.framework.profile, c.weights)
}

/// [`adapter_bytes`] from the profile and the stored weights' type (the time model's view).
pub fn adapter_element_bytes(profile: Profile, weights: Dtype) -> Option<f64> {
    match profile {
        Profile::LitGpt | Profile::Torchtune
            if matches!(weights, Dtype::Fp32 | Dtype::Bf16 | Dtype::Fp16) =>
        {
            Some(weights.bytes())
        }
        _ => None,
    }
}

/// Inference beside the serving engine's rules, for a cache of `ctx_len` tokens per sequence:
/// (prefill, decode) bytes.
pub fn inference_extra(c: &Ctx, m: &ResolvedModel, ctx_len: f64) -> (f64, f64) {
    match c.framework.profile {
        Profile::LitGpt => litgpt::inference_extra(c, m, ctx_len),
        _ => (0.0, 0.0),
    }
}

/// A stage's parts under the framework's step: torchtune's optimizer in backward keeps one
/// parameter's gradient at a time and steps one parameter at a time.
pub fn parts(c: &Ctx, m: &ResolvedModel, p: super::training::Parts) -> super::training::Parts {
    let p = deepspeed::parts(c, m, p);
    match c.framework.profile {
        Profile::Torchtune if torchtune::steps_in_backward(c) => {
            torchtune::optimizer_in_backward(c, m, p)
        }
        _ => p,
    }
}

/// The saved layer activations a stage keeps on the device (`per_mb` of `layers` layers).
pub fn on_device(c: &Ctx, per_mb: f64, layers: f64) -> f64 {
    match c.framework.profile {
        Profile::Torchtune if c.framework.torchtune.activation_offloading => {
            per_mb / layers.max(1.0)
        }
        _ => per_mb,
    }
}

/// What a training stage holds beside the Hugging Face rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageExtra {
    /// Module buffers on the device ([`buffers`]), in every phase.
    pub buffers: f64,
    /// Held from the loss through backward and the optimizer step ([`held`]).
    pub held: f64,
    /// Kept outside autograd's saved tensors by the step's graph, which the training loop's locals
    /// keep alive: not freed in backward, alive through the optimizer step and the next
    /// iteration's forward and loss (LitGPT QLoRA with bitsandbytes ≤ 0.43.1:
    /// `litgpt::kept_by_graph`). Part of the saved tensors in the step's own forward.
    pub kept_by_graph: f64,
    /// Saved tensors a module also keeps as attributes, so they outlive its backward: live at the
    /// end of backward and through the optimizer step (in forward they are the saved tensors;
    /// Megatron's MoE dispatcher, [`megatron::dispatcher_kept`]).
    pub kept_after_backward: f64,
    /// The output layer's backward beside the layers' saved tensors ([`output_backward`]; 0
    /// when the Hugging Face rules hold).
    pub output_backward: f64,
    /// The share of the layers' saved tensors kept on the device ([`on_device`]).
    pub on_device: f64,
    /// Buffers alive only in the layers' backward (DeepSpeed's stage 1–2 reduce buckets; under a
    /// pipeline FSDP2's fresh gradient of one unit).
    pub backward: f64,
    /// What a later layer's backward holds beyond the first one's: the reduce-scatter input FSDP2
    /// keeps of the unit reduced before it ([`fsdp::later_backward`]).
    pub later_backward: f64,
    /// Unsharded gradient bytes a layer's backward holds under FSDP before any reduction: (the
    /// down projection's fresh one, the head's in the root unit) ([`fsdp::fresh_gradients`]).
    pub fresh_gradients: (f64, f64),
    /// The gathered bytes inside a block in forward under FSDP ([`fsdp::forward_gathered`]).
    pub forward_gathered: Option<f64>,
    /// The gathered bytes in the backward of the stage's second, second-to-last and last layer
    /// to run it ([`fsdp::later_gathered`]).
    pub later_gathered: Option<[f64; 3]>,
    /// The same at the end of backward, once every layer is done ([`fsdp::pipeline_backward`]:
    /// FSDP2 under a pipeline defers its reduce-scatters to there; else FSDP2's last held
    /// reduce-scatter input, [`fsdp::later_backward`]).
    pub backward_end: f64,
    /// Gradients held unsharded over the micro-batches instead of the sharded ones
    /// ([`fsdp::pipeline_gradients`]), from the first backward until the end of backward.
    pub accumulated_grads: Option<f64>,
    /// The gradient buffer lives for the whole run, not only under accumulation: Megatron-Core's
    /// `DistributedDataParallel` allocates the contiguous `main_grad` buffer once
    /// (`megatron/core/distributed/param_and_grad_buffer.py`, FP32 with
    /// `accumulate_allreduce_grads_in_fp32`) and the parameters' `main_grad` are views into it.
    pub persistent_grads: bool,
    /// The gradient bytes of the optimizer step when DeepSpeed's ZeRO runs it, instead of the
    /// stage's gradients ([`deepspeed::step_gradients`]): stage 3 one sub-group's flattened and
    /// cast copies, stages 1–2 the reduced gradient partition and the flattened and cast copies
    /// of the group stepped.
    pub step_grads: Option<f64>,
    /// DeepSpeed stage 3 keeps its reduced gradients in the partition buffer of
    /// [`deepspeed::buffers`] (no `param.grad` after backward, under accumulation too).
    pub grads_in_buffer: bool,
}

impl StageExtra {
    /// Live beside the gradients once a stage's backward is done: what the graph keeps and what
    /// modules keep as attributes.
    pub fn after_backward(&self) -> f64 {
        self.kept_by_graph + self.kept_after_backward
    }

    /// The output layer's backward as a backward candidate beside `acts` saved bytes.
    pub fn output_backward(&self, acts: f64) -> Option<super::blocks::backward::Late> {
        (self.output_backward > 0.0).then_some(super::blocks::backward::Late {
            grads: 0.0,
            acts,
            transient: self.output_backward,
        })
    }
}

/// A training stage's parts under the framework's step ([`parts`]) and what it holds beside them.
pub fn step(
    c: &Ctx,
    m: &ResolvedModel,
    p: &super::training::Parts,
    st: super::training::Stage,
) -> (super::training::Parts, StageExtra) {
    let parts = fsdp::parts(c, m, parts(c, m, *p), st);
    let (zero_all, zero_backward) = deepspeed::buffers(c, parts.states.grads);
    // FSDP outside a pipeline reduces each unit at its post-backward, after the layer's peak:
    // nothing beside the first layer's backward, the reduced unit's leftovers beside the later ones.
    let pipelined = fsdp::pipeline_no_sync(c);
    let (fsdp_mid, fsdp_end) = if pipelined {
        fsdp::pipeline_backward(c, m)
    } else {
        (0.0, fsdp::later_backward(c, m))
    };
    let extra = StageExtra {
        buffers: buffers(c, m, st.first)
            + zero_all
            + megatron::dispatcher_held(c, m, &p.z, st.layers)
            + megatron::gather_buffer(c, m, &p.z, st.layers, st.last),
        held: held(c, m, &p.z, st.last),
        kept_by_graph: kept_by_graph(c, m, &p.z, st),
        kept_after_backward: megatron::dispatcher_kept(c, m, &p.z, st.layers),
        output_backward: output_backward(c, m, &p.z, st.last),
        on_device: on_device(c, 1.0, st.layers),
        backward: zero_backward + fsdp_mid,
        later_backward: if pipelined {
            0.0
        } else {
            fsdp::later_backward(c, m)
        },
        fresh_gradients: fsdp::fresh_gradients(c, m, st),
        forward_gathered: fsdp::forward_gathered(c, m, st),
        later_gathered: fsdp::later_gathered(c, m, st),
        backward_end: zero_backward + fsdp_end,
        accumulated_grads: fsdp::pipeline_gradients(c, m, st),
        persistent_grads: c.framework.profile == Profile::Megatron,
        step_grads: deepspeed::step_gradients(c, m, parts.states.grads),
        grads_in_buffer: deepspeed::grads_in_partition_buffer(c),
    };
    (parts, extra)
}

/// Combinations a profile cannot express: LitGPT (0.5.13: FSDP and tensor parallelism, no pipeline)
/// and torchtune (0.6.1: FSDP2 and tensor parallelism, no pipeline schedule) under `parallel.pp`.
pub fn diagnose(profile: Profile, mode: Mode, pp_stages: u32, d: &mut Diagnostics) {
    let no_pipeline = matches!(profile, Profile::LitGpt | Profile::Torchtune);
    if no_pipeline && mode == Mode::Training && pp_stages > 1 {
        d.insert(crate::estimator::Diagnostic::FrameworkWithoutPipeline);
    }
}

/// FSDP combinations that cannot be expressed ([`fsdp::diagnose`]), and DeepSpeed's ZeRO-2/3
/// under pipeline stages, which its `PipelineEngine` refuses (deepspeed 0.19.8
/// `runtime/pipe/engine.py`).
pub fn diagnose_sharding(
    sc: &Scenario,
    zero: crate::scenario::ZeroStage,
    pp_stages: u32,
    d: &mut Diagnostics,
) {
    if sc.mode == Mode::Training {
        fsdp::diagnose(sc.implementation.sharding, zero, pp_stages, d);
        let partitions_gradients = matches!(
            zero,
            crate::scenario::ZeroStage::Stage2 | crate::scenario::ZeroStage::Stage3
        );
        if sc.implementation.sharding == crate::scenario::Sharding::DeepSpeed
            && partitions_gradients
            && pp_stages > 1
        {
            d.insert(crate::estimator::Diagnostic::DeepSpeedZeroWithPipeline);
        }
    }
}
