//! The typed contents of a PyTorch memory snapshot: what `torch.cuda.memory._dump_snapshot(path)`
//! pickles (the dict `torch.cuda.memory._snapshot()` returns). Field names and meanings from the
//! `TypedDict`s `Segment`, `Block`, `Frame`, `TraceEntry` and `Snapshot` in PyTorch
//! `torch/cuda/memory.py` (v2.5.0, `_snapshot` docstring); the viewer that reads the same file is
//! `torch/cuda/_memory_viz.py`. Keys added by later versions (`segment_pool_id`, `is_expandable`,
//! `compile_context`, `user_metadata`, `allocator_settings`, `external_annotations`) are ignored;
//! missing ones default. An event's stack frames are read into [`Hints`] as they are met (each
//! shared frame once), never kept as strings.

use super::MeasuredError;
use super::attribution::{self, Hints};
use super::pickle::{Arena, Shape, V};

/// Segments read at most.
pub const MAX_SEGMENTS: usize = 1_000_000;
/// Blocks read at most (all segments together).
pub const MAX_BLOCKS: usize = 20_000_000;
/// Events read at most (all devices together).
pub const MAX_EVENTS: usize = 5_000_000;

/// What a recorded event did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Action {
    Alloc,
    /// `free_requested`: the tensor is dead (with `record_stream`, reuse waits for the stream).
    FreeRequested,
    /// `free_completed` (or `free` in PyTorch < 2.1).
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    /// `snapshot`, `oom` and anything newer.
    #[default]
    Other,
}

impl Action {
    fn of(s: &str) -> Action {
        match s {
            "alloc" => Action::Alloc,
            "free_requested" => Action::FreeRequested,
            "free_completed" | "free" => Action::FreeCompleted,
            "segment_alloc" => Action::SegmentAlloc,
            "segment_free" => Action::SegmentFree,
            "segment_map" => Action::SegmentMap,
            "segment_unmap" => Action::SegmentUnmap,
            _ => Action::Other,
        }
    }

    /// A free of either kind.
    pub fn is_free(self) -> bool {
        matches!(self, Action::FreeRequested | Action::FreeCompleted)
    }
}

/// A block of a segment: allocated to a tensor, waiting to be freed, or cached (inactive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// Bytes of the block (the allocator rounds requests up: 512 B granules).
    pub size: u64,
    /// "active_allocated" or "active_pending_free" (else "inactive").
    pub active: bool,
}

/// A segment: memory the allocator obtained with `cudaMalloc` (reserved), split into blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segment {
    pub device: i64,
    /// Reserved bytes of the segment.
    pub total_size: u64,
    /// Bytes of its blocks allocated to tensors.
    pub allocated_size: u64,
    pub blocks: Vec<Block>,
}

/// One recorded allocator event (`_record_memory_history` must be on).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceEntry {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    /// What the event's stack frames say (`attribution::frame_hints` over them).
    pub hints: Hints,
    /// Present from PyTorch 2.1 on.
    pub time_us: Option<i64>,
}

/// The whole snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub segments: Vec<Segment>,
    /// One list of events per device, oldest first.
    pub device_traces: Vec<Vec<TraceEntry>>,
}

/// Reads a snapshot from a pickle's arena.
pub fn read(top: V, a: &Arena<'_>) -> Result<Snapshot, MeasuredError> {
    let mut r = Reader {
        a,
        hints: vec![None; a.objs.len()],
        blocks: 0,
    };
    let root = r.dict(top, "the top level")?;
    let mut s = Snapshot::default();
    if let Some(v) = r.get(root, "segments") {
        let list = r.list(v, "segments")?;
        if list.len() > MAX_SEGMENTS {
            return Err(MeasuredError::TooLarge(format!(
                "more than {MAX_SEGMENTS} segments"
            )));
        }
        s.segments = list
            .iter()
            .map(|g| r.segment(*g))
            .collect::<Result<_, _>>()?;
    }
    if let Some(v) = r.get(root, "device_traces") {
        let traces = r.list(v, "device_traces")?;
        // Counted before any is read: one list referenced many times counts each time.
        let total = traces.iter().try_fold(0usize, |n, t| {
            Ok::<_, MeasuredError>(n.saturating_add(r.list(*t, "a device trace")?.len()))
        })?;
        if total > MAX_EVENTS {
            return Err(MeasuredError::TooLarge(format!(
                "more than {MAX_EVENTS} events"
            )));
        }
        for t in traces {
            let trace = r.trace(*t)?;
            s.device_traces.push(trace);
        }
    }
    Ok(s)
}

struct Reader<'r, 'a> {
    a: &'r Arena<'a>,
    /// Hints of each frame dict and frame list already read, by container index.
    hints: Vec<Option<Hints>>,
    blocks: usize,
}

