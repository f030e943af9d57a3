//! One resolve pass (issue 17): the scenario *as the estimator sees it*. Every number is moved into
//! its documented range by its `scenario::validate::RANGES` entry ([`FieldRange::clamp`], the only
//! place the estimator bounds an input; a change is reported as [`Diagnostic::InputClamped`], NaN
//! becomes the section's `Default` value); the "0 = derive it" conventions are filled in; and the
//! quantities every part of the estimator must agree on are computed once (the model's shape and
//! counts, the pipeline stages, the ZeRO sharding degree). The memory model, the time model, the
//! explanations and the sensitivity all read this, so they cannot disagree on an input.
//!
//! Allocation-free: the resolved scenario's strings (name, notes, a custom GPU's name) are left empty
//! (`String::new()` does not allocate; the estimator never reads them).
//!
//! [`FieldRange::clamp`]: crate::scenario::validate::FieldRange::clamp
//! [`Diagnostic::InputClamped`]: crate::estimator::Diagnostic::InputClamped

mod pattern;
mod post_training;
mod sections;
mod sections2;
mod serving;

pub use pattern::{layer_run, pattern_repeat};

use super::model::{self, ResolvedModel};
use super::num::ceil;
use super::{Diagnostic, Diagnostics};
use crate::scenario::{
    Dtype, Implementation, Mode, ModelSpec, Optimizer, Parallelism, PrecisionSpec, Scenario,
    ServingEngine, Strategies, ZeroStage,
};

/// A scenario resolved for estimating: see the module documentation. The model is borrowed from
/// where the caller keeps it (`Estimate::model` in [`estimate`](super::estimate)), so the 1.2 kB
/// model is derived in place and never copied.
#[derive(Clone, Debug)]
pub struct Resolved<'m> {
    /// Every number inside its range; `parallel.pp_microbatches` = the gradient-accumulation steps
    /// when 0, `strategies.checkpoint_every` = ⌈√L⌉ when 0; strings empty.
    pub scenario: Scenario,
    pub model: &'m ResolvedModel,
    /// Pipeline stages that hold layers: min(pp, layers) (more stages than layers leave some empty;
    /// the memory of a stage is that of a non-empty one).
    pub pp_stages: u32,
    /// The degree ZeRO shards over: DP × CP, or under FSDP HYBRID_SHARD (`strategies.hybrid_shard` with a
    /// ZeRO stage) the DP ranks inside one node, gpus_per_node ÷ (TP × pipeline stages), at least 1 and
    /// at most DP (PyTorch FSDP `ShardingStrategy.HYBRID_SHARD`; TP and PP placed innermost), times CP
    /// (context-parallel ranks hold the same weights and join the sharding group).
    pub zero_dp: u32,
}

/// Resolves `sc`, its model included: the model is derived into `model` (written once, where the
/// caller keeps it) and the result borrows it.
pub fn resolve<'m>(
    sc: &Scenario,
    model: &'m mut ResolvedModel,
    d: &mut Diagnostics,
) -> Resolved<'m> {
    let spec = model_spec(&sc.model, d);
    *model = model::derive(&spec, &sc.model.pattern, &sc.model.towers, d);
    resolve_rest(sc, spec, model, d)
}

/// Resolves `sc` with its model already resolved (by [`model::resolve`] of the same spec).
pub fn resolve_with_model<'m>(
    sc: &Scenario,
    model: &'m ResolvedModel,
    d: &mut Diagnostics,
) -> Resolved<'m> {
    let spec = model_spec(&sc.model, d);
    resolve_rest(sc, spec, model, d)
}

/// The model section with every number in range (and KV heads ≤ heads, top-k and EP ≤ experts).
pub fn model_spec(m: &ModelSpec, d: &mut Diagnostics) -> ModelSpec {
    let ModelSpec {
        family,
        shape,
        params,
        transformer,
        cnn,
        recommender,
        moe,
        pattern: _,
        towers: _,
    } = m;
    ModelSpec {
        family: *family,
        shape: *shape,
        params: const { crate::scenario::validate::field("model.params") }.clamp(
            *params,
            ModelSpec::default().params,
            d,
        ),
        transformer: sections::transformer(transformer, d),
        cnn: sections::cnn(cnn, d),
        recommender: sections::recommender(recommender, d),
        moe: sections::moe(moe, d),
        // The pattern is resolved into `ResolvedModel::blocks` (`model::derive`), not copied here:
        // resolving stays allocation-free.
        pattern: Vec::new(),
        towers: Vec::new(),
    }
}

