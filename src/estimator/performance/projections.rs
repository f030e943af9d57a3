//! The seed article's "future" items (§5), evaluated on the scenario as labelled projections: the
//! article's own figures, not measurements.

use super::inputs::Inputs;
use super::types::{Performance, Projections};
use super::{MemoryEstimate, ResolvedModel, core};
use crate::hardware::{MemoryTech, tech};
use crate::scenario::Scenario;
use crate::units::Bytes;

/// The article's photonic link: "GPU间1.6Tbps带宽" = 1.6 Tb/s = 200 GB/s, taken per direction.
pub const PHOTONIC_GB_S: f64 = 200.0;
/// The article's processing-in-memory claim: "预计可提升能效比10倍" (10× energy efficiency).
pub const PIM_ENERGY_FACTOR: f64 = 10.0;

pub fn projections(
    s: &Scenario,
    m: &ResolvedModel,
    mem: &MemoryEstimate,
    i: &Inputs,
    p: &Performance,
) -> Projections {
    let photonic = PHOTONIC_GB_S * 1e9;
    let mut ip = *i;
    ip.intra_bw = i.intra_bw.max(photonic);
    ip.inter_bw = i.inter_bw.max(photonic);
    let with_photonic = core(s, m, mem, &ip);

    let pool_bytes = (mem.gpu_total.get() - i.capacity).max(0.0);
    let mut ic = *i;
    ic.tier_bw = tech(MemoryTech::Cxl2).bandwidth().get();
    ic.tier_capacity = pool_bytes;
    let with_pool = if pool_bytes > 0.0 {
        core(s, m, mem, &ic).step.total_s
    } else {
        p.step.total_s
    };
    Projections {
        photonic_comm_s: with_photonic.step.communication_s,
        photonic_step_s: with_photonic.step.total_s,
        pim_memory_energy_per_step_j: p
            .cost
            .memory_energy_per_step_j
            .map(|j| j / PIM_ENERGY_FACTOR),
        cxl_pool_bytes: Bytes(pool_bytes),
        cxl_pool_step_s: with_pool,
    }
}
