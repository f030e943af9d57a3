//! Writing an output file without breaking what is there.
//!
//! A regular file is replaced atomically: a temporary file beside it, flushed to disk, then renamed
//! over it (POSIX `rename(2)` replaces atomically within one file system; the temporary is in the same
//! directory). A crash, a full disk or any failure leaves the old file as it was. The new file keeps
//! the old one's permission bits, and its owner and group where the user may set them
//! (`fchown(2)`). Where a rename cannot keep what the user has, the write is refused with the reason:
//! a file with other hard links (they would keep the old content), or a file the user may write in a
//! directory they may not (no temporary can be made beside it).
//!
//! A symbolic link is followed (to any depth the kernel allows, 40 on Linux: `path_resolution(7)`)
//! and its target written, so the link stays a link. A FIFO, a socket or a character device
//! (`/dev/null`, `/dev/full`, a terminal) is written in place, with every error reported; a block
//! device and a directory are refused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::input::O_NONBLOCK;
use super::stale;

/// Where [`write`] puts the bytes before renaming them over `target`: a hidden file in the same
/// directory, named after the target, this program and this process (the pattern
/// [`stale::sweep`] recognises).
pub fn temp_path(target: &Path) -> PathBuf {
    stale::temp_path(target)
}

/// Writes `bytes` to `target` as described in the module documentation. Errors say what was refused
/// and why (the caller adds the path).
pub fn write(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let resolved = resolve_links(target)?;
    match fs::metadata(&resolved) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(&resolved, bytes, None),
        Err(e) => Err(e),
        Ok(meta) => {
            let kind = meta.file_type();
            if kind.is_file() {
                replace(&resolved, bytes, Some(&meta))
            } else if kind.is_dir() {
                Err(refused("it is a directory; give a file name"))
            } else if kind.is_block_device() {
                Err(refused(
                    "it is a block device; reports are not written to disks",
                ))
            } else {
                // FIFO, socket or character device: no rename, write in place.
                write_in_place(&resolved, bytes, kind.is_fifo())
            }
        }
    }
}

fn refused(why: &str) -> io::Error {
    io::Error::other(format!("refused: {why}"))
}

/// Follows symbolic links (relative ones against the link's directory) to the path finally written.
/// A dangling link resolves to the missing file it names, which is then created.
fn resolve_links(target: &Path) -> io::Result<PathBuf> {
    /// Linux's limit on links followed in one lookup (`path_resolution(7)`, MAXSYMLINKS).
    const MAX_LINKS: usize = 40;
    let mut path = target.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(refused(&format!(
        "more than {MAX_LINKS} symbolic links to follow (a loop?)"
    )))
}

/// FIFOs, sockets and character devices, written in place. A FIFO is opened without blocking, so
/// that one nobody reads is an error (`ENXIO`, `open(2)`) rather than a hang; the same descriptor is
/// written, waiting while the pipe is full (`EAGAIN`, `pipe(7)`) as a blocking write would.
fn write_in_place(path: &Path, bytes: &[u8], fifo: bool) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true);
    if fifo {
        options.custom_flags(O_NONBLOCK);
    }
    let mut file = options.open(path).map_err(|e| match e.raw_os_error() {
        Some(ENXIO) if fifo => refused("no process is reading this FIFO"),
        // `open(2)` of a Unix socket fails with ENXIO too: say what it is.
        Some(ENXIO) => refused("it is a socket, which cannot be opened as a file"),
        _ => e,
    })?;
    let mut rest = bytes;
    while !rest.is_empty() {
        match file.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => rest = rest.get(n..).unwrap_or_default(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
    file.flush()
}

/// `ENXIO` ("no such device or address"): Linux and the BSDs both number it 6 (`errno(3)`).
const ENXIO: i32 = 6;

/// The temp-then-rename path for a regular file (`existing`, when there is one).
fn replace(target: &Path, bytes: &[u8], existing: Option<&fs::Metadata>) -> io::Result<()> {
    if let Some(meta) = existing
        && meta.nlink() > 1
    {
        return Err(refused(&format!(
            "the file has {} hard links; writing through a temporary file would break them: remove \
             the other links or write elsewhere",
            meta.nlink()
        )));
    }
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    stale::sweep(dir);
    let tmp = temp_path(target);
    // A stale temporary from a crashed write of this very process id: remove it (fails on a
    // directory, which then makes the write fail below rather than clobber anything).
    if fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_file()) {
        let _ = fs::remove_file(&tmp);
    }
    let result = write_then_rename(&tmp, target, bytes, existing);
    if result.is_err() && fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_file()) {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| explain_read_only_dir(e, target, existing.is_some()))
}

/// A permission error on the temporary, when the file itself is writable: the directory is read-only.
fn explain_read_only_dir(e: io::Error, target: &Path, exists: bool) -> io::Error {
    let writable = || OpenOptions::new().append(true).open(target).is_ok();
    if e.kind() == io::ErrorKind::PermissionDenied && exists && writable() {
        return refused(
            "the file is writable but its directory is not, so it cannot be replaced atomically \
             (through a temporary file beside it): make the directory writable or write elsewhere",
        );
    }
    e
}

/// The permission bits carried over: read, write and execute for owner, group and others. Set-user-ID
/// and set-group-ID are not (`chmod(2)`: they would be granted to whoever now owns the file).
const PERMISSION_BITS: u32 = 0o777;

fn write_then_rename(
    tmp: &Path,
    target: &Path,
    bytes: &[u8],
    existing: Option<&fs::Metadata>,
) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    if let Some(meta) = existing {
        options.mode(meta.permissions().mode() & PERMISSION_BITS);
    }
    let mut file = options.open(tmp)?;
    if let Some(meta) = existing {
        // The umask may have cleared bits of the mode above; set it exactly. Ownership only where
        // allowed (root, or a group the user is in): otherwise the user's own, as any new file.
        if std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid())).is_err() {
            let _ = std::os::unix::fs::fchown(&file, None, Some(meta.gid()));
        }
        file.set_permissions(fs::Permissions::from_mode(
            meta.permissions().mode() & PERMISSION_BITS,
        ))?;
    }
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
