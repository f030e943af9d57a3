//! The seed article's "future" items (§5), evaluated on the scenario as labelled projections: the
//! article's own figures, not measurements.

use super::MemoryEstimate;
use super::comm::{chosen_latency, rescale};
use super::inputs::Inputs;
use super::roofline::div;
use super::types::{Communication, Cost, Projections, StepTime};
use crate::hardware::{MemoryTech, tech};
use crate::scenario::{Mode, Scenario};
use crate::units::Bytes;

/// The article's photonic link: "GPU间1.6Tbps带宽" = 1.6 Tb/s = 200 GB/s, taken per direction.
pub const PHOTONIC_GB_S: f64 = 200.0;
/// The article's processing-in-memory claim: "预计可提升能效比10倍" (10× energy efficiency).
pub const PIM_ENERGY_FACTOR: f64 = 10.0;

/// The projections of a step whose communication, time and cost are `c`, `step` and `cost`.
pub fn projections(
    s: &Scenario,
    mem: &MemoryEstimate,
    i: &Inputs,
    c: &Communication,
    step: &StepTime,
    cost: &Cost,
) -> Projections {
    // The article's link replaces any slower link: transfer parts rescale, latency parts stay.
    let photonic = PHOTONIC_GB_S * 1e9;
    let up = |bw: f64| bw.max(photonic);
    let tp = rescale(
        c.tp_time_s,
        c.tp_latency_s,
        c.tp_bandwidth.get(),
        up(c.tp_bandwidth.get()),
    );
    let dp_latency = chosen_latency(c.dp_ring_latency_s, c.dp_tree_latency_s, i.algo);
    let dp = rescale(
        c.dp_time_s,
        dp_latency,
        c.dp_bandwidth.get(),
        up(c.dp_bandwidth.get()),
    );
    // Today's exposed communication less what the faster link saves on TP and DP: each keeps the
    // share of its time it exposes today (overlap, and the parts model's overlap tax), so an
    // unchanged link changes nothing; pipeline, expert and context-parallel sends are kept as
    // they are (the article's claim is about the GPU-to-GPU links of TP and DP collectives).
    let exposed_dp = if c.dp_time_s > 0.0 {
        c.dp_exposed_s * dp / c.dp_time_s
    } else {
        0.0
    };
    let photonic_comm_s = match s.mode {
        Mode::Training => {
            (step.communication_s - c.dp_exposed_s - c.tp_time_s + exposed_dp + tp).max(0.0)
        }
        // The request's TP all-reduces over its stages, rescaled; its expert all-to-alls kept.
        Mode::Inference => tp + c.ep_time_s,
    };
    let photonic_step_s = (step.total_s - step.communication_s + photonic_comm_s).max(0.0);
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
        pim_memory_energy_per_step_j: cost.memory_energy_per_step_j.map(|j| j / PIM_ENERGY_FACTOR),
        cxl_pool_bytes: Bytes(pool_bytes),
        cxl_pool_step_s: step.total_s + pool_time,
    }
}
