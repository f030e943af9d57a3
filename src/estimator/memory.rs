//! Per-GPU memory of a step, phase by phase (memory work owns this).
//!
//! The step is split into phases (training: forward end, loss backward, backward, optimizer step;
//! inference: prefill, decode). Each phase's live tensor bytes are summed per component; the peak is
//! the largest phase, never a sum over phases. The GPU total adds the CUDA context, NCCL's buffers
//! (`nccl`) and the allocator reserve. With pipeline parallelism every distinct stage class (`memory::pipeline`) is
//! computed and the limiting one reported (`peak_stage`). Formulas and sources: docs/model.md.

pub mod activations;
pub mod blocks;
pub mod cnn;
pub mod context_parallel;
pub mod ctx;
pub mod frameworks;
pub mod inference;
pub mod inventory;
pub mod layer_kinds;
mod layer_moments;
pub mod nccl;
pub mod peft;
pub mod per_op;
pub mod pipeline;
pub mod post_training;
pub mod serving;
pub mod states;
pub mod towers;
pub mod training;

use self::ctx::Ctx;
use self::training::{Parts, Stage};
use super::model::ResolvedModel;
use super::resolve::{Resolved, resolve_with_model};
use super::{
    Breakdown, Component, Diagnostic, Diagnostics, MAX_STAGE_CLASSES, MemoryEstimate, Offloaded,
    PhasePeaks, StageClass, StageRole,
};
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

/// What every stage of a resolved scenario is estimated from: the context, PEFT's view of it, one
/// layer of one micro-batch (the same on every stage), where the stage classes sit and the GPU's
/// capacity. Shared by the estimate and by [`stage_phases`], which recomputes one class.
struct Setup {
    c: Ctx,
    x: peft::Ext,
    layer: (activations::Sizes, activations::LayerActs),
    places: [Option<pipeline::Place>; MAX_STAGE_CLASSES],
    gpu: f64,
}

/// How the scenario's framework spreads the layers its pipeline degree does not divide: vLLM
/// serving its own way, everything else as DeepSpeed (`pipeline::Split`).
fn split(sc: &Scenario) -> pipeline::Split {
    if sc.mode == Mode::Inference
        && matches!(
            sc.inference.engine,
            Some(crate::scenario::ServingEngine::Vllm(_))
        )
    {
        pipeline::Split::BeforeLast
    } else {
        pipeline::Split::FirstStages
    }
}

impl Setup {
    fn of(r: &Resolved) -> Setup {
        let (scenario, model) = (&r.scenario, r.model);
        let x = peft::Ext::new(scenario, model);
        let c = x.base_ctx(Ctx::of(r));
        let (z, acts) = layer_kinds::average_layer(&c, model, c.b, c.s);
        let lora = peft::lora_layer(&c, model, &z, &x, acts);
        let layer = (z, frameworks::lora_layer(&c, model, &z, &x, lora));
        Setup {
            places: pipeline::classes(model.layers.max(1), r.pp_stages.max(1), split(scenario)),
            gpu: capacity(&scenario.gpu).get(),
            c,
            x,
            layer,
        }
    }

    /// The phases and states of the stage class at `place`.
    fn stage(
        &self,
        m: &ResolvedModel,
        place: &pipeline::Place,
    ) -> (PhasePeaks, states::ModelStates) {
        let s = place_stage(&self.c, place);
        stage_of(&self.c, &self.x, m, &self.layer, s, self.gpu)
    }
}

