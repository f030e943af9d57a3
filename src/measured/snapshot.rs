//! The typed contents of a PyTorch memory snapshot: what `torch.cuda.memory._dump_snapshot(path)`
//! pickles (the dict `torch.cuda.memory._snapshot()` returns). Field names and meanings from the
//! `TypedDict`s `Segment`, `Block`, `Frame`, `TraceEntry` and `Snapshot` in PyTorch
//! `torch/cuda/memory.py` (v2.5.0, `_snapshot` docstring); the viewer that reads the same file is
//! `torch/cuda/_memory_viz.py`. Fields added by later versions are ignored; missing ones default.

use serde::Deserialize;

/// One stack frame (innermost first, as the allocator records them).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Frame {
    pub filename: String,
    pub line: i64,
    pub name: String,
}

/// A block of a segment: allocated to a tensor, waiting to be freed, or cached (inactive).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Block {
    /// Bytes of the block (the allocator rounds requests up: 512 B granules).
    pub size: u64,
    /// Bytes requested by the caller.
    pub requested_size: u64,
    pub address: u64,
    /// "active_allocated", "active_pending_free" or "inactive".
    pub state: String,
    pub frames: Vec<Frame>,
}

/// A segment: memory the allocator obtained with `cudaMalloc` (reserved), split into blocks.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Segment {
    pub device: i64,
    pub address: u64,
    /// Reserved bytes of the segment.
    pub total_size: u64,
    /// Bytes of its blocks allocated to tensors.
    pub allocated_size: u64,
    pub active_size: u64,
    pub requested_size: u64,
    pub stream: i64,
    /// "small" (≤ 1 MiB allocations, 2 MiB segments) or "large".
    pub segment_type: String,
    pub blocks: Vec<Block>,
}

/// One recorded allocator event (`_record_memory_history` must be on).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct TraceEntry {
    /// "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    /// "segment_map", "segment_unmap", "snapshot" or "oom".
    pub action: String,
    pub addr: u64,
    pub size: u64,
    pub stream: i64,
    pub frames: Vec<Frame>,
    /// Present from PyTorch 2.1 on.
    pub time_us: Option<i64>,
}

/// The whole snapshot.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct Snapshot {
    pub segments: Vec<Segment>,
    /// One list of events per device, oldest first.
    pub device_traces: Vec<Vec<TraceEntry>>,
}
