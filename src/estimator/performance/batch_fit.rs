//! The largest batch that fits a capacity, for the architecture comparison's rows.
//!
//! Per-GPU memory is a maximum over pipeline stage classes and phases of tensor bytes that are
//! affine in the batch *piecewise*: weights, states and overheads are fixed, activations and the
//! KV cache grow linearly, but some phases stay flat until the batch outgrows a fixed buffer (an
//! offloaded parameter's staging buffer, a vision tower's backward moment). So the memory is probed
//! at batches 2^j, kept as they are computed (≤ 17 probes shared by every row), the capacity is
//! bracketed between two of them, and inside the bracket each phase's line through its two probes
//! gives the largest batch in closed form, checked by the estimate at that batch and the next (the
//! lines assume the GPU total affine in the tensor peak, which FSDP2's stream pools break). Two
//! probes (batch 1 and 2) extrapolated to every capacity claimed a batch of 65,536 where the
//! estimate does not fit 4,645 (a tower scenario with parameters offloaded).

use crate::estimator::{Diagnostics, MAX_STAGE_CLASSES, Phase, memory, model, resolve};
use crate::scenario::{Axis, Scenario};

use super::compare::MAX_BATCH;

/// Probed batches are 2^0 … 2^LAST (= [`MAX_BATCH`]).
const LAST: usize = 16;
const _: () = assert!(1 << LAST == MAX_BATCH);

/// One probe: the GPU total, the tensor peak and every stage class's phase tensor totals.
#[derive(Clone, Copy)]
struct Probe {
    gpu_total: f64,
    tensor_peak: f64,
    phases: [[Option<f64>; Phase::COUNT]; MAX_STAGE_CLASSES],
}

/// The scenario's memory as a function of the batch, probed on demand.
pub(super) struct BatchFit<'a> {
    scenario: Scenario,
    model: &'a model::ResolvedModel,
    probes: [Option<Probe>; LAST + 1],
    /// [`Self::first`] and [`Self::affine`], once asked.
    first: Option<Segment>,
    affine: Option<bool>,
}

impl<'a> BatchFit<'a> {
    /// `scenario` is the resolved scenario (a copy without its strings: no heap allocation).
    pub(super) fn new(scenario: &Scenario, model: &'a model::ResolvedModel) -> Self {
        Self {
            scenario: super::compare::light_copy(scenario),
            model,
            probes: [None; LAST + 1],
            first: None,
            affine: None,
        }
    }

    /// The scenario's batch (`Axis::Batch`: the micro-batch, or the concurrent requests under
    /// dynamic batching).
    fn set_batch(&mut self, b: u32) {
        Axis::Batch.set(&mut self.scenario, f64::from(b));
    }

    /// Whether batch `b` fits `cap` bytes, by the estimate itself (a non-finite total does not).
    fn fits_at(&mut self, b: u32, cap: f64) -> bool {
        self.set_batch(b);
        let r =
            resolve::resolve_with_model(&self.scenario, self.model, &mut Diagnostics::default());
        memory::estimate_resolved(&r, &mut Diagnostics::default())
            .gpu_total
            .get()
            <= cap
    }

    /// The memory at batch 2^j (computed once).
    fn probe(&mut self, j: usize) -> Probe {
        if let Some(p) = self.probes[j] {
            return p;
        }
        self.set_batch(1u32 << j);
        let r =
            resolve::resolve_with_model(&self.scenario, self.model, &mut Diagnostics::default());
        let mem = memory::estimate_resolved(&r, &mut Diagnostics::default());
        let classes = if mem.stages.iter().any(Option::is_some) {
            memory::all_stage_phases(&r, &mem)
        } else {
            // No pipeline stages: the one stage's phases.
            let mut one = [None; MAX_STAGE_CLASSES];
            one[0] = Some(mem.phases);
            one
        };
        let mut phases = [[None; Phase::COUNT]; MAX_STAGE_CLASSES];
        for (slot, class) in phases.iter_mut().zip(&classes) {
            let Some(class) = class else { continue };
            for (t, p) in slot.iter_mut().zip(Phase::ALL) {
                *t = class
                    .get(p)
                    .map(|b| b.tensor_total().get())
                    .filter(|t| t.is_finite());
            }
        }
        let p = Probe {
            gpu_total: mem.gpu_total.get(),
            tensor_peak: mem.tensor_peak.get(),
            phases,
        };
        self.probes[j] = Some(p);
        p
    }

