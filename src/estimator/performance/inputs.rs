//! The numbers the time model reads: the resolved scenario's timing section (`estimator::resolve`,
//! every value in its documented range) and the GPU's figures, in SI units, so every formula after
//! this runs on finite, positive inputs.

use crate::estimator::Diagnostics;
use crate::hardware::{GpuSpec, MemoryTech, tech};
use crate::scenario::{CollectiveAlgorithm, Dtype, Scenario, SecondTier};

/// A hardware table's rate as a finite figure in [1 MB/s or FLOP/s, 10¹⁸]: the catalog and the
/// memory-technology what-ifs are data, not user input (a custom GPU's figures are already bounded
/// by `validate::RANGES` in `estimator::resolve`), so this reports nothing.
fn rate(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(1e6, MAX_RATE)
    } else {
        1e6
    }
}

/// Hardware and timing inputs, per GPU, in SI units (B/s, FLOP/s, s).
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    pub peak: f64,
    /// 16-bit dense peak (0 when unknown): attention and elementwise work stay 16-bit under FP8
    /// (the parts model, `parts`).
    pub peak16: f64,
    pub peak_known: bool,
    pub bandwidth: f64,
    pub compute_eff: f64,
    pub memory_eff: f64,
    /// Per-direction GPU-GPU bandwidth inside a node × link efficiency.
    pub intra_bw: f64,
    /// Per-direction network bandwidth per GPU × link efficiency.
    pub inter_bw: f64,
    /// The GPU has a direct GPU-GPU link (NVLink): a node's GPUs form a full mesh.
    pub nvlink_mesh: bool,
    /// Host link per direction, pinned or pageable.
    pub host_bw: f64,
    pub nvme_bw: f64,
    /// Memory bandwidth of one node's CPU optimizer update, B/s (`timing.host_optimizer_gb_s`).
    pub host_optimizer_bw: f64,
    /// Second-tier bandwidth (host or CXL), 0 without a tier.
    pub tier_bw: f64,
    pub tier_capacity: f64,
    pub alpha_s: f64,
    pub algo: CollectiveAlgorithm,
    pub comm_overlap: f64,
    pub offload_overlap: f64,
    pub capacity: f64,
    pub tdp_w: Option<f64>,
    pub energy_pj_per_bit: Option<f64>,
    pub dp: u32,
    pub tp: u32,
    pub pp: u32,
    /// Context-parallel degree (1 outside transformer training: `estimator::resolve`).
    pub cp: u32,
    /// The context-parallel attention algorithm.
    pub cp_style: crate::scenario::CpStyle,
    pub gpus_per_node: u32,
}

/// PCIe 5.0 x16 per direction, assumed when a device's host link is not sourced (B200).
const FALLBACK_HOST_GB_S: f64 = 64.0;
/// Largest bandwidth or peak a custom GPU may claim (keeps sums finite): 10^18 per second.
const MAX_RATE: f64 = 1e18;

impl Inputs {
    /// Reads `hw` and the timing section of a resolved scenario; `compute` picks the peak.
    /// (`_d` is kept for callers; resolving has already reported any clamped input.)
    pub fn new(scenario: &Scenario, hw: &GpuSpec, compute: Dtype, _d: &mut Diagnostics) -> Inputs {
        let t = &scenario.timing;
        let p = &scenario.parallel;
        let peak = hw.peaks.dense(compute).map_or(0.0, |f| f.get());
        let peak_known = peak.is_finite() && peak > 0.0;
        let link_eff = t.link_efficiency;
        let gpu_link = hw
            .gpu_link
            .or(hw.host_link)
            .map_or(0.0, |l| l.per_direction().get());
        let pinned = if t.pinned_host_memory {
            1.0
        } else {
            t.pageable_fraction
        };
        let host_bw = rate(host_link_bw(hw)) * pinned;
        let (tier_bw, tier_gib) = match scenario.strategies.second_tier {
            SecondTier::None => (0.0, 0.0),
            SecondTier::Host => (host_bw, scenario.strategies.second_tier_gib),
            SecondTier::Cxl => (
                tech(MemoryTech::Cxl2).bandwidth().get(),
                scenario.strategies.second_tier_gib,
            ),
        };
        let peak16 = hw.peaks.dense(Dtype::Bf16).map_or(0.0, |f| f.get());
        Inputs {
            peak: if peak_known { rate(peak) } else { 0.0 },
            peak16: if peak16.is_finite() && peak16 > 0.0 {
                rate(peak16)
            } else {
                0.0
            },
            peak_known,
            bandwidth: rate(hw.bandwidth().get()),
            compute_eff: t.compute_efficiency,
            memory_eff: t.memory_efficiency,
            intra_bw: gpu_link.clamp(0.0, MAX_RATE) * link_eff,
            inter_bw: t.internode_gb_s * 1e9 * link_eff,
            nvlink_mesh: hw.gpu_link.is_some(),
            host_bw,
            nvme_bw: t.nvme_gb_s * 1e9,
            host_optimizer_bw: t.host_optimizer_gb_s * 1e9,
            tier_bw,
            tier_capacity: tier_gib * crate::units::GIB,
            alpha_s: t.link_latency_us * 1e-6,
            algo: t.collective,
            comm_overlap: t.comm_overlap,
            offload_overlap: t.offload_overlap,
            capacity: hw.usable().get().clamp(0.0, MAX_RATE),
            tdp_w: hw.tdp_w.filter(|w| w.is_finite() && *w > 0.0),
            energy_pj_per_bit: tech(hw.memory).energy_pj_per_bit,
            dp: p.dp,
            tp: p.tp,
            pp: p.pp,
            cp: p.cp.max(1),
            cp_style: p.cp_style,
            gpus_per_node: p.gpus_per_node,
        }
    }

    /// Bandwidth a collective over `group` ranks sees, whose ranks are `stride` apart in the rank
    /// order (TP innermost, then CP, then DP, then PP — Megatron-Core's default `tp-cp-ep-dp-pp`): inside a node while
    /// group × stride ≤ GPUs per node, else the network. Returns (bandwidth, crosses nodes).
    pub fn collective_bw(&self, group: u32, stride: u32) -> (f64, bool) {
        let span = group as u64 * stride as u64;
        if span <= self.gpus_per_node as u64 && self.intra_bw > 0.0 {
            (self.intra_bw, false)
        } else {
            (self.inter_bw, true)
        }
    }
}

/// The host link per direction; unified-memory devices (no host link, LPDDR) "offload" at their own
/// memory bandwidth; an unsourced host link is taken as PCIe 5.0 x16.
fn host_link_bw(hw: &GpuSpec) -> f64 {
    match hw.host_link {
        Some(l) => l.per_direction().get(),
        None if matches!(hw.memory, MemoryTech::Lpddr5 | MemoryTech::Lpddr5x) => {
            hw.bandwidth().get()
        }
        None => FALLBACK_HOST_GB_S * 1e9,
    }
}
