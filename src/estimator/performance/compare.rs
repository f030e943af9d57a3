//! The architecture comparison: the current scenario on every catalog GPU, and the current GPU's
//! compute with every memory technology (at the technology's stated device count) as a what-if.
//! A fixed-size, table-shaped value; allocation-free.
//!
//! Largest batch per row: [`super::batch_fit`] (memory probed at powers of two, then each phase's
//! line inside the bracket) — no bisection.

use serde::Serialize;

use super::batch_fit::BatchFit;
use super::types::{Bound, Performance};
use super::{compute_dtype, core};
use crate::estimator::{Diagnostics, memory, model, resolve};
use crate::hardware::{
    self, ArticleTech, Capacity, Confidence, GpuId, GpuSpec, MemoryTech, TechSpec, article_tech,
    tech,
};
use crate::scenario::{CustomGpu, GpuChoice, Mode, Scenario};
use crate::units::{Bytes, BytesPerSec, FlopsPerSec};

/// The largest batch the comparison reports (the scenario's valid range for a micro-batch).
pub const MAX_BATCH: u32 = 65_536;

/// What a row evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RowKind {
    Gpu(GpuId),
    /// The scenario's GPU compute with this memory technology.
    Tech(MemoryTech),
    /// The same with the seed article's figures.
    Article(ArticleTech),
}

impl Default for RowKind {
    fn default() -> Self {
        RowKind::Gpu(GpuId::default())
    }
}

/// One row of the comparison. `None` = unknown (an unsourced figure), never invented.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ComparisonRow {
    pub kind: RowKind,
    pub label: &'static str,
    pub memory: MemoryTech,
    /// Devices (stacks, chips, channels) of a technology row; 0 for GPU rows.
    pub devices: u32,
    pub capacity: Option<Bytes>,
    pub bandwidth: BytesPerSec,
    pub peak: FlopsPerSec,
    pub latency_ns: Option<f64>,
    pub energy_pj_per_bit: Option<f64>,
    pub fits: Option<bool>,
    /// capacity − needed (negative when it does not fit).
    pub headroom: Option<Bytes>,
    /// Largest micro-batch (inference with dynamic batching: concurrent requests) that fits;
    /// `None` without a capacity or under a serving engine (vLLM, SGLang, llama.cpp), whose
    /// startup KV cache bounds the requests at once.
    pub max_batch: Option<u32>,
    /// Whether the device has a sourced peak for the compute type. Without one, `step_time_s` and
    /// `tokens_per_s` count memory traffic only: a lower bound on time, to show as such.
    pub peak_known: bool,
    /// Training: one optimizer step. Inference: time per output token (prefill time if none).
    pub step_time_s: f64,
    pub tokens_per_s: f64,
    pub bound: Bound,
    /// Energy of one step's memory traffic on one GPU, J.
    pub memory_energy_per_step_j: Option<f64>,
    pub confidence: Confidence,
}

/// The whole comparison.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// Per-GPU memory the scenario needs (the memory estimate's GPU total).
    pub needed: Bytes,
    /// Memory each batch element adds once activations / KV cache dominate the peak.
    pub per_batch: Bytes,
    /// The GPU whose compute the technology rows use.
    pub base_gpu: &'static str,
    pub gpus: [ComparisonRow; GpuId::COUNT],
    pub techs: [ComparisonRow; MemoryTech::COUNT],
    pub article: [ComparisonRow; ArticleTech::COUNT],
}

impl Comparison {
    /// GPU rows, then technology rows, then the article's rows.
    pub fn rows(&self) -> impl Iterator<Item = &ComparisonRow> {
        self.gpus
            .iter()
            .chain(self.techs.iter())
            .chain(self.article.iter())
    }
}

