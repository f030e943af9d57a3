//! A CNN's memory traffic against batch size (seed article §2: ResNet-50, batch 32 → 128, "3× the
//! bandwidth demand", "30–50 % idle").
//!
//! The figures are the estimator's own training roofline (Williams, Waterman, Patterson, CACM 52(4),
//! 2009: attainable = min(peak, bandwidth × intensity)) read at two batch sizes; nothing here is a
//! second model. Per step, activation traffic grows with the batch while weight traffic does not, so
//! intensity rises; per second, a compute-bound step's demand stays flat.

use crate::estimator::estimate;
use crate::scenario::Scenario;

/// The training roofline of one batch size.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CnnPoint {
    pub batch: u32,
    /// Bytes moved by forward + backward of one step on one GPU.
    pub bytes_per_step: f64,
    pub flops_per_step: f64,
    /// FLOP per byte.
    pub intensity: f64,
    /// Peak FLOP/s ÷ peak B/s of the GPU for the compute type.
    pub ridge: f64,
    /// Share of time the compute units idle waiting for memory (roofline).
    pub idle_share: f64,
    /// Roofline time of forward + backward.
    pub step_s: f64,
    /// Bandwidth the step demands: bytes ÷ time.
    pub bytes_per_s: f64,
}

/// The roofline of the scenario at `batch` (a copy of the scenario with that micro-batch).
pub fn cnn_point(s: &Scenario, batch: u32) -> CnnPoint {
    let mut c = s.clone();
    c.workload.micro_batch = batch.max(1);
    let e = estimate(&c);
    let Some(r) = e.performance.training else {
        return CnnPoint {
            batch,
            ..CnnPoint::default()
        };
    };
    let bytes = r.bytes.get();
    CnnPoint {
        batch,
        bytes_per_step: bytes,
        flops_per_step: r.flops,
        intensity: r.intensity,
        ridge: r.ridge,
        idle_share: r.idle_share,
        step_s: r.time_s,
        bytes_per_s: if r.time_s > 0.0 {
            bytes / r.time_s
        } else {
            0.0
        },
    }
}

/// How the demand changes from batch `from` to batch `to`: (per-step bytes ratio, per-second
/// bandwidth ratio, intensity ratio).
pub fn batch_scaling(s: &Scenario, from: u32, to: u32) -> (CnnPoint, CnnPoint, [f64; 3]) {
    let (a, b) = (cnn_point(s, from), cnn_point(s, to));
    let ratio = |x: f64, y: f64| if x > 0.0 { y / x } else { 0.0 };
    let r = [
        ratio(a.bytes_per_step, b.bytes_per_step),
        ratio(a.bytes_per_s, b.bytes_per_s),
        ratio(a.intensity, b.intensity),
    ];
    (a, b, r)
}
