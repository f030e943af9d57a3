//! Where each measured point goes on the estimated timeline's x axis (bar `i` spans `i − ½ ..
//! i + ½`). With the measured step's phase marks ([`super::marks`]) the two are aligned phase
//! against phase: the measured forward starts where the estimated forward's first layer does, its
//! backward where the estimated loss backward (or backward) does, its optimizer step where the
//! estimated one does, and events in between are spread linearly. Without marks the recording is
//! stretched over the whole step, and [`Basis::Fraction`] says so.

use super::MeasuredTimeline;
use crate::estimator::Phase;
use crate::estimator::timeline::Timeline;

/// How the measured run was placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// Aligned at these many phase starts (forward, backward, optimizer) besides the step's ends.
    Phases(u8),
    /// The recording's events spread evenly over the step (no phase marks to align on).
    Fraction,
}

impl Basis {
    /// What the x axis shows for the measured run, for its label (short: the chart may be narrow).
    pub fn describe(self) -> &'static str {
        match self {
            Basis::Phases(_) => "measured run aligned by phase",
            Basis::Fraction => "measured run stretched (no phase marks)",
        }
    }
}

/// The measured points to draw, each with its x.
#[derive(Clone, Debug, PartialEq)]
pub struct Aligned {
    pub basis: Basis,
    /// (x, index into the measured timeline's points), in x order.
    pub xs: Vec<(f64, usize)>,
}

/// The first point index of the first span of any of `phases`.
fn span_start(t: &Timeline, phases: &[Phase]) -> Option<usize> {
    t.phase_spans()
        .into_iter()
        .find(|(p, _, _)| phases.contains(p))
        .map(|(_, a, _)| a)
}

/// Places `m`'s points over `t`.
pub fn align(m: &MeasuredTimeline, t: &Timeline) -> Aligned {
    let n = t.points.len().max(1) as f64;
    let last_event = m.points.last().map_or(0, |p| p.event) as f64;
    let mut anchors: Vec<(f64, f64)> = Vec::with_capacity(5);
    let mut matched = 0u8;
    if let Some(k) = m.marks {
        anchors.push((k.start as f64, -0.5));
        let est = [
            (
                k.forward,
                span_start(t, &[Phase::Forward]).map(|a| a as f64 + 0.5),
            ),
            (
                k.backward,
                span_start(t, &[Phase::LossBackward, Phase::Backward]).map(|a| a as f64 - 0.5),
            ),
            (
                k.optimizer,
                span_start(t, &[Phase::OptimizerStep]).map(|a| a as f64 - 0.5),
            ),
        ];
        for (event, x) in est {
            if let (Some(e), Some(x)) = (event, x) {
                let (e0, x0) = anchors.last().copied().unwrap_or((-1.0, -1.0));
                if e as f64 >= e0 && x > x0 && x < n - 0.5 {
                    // A phase that starts with the step takes the step's first anchor.
                    if e as f64 == e0 {
                        anchors.pop();
                    }
                    anchors.push((e as f64, x));
                    matched += 1;
                }
            }
        }
        let end = (k.end as f64).max(anchors.last().map_or(0.0, |a| a.0) + 1.0);
        anchors.push((end, n - 0.5));
    }
    if matched == 0 {
        anchors = vec![(0.0, -0.5), (last_event.max(1.0), n - 0.5)];
    }
    let (lo, hi) = (
        anchors.first().map_or(0.0, |a| a.0),
        anchors.last().map_or(0.0, |a| a.0),
    );
    let xs = m
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| (lo..=hi).contains(&(p.event as f64)))
        .map(|(i, p)| (x_of(&anchors, p.event as f64), i))
        .collect();
    Aligned {
        basis: if matched == 0 {
            Basis::Fraction
        } else {
            Basis::Phases(matched)
        },
        xs,
    }
}

/// Piecewise-linear through the anchors (event, x).
fn x_of(anchors: &[(f64, f64)], e: f64) -> f64 {
    for w in anchors.windows(2) {
        let ((e0, x0), (e1, x1)) = (w[0], w[1]);
        if e <= e1 {
            let f = if e1 > e0 { (e - e0) / (e1 - e0) } else { 0.0 };
            return x0 + f.clamp(0.0, 1.0) * (x1 - x0);
        }
    }
    anchors.last().map_or(0.0, |a| a.1)
}
