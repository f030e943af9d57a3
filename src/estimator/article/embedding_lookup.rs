//! Embedding-table lookups (seed article §3.2): latency-bound or bandwidth-bound, by Little's law.
//!
//! A lookup gathers one table row at a random address. With `in_flight` accesses outstanding and a
//! load-to-use latency L, the memory completes at most in_flight ÷ L accesses per second (Little's
//! law, concurrency = latency × throughput; J. D. C. Little, Operations Research 9(3), 1961; applied
//! to memory systems by D. H. Bailey, "Little's Law and High Performance Computing", 1997). It also
//! cannot move more than its bandwidth: time = max(accesses × L ÷ in_flight, bytes ÷ bandwidth).
//! Rows are read in whole 32-byte sectors (NVIDIA CUDA C++ Best Practices Guide, "Coalesced Access to
//! Global Memory": global memory is accessed in 32-byte transactions). Latencies come from the
//! catalog (measured GPU load-to-use latency, reference §2 notes); `None` stays unknown.

use crate::hardware::{MemoryTech, tech};
use crate::scenario::Scenario;

/// DRAM access granularity of NVIDIA GPUs, bytes (CUDA C++ Best Practices Guide).
pub const SECTOR_BYTES: f64 = 32.0;

/// What limits a batch of lookups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LookupBound {
    /// Too few accesses in flight to cover the latency.
    Latency,
    /// Enough in flight: the bytes set the time.
    Bandwidth,
    /// The memory's latency is not sourced.
    #[default]
    Unknown,
}

/// Time of a batch of lookups on one memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LookupTime {
    pub accesses: f64,
    /// Bytes moved: accesses × row bytes rounded up to whole sectors.
    pub bytes: f64,
    /// accesses × latency ÷ in flight (`None`: latency unknown).
    pub latency_s: Option<f64>,
    /// bytes ÷ bandwidth.
    pub bandwidth_s: f64,
    /// The larger of the two (`None` when the latency is unknown).
    pub time_s: Option<f64>,
    pub bound: LookupBound,
    /// Accesses that must be in flight to reach the bandwidth: bandwidth × latency ÷ row bytes.
    pub saturating_in_flight: Option<f64>,
}

/// Row bytes as read: rounded up to whole 32-byte sectors.
pub fn row_bytes_read(row_bytes: f64) -> f64 {
    (finite(row_bytes) / SECTOR_BYTES).ceil() * SECTOR_BYTES
}

/// Lookup time of `accesses` rows of `row_bytes` with `in_flight` outstanding accesses.
pub fn lookup_time(
    accesses: f64,
    row_bytes: f64,
    latency_ns: Option<f64>,
    in_flight: f64,
    bandwidth_bytes_s: f64,
) -> LookupTime {
    let accesses = finite(accesses);
    let row = row_bytes_read(row_bytes);
    let bytes = accesses * row;
    let bw = finite(bandwidth_bytes_s);
    let bandwidth_s = if bw > 0.0 { bytes / bw } else { 0.0 };
    let lat = latency_ns.filter(|l| l.is_finite() && *l >= 0.0);
    let latency_s = lat.map(|l| accesses * l * 1e-9 / finite(in_flight).max(1.0));
    let (time_s, bound) = match latency_s {
        Some(t) if t > bandwidth_s => (Some(t), LookupBound::Latency),
        Some(_) => (Some(bandwidth_s), LookupBound::Bandwidth),
        None => (None, LookupBound::Unknown),
    };
    LookupTime {
        accesses,
        bytes,
        latency_s,
        bandwidth_s,
        time_s,
        bound,
        saturating_in_flight: lat.filter(|_| row > 0.0).map(|l| bw * l * 1e-9 / row),
    }
}

/// The memory technologies a GPU or edge device carries on package, in comparison order.
pub const TECHS: [MemoryTech; 8] = [
    MemoryTech::Hbm2,
    MemoryTech::Hbm2e,
    MemoryTech::Hbm3,
    MemoryTech::Hbm3e,
    MemoryTech::Gddr6,
    MemoryTech::Gddr6x,
    MemoryTech::Gddr7,
    MemoryTech::Lpddr5,
];

/// The same lookups on each technology's what-if configuration (catalog bandwidth and latency).
pub fn compare_techs(
    accesses: f64,
    row_bytes: f64,
    in_flight: f64,
) -> [(MemoryTech, LookupTime); 8] {
    TECHS.map(|t| {
        let spec = tech(t);
        let time = lookup_time(
            accesses,
            row_bytes,
            spec.latency_ns,
            in_flight,
            spec.bandwidth().get(),
        );
        (t, time)
    })
}

/// The lookups of one micro-batch of the scenario's recommender on its GPU: lookups per sample ×
/// batch rows of `dim` elements in the weights' type, with `in_flight` outstanding accesses. The
/// GPU's measured latency is used, else its memory technology's.
pub fn scenario_lookups(s: &Scenario, in_flight: f64) -> LookupTime {
    let r = &s.model.recommender;
    let accesses = f64::from(r.lookups_per_sample) * f64::from(s.workload.micro_batch.max(1));
    let row = f64::from(r.dim) * s.precision_types().weights.bytes();
    let hw = s.gpu.spec();
    let latency = hw.latency_ns.or(tech(hw.memory).latency_ns);
    let bw = hw.bandwidth().get() * s.timing.memory_efficiency.clamp(0.01, 1.0);
    lookup_time(accesses, row, latency, in_flight, bw)
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}
