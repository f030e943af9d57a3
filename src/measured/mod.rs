//! Measurements of a real run, read next to the estimate: a PyTorch memory snapshot (the pickle
//! `torch.cuda.memory._dump_snapshot` writes), or a lighter measurement (a pasted
//! `max_memory_allocated` / `max_memory_reserved` pair, an nvidia-smi CSV log, a vLLM startup log).
//!
//! An input like `import`: every file is bounded (size, element counts, nesting) before it is
//! parsed, and every failure is a typed [`MeasuredError`], never a panic.

pub mod align;
pub mod analysis;
pub mod attribution;
pub mod compare;
pub mod light;
pub mod marks;
mod pickle;
pub mod snapshot;

use std::fmt;
use std::path::Path;

pub use analysis::{MeasuredTimeline, analyse};
pub use light::{LightMeasurement, Statistic};
pub use snapshot::Snapshot;

/// Largest snapshot file read (a 100,000-event history with stacks is tens of MB).
pub const MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;
/// Largest text measurement read (a log or a pasted pair).
pub const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;
pub use snapshot::{MAX_EVENTS, MAX_SEGMENTS};

/// Why a measurement could not be read. Messages come first; the path is added by the caller.
#[derive(Clone, Debug, PartialEq)]
pub enum MeasuredError {
    Io(String),
    /// Larger than a bound (the message names it).
    TooLarge(String),
    /// Not the expected format.
    Malformed(String),
    /// A text with no measurement this reader knows.
    NotRecognised,
}

impl fmt::Display for MeasuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MeasuredError::Io(e) => write!(f, "cannot read the measurement ({e})"),
            MeasuredError::TooLarge(e) => write!(f, "the measurement is too large: {e}"),
            MeasuredError::Malformed(e) => write!(f, "{e}"),
            MeasuredError::NotRecognised => f.write_str(
                "no measurement found: expected a PyTorch memory snapshot (.pickle), \
                 max_memory_allocated/max_memory_reserved lines, an nvidia-smi memory.used CSV \
                 or a vLLM startup log",
            ),
        }
    }
}

impl std::error::Error for MeasuredError {}

/// A measurement of either kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Measurement {
    Snapshot(Box<MeasuredTimeline>),
    Light(LightMeasurement),
}

/// Parses a snapshot pickle (already in memory, at most [`MAX_SNAPSHOT_BYTES`]).
pub fn parse_snapshot(data: &[u8]) -> Result<Snapshot, MeasuredError> {
    if data.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(too_big(data.len() as u64, MAX_SNAPSHOT_BYTES));
    }
    let (top, arena) = pickle::load(data)?;
    snapshot::read(top, &arena)
}

/// Reads a measurement from bytes: a pickle (it starts with the protocol opcode 0x80; a protocol-0
/// pickle, which has none, is tried when the text holds no measurement and ends with the stop
/// opcode) is a snapshot, anything else is read as text.
pub fn parse(data: &[u8]) -> Result<Measurement, MeasuredError> {
    let protocol0 = data.last() == Some(&b'.') && data.first().is_some_and(|b| b"(}]".contains(b));
    if data.first() == Some(&0x80) || protocol0 {
        let s = parse_snapshot(data)?;
        return Ok(Measurement::Snapshot(Box::new(analyse(&s))));
    }
    if data.len() as u64 > MAX_TEXT_BYTES {
        return Err(too_big(data.len() as u64, MAX_TEXT_BYTES));
    }
    let text = String::from_utf8_lossy(data);
    light::parse(&text).map(Measurement::Light)
}

/// Reads a measurement file through the project's one bounded reader
/// ([`crate::presets::input::read_regular`]: regular files only, never blocking on a FIFO, never more
/// than the limit + 1 byte; `/dev/zero` reports a length of 0 and would otherwise be read forever).
pub fn load(path: &Path) -> Result<Measurement, MeasuredError> {
    use crate::presets::input::{InputError, read_regular};
    let data = read_regular(path, MAX_SNAPSHOT_BYTES).map_err(|e| match e {
        InputError::TooLarge(limit) => too_big(limit + 1, limit),
        other => MeasuredError::Io(other.to_string()),
    })?;
    parse(&data)
}

fn too_big(len: u64, max: u64) -> MeasuredError {
    MeasuredError::TooLarge(format!(
        "{len} bytes, more than the {} MiB this reader accepts",
        max / (1024 * 1024)
    ))
}
