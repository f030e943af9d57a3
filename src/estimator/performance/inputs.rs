//! The numbers the time model reads, clamped to their documented ranges once, so every formula after
//! this runs on finite, positive inputs.

use crate::estimator::{Diagnostic, Diagnostics};
use crate::hardware::{GpuSpec, MemoryTech, tech};
use crate::scenario::{CollectiveAlgorithm, Dtype, Scenario, SecondTier};

/// Clamps `x` into `[lo, hi]`; a NaN or out-of-range value is reported as `InputClamped`.
pub fn clamp(x: f64, lo: f64, hi: f64, fallback: f64, d: &mut Diagnostics) -> f64 {
    // In range and finite (the usual case): one test. NaN fails it.
    if x >= lo && x <= hi && x.is_finite() {
        return x;
    }
    d.insert(Diagnostic::InputClamped);
    if x.is_finite() {
        x.clamp(lo, hi)
    } else {
        fallback
    }
}

/// Hardware and timing inputs, per GPU, in SI units (B/s, FLOP/s, s).
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    pub peak: f64,
    pub peak_known: bool,
    pub bandwidth: f64,
    pub compute_eff: f64,
    pub memory_eff: f64,
    /// Per-direction GPU-GPU bandwidth inside a node × link efficiency.
    pub intra_bw: f64,
    /// Per-direction network bandwidth per GPU × link efficiency.
    pub inter_bw: f64,
    /// Host link per direction, pinned or pageable.
    pub host_bw: f64,
    pub nvme_bw: f64,
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
    pub gpus_per_node: u32,
}

/// PCIe 5.0 x16 per direction, assumed when a device's host link is not sourced (B200).
const FALLBACK_HOST_GB_S: f64 = 64.0;
/// Largest bandwidth or peak a custom GPU may claim (keeps sums finite): 10^18 per second.
const MAX_RATE: f64 = 1e18;

impl Inputs {
    /// Reads `hw` and the scenario's timing section; `compute` picks the peak.
    pub fn new(scenario: &Scenario, hw: &GpuSpec, compute: Dtype, d: &mut Diagnostics) -> Inputs {
        let t = &scenario.timing;
        let p = &scenario.parallel;
        let peak = hw.peaks.dense(compute).map_or(0.0, |f| f.get());
        let peak_known = peak.is_finite() && peak > 0.0;
        let bandwidth = clamp(hw.bandwidth().get(), 1e6, MAX_RATE, 1e9, d);
        let link_eff = clamp(t.link_efficiency, 0.01, 1.0, 0.8, d);
        let gpu_link = hw
            .gpu_link
            .or(hw.host_link)
            .map_or(0.0, |l| l.per_direction().get());
        let host_link = host_link_bw(hw);
        let pinned = if t.pinned_host_memory {
            1.0
        } else {
            clamp(t.pageable_fraction, 0.01, 1.0, 0.325, d)
        };
        let host_bw = host_link * pinned;
        let inter_bw = clamp(t.internode_gb_s, 1e-3, 1e9, 50.0, d) * 1e9 * link_eff;
        let (tier_bw, tier_cap) = match scenario.strategies.second_tier {
            SecondTier::None => (0.0, 0.0),
            SecondTier::Host => (host_bw, scenario.strategies.second_tier_gib),
            SecondTier::Cxl => (
                tech(MemoryTech::Cxl2).bandwidth().get(),
                scenario.strategies.second_tier_gib,
            ),
        };
        Inputs {
            peak: if peak_known { peak.min(MAX_RATE) } else { 0.0 },
            peak_known,
            bandwidth,
            compute_eff: clamp(t.compute_efficiency, 0.01, 1.0, 0.5, d),
            memory_eff: clamp(t.memory_efficiency, 0.01, 1.0, 0.85, d),
            intra_bw: gpu_link.clamp(0.0, MAX_RATE) * link_eff,
            inter_bw,
            host_bw,
            nvme_bw: clamp(t.nvme_gb_s, 1e-3, 1e9, 7.0, d) * 1e9,
            tier_bw,
            tier_capacity: clamp(tier_cap, 0.0, 1e9, 0.0, d) * crate::units::GIB,
            alpha_s: clamp(t.link_latency_us, 0.0, 1e4, 5.0, d) * 1e-6,
            algo: t.collective,
            comm_overlap: clamp(t.comm_overlap, 0.0, 1.0, 0.5, d),
            offload_overlap: clamp(t.offload_overlap, 0.0, 1.0, 0.5, d),
            capacity: hw.capacity.bytes().get().clamp(0.0, MAX_RATE),
            tdp_w: hw.tdp_w.filter(|w| w.is_finite() && *w > 0.0),
            energy_pj_per_bit: tech(hw.memory).energy_pj_per_bit,
            dp: p.dp.max(1),
            tp: p.tp.max(1),
            pp: p.pp.max(1),
            gpus_per_node: p.gpus_per_node.max(1),
        }
    }

    /// Bandwidth a collective over `group` ranks sees, whose ranks are `stride` apart in the rank
    /// order (TP innermost, then DP, then PP — Megatron-LM's order): inside a node while
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
