//! The architecture comparison: the current scenario on every catalog GPU, and the current GPU's
//! compute with every memory technology (at the technology's stated device count) as a what-if.
//! A fixed-size, table-shaped value; allocation-free.
//!
//! Largest batch in closed form: per-GPU memory is affine in the batch (weights, optimizer states and
//! overheads are fixed; activations and KV cache grow linearly), so two memory estimates, at batch 1
//! and 2, give M(b) = M(1) + (b − 1)·(M(2) − M(1)), and the largest batch that fits a capacity C is
//! ⌊(C − M(1)) / (M(2) − M(1))⌋ + 1.

use serde::Serialize;

use super::types::{Bound, Performance};
use super::{compute_dtype, core};
use crate::estimator::{Diagnostics, MemoryEstimate, memory, model};
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
    /// Largest micro-batch (inference with dynamic batching: concurrent requests) that fits.
    pub max_batch: Option<u32>,
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
    /// Memory each additional batch element adds.
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
    let model = model::resolve(&scenario.model, &mut d);
    let mem = memory::estimate_memory(scenario, &model, &mut d);
    let (base, per) = batch_line(scenario, &model);
    let base_hw = hardware::resolve(&scenario.gpu);
    let fit = Fit {
        needed: mem.gpu_total.get(),
        base,
        per,
    };
    let row =
        |kind: RowKind, hw: &GpuSpec, devices: u32, cap: Option<Bytes>, d: &mut Diagnostics| {
            let i = super::inputs::Inputs::new(scenario, hw, compute_dtype(scenario), d);
            let p = core(scenario, &model, &mem, &i);
            make_row(kind, hw, devices, cap, &fit, &p, scenario.mode)
        };
    let gpus = GpuId::ALL.map(|id| {
        let hw = hardware::gpu(id);
        row(RowKind::Gpu(id), &hw, 0, Some(hw.capacity.bytes()), &mut d)
    });
    let techs = MemoryTech::ALL.map(|t| {
        let spec = tech(t);
        let hw = with_tech(&base_hw, &spec);
        row(RowKind::Tech(t), &hw, spec.devices, spec.capacity(), &mut d)
    });
    let article = ArticleTech::ALL.map(|a| {
        let spec = article_tech(a);
        let hw = with_tech(&base_hw, &spec);
        row(
            RowKind::Article(a),
            &hw,
            spec.devices,
            spec.capacity(),
            &mut d,
        )
    });
    Comparison {
        needed: mem.gpu_total,
        per_batch: Bytes(per),
        base_gpu: base_hw.name,
        gpus,
        techs,
        article,
    }
}

/// The memory line M(b) = base + per·b.
struct Fit {
    needed: f64,
    base: f64,
    per: f64,
}

impl Fit {
    fn max_batch(&self, cap: f64) -> u32 {
        if self.base + self.per > cap {
            return 0;
        }
        if self.per <= 0.0 {
            return MAX_BATCH;
        }
        ((cap - self.base) / self.per)
            .floor()
            .clamp(0.0, MAX_BATCH as f64) as u32
    }
}

fn make_row(
    kind: RowKind,
    hw: &GpuSpec,
    devices: u32,
    cap: Option<Bytes>,
    fit: &Fit,
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
        fits: cap.map(|c| fit.needed <= c.get()),
        headroom: cap.map(|c| Bytes(c.get() - fit.needed)),
        max_batch: cap.map(|c| fit.max_batch(c.get())),
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
        capacity: Capacity::Gb(t.capacity().map_or(0.0, |b| b.as_gb())),
        bandwidth_gb_s: t.bandwidth().as_gb_per_s(),
        latency_ns: t.latency_ns,
        confidence: t.confidence,
        ..*base
    }
}

/// Memory at batch 1 and 2 → (M(1) − per, per): the line's intercept at batch 0 and its slope.
/// The scenario is copied without its strings (`String::new()` does not allocate).
fn batch_line(s: &Scenario, m: &model::ResolvedModel) -> (f64, f64) {
    let mut probe = light_copy(s);
    let mut at = |b: u32| -> f64 {
        if probe.mode == Mode::Inference && probe.inference.dynamic_batching {
            probe.inference.concurrent_requests = b;
        } else {
            probe.workload.micro_batch = b;
        }
        let mut d = Diagnostics::default();
        let mem: MemoryEstimate = memory::estimate_memory(&probe, m, &mut d);
        mem.gpu_total.get()
    };
    let m1 = at(1);
    let m2 = at(2);
    let per = if (m2 - m1).is_finite() { m2 - m1 } else { 0.0 };
    (m1 - per, per)
}

/// A copy of the scenario whose free-text fields are empty: no heap allocation.
fn light_copy(s: &Scenario) -> Scenario {
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
    }
}
