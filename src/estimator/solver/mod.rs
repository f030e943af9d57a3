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
mod cache;
mod describe;
pub mod fit;
pub mod quant_fit;
mod search;
mod space;

pub use cache::FitCache;
pub use describe::{checkpointing_label, optimizer_label, precision_label, zero_label};
pub use fit::{CHANGE_PENALTY, FitOptions, FitResult, Suggestion, make_it_fit, make_it_fit_with};
pub use quant_fit::{QuantFit, quant_fit};
pub use search::{Coord, Probe, solve_max_with, solve_min_with};

use super::{Estimate, estimate};
use crate::scenario::{Mode, ModelFamily, Scenario, ShapeSource};

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

/// What a "largest that fits" solve varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Training and static-batch inference: `workload.micro_batch`; inference with dynamic batching:
    /// `inference.concurrent_requests`.
    MicroBatch,
    /// Training: `workload.seq_len`; inference: `inference.prompt_tokens` (the context is the prompt plus
    /// the generated tokens, which stay fixed).
    Context,
    /// Transformers given by dimensions: `transformer.layers` (width kept); given by parameter count:
    /// `model.params` in millions; CNNs: `cnn.params` in millions. Not applicable to recommenders.
    ModelSize,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::MicroBatch, Target::Context, Target::ModelSize];

    /// The valid range of the varied field (scenario documentation of each field).
    pub fn range(self, s: &Scenario) -> Option<(u64, u64)> {
        match self {
            Target::MicroBatch => Some((1, 65_536)),
            Target::Context => match s.mode {
                Mode::Training => Some((1, 10_000_000)),
                Mode::Inference => {
                    let generated = u64::from(s.inference.generated_tokens);
                    Some((1, 10_000_000u64.saturating_sub(generated).max(1)))
                }
            },
            Target::ModelSize => match (s.model.family, s.model.shape) {
                (ModelFamily::Transformer, ShapeSource::Dimensions) => Some((1, 10_000)),
                // Millions of parameters: 1e5 ..= 1e13 parameters (ModelSpec::params).
                (ModelFamily::Transformer, ShapeSource::ParamCount) | (ModelFamily::Cnn, _) => {
                    Some((1, 10_000_000))
                }
                (ModelFamily::Recommender, _) => None,
            },
        }
    }

    /// The current value of the varied field.
    pub fn get(self, s: &Scenario) -> u64 {
        match self {
            Target::MicroBatch if batch_is_requests(s) => s.inference.concurrent_requests.into(),
            Target::MicroBatch => s.workload.micro_batch.into(),
            Target::Context => match s.mode {
                Mode::Training => s.workload.seq_len.into(),
                Mode::Inference => s.inference.prompt_tokens.into(),
            },
            Target::ModelSize => match (s.model.family, s.model.shape) {
                (ModelFamily::Transformer, ShapeSource::Dimensions) => {
                    s.model.transformer.layers.into()
                }
                (ModelFamily::Cnn, _) => millions(s.model.cnn.params),
                _ => millions(s.model.params),
            },
        }
    }

    /// Sets the varied field to `value` (saturating at `u32::MAX` for count fields).
    pub fn set(self, s: &mut Scenario, value: u64) {
        let v32 = u32::try_from(value).unwrap_or(u32::MAX);
        match self {
            Target::MicroBatch if batch_is_requests(s) => s.inference.concurrent_requests = v32,
            Target::MicroBatch => s.workload.micro_batch = v32,
            Target::Context => match s.mode {
                Mode::Training => s.workload.seq_len = v32,
                Mode::Inference => s.inference.prompt_tokens = v32,
            },
            Target::ModelSize => match (s.model.family, s.model.shape) {
                (ModelFamily::Transformer, ShapeSource::Dimensions) => {
                    s.model.transformer.layers = v32
                }
                (ModelFamily::Cnn, _) => s.model.cnn.params = value as f64 * 1e6,
                _ => s.model.params = value as f64 * 1e6,
            },
        }
    }

    pub const fn label(self) -> &'static str {
        match self {
            Target::MicroBatch => "micro-batch",
            Target::Context => "context length",
            Target::ModelSize => "model size",
        }
    }
}

fn batch_is_requests(s: &Scenario) -> bool {
    s.mode == Mode::Inference && s.inference.dynamic_batching
}

fn millions(params: f64) -> u64 {
    if params.is_finite() && params > 0.0 {
        (params / 1e6).round() as u64
    } else {
        0
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

/// Largest value of `target` that fits the scenario's GPU, everything else fixed.
pub fn max_fitting(s: &Scenario, target: Target) -> Solved {
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
            let mut t = 1u32;
            while t <= heads && t <= 512 {
                if heads.is_multiple_of(t) {
                    push(t);
                }
                t *= 2;
            }
        }
        ScaleAxis::Pp => {
            let layers = s.model.transformer.layers.clamp(1, 64);
            for p in 1..=layers {
                push(p);
            }
        }
    }
    n
}

/// Smallest degree on `axis` that fits, the other degrees fixed. The GPU count of the answer is
/// `parallel.gpus()` with that degree set. DP keeps the micro-batch (the global batch grows with DP).
pub fn min_degree(s: &Scenario, axis: ScaleAxis) -> Solved {
    let mut scratch = s.clone();
    if axis == ScaleAxis::Dp {
        // Memory per GPU is affine in 1/N_d under ZeRO (ZeRO §5, Figure 1): interpolate in 1/dp.
        return solve_min_with(&mut scratch, 1, 65_536, Coord::Reciprocal, |sc, v| {
            sc.parallel.dp = u32::try_from(v).unwrap_or(u32::MAX);
            probe(&estimate(sc))
        });
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
    match axis {
        ScaleAxis::Dp => s.parallel.dp = degree,
        ScaleAxis::Tp => s.parallel.tp = degree,
        ScaleAxis::Pp => s.parallel.pp = degree,
    }
}
