//! Where the measured step's phases begin, read off the events' stack frames: the training step
//! that holds the allocated peak, from the event after the previous optimizer step to the end of
//! its own optimizer step. An event is in forward when a frame is a module's `forward` (and none
//! is in backward), in backward when a frame is in `torch/autograd/` or named `backward`, in the
//! optimizer when a frame is in `torch/optim/` (the same frame rules as [`super::attribution`]).
//! These marks let the measured line be drawn phase against phase over the estimated timeline
//! ([`super::align`]) rather than stretched over it.

use super::attribution::Hints;
use super::snapshot::TraceEntry;

/// Event indices of one measured step (`None`: no event of that phase in the step).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepMarks {
    /// First event of the step.
    pub start: usize,
    pub forward: Option<usize>,
    pub backward: Option<usize>,
    pub optimizer: Option<usize>,
    /// Last event of the step.
    pub end: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ph {
    Forward,
    Backward,
    Optimizer,
    None,
}

fn phase(h: Hints) -> Ph {
    if h.optimizer {
        Ph::Optimizer
    } else if h.backward || h.accumulate_grad {
        Ph::Backward
    } else if h.forward {
        Ph::Forward
    } else {
        Ph::None
    }
}

/// The marks of the step holding event `peak`; `None` when no event of the trace has a phase
/// (no frames were recorded, or none is a module's forward, autograd or an optimizer).
///
/// A step begins with a forward event whose previous phased event is in backward or the optimizer
/// (or with the first phased event); it takes the unphased events before it (inputs, `zero_grad`)
/// and ends where the next step begins. Gradient accumulation's several forwards and backwards
/// before one optimizer step are several such steps; the marks are the peak's.
pub fn step_marks(trace: &[TraceEntry], peak: usize) -> Option<StepMarks> {
    let ph: Vec<Ph> = trace.iter().map(|e| phase(e.hints)).collect();
    let mut starts: Vec<usize> = Vec::new();
    let mut prev = Ph::None;
    for (i, p) in ph.iter().enumerate() {
        if *p == Ph::None {
            continue;
        }
        if *p == Ph::Forward && prev != Ph::Forward || prev == Ph::None {
            starts.push(i);
        }
        prev = *p;
    }
    let k = starts.iter().rposition(|s| *s <= peak).unwrap_or(0);
    let first = *starts.get(k)?;
    let next = starts.get(k + 1).copied().unwrap_or(ph.len());
    // The unphased events since the previous step's last phased one belong to this step.
    let start = (0..first)
        .rev()
        .find(|&i| ph[i] != Ph::None)
        .map_or(0, |i| i + 1);
    let find = |from: usize, want: Ph| (from..next).find(|&i| ph[i] == want);
    let forward = find(first, Ph::Forward);
    let backward = find(forward.unwrap_or(first), Ph::Backward);
    let optimizer = find(backward.or(forward).unwrap_or(first), Ph::Optimizer);
    Some(StepMarks {
        start,
        forward,
        backward,
        optimizer,
        end: next.saturating_sub(1).max(start),
    })
}