/// The memory estimate of a resolved scenario.
pub fn estimate_resolved(r: &Resolved, diagnostics: &mut Diagnostics) -> MemoryEstimate {
    let (scenario, model) = (&r.scenario, r.model);
    let setup = Setup::of(r);
    let Setup {
        c,
        x,
        layer,
        places,
        ..
    } = &setup;
    structural_diagnostics(scenario, model, c, diagnostics);
    // The result from the limiting stage's phases and states (`at`: its place).
    let done =
        |stage: &(PhasePeaks, states::ModelStates),
         at: Option<&pipeline::Place>,
         d: &mut Diagnostics| { finish(scenario, model, c, x, (stage, at), &layer.1, d) };
    let [Some(first_place), ..] = places else {
        return done(&Default::default(), None, diagnostics);
    };
    // The stages' phases are large (`PhasePeaks`): kept where `stage` wrote them and passed on by
    // reference, so each is copied once, into the result.
    let mut first = setup.stage(model, first_place);
    // llama.cpp: its own buffers, every GPU of the layout one device of its layer split.
    if let Some((phases, host)) = super::engines::llamacpp::memory::phases(r) {
        (first.0, first.1.host) = (phases, host);
        return done(&first, Some(first_place), diagnostics);
    }
    if c.pp <= 1.0 {
        return done(&first, Some(first_place), diagnostics);
    }
    let mut computed = [None; MAX_STAGE_CLASSES];
    for (i, (slot, place)) in computed.iter_mut().zip(places).enumerate() {
        *slot = match place {
            _ if i == 0 => Some(first),
            Some(place) => Some(setup.stage(model, place)),
            None => None,
        };
    }
    let chosen = limiting_index(&computed);
    let (Some(Some(limiting)), Some(Some(place))) = (computed.get(chosen), places.get(chosen))
    else {
        return done(&Default::default(), None, diagnostics);
    };
    let mut out = done(limiting, Some(place), diagnostics);
    let context = out.peak.get(Component::CudaContext);
    for ((slot, s), place) in out.stages.iter_mut().zip(&computed).zip(places) {
        if let (Some((phases, _)), Some(place)) = (s, place) {
            *slot = stage_class(scenario, (c, model), place, phases, context);
        }
    }
    out
}

/// Where a class's first stage sits: its layers, role and micro-batches in flight.
fn place_stage(c: &Ctx, place: &pipeline::Place) -> Stage {
    let single = c.pp <= 1.0;
    Stage {
        layers: f64::from(place.layers),
        first: place.role == StageRole::First,
        last: place.role == StageRole::Last || single,
        in_flight: if c.mode == Mode::Training {
            c.in_flight_at(f64::from(place.first))
        } else {
            1.0
        },
    }
}

/// A stage class of the result: its phases and its peak with the reported peak's CUDA context, NCCL
/// buffers and allocator rule.
fn stage_class(
    sc: &Scenario,
    (c, m): (&Ctx, &ResolvedModel),
    place: &pipeline::Place,
    phases: &PhasePeaks,
    context: Bytes,
) -> Option<StageClass> {
    let peak = stage_total(sc, (c, m), phases, place_stage(c, place), context)?;
    Some(StageClass {
        role: place.role,
        first: place.first,
        count: place.count,
        layers: place.layers,
        in_flight: place_stage(c, place).in_flight,
        peak_phase: phases.peak().map(|(p, _)| p),
        peak,
    })
}

/// The phases of the stage class whose first stage is `first` (0-based) of `scenario`, estimated as
/// `est` ([`stage_phases`] after resolving the scenario with the estimate's model). Under vLLM with
/// pipeline stages every phase's KV cache is the class's pool (`EngineFigures::stages`), as the
/// class's peak counts it.
pub fn stage_phases_of(
    scenario: &Scenario,
    est: &super::Estimate,
    first: u32,
) -> Option<PhasePeaks> {
    let class = est
        .memory
        .stages
        .iter()
        .position(|s| s.is_some_and(|s| s.first == first))?;
    let mut d = Diagnostics::default();
    let r = resolve_with_model(scenario, &est.model, &mut d);
    let mut phases = stage_phases(&r, &est.memory, class)?;
    if let Some(share) = est
        .engine
        .and_then(|f| f.stages.get(class).copied().flatten())
    {
        for b in phases.0.iter_mut().flatten() {
            b.set(Component::KvCache, share.pool);
        }
    }
    Some(phases)
}

/// The phases of stage class `class` (an index into [`MemoryEstimate::stage_classes`]' slots) of a
/// resolved scenario whose memory estimate is `mem`. The estimate keeps only each class's peak
/// (its phases would make every estimate several kB larger, copied on every call); a view that
/// shows another class's phases asks for them here. The limiting class's are `mem.phases`.
pub fn stage_phases(r: &Resolved, mem: &MemoryEstimate, class: usize) -> Option<PhasePeaks> {
    let limiting = mem.limiting_stage().map(|s| s.first);
    let wanted = mem.stages.get(class).copied().flatten()?;
    if limiting == Some(wanted.first) {
        return Some(mem.phases);
    }
    let setup = Setup::of(r);
    let place = setup.places.get(class).copied().flatten()?;
    Some(setup.stage(r.model, &place).0)
}

