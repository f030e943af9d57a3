//! The roofline (Williams, Waterman, Patterson, *Roofline*, CACM 52(4), 2009): "Attainable GFlops/sec
//! = Min(Peak Floating Point Performance, Peak Memory Bandwidth × Operational Intensity)".

use super::inputs::Inputs;
use super::types::{Bound, PhaseRoofline};
use crate::units::{Bytes, FlopsPerSec};

/// Ridge point, FLOP per byte: the intensity above which a kernel is compute-bound.
///
/// kipply's A100 (312 TFLOP/s, 1.5 TB/s) has flops:bytes 208:
/// ```
/// use vram_explorer::estimator::performance::roofline::ridge_point;
/// assert_eq!(ridge_point(312e12, 1.5e12), 208.0);
/// ```
pub fn ridge_point(peak_flops: f64, bandwidth: f64) -> f64 {
    if bandwidth > 0.0 && peak_flops.is_finite() {
        peak_flops / bandwidth
    } else {
        0.0
    }
}

/// `a / b`, or 0 when `b` is not positive.
pub fn div(a: f64, b: f64) -> f64 {
    if b > 0.0 && a.is_finite() { a / b } else { 0.0 }
}

/// A utilisation (MFU, HFU): FLOPs ÷ (time × peak). At most 1 analytically (a step lasts at least
/// its FLOPs ÷ peak, efficiency ≤ 1); the `min` absorbs the last-bit rounding of that quotient.
pub fn utilisation(flops: f64, time_x_peak: f64) -> f64 {
    div(flops, time_x_peak).min(1.0)
}

/// The roofline of a phase executing `flops` and moving `bytes` on one GPU, with the achievable
/// fractions of peak (efficiencies) applied to both roofs. Without a known peak the phase is timed by
/// its memory traffic alone.
pub fn phase(flops: f64, bytes: f64, i: &Inputs) -> PhaseRoofline {
    let flops = flops.max(0.0);
    let bytes = bytes.max(0.0);
    let peak_eff = i.peak * i.compute_eff;
    let bw_eff = i.bandwidth * i.memory_eff;
    let compute_time_s = div(flops, peak_eff);
    let memory_time_s = div(bytes, bw_eff);
    let time_s = compute_time_s.max(memory_time_s);
    let intensity = div(flops, bytes);
    let (attainable, saturation) = if !i.peak_known {
        (0.0, 0.0)
    } else if time_s > 0.0 {
        (flops / time_s, compute_time_s / time_s)
    } else {
        (peak_eff, 1.0)
    };
    let bound = if memory_time_s > compute_time_s || !i.peak_known {
        Bound::Memory
    } else {
        Bound::Compute
    };
    PhaseRoofline {
        flops,
        bytes: Bytes(bytes),
        intensity,
        ridge: ridge_point(i.peak, i.bandwidth),
        attainable: FlopsPerSec(attainable),
        saturation,
        idle_share: if i.peak_known { 1.0 - saturation } else { 0.0 },
        compute_time_s,
        memory_time_s,
        time_s,
        bound,
    }
}
