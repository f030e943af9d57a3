//! Light measurements (src/measured/light.rs) read as the memory they state, or refused: numbers
//! with exponents and the common unit spellings are read in bytes; a negative figure, a word that
//! is not a memory unit, a bare prefix ("45.0 G", 10^9 or 2^30?) and a bare fraction are errors
//! naming the line, never a few bytes (`max_memory_allocated 1.2 TB` was read as 1.2 B).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::PathBuf;
use std::process::Command;

use vram_explorer::measured::{self, LightMeasurement, Measurement, Statistic};

const GIB: f64 = 1_073_741_824.0;
const MIB: f64 = 1_048_576.0;

fn light(text: &str) -> Result<LightMeasurement, String> {
    match measured::parse(text.as_bytes()) {
        Ok(Measurement::Light(l)) => Ok(l),
        Ok(Measurement::Snapshot(_)) => panic!("{text:?} read as a snapshot"),
        Err(e) => Err(e.to_string()),
    }
}

fn allocated(text: &str) -> f64 {
    let l = light(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    l.get(Statistic::Allocated).expect("an allocated peak")
}

#[test]
fn figures_take_exponents_and_the_common_units() {
    for (text, want) in [
        ("max_memory_allocated: 4.8e10", 4.8e10),
        ("max_memory_allocated: 4.8E+10 bytes", 4.8e10),
        ("max_memory_allocated = 15032385536", 15_032_385_536.0),
        ("max_memory_allocated: 15,032,385,536 B", 15_032_385_536.0),
        ("max_memory_allocated 1.2 TB", 1.2e12),
        ("max_memory_allocated 1.5 TiB", 1.5 * 1024.0 * GIB),
        ("max_memory_allocated: 45 GB", 45e9),
        ("max_memory_allocated: 45.5GiB", 45.5 * GIB),
        ("max_memory_allocated: 300 MB", 300e6),
        ("max_memory_allocated: 300 MiB", 300.0 * MIB),
        ("max_memory_allocated: 512 kB", 512e3),
        ("max_memory_allocated: 512 KiB", 512.0 * 1024.0),
        // The unit named before the number: a key's suffix or a bracket.
        ("max_memory_allocated_gib: 14.5", 14.5 * GIB),
        ("max_memory_allocated (GB): 45.0", 45e9),
        ("max_memory_allocated [MiB] 2048", 2048.0 * MIB),
        // A call's argument, a device name and the bytes' echo in another unit are not the figure.
        (
            "torch.cuda.max_memory_allocated(0) = 15032385536",
            15_032_385_536.0,
        ),
        (
            "max_memory_allocated on cuda-1: 15032385536 (14.0 GiB)",
            15_032_385_536.0,
        ),
    ] {
        assert_eq!(allocated(text), want, "{text}");
    }
}

/// The reviewer's one-line files: each was read as a few bytes.
#[test]
fn figures_that_are_not_memory_are_refused_naming_the_line() {
    for (text, says) in [
        (
            "max_memory_allocated(): 45.0 G",
            &[
                "line 1",
                "bare \"G\"",
                "write GB or GiB",
                "`max_memory_allocated(): 45.0 G`",
            ][..],
        ),
        (
            "max_memory_allocated: -5",
            &["line 1", "negative", "`max_memory_allocated: -5`"],
        ),
        (
            "step 3\nmax_memory_allocated: 12 seconds",
            &["line 2", "\"seconds\" after 12 is not a memory unit"],
        ),
        (
            "max_memory_allocated: 45 %",
            &["line 1", "\"%\" after 45 is not a memory unit"],
        ),
        (
            "max_memory_allocated: 45.0",
            &["line 1", "45.0 has no unit", "write its unit"],
        ),
        ("max_memory_allocated: 15032385536.5", &["has no unit"]),
        ("max_memory_allocated (G): 45", &["line 1", "bare \"G\""]),
        ("max_memory_allocated: 1e400", &["line 1", "too large"]),
        ("max_memory_allocated: 7 M", &["bare \"M\"", "MB or MiB"]),
    ] {
        let e = light(text).expect_err(text);
        for s in says {
            assert!(e.contains(s), "{text:?}: {e}");
        }
    }
}

/// A quoted long line shows the part from the key, where the figure is.
#[test]
fn a_long_line_is_quoted_from_its_key() {
    let text = format!("{} max_memory_reserved: 3 parsecs", "x".repeat(200));
    let e = light(&text).unwrap_err();
    assert!(e.contains("`max_memory_reserved: 3 parsecs`"), "{e}");
}

/// An nvidia-smi log keeps its rows; other lines after the header are not rows.
#[test]
fn nvidia_smi_rows_are_whole_fields() {
    let l =
        light("memory.used [MiB]\n17900 MiB\nstep 100 loss 2.31\n18000 MiB, 81559 MiB\n").unwrap();
    assert_eq!(l.values, vec![(Statistic::NvidiaSmi, 18_000.0 * MIB)]);
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-measured-light-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn compare(preset: &str, path: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(["compare", "--preset", preset, "--measured"])
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `compare` on the reviewer's files: an error naming the line and the file (exit 1), or the figure
/// in GiB.
#[test]
fn compare_refuses_or_reads_the_reviewers_files() {
    let preset = "llama3-8b-full-finetune-h100";
    for (name, text, says) in [
        (
            "g.txt",
            "max_memory_allocated(): 45.0 G\n",
            "line 1: a bare \"G\"",
        ),
        (
            "neg.txt",
            "max_memory_allocated: -5\n",
            "line 1: a negative",
        ),
    ] {
        let path = scratch(name, text);
        let (code, out, err) = compare(preset, &path);
        assert_eq!(code, 1, "{name}: {out}");
        assert!(err.contains(says), "{name}: {err}");
        assert!(err.trim_end().ends_with(name), "{name}: {err}");
    }
    for (name, text, row) in [
        ("e.txt", "max_memory_allocated: 4.8e10\n", "| 44.7 GiB |"),
        ("tb.txt", "max_memory_allocated 1.2 TB\n", "| 1118 GiB |"),
    ] {
        let path = scratch(name, text);
        let (code, out, err) = compare(preset, &path);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(
            out.contains(&format!("| max_memory_allocated | tensor peak {row}")),
            "{name}: {out}"
        );
    }
}
