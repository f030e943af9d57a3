//! From a snapshot to a measured timeline: allocated and reserved bytes after every recorded event,
//! split by [`Kind`], with the allocated peak, the reserved peak and the fragmentation at the peak.
//!
//! As PyTorch's own viewer (`torch/cuda/_memory_viz.py` v2.5.0, `trace_plot`) does, the state
//! before the first recorded event is recovered backwards from the state at the dump: allocated
//! at the start = the blocks allocated at the dump − the net of the recorded allocs and frees
//! (likewise reserved from the segments and the segment events). A block stops counting at the
//! first of its `free_requested` / `free_completed` events (the tensor is dead; with
//! `record_stream` the allocator reuses it only at `free_completed`).

use std::collections::{HashMap, HashSet};

use super::attribution::{self, Kind, Life};
use super::snapshot::{Action, Snapshot, TraceEntry};

/// Points kept for drawing (each the largest of a run of events, so the peak is kept).
pub const MAX_POINTS: usize = 2000;

/// One point of the measured timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeasuredPoint {
    /// Index of the event after which this is the state.
    pub event: usize,
    pub allocated: f64,
    pub reserved: f64,
    /// Allocated bytes per [`Kind`].
    pub by_kind: [f64; Kind::COUNT],
}

/// What the snapshot shows on one device.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeasuredTimeline {
    pub device: i64,
    /// Recorded events on that device (0: the snapshot has no history, only the state at the dump).
    pub events: usize,
    pub points: Vec<MeasuredPoint>,
    /// Largest allocated bytes (comparable to `torch.cuda.max_memory_allocated` over the recording).
    pub allocated_peak: f64,
    /// Largest reserved bytes (comparable to `torch.cuda.max_memory_reserved`).
    pub reserved_peak: f64,
    /// Reserved bytes at the allocated peak.
    pub reserved_at_peak: f64,
    /// Reserved − allocated at the allocated peak: cached, split or rounded bytes.
    pub fragmentation: f64,
    /// Allocated bytes per kind at the allocated peak.
    pub at_peak: [f64; Kind::COUNT],
    /// Index into `points` of the allocated peak.
    pub peak_point: usize,
    /// Where the phases of the step holding the peak begin (`None`: the frames mark none).
    pub marks: Option<super::marks::StepMarks>,
}

/// The device with the most events (or the first segment's device when there is no history).
fn device_of(s: &Snapshot) -> (i64, &[TraceEntry]) {
    let best = s
        .device_traces
        .iter()
        .enumerate()
        .max_by_key(|(i, t)| (t.len(), usize::MAX - i));
    match best {
        Some((i, t)) if !t.is_empty() => (i as i64, t.as_slice()),
        _ => (s.segments.first().map_or(0, |g| g.device), &[]),
    }
}

/// Kinds of every alloc event (other events: `None`).
fn kinds(trace: &[TraceEntry]) -> Vec<Option<Kind>> {
    let hints: Vec<attribution::Hints> = trace.iter().map(|e| e.hints).collect();
    let first_forward = hints.iter().position(|h| h.forward).unwrap_or(trace.len());
    // next_backward[i]: the first event at or after i in a backward pass.
    let mut next_backward = vec![trace.len(); trace.len() + 1];
    for i in (0..trace.len()).rev() {
        next_backward[i] = if hints[i].backward {
            i
        } else {
            next_backward[i + 1]
        };
    }
    let mut freed_at: Vec<Option<usize>> = vec![None; trace.len()];
    let mut live: HashMap<u64, usize> = HashMap::new();
    for (j, e) in trace.iter().enumerate() {
        if e.action == Action::Alloc {
            live.insert(e.addr, j);
        } else if e.action.is_free()
            && let Some(i) = live.remove(&e.addr)
        {
            freed_at[i] = Some(j);
        }
    }
    trace
        .iter()
        .enumerate()
        .map(|(i, e)| {
            (e.action == Action::Alloc).then(|| {
                let life = Life {
                    before_first_forward: i < first_forward,
                    never_freed: freed_at[i].is_none(),
                    freed_in_backward: freed_at[i].is_some_and(|j| j > next_backward[i + 1]),
                };
                attribution::classify(hints[i], life)
            })
        })
        .collect()
}

