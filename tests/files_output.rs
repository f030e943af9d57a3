//! `report -o` and standard output respect what is there (issue 18, item 1): symbolic links are
//! followed, special files written in place with errors reported, hard links and read-only
//! directories refused with the way out, permissions kept, stale temporaries swept, write errors on
//! standard output are errors. Linux only (device files, FIFOs, `/proc`). The directory cases (stale
//! temporaries, a read-only directory) are in tests/files_output_dirs.rs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

#[path = "support/cli_files.rs"]
mod cli_files;
use cli_files::{ID, bin, leftovers, report_to, scratch, stderr};

/// Waits for a child, killing it if it has not ended after `limit` (then the test fails: a hang).
fn wait_or_kill(mut child: std::process::Child, limit: Duration) -> Output {
    let start = std::time::Instant::now();
    while child.try_wait().ok().flatten().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the command hung (killed after {limit:?})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// The devices are reached through symbolic links in a scratch directory: a writer that does not
/// follow links (the defect) then replaces the link, never the device itself.
#[test]
fn dev_full_is_an_error_and_stays_a_device() {
    let dir = scratch("devices");
    let full = dir.join("full");
    std::os::unix::fs::symlink("/dev/full", &full).expect("symlink");
    let o = report_to(&full);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("error: cannot write the table"), "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(fs::symlink_metadata(&full).expect("link").is_symlink());
    // /dev/null takes it all.
    let null = dir.join("null");
    std::os::unix::fs::symlink("/dev/null", &null).expect("symlink");
    assert_eq!(report_to(&null).status.code(), Some(0));
    assert!(fs::symlink_metadata(&null).expect("link").is_symlink());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn a_symlink_is_followed_and_stays_a_link() {
    let dir = scratch("symlink");
    let real = dir.join("real.txt");
    fs::write(&real, "old").expect("write");
    let link = dir.join("link.txt");
    std::os::unix::fs::symlink("real.txt", &link).expect("symlink");
    let o = report_to(&link);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(fs::symlink_metadata(&link).expect("link").is_symlink());
    assert!(
        fs::read_to_string(&real)
            .expect("read")
            .contains("Llama-2-7B")
    );
    // A dangling link creates its target.
    let dangling = dir.join("dangling.txt");
    std::os::unix::fs::symlink("new.txt", &dangling).expect("symlink");
    assert_eq!(report_to(&dangling).status.code(), Some(0));
    assert!(dir.join("new.txt").is_file());
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn permissions_and_owner_are_kept() {
    let dir = scratch("mode");
    let file = dir.join("private.txt");
    fs::write(&file, "old").expect("write");
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).expect("chmod");
    // As root (CI), the file belongs to someone else, and must go on belonging to them.
    if fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).expect("chown");
    }
    let before = fs::metadata(&file).expect("meta");
    assert_eq!(report_to(&file).status.code(), Some(0));
    let after = fs::metadata(&file).expect("meta");
    assert_eq!(after.permissions().mode() & 0o777, 0o600);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_ne!(after.ino(), before.ino(), "replaced through a temporary");
}

#[test]
fn a_hard_linked_file_is_refused_and_both_names_kept() {
    let dir = scratch("hardlink");
    let file = dir.join("a.txt");
    fs::write(&file, "old").expect("write");
    fs::hard_link(&file, dir.join("b.txt")).expect("link");
    let o = report_to(&file);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("2 hard links") && err.contains("write elsewhere"),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with(&file.display().to_string()),
        "{err}"
    );
    assert_eq!(fs::read_to_string(dir.join("b.txt")).expect("b"), "old");
    assert_eq!(fs::metadata(&file).expect("a").nlink(), 2);
}

#[test]
fn directories_are_refused_with_a_clear_line() {
    let dir = scratch("dir");
    let inner = dir.join("inner");
    fs::create_dir(&inner).expect("dir");
    let o = report_to(&inner);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let block = fs::read_dir("/dev").ok().and_then(|d| {
        d.filter_map(Result::ok).map(|e| e.path()).find(|p| {
            fs::metadata(p)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()))
        })
    });
    match block {
        Some(dev) => {
            let link = dir.join("disk");
            std::os::unix::fs::symlink(&dev, &link).expect("symlink");
            let o = report_to(&link);
            assert_eq!(o.status.code(), Some(1));
            assert!(stderr(&o).contains("block device"), "{}", stderr(&o));
        }
        None => println!("skipped the block device case: no block device under /dev"),
    }
}

#[test]
fn a_fifo_is_written_in_place_and_one_without_reader_does_not_hang() {
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return println!("skipped: mkfifo is not available");
    }
    let child = bin()
        .args(["report", "--preset", ID, "-o"])
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let o = wait_or_kill(child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no process is reading"),
        "{}",
        stderr(&o)
    );

    // With a reader, the bytes go through the FIFO and it stays a FIFO.
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || fs::read_to_string(fifo)
    });
    let mut o = report_to(&fifo);
    for _ in 0..50 {
        // The writer may have probed before the reader opened: retry until it is there.
        if o.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        o = report_to(&fifo);
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = reader.join().expect("reader").expect("read");
    assert!(text.contains("Llama-2-7B"), "{text}");
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(
        &fs::metadata(&fifo).expect("meta").file_type()
    ));
}

#[test]
fn write_errors_on_standard_output_are_errors() {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    for args in [
        &["report", "--preset", ID][..],
        &["presets"],
        &["claims"],
        &["fit", "--preset", ID],
        &["sweep", "--preset", ID, "--over", "batch"],
        &[
            "check",
            concat!(env!("CARGO_MANIFEST_DIR"), "/presets/llama2-7b-rtx4090.ron"),
        ],
    ] {
        let o = bin()
            .args(args)
            .stdout(full.try_clone().expect("dup"))
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("error: cannot write to standard output"),
            "{args:?}: {err}"
        );
    }
    // A reader that leaves early (`| head`): quiet, status 0.
    let mut child = bin()
        .args(["report", "--preset", ID, "--format", "markdown"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let o = wait_or_kill(child, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
}

#[test]
fn a_socket_is_an_error_naming_it_and_stays_a_socket() {
    let dir = scratch("socket");
    let path = dir.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    let o = report_to(&path);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("socket"), "{}", stderr(&o));
    let kind = fs::symlink_metadata(&path).expect("meta").file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_socket(&kind));
}

#[test]
fn a_slow_fifo_reader_gets_every_byte() {
    let dir = scratch("slow-fifo");
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return println!("skipped: mkfifo is not available");
    }
    // 1 MiB, far more than a pipe holds (64 KiB on Linux, pipe(7)): the writer must wait, not fail.
    let bytes: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || {
            use std::io::Read;
            let mut f = fs::File::open(fifo)?;
            std::thread::sleep(Duration::from_millis(200));
            let mut got = Vec::new();
            f.read_to_end(&mut got).map(|_| got)
        }
    });
    let mut result = vram_explorer::presets::write_atomically(&fifo, &bytes);
    for _ in 0..100 {
        // Until the reader has opened its end.
        if result.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        result = vram_explorer::presets::write_atomically(&fifo, &bytes);
    }
    result.expect("written");
    let got = reader.join().expect("reader").expect("read");
    assert!(got == bytes, "{} of {} bytes", got.len(), bytes.len());
}