/// Compares the scenario across the catalog. Pure and allocation-free.
pub fn compare(scenario: &Scenario) -> Comparison {
    let mut d = Diagnostics::default();
    let spec = resolve::model_spec(&scenario.model, &mut d);
    let model = model::derive(
        &spec,
        &scenario.model.pattern,
        &scenario.model.towers,
        &mut d,
    );
    let r = resolve::resolve_rest(scenario, spec, &model, &mut d);
    let (scenario, model) = (&r.scenario, r.model);
    let mem = memory::estimate_resolved(&r, &mut d);
    // A serving engine's reservation on this GPU (it never spills to a second tier); the requests'
    // memory otherwise.
    let held = crate::estimator::engines::reservation::held(&r, &mem);
    let needed = held.map_or(mem.gpu_total, |m| m.gpu_total);
    let mut fit = BatchFit::new(scenario, model);
    // A serving engine sizes its KV cache at startup: the requests it holds at once are read off
    // that cache (`solver::max_fitting`), not off this GPU's capacity.
    let batch_free = scenario.served_from_a_startup_kv_cache();
    let base_hw = scenario.gpu.spec();
    let mut row =
        |kind: RowKind, hw: &GpuSpec, devices: u32, cap: Option<Bytes>, d: &mut Diagnostics| {
            let i = super::inputs::Inputs::new(scenario, hw, compute_dtype(scenario), d);
            let p = core(scenario, model, &mem, &i, None);
            let mut out = make_row(kind, hw, devices, cap, needed, &p, scenario.mode);
            // What the GPU cannot hold may spill to the scenario's second tier, as on its own GPU:
            // it fits, and so does a batch whose spill the tier holds.
            let tier = if held.is_some() {
                0.0
            } else {
                i.tier_capacity.max(0.0)
            };
            out.fits = cap.map(|c| needed.get() - c.get() <= tier);
            out.max_batch = cap
                .filter(|_| !batch_free)
                .map(|c| fit.max_batch(c.get() + tier));
            out
        };
    let gpus = GpuId::ALL.map(|id| {
        let hw = hardware::gpu(id);
        let mut row = row(RowKind::Gpu(id), &hw, 0, Some(hw.usable()), &mut d);
        // A serving engine holds its budget on each GPU: it fits where it starts and its
        // reservation there fits (`engines::reservation`).
        if let Some(m) = crate::estimator::engines::reservation::on_gpu(&r, &mem, id) {
            row.fits = Some(m.fits);
            row.headroom = Some(m.headroom);
        }
        row
    });
    // A serving engine sizes its budget from the device it runs on, here a technology's (the
    // article's rows too: they were held to the scenario GPU's pool).
    let on_engine = |mut row: ComparisonRow, cap: Option<Bytes>| {
        let engine =
            cap.and_then(|c| crate::estimator::engines::reservation::on_capacity(&r, &mem, c));
        if let Some(m) = engine {
            row.fits = Some(m.fits);
            row.headroom = Some(m.headroom);
        }
        row
    };
    let techs = MemoryTech::ALL.map(|t| {
        let spec = tech(t);
        let hw = with_tech(&base_hw, &spec);
        let cap = spec.capacity();
        on_engine(row(RowKind::Tech(t), &hw, spec.devices, cap, &mut d), cap)
    });
    let article = ArticleTech::ALL.map(|a| {
        let spec = article_tech(a);
        let hw = with_tech(&base_hw, &spec);
        let cap = spec.capacity();
        on_engine(
            row(RowKind::Article(a), &hw, spec.devices, cap, &mut d),
            cap,
        )
    });
    Comparison {
        needed,
        per_batch: Bytes(fit.slope()),
        base_gpu: base_hw.name,
        gpus,
        techs,
        article,
    }
}

/// One row of the table; `fits` and `max_batch` are left to the caller, which knows the
/// scenario's second tier.
fn make_row(
    kind: RowKind,
    hw: &GpuSpec,
    devices: u32,
    cap: Option<Bytes>,
    needed: Bytes,
    p: &Performance,
    mode: Mode,
) -> ComparisonRow {
    let step_time_s = match mode {
        Mode::Training => p.step.total_s,
        Mode::Inference if p.throughput.tpot_s > 0.0 => p.throughput.tpot_s,
        Mode::Inference => p.throughput.ttft_s,
    };
    ComparisonRow {
        kind,
        label: match kind {
            RowKind::Gpu(_) => hw.name,
            RowKind::Tech(t) => tech(t).name,
            RowKind::Article(a) => article_tech(a).name,
        },
        memory: hw.memory,
        devices,
        capacity: cap,
        bandwidth: hw.bandwidth(),
        peak: p.peak,
        latency_ns: hw.latency_ns,
        energy_pj_per_bit: tech(hw.memory)
            .energy_pj_per_bit
            .filter(|_| !matches!(kind, RowKind::Article(_))),
        fits: None,
        headroom: cap.map(|c| Bytes(c.get() - needed.get())),
        max_batch: None,
        peak_known: p.peak_known,
        step_time_s,
        tokens_per_s: p.throughput.tokens_per_s,
        bound: p.step.bound,
        memory_energy_per_step_j: p.cost.memory_energy_per_step_j,
        confidence: hw.confidence,
    }
}

/// `base`'s compute with `t`'s bandwidth, capacity and latency.
fn with_tech(base: &GpuSpec, t: &TechSpec) -> GpuSpec {
    GpuSpec {
        name: base.name,
        memory: t.tech,
        capacity: Capacity::Gib(t.capacity().map_or(0.0, |b| b.as_gib())),
        bandwidth_gb_s: t.bandwidth().as_gb_per_s(),
        latency_ns: t.latency_ns,
        confidence: t.confidence,
        ..*base
    }
}

/// A copy of the scenario whose free-text fields are empty: no heap allocation.
pub(super) fn light_copy(s: &Scenario) -> Scenario {
    Scenario {
        version: s.version,
        name: String::new(),
        notes: String::new(),
        mode: s.mode,
        model: s.model.clone(),
        workload: s.workload.clone(),
        inference: s.inference.clone(),
        precision: s.precision.clone(),
        optimizer: s.optimizer.clone(),
        strategies: s.strategies.clone(),
        parallel: s.parallel.clone(),
        gpu: match &s.gpu {
            GpuChoice::Catalog(id) => GpuChoice::Catalog(*id),
            GpuChoice::Custom(c) => GpuChoice::Custom(CustomGpu {
                name: String::new(),
                ..*c
            }),
        },
        implementation: s.implementation.clone(),
        overheads: s.overheads.clone(),
        timing: s.timing.clone(),
        input: s.input.clone(),
        peft: s.peft.clone(),
        quantization: s.quantization.clone(),
        post_training: s.post_training,
    }
}
