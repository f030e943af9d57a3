//! Per-GPU memory of a step, phase by phase (memory work owns this).
//!
//! The step is split into phases (training: forward end, loss backward, backward, optimizer step;
//! inference: prefill, decode). Each phase's live tensor bytes are summed per component; the peak is
//! the largest phase, never a sum over phases. The GPU total adds the CUDA context and the
//! allocator reserve. With pipeline parallelism the first and last stages are both computed and the
//! larger one reported (`peak_stage`). Formulas and sources: docs/model.md.

pub mod activations;
pub mod blocks;
pub mod cnn;
pub mod ctx;
pub mod frameworks;
pub mod inference;
pub mod inventory;
pub mod layer_kinds;
pub mod peft;
pub mod states;
pub mod towers;
pub mod training;

use self::ctx::Ctx;
use self::training::{Parts, Stage};
use super::model::ResolvedModel;
use super::resolve::{Resolved, resolve_with_model};
use super::{Breakdown, Component, Diagnostic, Diagnostics, MemoryEstimate, Offloaded, PhasePeaks};
use crate::scenario::{GpuChoice, Mode, ModelFamily, OffloadTarget, Scenario, ZeroStage};
use crate::units::{Bytes, MIB};

/// The memory estimate of `scenario` whose model `model` is already resolved: resolves the scenario
/// ([`resolve_with_model`]) and estimates it ([`estimate_resolved`]).
pub fn estimate_memory(
    scenario: &Scenario,
    model: &ResolvedModel,
    diagnostics: &mut Diagnostics,
) -> MemoryEstimate {
    estimate_resolved(
        &resolve_with_model(scenario, model, diagnostics),
        diagnostics,
    )
}

/// The memory estimate of a resolved scenario.
pub fn estimate_resolved(r: &Resolved, diagnostics: &mut Diagnostics) -> MemoryEstimate {
    let (scenario, model) = (&r.scenario, r.model);
    let x = peft::Ext::new(scenario, model);
    let c = x.base_ctx(Ctx::of(r));
    structural_diagnostics(scenario, model, &c, diagnostics);
    let l = f64::from(model.layers.max(1));
    let per_stage = ctx::ceil(l / c.pp);
    // One layer of one micro-batch: the same on every stage.
    let (z, acts) = layer_kinds::average_layer(&c, model, c.b, c.s);
    let layer = (z, peft::lora_layer(&c, model, &z, &x, acts));
    // The stages' phases are large (`PhasePeaks`): kept where `stage` wrote them and passed on by
    // reference, so each is copied once, into the result.
    let mut first = stage(&c, &x, model, &layer, per_stage, true, c.pp <= 1.0);
    // llama.cpp: its own buffers, every GPU of the layout one device of its layer split.
    if let Some((phases, host)) = super::engines::llamacpp::memory::phases(r) {
        (first.0, first.1.host) = (phases, host);
        return finish(scenario, model, &c, &x, (&first, 0), &layer.1, diagnostics);
    }
    if c.pp <= 1.0 {
        return finish(scenario, model, &c, &x, (&first, 0), &layer.1, diagnostics);
    }
    let last_layers = (l - per_stage * (c.pp - 1.0)).max(1.0);
    let last = stage(&c, &x, model, &layer, last_layers, false, true);
    let chosen = if tensor_peak(&last.0) > tensor_peak(&first.0) {
        (&last, (c.pp - 1.0) as u32)
    } else {
        (&first, 0u32)
    };
    let mut out = finish(scenario, model, &c, &x, chosen, &layer.1, diagnostics);
    out.stages = [
        stage_total(scenario, &first.0, &out),
        stage_total(scenario, &last.0, &out),
    ];
    out
}

/// One pipeline stage's peak with the same CUDA context and allocator rule as the reported peak (the
/// chart's per-stage bars).
fn stage_total(sc: &Scenario, phases: &PhasePeaks, est: &MemoryEstimate) -> Option<Breakdown> {
    let (_, mut b) = phases.peak()?;
    let o = &sc.overheads;
    let reserve = o.allocator_reserve_fraction * b.tensor_total().get() + o.workspace_mib * MIB;
    b.set(Component::CudaContext, est.peak.get(Component::CudaContext));
    b.set(Component::AllocatorReserve, Bytes(reserve));
    Some(b)
}

fn tensor_peak(p: &PhasePeaks) -> f64 {
    p.peak().map_or(0.0, |(_, b)| b.tensor_total().get())
}

