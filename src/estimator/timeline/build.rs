//! Building the timeline from an estimate's phase breakdowns.

use super::{Point, Step, Timeline};
use crate::estimator::resolve::resolve_with_model;
use crate::estimator::{Breakdown, Component, Diagnostics, Estimate, Phase, PhasePeaks};
use crate::scenario::{Mode, RlAlgorithm, Scenario};
use crate::units::Bytes;

/// Decode steps drawn at most (evenly spaced tokens; the last is the estimate's decode phase).
const DECODE_POINTS: u32 = 32;
/// Layers drawn at most per pass (a deeper stage is sampled evenly; the phase points are kept).
const LAYER_POINTS: u32 = 256;

/// The timeline of `scenario` whose estimate is `est` (the same scenario's [`estimate`](crate::estimator::estimate)).
///
/// Every point of a phase is bounded by that phase's breakdown in `est.memory.phases`: an
/// interpolated point whose tensor total would exceed it is replaced by its componentwise minimum
/// with the phase breakdown (the estimate's phase peak is the authority), and the phase breakdown
/// itself is one of the points. So the maximum over each phase equals its peak exactly.
pub fn build(scenario: &Scenario, est: &Estimate) -> Timeline {
    let mut d = Diagnostics::default();
    let r = resolve_with_model(scenario, &est.model, &mut d);
    let mem = &est.memory;
    let layers_total = r.model.layers.max(1);
    let pp = r.pp_stages.max(1);
    // The limiting stage class as the estimator computed it (the one stage without PP).
    let (layers, in_flight) = match mem.limiting_stage() {
        Some(s) => (s.layers, s.in_flight),
        None => (layers_total, 1.0),
    };
    let ph = &mem.phases;
    // Gradient accumulation repeats forward and backward before one optimizer step; under
    // pipeline parallelism the schedule interleaves them (`in_flight`), drawn as one.
    let micro_batches = if pp > 1 || scenario.mode == Mode::Inference {
        1
    } else {
        r.scenario.workload.grad_accum_steps.max(1)
    };
    // A post-training run (issue 15 item 4) generates and scores before its training step (GRPO,
    // PPO); DPO scores the reference inside the step, beside the policy's saved activations.
    let dpo = r.scenario.post_training.algorithm == RlAlgorithm::Dpo;
    let backward_grads = crate::estimator::explain::deepspeed_backward_gradients(scenario, est);
    let points = match scenario.mode {
        Mode::Training => rollout(ph, dpo)
            .chain(drawn(micro_batches).flat_map(|mb| {
                let m = Micro {
                    number: mb,
                    first: mb == 1 && micro_batches > 1,
                    last: mb == micro_batches,
                    scoring: ph.get(Phase::Scoring).copied().filter(|_| dpo),
                    step_copies: step_copies(&r.scenario),
                    backward_grads,
                };
                training(ph, layers, in_flight, m)
            }))
            .collect(),
        Mode::Inference => inference(
            ph,
            layers,
            r.scenario.inference.generated_tokens,
            r.scenario.inference.engine.is_some(),
        ),
    };
    let peak = peak_index(&points);
    Timeline {
        points,
        peak,
        stage: mem.peak_stage,
        layers,
        in_flight,
        overhead: mem.peak.get(Component::NcclBuffers)
            + mem.peak.get(Component::CudaContext)
            + mem.peak.get(Component::AllocatorReserve),
        micro_batches,
    }
}

/// The micro-batches drawn: all of up to three, else the first and the last.
fn drawn(n: u32) -> impl Iterator<Item = u32> {
    (1..=n).filter(move |k| n <= 3 || *k == 1 || *k == n)
}

/// Which micro-batch of the step is being drawn.
#[derive(Clone, Copy)]
struct Micro {
    number: u32,
    /// The first of several: no gradients exist before its backward (they are created by its
    /// accumulate-grad hooks; `zero_grad(set_to_none=True)`, PyTorch's default since 2.0, freed them).
    first: bool,
    /// The last: the optimizer step follows it.
    last: bool,
    /// DPO's reference scoring, drawn after this micro-batch's loss.
    scoring: Option<Breakdown>,
    /// The optimizer step's gradients are copies made for it (DeepSpeed stage 3's sub-group,
    /// `frameworks::deepspeed::step_gradients`), not the gradients backward accumulates.
    step_copies: bool,
    /// The gradients at the end of backward when DeepSpeed stage 1 or 2 runs the step, whose
    /// gradients are its own copies (`explain::deepspeed_backward_gradients`).
    backward_grads: Option<f64>,
}