/// The GPUs a ZeRO stage shards over: DP, or with hybrid sharding the DP ranks inside one node;
/// times CP. Megatron-Core's distributed optimizer shards over the data-parallel group *with* CP
/// (`parallel_state.get_data_parallel_group(with_context_parallel=True)`, megatron/core
/// `optimizer/__init__.py` v0.14): CP ranks hold the same weights, so ZeRO shards over DP × CP.
pub(crate) fn zero_group(strategies: &Strategies, parallel: &Parallelism, pp_stages: u32) -> u32 {
    let cp = parallel.cp.max(1);
    if strategies.hybrid_shard && strategies.zero != ZeroStage::None {
        let inner = parallel.tp.saturating_mul(pp_stages).saturating_mul(cp);
        let per_node = parallel.gpus_per_node / inner.max(1);
        parallel.dp.min(per_node.max(1)).saturating_mul(cp)
    } else {
        parallel.dp.saturating_mul(cp)
    }
}

/// The pipeline's micro-batches per flush: `pp_microbatches` 0 is the accumulation steps, and
/// more than those is taken as them (a flush cannot hold micro-batches the step does not have;
/// `comm::pipeline_microbatches`), said by `pipeline_microbatches_beyond_step` when a training
/// step has a pipeline. Under the Megatron profile an interleaved schedule whose micro-batches are
/// not a multiple of the stages is refused by Megatron-Core (`comm::interleave_runs`):
/// `megatron_interleaving_needs_microbatches`.
fn pipeline_schedule(
    parallel: &mut Parallelism,
    accum: u32,
    sc: &Scenario,
    layers: u32,
    d: &mut Diagnostics,
) {
    let (training, profile) = (sc.mode == Mode::Training, sc.implementation.profile);
    let stages = parallel.pp.min(layers);
    if parallel.pp_microbatches == 0 {
        parallel.pp_microbatches = accum;
    } else if parallel.pp_microbatches > accum.max(1) {
        parallel.pp_microbatches = accum.max(1);
        if training && stages > 1 {
            d.insert(Diagnostic::PipelineMicrobatchesBeyondStep);
        }
    }
    if training
        && profile == crate::scenario::Profile::Megatron
        && parallel.pp_interleave > 1
        && !crate::estimator::performance::comm::interleave_runs(stages, parallel.pp_microbatches)
    {
        d.insert(Diagnostic::MegatronInterleavingNeedsMicrobatches);
    }
}

/// The rest of `sc` resolved, its model section already resolved ([`model_spec`], giving `model_spec`)
/// and derived (`model::derive` of that spec, giving `model`): the hot path ([`estimate`]) derives the
/// model where it keeps it and clamps the model section once.
///
/// [`estimate`]: super::estimate
pub fn resolve_rest<'m>(
    sc: &Scenario,
    model_spec: ModelSpec,
    m: &'m ResolvedModel,
    d: &mut Diagnostics,
) -> Resolved<'m> {
    let Scenario {
        version,
        name: _,
        notes: _,
        mode,
        model: _,
        workload,
        inference,
        precision,
        optimizer,
        strategies,
        parallel,
        gpu,
        implementation,
        overheads,
        timing,
        input,
        peft,
        quantization,
        post_training,
    } = sc;
    let workload = sections::workload(workload, d);
    let post_training = post_training::resolve(post_training, &workload, *mode, d);
    let mut strategies = sections2::strategies(strategies, d);
    strategies.attention = hf::attention(implementation, strategies.attention);
    let mut parallel = sections2::parallel(parallel, d);
    let layers = m.layers.max(1);
    pipeline_schedule(&mut parallel, workload.grad_accum_steps, sc, layers, d);
    if strategies.checkpoint_every == 0 {
        // ⌈√L⌉ segments of ⌈√L⌉ layers minimise stored + recomputed activations (Chen et al. 2016
        // "Training Deep Nets with Sublinear Memory Cost").
        strategies.checkpoint_every = ceil(f64::from(layers).sqrt()) as u32;
    }
    let pp_stages = parallel.pp.min(layers);
    super::memory::frameworks::diagnose(implementation.profile, *mode, pp_stages, d);
    super::memory::frameworks::diagnose_sharding(sc, strategies.zero, pp_stages, d);
    parallel.cp = context_parallel(*mode, m, parallel.cp, workload.seq_len, d);
    if *mode == Mode::Training && integer_training(precision) {
        d.insert(Diagnostic::IntegerTrainingType);
    }
    hf::diagnostics(sc, d);
    let zero_dp = zero_group(&strategies, &parallel, pp_stages);
    let gpu = sections2::gpu(gpu, d);
    Resolved {
        scenario: Scenario {
            version: *version,
            name: String::new(),
            notes: String::new(),
            mode: *mode,
            model: model_spec,
            workload,
            inference: {
                let mut i = sections::inference(inference, d);
                // The engine a file that names none meant (`ServingEngine::following`).
                i.engine = Some(
                    i.engine
                        .unwrap_or(ServingEngine::following(implementation.profile)),
                );
                // Unset, the prefill chunk is the engine's own.
                if i.features.prefill_chunk_tokens == 0 {
                    i.features.prefill_chunk_tokens =
                        super::engines::prefill_chunk::default_prefill_chunk(&i, &gpu, parallel.tp);
                }
                i
            },
            precision: precision_of(precision),
            optimizer: optimizer_of(optimizer, d),
            strategies,
            parallel,
            gpu,
            implementation: implementation_of(implementation, d),
            overheads: sections2::overheads(overheads, d),
            timing: sections2::timing(timing, d),
            input: sections2::input(input, d),
            peft: sections2::peft(peft, d),
            quantization: sections2::quantization(quantization, d),
            post_training,
        },
        model: m,
        pp_stages,
        zero_dp,
    }
}

