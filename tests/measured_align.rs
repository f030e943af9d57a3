//! The measured step over the estimated one (src/measured/marks.rs, align.rs): a snapshot whose
//! frames mark forward, backward and the optimizer is aligned phase against phase — its forward
//! starts where the estimated forward's first layer does, its backward where the estimated loss
//! backward does, its optimizer step where the estimated one does — and one without marks is
//! stretched over the step and says so.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::Path;

use vram_explorer::estimator::timeline::{self, Timeline};
use vram_explorer::estimator::{Phase, estimate};
use vram_explorer::measured::align::{Basis, align};
use vram_explorer::measured::{self, MeasuredTimeline, Measurement};
use vram_explorer::presets::bundled_scenario;

fn load(name: &str) -> MeasuredTimeline {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/snapshots")
        .join(name);
    match measured::load(&p).unwrap() {
        Measurement::Snapshot(t) => *t,
        Measurement::Light(_) => panic!("{name}: not a snapshot"),
    }
}

fn estimated() -> Timeline {
    let s = bundled_scenario("llama3-8b-full-finetune-h100").unwrap();
    timeline::build(&s, &estimate(&s))
}

fn span_start(t: &Timeline, phases: &[Phase]) -> f64 {
    t.phase_spans()
        .into_iter()
        .find(|(p, _, _)| phases.contains(p))
        .unwrap()
        .1 as f64
}

/// The x of the measured point recorded after `event`.
fn x_at(m: &MeasuredTimeline, a: &vram_explorer::measured::align::Aligned, event: usize) -> f64 {
    a.xs.iter()
        .find(|(_, i)| m.points[*i].event == event)
        .map(|(x, _)| *x)
        .unwrap_or_else(|| panic!("no point at event {event}"))
}

#[test]
fn a_training_step_is_aligned_at_forward_backward_and_optimizer() {
    let m = load("training_step.pickle");
    let t = estimated();
    let k = m.marks.expect("marks");
    let (f, b, o) = (
        k.forward.unwrap(),
        k.backward.unwrap(),
        k.optimizer.unwrap(),
    );
    assert!(k.start <= f && f < b && b < o && o <= k.end, "{k:?}");
    let a = align(&m, &t);
    assert_eq!(a.basis, Basis::Phases(3));
    assert_eq!(x_at(&m, &a, f), span_start(&t, &[Phase::Forward]) + 0.5);
    assert_eq!(
        x_at(&m, &a, b),
        span_start(&t, &[Phase::LossBackward, Phase::Backward]) - 0.5
    );
    assert_eq!(
        x_at(&m, &a, o),
        span_start(&t, &[Phase::OptimizerStep]) - 0.5
    );
    let n = t.points.len() as f64;
    assert!(a.xs.windows(2).all(|w| w[0].0 <= w[1].0), "x in order");
    assert!(a.xs.iter().all(|(x, _)| (-0.5..=n - 0.5).contains(x)));
}

#[test]
fn a_real_forward_and_backward_recording_is_aligned_at_both() {
    let m = load("real_cs336_transformer.pickle");
    let k = m.marks.expect("marks");
    assert!(k.forward.is_some() && k.backward.is_some(), "{k:?}");
    // The peak is in the step the marks describe.
    let peak = m.points[m.peak_point].event;
    assert!(k.start <= peak && peak <= k.end, "{k:?} {peak}");
    let a = align(&m, &estimated());
    assert!(
        matches!(a.basis, Basis::Phases(n) if n >= 2),
        "{:?} {k:?} peak {peak}",
        a.basis
    );
}

#[test]
fn a_recording_without_phase_frames_is_stretched_and_says_so() {
    let m = load("real_sketchkv2_no_history.pickle");
    assert!(m.marks.is_none());
    let t = estimated();
    let a = align(&m, &t);
    assert_eq!(a.basis, Basis::Fraction);
    assert!(a.basis.describe().contains("stretched"));
    assert_eq!(a.xs.first().map(|p| p.0), Some(-0.5));
}
