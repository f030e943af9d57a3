//! Atomic file replacement: write a temporary file beside the target, flush it to disk, then rename
//! it over the target. A crash, a full disk or any failure leaves the old file as it was (POSIX
//! `rename(2)` replaces atomically within one file system; the temporary is in the same directory).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where [`write`] puts the bytes before renaming them over `target`: a hidden file in the same
/// directory, named after the target and this process.
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "scenario".into(), |n| n.to_string_lossy().into_owned());
    let file = format!(".{name}.{}.tmp", std::process::id());
    match target.parent() {
        Some(dir) => dir.join(file),
        None => PathBuf::from(file),
    }
}

/// Replaces `target` with `bytes` atomically. On error the target is untouched and the temporary
/// file is removed.
pub fn write(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(target);
    // A stale temporary from a crashed save of this process id: remove it (fails on a directory,
    // which then makes the save fail below rather than clobber anything).
    if tmp.is_file() {
        let _ = fs::remove_file(&tmp);
    }
    let result = write_then_rename(&tmp, target, bytes);
    if result.is_err() && tmp.is_file() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(tmp: &Path, target: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(tmp, target)?;
    // Make the rename itself durable. Not every platform can open a directory; that is not an error.
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}