/// The measured timeline of the snapshot's busiest device.
pub fn analyse(s: &Snapshot) -> MeasuredTimeline {
    let (device, trace) = device_of(s);
    let segs = s.segments.iter().filter(|g| g.device == device);
    let final_reserved: f64 = segs.clone().map(|g| g.total_size as f64).sum();
    let final_allocated: f64 = segs
        .flat_map(|g| g.blocks.iter())
        .filter(|b| b.active)
        .map(|b| b.size as f64)
        .sum();
    let kinds = kinds(trace);
    // Net change over the recording, to recover the starting state.
    let (mut net_a, mut net_r) = (0.0, 0.0);
    let mut requested: HashSet<u64> = HashSet::new();
    for e in trace {
        let size = e.size as f64;
        match e.action {
            Action::Alloc => net_a += size,
            a if a.is_free() && !requested.remove(&e.addr) => {
                net_a -= size;
                if a == Action::FreeRequested {
                    requested.insert(e.addr);
                }
            }
            Action::SegmentAlloc | Action::SegmentMap => net_r += size,
            Action::SegmentFree | Action::SegmentUnmap => net_r -= size,
            _ => {}
        }
    }
    let start = MeasuredPoint {
        event: 0,
        allocated: (final_allocated - net_a).max(0.0),
        reserved: (final_reserved - net_r).max(0.0),
        by_kind: {
            let mut k = [0.0; Kind::COUNT];
            k[Kind::BeforeRecording as usize] = (final_allocated - net_a).max(0.0);
            k
        },
    };
    walk(device, trace, &kinds, start)
}

/// Replays the events from `start`, keeping the largest point of each run of events.
fn walk(
    device: i64,
    trace: &[TraceEntry],
    kinds: &[Option<Kind>],
    start: MeasuredPoint,
) -> MeasuredTimeline {
    let mut cur = start;
    let mut live: HashMap<u64, (f64, Kind)> = HashMap::new();
    let mut requested: HashSet<u64> = HashSet::new();
    let bucket = trace.len().div_ceil(MAX_POINTS).max(1);
    let mut points = vec![start];
    let mut best = start;
    let mut peak = start;
    let mut reserved_peak = start.reserved;
    for (i, e) in trace.iter().enumerate() {
        let size = e.size as f64;
        match (e.action, kinds.get(i).copied().flatten()) {
            (Action::Alloc, Some(k)) => {
                live.insert(e.addr, (size, k));
                cur.allocated += size;
                cur.by_kind[k as usize] += size;
            }
            (a, _) if a.is_free() && !requested.remove(&e.addr) => {
                let (sz, k) = live
                    .remove(&e.addr)
                    .unwrap_or((size, Kind::BeforeRecording));
                cur.allocated = (cur.allocated - sz).max(0.0);
                cur.by_kind[k as usize] = (cur.by_kind[k as usize] - sz).max(0.0);
                if a == Action::FreeRequested {
                    requested.insert(e.addr);
                }
            }
            (Action::SegmentAlloc | Action::SegmentMap, _) => cur.reserved += size,
            (Action::SegmentFree | Action::SegmentUnmap, _) => {
                cur.reserved = (cur.reserved - size).max(0.0);
            }
            _ => {}
        }
        cur.event = i;
        reserved_peak = reserved_peak.max(cur.reserved);
        if cur.allocated > peak.allocated {
            peak = cur;
        }
        if cur.allocated > best.allocated || i % bucket == 0 {
            best = cur;
        }
        if (i + 1) % bucket == 0 || i + 1 == trace.len() {
            points.push(best);
            best = cur;
            best.allocated = f64::NEG_INFINITY;
        }
    }
    let peak_point = points
        .iter()
        .position(|p| p.event == peak.event && p.allocated == peak.allocated)
        .unwrap_or(0);
    let marks = super::marks::step_marks(trace, peak.event);
    MeasuredTimeline {
        marks,
        device,
        events: trace.len(),
        allocated_peak: peak.allocated,
        reserved_peak,
        reserved_at_peak: peak.reserved,
        fragmentation: (peak.reserved - peak.allocated).max(0.0),
        at_peak: peak.by_kind,
        peak_point,
        points,
    }
}