/// Phases and model states of one pipeline stage.
fn stage(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    layer: &(activations::Sizes, activations::LayerActs),
    layers: f64,
    first: bool,
    last: bool,
) -> (PhasePeaks, states::ModelStates) {
    let inv = inventory::Inventory::stage(c, x, m, layers, first, last);
    let params = inv.base_elems();
    let mut st = states::model_states(c, m, &inv, x.optimizer);
    // Transformer Engine's FP8 scales and amax histories of the stage's layers (`states`).
    st.weights += states::fp8_meta_bytes(c.fp8, layers);
    let opt_temp = states::optimizer_temp(c, m, &inv, x.optimizer);
    let share = params * c.tp / m.params.total.max(1.0);
    let zero3 = c.zero == ZeroStage::Stage3 || c.offload_params != OffloadTarget::None;
    let cast_elems = match c.mode {
        Mode::Training => m.matmul_weights,
        Mode::Inference => m.matmul_weights + m.matmul_biases,
    };
    // The torch paths: autocast's cast set (not the `grouped_mm` experts; `blocks::autocast_elems`).
    let cast_elems = if c.amp && blocks::applies(c, m) {
        blocks::autocast_elems(m, cast_elems)
    } else {
        cast_elems
    };
    let casts = if c.amp {
        c.ec * cast_elems * share / c.tp / if zero3 { c.dp } else { 1.0 }
    } else {
        0.0
    };
    let casts = x.casts(c, m, casts, cast_elems);
    let gathered = if zero3 {
        2.0 * m.params.per_layer / c.tp * c.ec.min(c.e_weights.max(c.ec))
    } else {
        0.0
    };
    if m.family == ModelFamily::Cnn {
        let inputs = if c.image_input { c.input_bytes } else { 0.0 };
        let extra = cnn::Extra {
            opt_temp,
            casts,
            inputs,
        };
        if let Some(p) = cnn::phases(c, m, &st, &extra) {
            return (p, st);
        }
    }
    if m.family != ModelFamily::Transformer {
        return (other_family(c, m, &st, opt_temp, casts), st);
    }
    // Each arm builds the result in place (the phases are large; a shared temporary would be copied).
    if c.mode == Mode::Inference {
        let weights = st.weights + gathered;
        return (inference::phases(c, m, weights, casts, layers, last), st);
    }
    let comm = if c.dp > 1.0 { c.comm_bytes } else { 0.0 };
    let parts = Parts {
        states: st,
        opt_temp,
        casts,
        comm,
        gathered,
        layer: layer.1,
        z: layer.0,
        framework: frameworks::hf::lora_stage(c, m, &layer.0, x, (first, last)),
    };
    let in_flight = if first {
        c.in_flight_microbatches()
    } else {
        1.0
    };
    (
        training::phases(
            c,
            m,
            &parts,
            Stage {
                layers,
                first,
                last,
                in_flight,
            },
        ),
        st,
    )
}

/// CNN and recommender: model states plus per-sample activations (training saves them all; an
/// inference forward keeps about a quarter live at once, an assumption: the largest stages of a
/// ResNet hold most of the feature-map bytes).
fn other_family(
    c: &Ctx,
    m: &ResolvedModel,
    st: &states::ModelStates,
    opt_temp: f64,
    casts: f64,
) -> PhasePeaks {
    use crate::estimator::Phase;
    let acts = c.b * m.act_bytes_per_sample_fp32 * c.ec / 4.0 * c.saved_scale();
    let mut out = PhasePeaks::default();
    let mut set = |ph: Phase, grads: f64, opt: f64, a: f64, t: f64| {
        let mut b = Breakdown::default();
        b.set(Component::Weights, Bytes(st.weights));
        b.set(Component::MasterWeights, Bytes(st.master));
        b.set(Component::Gradients, Bytes(grads));
        b.set(Component::OptimizerStates, Bytes(opt));
        b.set(Component::Activations, Bytes(a));
        b.set(Component::Transient, Bytes(t));
        out.set(ph, b);
    };
    // Image batches (and prefetched ones) stay resident on the GPU through the step.
    let inputs = if c.image_input { c.input_bytes } else { 0.0 };
    let casts = casts + inputs;
    match c.mode {
        Mode::Training => {
            let g_fwd = if c.grad_accum > 1.0 { st.grads } else { 0.0 };
            set(Phase::Forward, g_fwd, st.optimizer, acts, casts);
            set(Phase::Backward, st.grads, st.optimizer, acts * 0.5, casts);
            set(
                Phase::OptimizerStep,
                st.grads,
                st.optimizer,
                0.0,
                opt_temp + inputs,
            );
        }
        Mode::Inference => set(Phase::Prefill, 0.0, 0.0, 0.0, casts + acts * 0.25),
    }
    out
}