/// [`stage_phases`] of every class slot, the scenario set up once (vLLM's per-stage pools need
/// them all).
pub fn all_stage_phases(
    r: &Resolved,
    mem: &MemoryEstimate,
) -> [Option<PhasePeaks>; MAX_STAGE_CLASSES] {
    let limiting = mem.limiting_stage().map(|s| s.first);
    let setup = Setup::of(r);
    let mut out = [None; MAX_STAGE_CLASSES];
    for ((slot, class), place) in out.iter_mut().zip(&mem.stages).zip(&setup.places) {
        *slot = match (class, place) {
            (Some(c), _) if limiting == Some(c.first) => Some(mem.phases),
            (Some(_), Some(place)) => Some(setup.stage(r.model, place).0),
            _ => None,
        };
    }
    out
}

/// One pipeline stage's peak with the same CUDA context, NCCL buffers and allocator rule as the
/// reported peak (the chart's per-stage bars).
fn stage_total(
    sc: &Scenario,
    (c, m): (&Ctx, &ResolvedModel),
    phases: &PhasePeaks,
    st: Stage,
    context: Bytes,
) -> Option<Breakdown> {
    let (_, mut b) = phases.peak()?;
    let pools = frameworks::fsdp::stream_pools(c, m, phases, st);
    let reserve = stage_reserve(sc, b.tensor_total().get(), pools);
    b.set(Component::NcclBuffers, Bytes(nccl::bytes(sc, c)));
    b.set(Component::CudaContext, context);
    b.set(Component::AllocatorReserve, Bytes(reserve));
    Some(b)
}

/// One stage's phases and states, with post-training's other models and phases added to every
/// stage it holds a share of.
fn stage_of(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    layer: &(activations::Sizes, activations::LayerActs),
    place: Stage,
    gpu: f64,
) -> (PhasePeaks, states::ModelStates) {
    let (mut phases, st) = stage(c, x, m, layer, place);
    post_training::apply(
        c,
        m,
        &st,
        x.lora(),
        place.layers,
        place.last,
        gpu,
        &mut phases,
    );
    (phases, st)
}