/// Whether DeepSpeed stage 3 runs the step ([`Micro::step_copies`]).
fn step_copies(s: &Scenario) -> bool {
    s.implementation.sharding == crate::scenario::Sharding::DeepSpeed
        && s.strategies.zero == crate::scenario::ZeroStage::Stage3
        && s.mode == Mode::Training
}

/// The rollout phases before a post-training step: generation, then (outside DPO) scoring; each
/// drawn as its phase breakdown.
fn rollout(ph: &PhasePeaks, dpo: bool) -> impl Iterator<Item = Point> + '_ {
    let generation = ph
        .get(Phase::Generation)
        .map(|b| (Step::Generation, Phase::Generation, b));
    let scoring = ph
        .get(Phase::Scoring)
        .filter(|_| !dpo)
        .map(|b| (Step::Scoring, Phase::Scoring, b));
    generation
        .into_iter()
        .chain(scoring)
        .map(|(step, phase, b)| Point {
            step,
            phase,
            micro_batch: 1,
            bytes: *b,
        })
}

fn peak_index(points: &[Point]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, p) in points.iter().enumerate() {
        let t = p.bytes.tensor_total().get();
        if best.is_none_or(|(_, b)| t > b) {
            best = Some((i, t));
        }
    }
    best.map(|(i, _)| i)
}

/// `b` with activations, gradients and transient replaced.
fn with(b: &Breakdown, acts: f64, grads: f64, transient: f64) -> Breakdown {
    let mut out = *b;
    out.set(Component::Activations, Bytes(acts));
    out.set(Component::Gradients, Bytes(grads));
    out.set(Component::Transient, Bytes(transient));
    out
}

/// `b`, or its componentwise minimum with `bound` when its tensor total exceeds `bound`'s.
fn capped(b: Breakdown, bound: &Breakdown) -> Breakdown {
    if b.tensor_total().get() <= bound.tensor_total().get() {
        return b;
    }
    let mut out = b;
    for c in Component::ALL {
        out.set(c, Bytes(b.get(c).get().min(bound.get(c).get())));
    }
    out
}

fn get(b: &Breakdown, c: Component) -> f64 {
    b.get(c).get()
}

/// The layer numbers drawn for a pass of `layers` layers: all of them, or `LAYER_POINTS` evenly
/// spaced ones ending at the last.
fn layer_marks(layers: u32) -> impl Iterator<Item = u32> {
    let n = layers.clamp(1, LAYER_POINTS);
    (1..=n).map(move |k| (u64::from(k) * u64::from(layers)).div_ceil(u64::from(n)) as u32)
}

/// The smallest transient of the phases present (what every phase holds).
fn floor_transient(ph: &PhasePeaks) -> f64 {
    Phase::ALL
        .iter()
        .filter_map(|p| ph.get(*p))
        .map(|b| get(b, Component::Transient))
        .fold(f64::INFINITY, f64::min)
}

fn training(ph: &PhasePeaks, layers: u32, in_flight: f64, m: Micro) -> Vec<Point> {
    let mut out = Vec::new();
    let Some(fwd) = ph.get(Phase::Forward) else {
        return out;
    };
    let t0 = floor_transient(ph);
    let l = f64::from(layers);
    let (a_f, g_f) = (
        get(fwd, Component::Activations),
        if m.first {
            0.0
        } else {
            get(fwd, Component::Gradients)
        },
    );
    // Bounded by the phase's breakdown (the earlier micro-batch holds fewer gradients).
    let early = |b: &Breakdown| {
        if m.first {
            with(
                b,
                get(b, Component::Activations),
                0.0,
                get(b, Component::Transient),
            )
        } else {
            *b
        }
    };
    // The other micro-batches in flight already hold their saved activations.
    let a0 = a_f * (in_flight - 1.0).max(0.0) / in_flight.max(1.0);
    let mut push = |step, phase, bytes| {
        out.push(Point {
            step,
            phase,
            micro_batch: m.number,
            bytes,
        });
    };
    push(
        Step::Start,
        Phase::Forward,
        with(fwd, a0, g_f, t0.min(get(fwd, Component::Transient))),
    );
    for n in layer_marks(layers) {
        let a = a0 + (a_f - a0) * f64::from(n) / l;
        push(
            Step::ForwardLayer(n),
            Phase::Forward,
            capped(with(fwd, a, g_f, t0), fwd),
        );
    }
    push(Step::Loss, Phase::Forward, early(fwd));
    if let Some(sc) = &m.scoring {
        push(Step::Scoring, Phase::Scoring, *sc);
    }
    let mut prev = early(fwd);
    if let Some(lb) = ph.get(Phase::LossBackward) {
        push(Step::LossBackward, Phase::LossBackward, early(lb));
        prev = early(lb);
    }
    let opt = ph.get(Phase::OptimizerStep);
    if let Some(bwd) = ph.get(Phase::Backward) {
        let g_end = m.backward_grads.unwrap_or_else(|| {
            opt.filter(|_| !m.step_copies)
                .map_or(get(bwd, Component::Gradients), |o| {
                    get(o, Component::Gradients)
                })
        });
        for (n, b) in backward(bwd, &prev, (layers, t0, g_end), m) {
            push(Step::BackwardLayer(n), Phase::Backward, b);
        }
    }
    if m.last
        && let Some(o) = opt
    {
        push(Step::OptimizerStep, Phase::OptimizerStep, *o);
    }
    out
}