    /// Whether every phase and the GPU total lie on the lines through batches 1 and 2 at the
    /// largest batch too: then, each phase being convex in the batch (a sum of affine terms and
    /// maxima of them), they lie on them in between, and the first two probes answer every row.
    fn affine(&mut self) -> bool {
        if let Some(a) = self.affine {
            return a;
        }
        let (p1, p2, top) = (self.probe(0), self.probe(1), self.probe(LAST));
        let x = f64::from(MAX_BATCH);
        let on_line = |y1: f64, y2: f64, y: f64| {
            let want = y1 + (y2 - y1) * (x - 1.0);
            y.is_finite() && (y - want).abs() <= 1e-9 * want.abs().max(y.abs())
        };
        let phases = p1.phases.iter().flatten().zip(p2.phases.iter().flatten());
        let a = on_line(p1.gpu_total, p2.gpu_total, top.gpu_total)
            && on_line(p1.tensor_peak, p2.tensor_peak, top.tensor_peak)
            && phases
                .zip(top.phases.iter().flatten())
                .all(|((a, b), c)| match (a, b, c) {
                    (Some(a), Some(b), Some(c)) => on_line(*a, *b, *c),
                    (None, None, None) => true,
                    _ => false,
                });
        self.affine = Some(a);
        a
    }

    /// Whether batch 2^j fits `cap` bytes (a non-finite total does not).
    fn fits(&mut self, j: usize, cap: f64) -> bool {
        self.probe(j).gpu_total <= cap
    }

    /// The segment through batches 1 and 2 (computed once).
    fn first(&mut self) -> Segment {
        if let Some(f) = self.first {
            return f;
        }
        let f = Segment::new(&self.probe(0), &self.probe(1), 1.0);
        self.first = Some(f);
        f
    }

    /// Memory each batch element adds once activations or KV cache dominate: where the memory is
    /// affine in the batch, the largest per-phase slope from batch 1 to 2 through the GPU total's
    /// factor on the tensor peak; elsewhere the GPU total's mean slope from batch 2 to the largest
    /// probe (memory flat at batch 1 and 2 that grows later, an offloaded parameter's staging
    /// buffer, gave 0 from the first two probes).
    pub(super) fn slope(&mut self) -> f64 {
        if self.affine() {
            return self.first().slope();
        }
        let (p2, top) = (self.probe(1), self.probe(LAST));
        let mean = (top.gpu_total - p2.gpu_total) / f64::from(MAX_BATCH - 2);
        if mean.is_finite() {
            mean.max(0.0)
        } else {
            self.first().slope()
        }
    }

    /// Largest batch whose GPU total is at most `cap` bytes (0 if batch 1 does not fit).
    pub(super) fn max_batch(&mut self, cap: f64) -> u32 {
        if !self.fits(0, cap) {
            return 0;
        }
        let guess = self.first().within(cap).unwrap_or(MAX_BATCH as f64);
        if self.affine() {
            return guess.clamp(1.0, MAX_BATCH as f64) as u32;
        }
        // Start at the bracket the first two probes' lines predict.
        let mut j = (guess.clamp(1.0, MAX_BATCH as f64).log2().floor() as usize).min(LAST);
        while j > 0 && !self.fits(j, cap) {
            j -= 1;
        }
        while j < LAST && self.fits(j + 1, cap) {
            j += 1;
        }
        if j == LAST {
            return MAX_BATCH;
        }
        let (lo, hi) = (self.probe(j), self.probe(j + 1));
        let first = f64::from(1u32 << j);
        let guess = Segment::new(&lo, &hi, first).within(cap).unwrap_or(first);
        // The bracket holds the answer: batch 2^j fits, 2^(j+1) does not.
        let guess = guess.clamp(first, 2.0 * first - 1.0) as u32;
        self.boundary(guess, (1 << j, 2 << j), cap)
    }

