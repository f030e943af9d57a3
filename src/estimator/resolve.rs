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
mod sections;
mod sections2;

pub use pattern::{layer_run, pattern_repeat};

use super::model::{self, ResolvedModel};
use super::num::ceil;
use super::{Diagnostic, Diagnostics};
use crate::scenario::{
    Dtype, Implementation, Mode, ModelSpec, Optimizer, PrecisionSpec, Scenario, ServingEngine,
    ZeroStage,
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
    /// The degree ZeRO shards over: DP, or under FSDP HYBRID_SHARD (`strategies.hybrid_shard` with a
    /// ZeRO stage) the DP ranks inside one node, gpus_per_node ÷ (TP × pipeline stages), at least 1 and
    /// at most DP (PyTorch FSDP `ShardingStrategy.HYBRID_SHARD`; TP and PP placed innermost).
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
    } = sc;
    let workload = sections::workload(workload, d);
    let mut strategies = sections2::strategies(strategies, d);
    strategies.attention = hf::attention(implementation, strategies.attention);
    let mut parallel = sections2::parallel(parallel, d);
    let layers = m.layers.max(1);
    if parallel.pp_microbatches == 0 {
        parallel.pp_microbatches = workload.grad_accum_steps;
    }
    if strategies.checkpoint_every == 0 {
        // ⌈√L⌉ segments of ⌈√L⌉ layers minimise stored + recomputed activations (Chen et al. 2016
        // "Training Deep Nets with Sublinear Memory Cost").
        strategies.checkpoint_every = ceil(f64::from(layers).sqrt()) as u32;
    }
    let pp_stages = parallel.pp.min(layers);
    if *mode == Mode::Training && integer_training(precision) {
        d.insert(Diagnostic::IntegerTrainingType);
    }
    hf::diagnostics(sc, d);
    let zero_dp = if strategies.hybrid_shard && strategies.zero != ZeroStage::None {
        let per_node = parallel.gpus_per_node / (parallel.tp.saturating_mul(pp_stages)).max(1);
        parallel.dp.min(per_node.max(1))
    } else {
        parallel.dp
    };
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
                i
            },
            precision: precision_of(precision),
            optimizer: optimizer_of(optimizer, d),
            strategies,
            parallel,
            gpu: sections2::gpu(gpu, d),
            implementation: implementation_of(implementation),
            overheads: sections2::overheads(overheads, d),
            timing: sections2::timing(timing, d),
            input: sections2::input(input, d),
            peft: sections2::peft(peft, d),
            quantization: sections2::quantization(quantization, d),
        },
        model: m,
        pp_stages,
        zero_dp,
    }
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
    } = o;
    Optimizer {
        kind: *kind,
        foreach: *foreach,
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

fn implementation_of(i: &Implementation) -> Implementation {
    let Implementation {
        profile,
        dropout_mask,
        fused_cross_entropy,
        block_kernels,
        hf,
    } = i;
    Implementation {
        profile: *profile,
        dropout_mask: *dropout_mask,
        fused_cross_entropy: *fused_cross_entropy || hf::fused_head(*profile, hf),
        block_kernels: *block_kernels,
        hf: hf::resolve(hf),
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
