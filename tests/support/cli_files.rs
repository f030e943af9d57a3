//! Helpers of the `report -o` tests (tests/files_output*.rs): run the binary on a preset, scratch
//! directories, leftover temporaries. Shared by `#[path = "support/cli_files.rs"] mod cli_files;`.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const ID: &str = "llama2-7b-rtx4090";

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
}

pub fn report_to(path: &Path) -> Output {
    bin()
        .args(["report", "--preset", ID, "-o"])
        .arg(path)
        .output()
        .expect("the binary runs")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh directory under the system temporary directory, unique to this test and process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-files-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

pub fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}
