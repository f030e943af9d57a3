//! `report -o` in a directory (issue 18, item 1): stale temporaries that killed runs left are swept,
//! and a writable file in a read-only directory is refused with the reason and the way out (run as the
//! unprivileged user 65534, since CI runs as root). Linux only (`/proc`, user ids).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;
use std::time::{Duration, SystemTime};

#[path = "support/cli_files.rs"]
mod cli_files;
use cli_files::{ID, bin, report_to, scratch, stderr};

#[test]
fn stale_temporaries_of_dead_processes_are_swept() {
    let dir = scratch("sweep");
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    // PID above the kernel's maximum (4,194,304: `pid_max` in proc(5)): never a live process.
    let make = |name: &str, modified: SystemTime| {
        let path = dir.join(name);
        let f = fs::File::create(&path).expect("create");
        f.set_modified(modified).expect("mtime");
        path
    };
    let stale = make(".report.txt.vram-explorer-99999999.tmp", old);
    let recent = make(".report.txt.vram-explorer-99999998.tmp", SystemTime::now());
    let alive = make(
        &format!(".report.txt.vram-explorer-{}.tmp", std::process::id()),
        old,
    );
    let foreign = make(".report.txt.99999999.tmp", old);
    assert_eq!(report_to(&dir.join("report.txt")).status.code(), Some(0));
    assert!(!stale.exists(), "a stale temporary is removed");
    assert!(recent.exists(), "a recent one is kept");
    assert!(alive.exists(), "a live process's is kept");
    assert!(foreign.exists(), "another program's name is not touched");
}

/// The binary run as the unprivileged user `nobody` (65534), if it can be: the tests run as root in
/// CI, where permissions do not apply.
fn as_nobody() -> Option<Command> {
    use std::os::unix::process::CommandExt;
    let root = fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if !root {
        println!("skipped: not root, so cannot run the binary as another user");
        return None;
    }
    let runs = bin()
        .uid(65534)
        .gid(65534)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        println!("skipped: the binary under target/ is not reachable by user 65534");
        return None;
    }
    let mut cmd = bin();
    cmd.uid(65534).gid(65534);
    Some(cmd)
}

#[test]
fn a_writable_file_in_a_read_only_directory_is_refused_with_the_way_out() {
    let Some(mut cmd) = as_nobody() else { return };
    let dir = scratch("read-only-dir");
    let file = dir.join("report.txt");
    fs::write(&file, "old").expect("write");
    std::os::unix::fs::chown(&file, Some(65534), Some(65534)).expect("chown");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    let o = cmd
        .args(["report", "--preset", ID, "-o"])
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("directory is not") && err.contains("write elsewhere"),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with(&file.display().to_string()),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&file).expect("read"), "old");
}