/// The limiting stage class: the largest tensor peak (the earliest class on a tie).
fn limiting_index(computed: &[Option<(PhasePeaks, states::ModelStates)>]) -> usize {
    let mut chosen = 0;
    for (i, s) in computed.iter().enumerate() {
        let best = computed.get(chosen).copied().flatten();
        if let (Some(s), Some(b)) = (s, best)
            && tensor_peak(&s.0) > tensor_peak(&b.0)
        {
            chosen = i;
        }
    }
    chosen
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
    place: Stage,
) -> (PhasePeaks, states::ModelStates) {
    let Stage {
        layers,
        first,
        last,
        ..
    } = place;
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
        2.0 * inventory::rank_block_params(c, m) * c.ec
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
        framework_last: frameworks::hf::lora_stage(c, m, &layer.0, x, (false, last)).0,
    };
    (training::phases(c, m, &parts, place), st)
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
    if experts > 0 && sc.model.moe.etp > 0 && c.etp != f64::from(sc.model.moe.etp) {
        d.insert(Diagnostic::ExpertTpNotModelled);
    }
    if experts > 0 && ep > 1 {
        // EP ranks come out of the DP × CP × TP ÷ ETP ranks (`ctx::expert_ranks`), in whole groups
        // (Megatron-Core asserts world ÷ (ETP × EP × PP) whole).
        let p = &sc.parallel;
        let data_ranks = f64::from(p.dp.max(1)) * f64::from(p.cp.max(1));
        let ranks = ctx::expert_ranks(data_ranks, f64::from(p.tp), c.etp);
        if f64::from(ep) > ranks || (ranks / f64::from(ep)).fract() != 0.0 {
            d.insert(Diagnostic::ExpertParallelExceedsDp);
        }
        if !experts.is_multiple_of(ep) {
            d.insert(Diagnostic::ExpertParallelDoesNotDivideExperts);
        }
    }
    if c.framework.megatron_local && c.cp > 1.0 {
        d.insert(Diagnostic::MegatronLocalLayersWithoutCp);
    }
    // Megatron's default dispatcher gathers over TP × EP; at EP > 1 runs usually pick all-to-all.
    if c.profile == crate::scenario::Profile::Megatron
        && c.mode == crate::scenario::Mode::Training
        && experts > 0
        && ep > 1
        && !c.framework.megatron_alltoall()
    {
        d.insert(Diagnostic::MegatronAllGatherDispatcher);
    }
    let t = sc.parallel.tp.max(1);
    if m.family == ModelFamily::Transformer && t > 1 {
        if !m.heads.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideHeads);
        }
        if engine_refuses_tp(sc, m, t) {
            d.insert(Diagnostic::EngineNeedsTpDividingHeads);
        }
        if !m.kv_heads.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideKvHeads);
            if sc.implementation.profile == crate::scenario::Profile::Megatron {
                d.insert(Diagnostic::MegatronNeedsTpDividingKvHeads);
            }
        }
        if m.moe.experts > 0 && sc.megatron_moe_needs_sp() && !sc.parallel.sequence_parallel {
            d.insert(Diagnostic::MegatronMoeNeedsSequenceParallel);
        }
        if !m.ffn.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideFfn);
        }
        if !m.vocab.is_multiple_of(t) {
            d.insert(Diagnostic::TpDoesNotDivideVocab);
        }
    }
    cp_diagnostics(sc, m, c, d);
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
    // Selected, but set aside by `Ctx` (under TP), where the torch paths could run at all: training
    // and Hugging Face `generate` (a serving engine runs its own kernels).
    let torch_could_run =
        c.mode == Mode::Training || c.engine == crate::scenario::ServingEngine::HfGenerate;
    let set_aside = ctx::torch_blocks(sc) && !c.torch_blocks;
    if set_aside && torch_could_run && !m.blocks.kinds().is_empty() {
        d.insert(Diagnostic::TorchBlocksWithoutTp);
    }
    let offload =
        c.offload_optimizer != OffloadTarget::None || c.offload_params != OffloadTarget::None;
    if offload && c.zero == ZeroStage::None {
        d.insert(Diagnostic::OffloadWithoutZero);
    }
}

/// vLLM and SGLang refuse tensor parallelism that does not divide the attention heads, or that
/// neither divides the KV heads nor is divided by them: vLLM 0.11.0 `vllm/config/model.py`
/// `ModelConfig.verify_with_parallel_config` ("Total number of attention heads (64) must be
/// divisible by tensor parallel size (3)") and `model_executor/layers/linear.py`
/// `QKVParallelLinear.__init__` (`divide(total_num_kv_heads, tp)` when TP is below the KV heads,
/// `divide(tp, total_num_kv_heads)` replicas when not; `divide` asserts); SGLang 0.5.23 the model
/// attentions (`models/llama.py`, `models/qwen2.py`: `assert total_num_heads % tp_size == 0`, then
/// the same two KV-head assertions). The KV-head rule is only for softmax attention with K/V heads
/// (MLA's latent is not split over TP).
fn engine_refuses_tp(sc: &Scenario, m: &ResolvedModel, tp: u32) -> bool {
    use crate::estimator::model::blocks::MixerShape;
    use crate::scenario::ServingEngine;
    let served = sc.mode == Mode::Inference
        && matches!(
            sc.inference.engine,
            Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_))
        );
    if !served || tp <= 1 {
        return false;
    }
    let kv_heads = m.kv_heads;
    let softmax = m
        .blocks
        .kinds()
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Attention { .. }));
    let kv_split = !softmax
        || if kv_heads >= tp {
            kv_heads.is_multiple_of(tp)
        } else {
            kv_heads > 0 && tp.is_multiple_of(kv_heads)
        };
    !m.heads.is_multiple_of(tp) || !kv_split
}

