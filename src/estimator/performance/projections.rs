//! The seed article's "future" items (§5), evaluated on the scenario as labelled projections: the
//! article's own figures, not measurements.

use super::inputs::Inputs;
use super::roofline::div;
use super::types::{Performance, Projections};
use super::{MemoryEstimate, ResolvedModel, core};
use crate::hardware::{MemoryTech, tech};
use crate::scenario::{Mode, Scenario};
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
    let (photonic_comm_s, photonic_step_s) = if p.step.communication_s > 0.0 {
        let mut ip = *i;
        ip.intra_bw = i.intra_bw.max(photonic);
        ip.inter_bw = i.inter_bw.max(photonic);
        let step = core(s, m, mem, &ip).step;
        (step.communication_s, step.total_s)
    } else {
        (0.0, p.step.total_s)
    };

    // Nothing spills today (it does not fit), so the pool adds its traffic to today's step: read in
    // forward and again in backward of every micro-batch (inference: every forward), as `work`.
    let pool_bytes = (mem.gpu_total.get() - i.capacity).max(0.0);
    let accesses = match s.mode {
        Mode::Training => 2.0 * s.workload.grad_accum_steps.max(1) as f64,
        Mode::Inference => 1.0 + s.inference.generated_tokens as f64,
    };
    let cxl = tech(MemoryTech::Cxl2).bandwidth().get();
    let pool_time = div(accesses * pool_bytes, cxl) * (1.0 - i.offload_overlap);
    Projections {
        photonic_comm_s,
        photonic_step_s,
        pim_memory_energy_per_step_j: p
            .cost
            .memory_energy_per_step_j
            .map(|j| j / PIM_ENERGY_FACTOR),
        cxl_pool_bytes: Bytes(pool_bytes),
        cxl_pool_step_s: p.step.total_s + pool_time,
    }
}