/// The context-parallel degree the estimator uses: `cp` for transformer training, at most the
/// sequence length; 1 elsewhere (inference and other families), reported when that drops a degree.
fn context_parallel(
    mode: Mode,
    m: &ResolvedModel,
    cp: u32,
    seq_len: u32,
    d: &mut Diagnostics,
) -> u32 {
    if cp <= 1 {
        return 1;
    }
    if mode != Mode::Training || m.family != crate::scenario::ModelFamily::Transformer {
        d.insert(Diagnostic::ContextParallelIgnored);
        return 1;
    }
    cp.min(seq_len.max(1))
}

/// Element types only: nothing to bound (destructured so a new numeric field must be handled here).
fn precision_of(p: &PrecisionSpec) -> PrecisionSpec {
    let PrecisionSpec {
        mode,
        compute,
        weights,
        gradients,
        optimizer_states,
        master_weights,
        activations,
        kv_cache,
        attention_fp32,
        fp8_recipe,
    } = p;
    PrecisionSpec {
        mode: *mode,
        compute: *compute,
        weights: *weights,
        gradients: *gradients,
        optimizer_states: *optimizer_states,
        master_weights: *master_weights,
        activations: *activations,
        kv_cache: *kv_cache,
        attention_fp32: *attention_fp32,
        fp8_recipe: *fp8_recipe,
    }
}

fn optimizer_of(o: &Optimizer, d: &mut Diagnostics) -> Optimizer {
    let Optimizer {
        kind,
        foreach,
        state_bytes_per_param,
        eight_bit_library,
    } = o;
    Optimizer {
        kind: *kind,
        foreach: *foreach,
        eight_bit_library: *eight_bit_library,
        state_bytes_per_param: const {
            crate::scenario::validate::field("optimizer.state_bytes_per_param")
        }
        .clamp(
            *state_bytes_per_param,
            Optimizer::default().state_bytes_per_param,
            d,
        ),
    }
}

use crate::estimator::memory::frameworks::hf;

fn implementation_of(i: &Implementation, d: &mut Diagnostics) -> Implementation {
    let Implementation {
        profile,
        dropout_mask,
        fused_cross_entropy,
        block_kernels,
        hf,
        litgpt,
        torchtune,
        sharding,
        deepspeed,
        fsdp,
        loss_parallel,
        auto_tp,
        megatron_local_layers,
        megatron_moe_dispatcher,
        megatron_grad_reduce_in_bf16,
    } = i;
    Implementation {
        profile: *profile,
        dropout_mask: *dropout_mask,
        fused_cross_entropy: *fused_cross_entropy || hf::fused_head(*profile, hf),
        block_kernels: *block_kernels,
        hf: hf::resolve(hf),
        litgpt: super::memory::frameworks::resolve_litgpt(litgpt, d),
        torchtune: super::memory::frameworks::resolve_torchtune(torchtune, d),
        sharding: *sharding,
        deepspeed: super::memory::frameworks::resolve_deepspeed(deepspeed, d),
        fsdp: *fsdp,
        loss_parallel: *loss_parallel,
        auto_tp: *auto_tp,
        megatron_local_layers: *megatron_local_layers,
        megatron_moe_dispatcher: *megatron_moe_dispatcher,
        megatron_grad_reduce_in_bf16: *megatron_grad_reduce_in_bf16,
    }
}

/// Training with integer activations, gradients or weight compute copies: INT8 and INT4 are storage
/// formats (of weights, the KV cache, 8-bit optimizer states); backpropagation runs in a float type
/// (Dettmers et al. 2022 LLM.int8() §3 and QLoRA §3 de-quantize to BF16 for every matmul).
fn integer_training(p: &PrecisionSpec) -> bool {
    let r = p.resolve();
    let int = |t: Dtype| matches!(t, Dtype::Int8 | Dtype::Int4);
    int(r.activations) || int(r.gradients) || r.weight_compute_copies.is_some_and(int)
}