/// The backward layer by layer, from `prev` (the loss backward) to `g_end` gradients.
///
/// The phase's breakdown is the first layer's backward when it holds activations, else the end
/// of backward (estimator/memory/training.rs picks the larger of the two); the first of several
/// micro-batches draws it with the gradients made so far.
fn backward(
    bwd: &Breakdown,
    prev: &Breakdown,
    (layers, t0, g_end): (u32, f64, f64),
    m: Micro,
) -> Vec<(u32, Breakdown)> {
    let l = f64::from(layers);
    let (a_p, g_p) = (
        get(prev, Component::Activations),
        get(prev, Component::Gradients),
    );
    let exact_first = get(bwd, Component::Activations) > 0.0;
    let marks: Vec<u32> = layer_marks(layers).collect();
    let last = marks.len().saturating_sub(1);
    marks
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let done = f64::from(n) / l;
            let g = g_p + (g_end - g_p) * done;
            let exact = (exact_first && i == 0) || (!exact_first && i == last);
            let b = if exact && !m.first {
                *bwd
            } else if exact {
                let (a, t) = (
                    get(bwd, Component::Activations),
                    get(bwd, Component::Transient),
                );
                capped(with(bwd, a, g, t), bwd)
            } else {
                let t = t0.min(get(bwd, Component::Transient));
                capped(with(bwd, a_p * (1.0 - done), g, t), bwd)
            };
            (n, b)
        })
        .collect()
}

/// Prefill layer by layer, then decode token by token. The KV cache grows with them, except under a
/// serving engine (`preallocated`): vLLM, SGLang and llama.cpp allocate their whole pool at startup
/// (docs/engines/), so it is the same at every point and the requests fill it from inside.
fn inference(ph: &PhasePeaks, layers: u32, generated: u32, preallocated: bool) -> Vec<Point> {
    let mut out = Vec::new();
    let Some(pre) = ph.get(Phase::Prefill) else {
        return out;
    };
    let l = f64::from(layers);
    let k_p = get(pre, Component::KvCache);
    let t_p = get(pre, Component::Transient);
    let mut push = |step, phase, bytes| {
        out.push(Point {
            step,
            phase,
            micro_batch: 1,
            bytes,
        });
    };
    for n in layer_marks(layers) {
        let b = if n == layers {
            *pre
        } else {
            let mut b = *pre;
            if !preallocated {
                b.set(Component::KvCache, Bytes(k_p * f64::from(n) / l));
            }
            b.set(Component::Transient, Bytes(t_p));
            b
        };
        push(Step::PrefillLayer(n), Phase::Prefill, b);
    }
    let Some(dec) = ph.get(Phase::Decode) else {
        return out;
    };
    let g = generated.max(1);
    let n = g.min(DECODE_POINTS);
    let k_d = get(dec, Component::KvCache);
    for k in 1..=n {
        let token = (u64::from(k) * u64::from(g)).div_ceil(u64::from(n)) as u32;
        let b = if k == n || preallocated {
            *dec
        } else {
            let mut b = *dec;
            b.set(
                Component::KvCache,
                Bytes(k_p + (k_d - k_p) * f64::from(token) / f64::from(g)),
            );
            capped(b, dec)
        };
        push(Step::DecodeToken(token), Phase::Decode, b);
    }
    out
}