fn wrong(what: &str, expected: &str) -> MeasuredError {
    MeasuredError::Malformed(format!("not a memory snapshot: {what} is not {expected}"))
}

impl<'r> Reader<'r, '_> {
    fn dict(&self, v: V, what: &str) -> Result<&'r [V], MeasuredError> {
        match self.a.obj(v) {
            Some((Shape::Dict, items)) => Ok(items),
            _ => Err(wrong(what, "a dict")),
        }
    }

    fn list(&self, v: V, what: &str) -> Result<&'r [V], MeasuredError> {
        match self.a.obj(v) {
            Some((Shape::List | Shape::Tuple, items)) => Ok(items),
            _ => Err(wrong(what, "a list")),
        }
    }

    /// The value of `key` in a dict's items (the last one wins, as in Python).
    fn get(&self, dict: &[V], key: &str) -> Option<V> {
        dict.chunks_exact(2)
            .rev()
            .find(|kv| self.a.str(kv[0]) == Some(key))
            .map(|kv| kv[1])
    }

    fn int(&self, dict: &[V], key: &str) -> Result<i64, MeasuredError> {
        match self.get(dict, key) {
            None | Some(V::None) => Ok(0),
            Some(V::Int(i)) => Ok(i),
            Some(V::Bool(b)) => Ok(i64::from(b)),
            Some(_) => Err(wrong(key, "an integer")),
        }
    }

    fn uint(&self, dict: &[V], key: &str) -> Result<u64, MeasuredError> {
        u64::try_from(self.int(dict, key)?).map_err(|_| wrong(key, "a size"))
    }

    fn text(&self, dict: &[V], key: &str) -> Result<&'r str, MeasuredError> {
        match self.get(dict, key) {
            None => Ok(""),
            Some(v) => self.a.str(v).ok_or_else(|| wrong(key, "a string")),
        }
    }

    fn segment(&mut self, v: V) -> Result<Segment, MeasuredError> {
        let d = self.dict(v, "a segment")?;
        let mut blocks = Vec::new();
        if let Some(b) = self.get(d, "blocks") {
            let list = self.list(b, "blocks")?;
            self.blocks += list.len();
            if self.blocks > MAX_BLOCKS {
                return Err(MeasuredError::TooLarge(format!(
                    "more than {MAX_BLOCKS} blocks"
                )));
            }
            for b in list {
                let bd = self.dict(*b, "a block")?;
                blocks.push(Block {
                    size: self.uint(bd, "size")?,
                    active: self.text(bd, "state")?.starts_with("active"),
                });
            }
        }
        Ok(Segment {
            device: self.int(d, "device")?,
            total_size: self.uint(d, "total_size")?,
            allocated_size: self.uint(d, "allocated_size")?,
            blocks,
        })
    }

    fn trace(&mut self, v: V) -> Result<Vec<TraceEntry>, MeasuredError> {
        let list = self.list(v, "a device trace")?;
        list.iter().map(|e| self.event(*e)).collect()
    }

    fn event(&mut self, v: V) -> Result<TraceEntry, MeasuredError> {
        let d = self.dict(v, "an event")?;
        let hints = match self.get(d, "frames") {
            Some(f) => self.frames(f)?,
            None => Hints::default(),
        };
        let time_us = match self.get(d, "time_us") {
            Some(V::Int(t)) => Some(t),
            _ => None,
        };
        Ok(TraceEntry {
            action: Action::of(self.text(d, "action")?),
            addr: self.uint(d, "addr")?,
            size: self.uint(d, "size")?,
            hints,
            time_us,
        })
    }

    /// The hints of a frame list, each list and each frame dict read once.
    fn frames(&mut self, v: V) -> Result<Hints, MeasuredError> {
        if let Some(h) = self.cached(v) {
            return Ok(h);
        }
        let mut h = Hints::default();
        for f in self.list(v, "frames")? {
            let fh = match self.cached(*f) {
                Some(fh) => fh,
                None => {
                    let d = self.dict(*f, "a frame")?;
                    let fh =
                        attribution::frame_hints(self.text(d, "filename")?, self.text(d, "name")?);
                    self.remember(*f, fh);
                    fh
                }
            };
            h = h.or(fh);
        }
        self.remember(v, h);
        Ok(h)
    }

    fn cached(&self, v: V) -> Option<Hints> {
        match v {
            V::Obj(i) => self.hints.get(i as usize).copied().flatten(),
            _ => None,
        }
    }

    fn remember(&mut self, v: V, h: Hints) {
        if let V::Obj(i) = v
            && let Some(slot) = self.hints.get_mut(i as usize)
        {
            *slot = Some(h);
        }
    }
}
