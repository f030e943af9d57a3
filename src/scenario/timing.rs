//! Inputs of the time and cost model.

use serde::{Deserialize, Serialize};

/// Which all-reduce algorithm sets the latency term (the bandwidth term is the same for all,
/// nccl-tests `doc/PERFORMANCE.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CollectiveAlgorithm {
    /// The faster of the two, as NCCL's tuner picks by size and platform.
    #[default]
    Auto,
    /// Ring: 2(n−1) latency steps.
    Ring,
    /// Double binary tree (NCCL ≥ 2.4): 2·log₂n latency steps.
    Tree,
}

/// Inputs of the time and cost model (bandwidth issue): achievable fractions and prices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timing {
    /// Achievable fraction of peak FLOP/s. Valid: [0.01, 1].
    pub compute_efficiency: f64,
    /// Achievable fraction of peak memory bandwidth. Valid: [0.01, 1]. kipply measured 0.87–0.90 on A100.
    pub memory_efficiency: f64,
    /// Achievable fraction of link bandwidth for collectives. Valid: [0.01, 1].
    pub link_efficiency: f64,
    /// Share of communication hidden behind compute. Valid: [0, 1].
    pub comm_overlap: f64,
    /// Share of offload / tier traffic hidden by prefetch. Valid: [0, 1].
    pub offload_overlap: f64,
    /// Host buffers pinned (page-locked): host transfers run at the pinned bandwidth.
    pub pinned_host_memory: bool,
    /// Pageable host-to-device bandwidth as a fraction of pinned (example measurement 3.96/12.18,
    /// reference §4). Valid: [0.01, 1].
    pub pageable_fraction: f64,
    /// Inter-node network per GPU, GB/s per direction (e.g. 400 Gb/s InfiniBand NDR = 50 GB/s).
    /// Valid: 0.001 ..= 10^6.
    pub internode_gb_s: f64,
    /// Per-message latency α of a collective step, µs. Valid: 0 ..= 10^4. kipply uses ~8 µs
    /// (V100 NVLink).
    pub link_latency_us: f64,
    /// Which all-reduce latency term applies.
    pub collective: CollectiveAlgorithm,
    /// NVMe read/write bandwidth per GPU for ZeRO-Infinity offload, GB/s. An assumption to set for
    /// your drives (a PCIe 4.0 x4 SSD reads ~7 GB/s). Valid: 0.001 ..= 10^6.
    pub nvme_gb_s: f64,
    /// Tokens to train on (training) or to generate (inference), for time and cost. Valid: ≥ 0.
    pub token_budget: f64,
    /// Price per GPU-hour in the user's currency. Valid: ≥ 0.
    pub price_per_gpu_hour: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            compute_efficiency: 0.5,
            memory_efficiency: 0.85,
            link_efficiency: 0.8,
            comm_overlap: 0.5,
            offload_overlap: 0.5,
            pinned_host_memory: true,
            pageable_fraction: 0.325,
            internode_gb_s: 50.0,
            link_latency_us: 5.0,
            collective: CollectiveAlgorithm::Auto,
            nvme_gb_s: 7.0,
            token_budget: 1e12,
            price_per_gpu_hour: 2.5,
        }
    }
}
