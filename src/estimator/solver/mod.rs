//! Solvers on the estimator: the largest micro-batch, context and model that fit the chosen GPU, the
//! fewest GPUs that fit, and "make it fit" ([`fit`]).
//!
//! Every solver edits one scratch copy of the scenario in place and calls [`estimate`](super::estimate)
//! on it: no clone per candidate. The answers are exact for the estimator (re-estimating the answer fits
//! and the next notch does not), not for a closed form: the closed form only proposes where to look.
//!
//! Memory is affine in the micro-batch (and in the layer count, and in the parameter count) with
//! everything else fixed, so interpolating the excess over capacity between two estimates lands on the
//! answer, and two more estimates (at the answer and one notch above) confirm it. Where memory is not
//! affine (sequence length with materialised s × s scores is quadratic) the same bracket falls back to
//! bisection after a few interpolation steps, so every solve ends in O(log range) estimates.

mod axes;
mod batch;
mod cache;
mod describe;
mod engine_limits;
pub mod fit;
pub mod quant_fit;
mod search;
mod space;

pub use cache::FitCache;
pub use describe::{
    checkpointing_label, offload_target_label, optimizer_label, precision_label, zero_label,
};
pub use fit::{
    CHANGE_PENALTY, FitOptions, FitResult, MAX_ESTIMATES, Suggestion, make_it_fit, make_it_fit_with,
};
pub use quant_fit::{LLAMACPP_FILE_TYPES, NOT_GGUF, QuantFit, not_under_llamacpp, quant_fit};
pub use search::{Coord, Probe, solve_max_with, solve_min_with};

use super::{Estimate, estimate};
use crate::scenario::{Axis, Scenario};

/// The outcome of a solve: the value that fits and whose next notch does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solved {
    /// `value` fits and the next notch (value + 1 for a largest, value − 1 for a smallest) does not.
    Found(u64),
    /// Even the most favourable value of the range does not fit.
    NoneFits,
    /// The whole range fits; `value` is its end (the largest valid input).
    AtLimit(u64),
    /// The question does not apply (e.g. the model size of a recommender).
    NotApplicable,
}

impl Solved {
    /// The value to apply, if any.
    pub fn value(self) -> Option<u64> {
        match self {
            Solved::Found(v) | Solved::AtLimit(v) => Some(v),
            Solved::NoneFits | Solved::NotApplicable => None,
        }
    }
}

/// What a "largest that fits" solve varies: an [`Axis`] in whole units of the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// [`Axis::Batch`]: `workload.micro_batch`, or `inference.concurrent_requests` in inference with
    /// dynamic batching.
    MicroBatch,
    /// [`Axis::Context`]: `workload.seq_len` in training, `inference.prompt_tokens` in inference (the
    /// generated tokens stay fixed). Transformers only.
    Context,
    /// [`Axis::ModelSize`]: `transformer.layers` for transformers given by dimensions (width kept);
    /// `model.params` or `cnn.params` in millions otherwise. Not applicable to recommenders.
    ModelSize,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::MicroBatch, Target::Context, Target::ModelSize];

    /// The scenario axis this target moves.
    pub const fn axis(self) -> Axis {
        match self {
            Target::MicroBatch => Axis::Batch,
            Target::Context => Axis::Context,
            Target::ModelSize => Axis::ModelSize,
        }
    }

    /// Field units per search unit: a million for parameter counts, else 1.
    pub fn unit(self, s: &Scenario) -> f64 {
        if self.axis().is_integer(s) { 1.0 } else { 1e6 }
    }

    /// The valid range of the varied field in search units ([`Axis::range`], i.e.
    /// `validate::RANGES`); `None` when the axis does not apply to the scenario.
    pub fn range(self, s: &Scenario) -> Option<(u64, u64)> {
        let axis = self.axis();
        if !axis.applies(s) {
            return None;
        }
        let (lo, hi) = axis.range(s);
        let u = self.unit(s);
        // `as` saturates (Rust reference, "Numeric cast"); the ranges are far below u64::MAX.
        let (lo, hi) = ((lo / u).ceil().max(1.0) as u64, (hi / u).floor() as u64);
        Some((lo, hi.max(lo)))
    }

    /// The current value of the varied field, in search units.
    pub fn get(self, s: &Scenario) -> u64 {
        let v = self.axis().get(s) / self.unit(s);
        if v.is_finite() && v > 0.0 {
            v.round() as u64
        } else {
            0
        }
    }

    /// Sets the varied field to `value` search units (saturating at `u32::MAX` for count fields).
    pub fn set(self, s: &mut Scenario, value: u64) {
        let u = self.unit(s);
        self.axis().set(s, value as f64 * u);
    }

    pub const fn label(self) -> &'static str {
        match self {
            Target::MicroBatch => "micro-batch",
            Target::Context => "context length",
            Target::ModelSize => "model size",
        }
    }
}

/// A parallel degree a "fewest GPUs" solve scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleAxis {
    /// Data parallel: per-GPU memory falls only with ZeRO sharding (ZeRO §5: Ψ/N_d terms).
    Dp,
    /// Tensor parallel, over powers of two that divide the attention heads.
    Tp,
    /// Pipeline parallel, over 1 ..= layers.
    Pp,
}

impl ScaleAxis {
    /// The scenario axis of this degree.
    pub const fn axis(self) -> Axis {
        match self {
            ScaleAxis::Dp => Axis::Dp,
            ScaleAxis::Tp => Axis::Tp,
            ScaleAxis::Pp => Axis::Pp,
        }
    }
}