/// Context-parallel layouts the implementations refuse: DeepSpeed-Ulysses asserts the heads (and
/// the KV heads) of a rank divisible by cp (`deepspeed/sequence/layer.py` v0.19.6,
/// `_generate_layout_params`); Megatron-Core cuts each sequence into 2·cp chunks for the
/// load-balanced causal ring (`get_batch_on_this_cp_rank`, `megatron/core/utils.py` v0.14).
fn cp_diagnostics(sc: &Scenario, m: &ResolvedModel, c: &Ctx, d: &mut Diagnostics) {
    if c.cp <= 1.0 || m.family != ModelFamily::Transformer {
        return;
    }
    let cp = c.cp as u32;
    let t = sc.parallel.tp.max(1);
    if c.cp_style == crate::scenario::CpStyle::AllToAll
        && (!(m.heads / t).is_multiple_of(cp) || !(m.kv_heads.div_ceil(t)).is_multiple_of(cp))
    {
        d.insert(Diagnostic::CpDoesNotDivideHeads);
    }
    if c.cp_style == crate::scenario::CpStyle::Ring && !sc.workload.seq_len.is_multiple_of(2 * cp) {
        d.insert(Diagnostic::CpDoesNotDivideSequence);
    }
}

/// What the fit is measured against: the memory a process can allocate on the GPU.
pub(crate) fn capacity(gpu: &GpuChoice) -> Bytes {
    match gpu {
        GpuChoice::Catalog(id) => crate::hardware::usable(*id),
        // The custom GPU's `memory_gb` as resolved (clamped), read as the catalog reads a
        // datasheet's "GB" (binary: `hardware::Capacity`); no runtime reserve is known.
        GpuChoice::Custom(g) => Bytes::from_gib(g.memory_gb),
    }
}

/// The allocator reserve: the fraction of the tensor peak (rounding and fragmentation, an
/// assumption), the library workspace, and what FSDP's side streams keep reserved (`pools`,
/// [`frameworks::fsdp::stream_pools`]).
pub fn reserve_bytes(o: &crate::scenario::Overheads, tensor_peak: f64, pools: f64) -> f64 {
    o.allocator_reserve_fraction * tensor_peak + o.workspace_mib * MIB + pools
}

/// The share of the tensor peak the caching allocator rounds and fragments away: the scenario's
/// assumption under PyTorch; none under llama.cpp, whose ggml backend allocates each buffer at its
/// exact size with `cudaMalloc` (`ggml/src/ggml-cuda/ggml-cuda.cu` at 0c1e57098,
/// `ggml_backend_cuda_buffer_type_alloc_buffer` → `ggml_cuda_device_malloc`; docs/engines/llamacpp.md §9).
pub fn reserve_fraction(sc: &Scenario) -> f64 {
    if sc.runs_on_llamacpp() {
        0.0
    } else {
        sc.overheads.allocator_reserve_fraction
    }
}

/// [`reserve_bytes`] with the scenario's runtime rule ([`reserve_fraction`]).
fn stage_reserve(sc: &Scenario, tensor_peak: f64, pools: f64) -> f64 {
    reserve_fraction(sc) * tensor_peak + reserve_bytes(&sc.overheads, 0.0, pools)
}

fn finish(
    sc: &Scenario,
    m: &ResolvedModel,
    c: &Ctx,
    x: &peft::Ext,
    ((phases, st), place): (&(PhasePeaks, states::ModelStates), Option<&pipeline::Place>),
    layer: &activations::LayerActs,
    d: &mut Diagnostics,
) -> MemoryEstimate {
    let o = &sc.overheads;
    let peak_stage = place.map_or(0, |p| p.first);
    let (peak_phase, mut peak) = match phases.peak() {
        Some((p, b)) => (Some(p), b),
        None => (None, Breakdown::default()),
    };
    let tensor_peak = peak.tensor_total();
    // A llama.cpp CPU build creates no CUDA context and allocates nothing on a GPU.
    let gpu = !sc.runs_on_cpu_only();
    let on_gpu = |b: f64| Bytes(if gpu { b } else { 0.0 });
    let context = on_gpu(o.running_context_mib() * MIB);
    let pools = place.map_or(0.0, |p| {
        frameworks::fsdp::stream_pools(c, m, phases, place_stage(c, p))
    });
    let reserve = on_gpu(stage_reserve(sc, tensor_peak.get(), pools));
    peak.set(Component::NcclBuffers, on_gpu(nccl::bytes(sc, c)));
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
    let layer_w = inventory::rank_block_params(c, m) * c.e_weights;
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
        inventory::model_params_all_experts(c, m)
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
        stages: [None; MAX_STAGE_CLASSES],
    }
}