fn structural_diagnostics(sc: &Scenario, m: &ResolvedModel, c: &Ctx, d: &mut Diagnostics) {
    let (experts, ep) = (m.moe.experts, m.moe.ep.max(1));
    if experts > 0 && ep > 1 {
        if f64::from(ep) > c.dp {
            d.insert(Diagnostic::ExpertParallelExceedsDp);
        }
        if !experts.is_multiple_of(ep) {
            d.insert(Diagnostic::ExpertParallelDoesNotDivideExperts);
        }
    }
    let t = sc.parallel.tp.max(1);
    if m.family == ModelFamily::Transformer && t > 1 {
        if !m.heads.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideHeads);
        }
        if !m.kv_heads.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideKvHeads);
        }
        if !m.ffn.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideFfn);
        }
        if !m.vocab.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideVocab);
        }
    }
    let p = sc.parallel.pp.max(1);
    if p > 1 && !m.layers.is_multiple_of(p) {
        d.insert(Diagnostic::PpDoesNotDivideLayers);
    }
    if p > m.layers {
        d.insert(Diagnostic::PpMoreStagesThanLayers);
    }
    if c.zero != ZeroStage::None && c.dp <= 1.0 {
        d.insert(Diagnostic::ZeroWithoutDataParallel);
    }
    if sc.parallel.sequence_parallel && c.tp <= 1.0 {
        d.insert(Diagnostic::SequenceParallelWithoutTp);
    }
    let offload =
        c.offload_optimizer != OffloadTarget::None || c.offload_params != OffloadTarget::None;
    if offload && c.zero == ZeroStage::None {
        d.insert(Diagnostic::OffloadWithoutZero);
    }
}

fn capacity(gpu: &GpuChoice) -> Bytes {
    match gpu {
        GpuChoice::Catalog(id) => crate::hardware::capacity(*id),
        GpuChoice::Custom(g) => Bytes::from_gb(g.memory_gb),
    }
}

fn finish(
    sc: &Scenario,
    m: &ResolvedModel,
    c: &Ctx,
    x: &peft::Ext,
    ((phases, st), peak_stage): (&(PhasePeaks, states::ModelStates), u32),
    layer: &activations::LayerActs,
    d: &mut Diagnostics,
) -> MemoryEstimate {
    let o = &sc.overheads;
    let (peak_phase, mut peak) = match phases.peak() {
        Some((p, b)) => (Some(p), b),
        None => (None, Breakdown::default()),
    };
    let tensor_peak = peak.tensor_total();
    let context = Bytes(o.cuda_context_mib * MIB);
    let reserve = Bytes(o.allocator_reserve_fraction * tensor_peak.get() + o.workspace_mib * MIB);
    peak.set(Component::CudaContext, context);
    peak.set(Component::AllocatorReserve, reserve);
    let gpu_total = peak.total();
    let capacity = capacity(&sc.gpu);
    let over = gpu_total.get() - capacity.get();
    let spill = if over > 0.0 && over <= c.second_tier_bytes {
        over
    } else {
        0.0
    };
    let fits = over <= 0.0 || spill > 0.0;
    if spill > 0.0 {
        d.insert(Diagnostic::FitsOnlyWithSecondTier);
    } else if !fits {
        d.insert(Diagnostic::DoesNotFit);
    }
    let layer_w = m.params.per_layer / c.tp * c.e_weights;
    let kv_layer = if m.arch == crate::scenario::ArchKind::Encoder || c.mode == Mode::Training {
        0.0
    } else {
        // One layer's share of the cache at the last decode step (an average layer when kinds differ).
        let tokens = inference::kv_tokens(c).1;
        m.cache_bytes(&inference::cache_shape(c, 1.0), c.b, tokens / c.b.max(1.0))
    };
    // Inference (no_grad) saves nothing for backward: only weights and KV per layer.
    let none = activations::LayerActs::default();
    let layer = if c.mode == Mode::Training {
        layer
    } else {
        &none
    };
    let parts_layer = training::layer_breakdown(layer, layer_w, kv_layer);
    let mut params = m.params;
    // Expert parallelism splits where experts live, not how many are trained.
    params.trainable = if x.lora() {
        x.adapters_per_layer * f64::from(m.layers)
    } else if m.family != crate::scenario::ModelFamily::Transformer && m.params.trainable > 0.0 {
        // A layer-table CNN / vision model's own count (DiT's fixed `pos_embed` excluded).
        m.params.trainable
    } else {
        inventory::stage_params_all_experts(c, m, f64::from(m.layers), true, true) * c.tp
    };
    MemoryEstimate {
        params,
        phases: *phases,
        peak_phase,
        peak,
        tensor_peak,
        gpu_total,
        capacity,
        fits,
        headroom: capacity - gpu_total,
        offloaded: Offloaded {
            host: Bytes(st.host),
            nvme: Bytes(st.nvme),
            second_tier: Bytes(spill),
        },
        per_layer: parts_layer,
        peak_stage,
        stages: [None, None],
    }
}
