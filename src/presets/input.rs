//! Opening input files so that nothing can hang or exhaust memory: scenario files, config.json,
//! safetensors headers and indexes all come through here.
//!
//! The file is opened without blocking (`O_NONBLOCK`: opening a FIFO that has no writer would
//! otherwise wait forever, `fifo(7)`), then the *opened* file is checked with `fstat` (so a symbolic
//! link, as the Hugging Face cache is made of, is judged by what it points to, and nothing can be
//! swapped in between) and anything but a regular file is refused. The size limit is enforced while
//! reading (at most `limit + 1` bytes are ever read), not taken from metadata, which a device such as
//! `/dev/zero` does not fill in.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// `O_NONBLOCK` of `open(2)`: 0o4000 on Linux (`asm-generic/fcntl.h`), 0x4 on macOS and the BSDs
/// (`sys/fcntl.h`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub const O_NONBLOCK: i32 = 0o4000;
/// `O_NONBLOCK` of `open(2)`: 0x4 on macOS and the BSDs (`sys/fcntl.h`).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub const O_NONBLOCK: i32 = 0x4;

/// Why an input file was not read.
#[derive(Debug)]
pub enum InputError {
    /// Opening or reading failed.
    Io(io::Error),
    /// Not a regular file; says what it is ("a directory", "a FIFO" …).
    NotRegular(&'static str),
    /// More than the limit; the number is the limit in bytes.
    TooLarge(u64),
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Io(e) => write!(f, "cannot read the file ({e})"),
            InputError::NotRegular(what) => write!(f, "this is {what}, not a regular file"),
            InputError::TooLarge(limit) => {
                write!(f, "the file is larger than the {limit}-byte limit")
            }
        }
    }
}

/// Opens `path` for reading without blocking and checks (on the open file) that it is a regular file.
pub fn open_regular(path: &Path) -> Result<File, InputError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(InputError::Io)?;
    let kind = file.metadata().map_err(InputError::Io)?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(InputError::NotRegular(if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "something other than a file"
    }))
}

/// Reads at most `limit` bytes of `reader`: more is an error, found after reading `limit + 1` bytes.
pub fn read_at_most(reader: impl Read, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    Ok(bytes)
}

/// [`open_regular`] then [`read_at_most`].
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    read_at_most(open_regular(path)?, limit)
}
