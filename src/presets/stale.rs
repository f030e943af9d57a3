//! Temporary files of [`super::atomic`]: their names, and the sweep that removes the ones an
//! interrupted write left behind (a killed process cannot clean up after itself).
//!
//! The name is `.<target>.vram-explorer-<pid>.tmp`. A file of that pattern is stale when the process
//! that made it is gone (on Linux `/proc/<pid>` does not exist: `proc(5)`) and it has not been modified
//! for an hour; only regular files are removed, never a link or a directory. Elsewhere than Linux the
//! sweep does nothing (there is no portable way to ask std whether a process exists).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What every temporary file name contains between the target's name and the process id.
const MARK: &str = ".vram-explorer-";
/// A temporary file younger than this is never removed, whatever its process (clock skew, PID reuse).
pub const STALE_AFTER: Duration = Duration::from_secs(3600);
/// Bytes of the target's name kept in the temporary's (names are at most 255 bytes: `NAME_MAX`).
const NAME_BYTES: usize = 160;

/// The temporary file beside `target` for this process.
pub fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let mut cut = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = name.get(..cut).unwrap_or("output");
    let file = format!(".{stem}{MARK}{}.tmp", std::process::id());
    match target.parent() {
        Some(dir) => dir.join(file),
        None => PathBuf::from(file),
    }
}

/// The process id in a temporary file's name, if the name has the pattern.
pub fn pid_of(file_name: &str) -> Option<u32> {
    let rest = file_name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, pid) = rest.rsplit_once(MARK)?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Removes stale temporary files of this program in `dir`. Best effort: errors are ignored (the
/// write that follows reports its own).
pub fn sweep(dir: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(pid_of) else {
            continue;
        };
        if pid == me || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_AFTER);
        if meta.is_file() && old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pid_is_read_back_from_the_name() {
        let tmp = temp_path(Path::new("/x/report.md"));
        let name = tmp.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert_eq!(pid_of(name), Some(std::process::id()));
        assert_eq!(pid_of(".report.md.123.tmp"), None, "not this program's");
        assert_eq!(pid_of(".a.vram-explorer-12x.tmp"), None);
        assert_eq!(pid_of("a.vram-explorer-12.tmp"), None, "not hidden");
    }

    #[test]
    fn a_long_name_is_cut_at_a_character_boundary() {
        let long = "é".repeat(200);
        let tmp = temp_path(Path::new(&long));
        let name = tmp.to_string_lossy();
        assert!(name.len() <= 255, "{}", name.len());
        assert!(pid_of(&name).is_some());
    }
}