/// The probe of one estimate: what the searches read.
pub fn probe(e: &Estimate) -> Probe {
    let excess = e.memory.gpu_total.get() - e.memory.capacity.get();
    Probe {
        excess: if excess.is_finite() { excess } else { f64::MAX },
        fits: e.memory.fits,
        step_time_s: step_time_s(e),
    }
}

/// Step time read from the estimate, seconds: one optimizer step (training) or one request batch
/// (inference), `Performance::step.total_s`.
pub fn step_time_s(e: &Estimate) -> f64 {
    let t = e.performance.step.total_s;
    if t.is_finite() { t.max(0.0) } else { f64::MAX }
}

/// A llama.cpp CPU build (`-dev none`, [`Scenario::runs_on_cpu_only`] of a scenario whose memory is
/// llama.cpp's buffers): no GPU holds anything, and the estimator has no host-memory capacity to
/// hold its buffers against, so no "fits the GPU" question applies (the report says "GPU: none").
pub fn host_only(s: &Scenario) -> bool {
    s.runs_on_llamacpp() && s.runs_on_cpu_only()
}

/// Largest value of `target` that fits the scenario's GPU, everything else fixed; for a scenario
/// served by vLLM, SGLang or llama.cpp, the micro-batch is the requests its KV cache holds at once
/// and the context the longest prompt the engine admits (`engine_limits`). On a llama.cpp CPU
/// build ([`host_only`]) only the engine's own limits apply: the rest is `NotApplicable`.
pub fn max_fitting(s: &Scenario, target: Target) -> Solved {
    // A serving engine's startup cache and limits bound the requests, not the peak.
    let engine = match target {
        Target::MicroBatch => engine_limits::engine_batch(s),
        Target::Context => engine_limits::engine_context(s),
        Target::ModelSize => None,
    };
    if let Some(solved) = engine {
        return solved;
    }
    if host_only(s) {
        return Solved::NotApplicable;
    }
    let Some((lo, hi)) = target.range(s) else {
        return Solved::NotApplicable;
    };
    let mut scratch = s.clone();
    solve_max_with(&mut scratch, lo, hi, Coord::Linear, |sc, v| {
        target.set(sc, v);
        probe(&estimate(sc))
    })
}

/// Largest micro-batch that fits (see [`Target::MicroBatch`]).
pub fn max_micro_batch(s: &Scenario) -> Solved {
    max_fitting(s, Target::MicroBatch)
}

/// Largest sequence length (training) or prompt (inference) that fits.
pub fn max_context(s: &Scenario) -> Solved {
    max_fitting(s, Target::Context)
}

/// Largest model that fits (see [`Target::ModelSize`] for the unit of the answer).
pub fn max_model_size(s: &Scenario) -> Solved {
    max_fitting(s, Target::ModelSize)
}

/// Candidate degrees of an axis, ascending, and where to set them.
fn axis_candidates(s: &Scenario, axis: ScaleAxis, out: &mut [u32; 64]) -> usize {
    let mut n = 0;
    let mut push = |v: u32| {
        if let Some(slot) = out.get_mut(n) {
            *slot = v;
            n += 1;
        }
    };
    match axis {
        ScaleAxis::Dp => {}
        ScaleAxis::Tp => {
            let heads = s.model.transformer.heads.max(1);
            let max = Axis::Tp.range(s).1;
            let mut t = 1u32;
            while t <= heads && f64::from(t) <= max {
                if s.tp_splits_attention(t) {
                    push(t);
                }
                t *= 2;
            }
        }
        ScaleAxis::Pp => {
            // A framework without a pipeline schedule runs one stage only.
            let layers = if s.framework_pipelines() {
                s.model.transformer.layers.clamp(1, 64)
            } else {
                1
            };
            for p in 1..=layers {
                push(p);
            }
        }
    }
    n
}

/// Smallest degree on `axis` that fits, the other degrees fixed. The GPU count of the answer is
/// `parallel.gpus()` with that degree set. DP keeps the micro-batch (the global batch grows with DP).
/// `NotApplicable` on a llama.cpp CPU build ([`host_only`]): it uses no GPU.
pub fn min_degree(s: &Scenario, axis: ScaleAxis) -> Solved {
    if host_only(s) {
        return Solved::NotApplicable;
    }
    let mut scratch = s.clone();
    if axis == ScaleAxis::Dp {
        // Memory per GPU is affine in 1/N_d under ZeRO (ZeRO §5, Figure 1): interpolate in 1/dp.
        let (lo, hi) = Axis::Dp.range(s);
        return solve_min_with(
            &mut scratch,
            lo as u64,
            hi as u64,
            Coord::Reciprocal,
            |sc, v| {
                Axis::Dp.set(sc, v as f64);
                probe(&estimate(sc))
            },
        );
    }
    let mut cands = [0u32; 64];
    let n = axis_candidates(s, axis, &mut cands);
    for &c in cands.iter().take(n) {
        set_degree(&mut scratch, axis, c);
        if estimate(&scratch).memory.fits {
            return Solved::Found(c.into());
        }
    }
    Solved::NoneFits
}

/// The candidate just below `value` on `axis` (the "one notch less" of [`min_degree`]).
pub fn previous_degree(s: &Scenario, axis: ScaleAxis, value: u64) -> Option<u64> {
    if axis == ScaleAxis::Dp {
        return value.checked_sub(1).filter(|v| *v >= 1);
    }
    let mut cands = [0u32; 64];
    let n = axis_candidates(s, axis, &mut cands);
    cands
        .iter()
        .take(n)
        .map(|c| u64::from(*c))
        .filter(|c| *c < value)
        .max()
}

/// Sets one parallel degree.
pub fn set_degree(s: &mut Scenario, axis: ScaleAxis, degree: u32) {
    axis.axis().set(s, degree.into());
}