    /// The largest batch that fits in `[fits, over)` (`fits` fits, `over` does not), checked by
    /// the estimate from `guess` out: the lines inside a bracket can miss by a little where the
    /// GPU total is not affine in the tensor peak (FSDP2's stream pools follow another phase than
    /// the peak: up to 0.5 % of the batch either way on random scenarios). Two estimates when the
    /// guess is right; galloping, then bisection, when it is not.
    fn boundary(&mut self, guess: u32, (mut fits, mut over): (u32, u32), cap: f64) -> u32 {
        let up = self.fits_at(guess, cap);
        let mut step = 1u32;
        if up {
            fits = guess;
            while fits + step < over && self.fits_at(fits + step, cap) {
                fits += step;
                step = step.saturating_mul(2);
            }
            over = over.min(fits.saturating_add(step));
        } else {
            over = guess;
            while over.saturating_sub(step) > fits && !self.fits_at(over - step, cap) {
                over -= step;
                step = step.saturating_mul(2);
            }
            fits = fits.max(over.saturating_sub(step));
        }
        while over - fits > 1 {
            let mid = fits + (over - fits) / 2;
            if self.fits_at(mid, cap) {
                fits = mid;
            } else {
                over = mid;
            }
        }
        fits
    }
}

/// The memory between the probes at batches `first` and 2·`first`, on lines through them.
#[derive(Clone, Copy)]
struct Segment {
    /// Each stage class's phase lines (a, c), T(b) = a + c·b, for the phases in both probes.
    lines: [[Option<(f64, f64)>; Phase::COUNT]; MAX_STAGE_CLASSES],
    tensor_peak: f64,
    gpu_total: f64,
    /// The GPU total is affine in the tensor peak (NCCL buffers, context and workspace fixed,
    /// the allocator's reserve a fraction of the peak): its factor.
    k: f64,
}

impl Segment {
    fn new(lo: &Probe, hi: &Probe, first: f64) -> Self {
        let mut lines = [[None; Phase::COUNT]; MAX_STAGE_CLASSES];
        for ((o, x), y) in lines.iter_mut().zip(&lo.phases).zip(&hi.phases) {
            for ((slot, x), y) in o.iter_mut().zip(x).zip(y) {
                if let (Some(x), Some(y)) = (x, y) {
                    let c = (y - x) / first;
                    *slot =
                        Some((x - c * first, c)).filter(|(a, c)| a.is_finite() && c.is_finite());
                }
            }
        }
        let dt = hi.tensor_peak - lo.tensor_peak;
        let k = if dt > 0.0 {
            (hi.gpu_total - lo.gpu_total) / dt
        } else {
            0.0
        };
        Self {
            lines,
            tensor_peak: lo.tensor_peak,
            gpu_total: lo.gpu_total,
            k: if k.is_finite() { k } else { 0.0 },
        }
    }

    /// The largest per-phase slope, through the GPU total's factor.
    fn slope(&self) -> f64 {
        let c = self
            .lines
            .iter()
            .flatten()
            .flatten()
            .fold(0.0_f64, |m, (_, c)| m.max(*c));
        (c * self.k).max(0.0)
    }

    /// The largest batch whose GPU total is at most `cap` on these lines: the tensor budget the
    /// cap leaves, then the smallest per-phase solution. `None` when nothing grows.
    fn within(&self, cap: f64) -> Option<f64> {
        if self.k <= 0.0 {
            return None;
        }
        let budget = self.tensor_peak + (cap - self.gpu_total) / self.k;
        self.lines
            .iter()
            .flatten()
            .flatten()
            .filter(|(_, c)| *c > 0.0)
            .map(|(a, c)| ((budget - a) / c).floor())
            .reduce(f64::min)
    }
}
