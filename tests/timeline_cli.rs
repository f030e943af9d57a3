//! `vram-explorer timeline` and `compare` on the command line: the JSON carries the estimate's
//! peak and the measured snapshot, the CSV has one row per point, errors name the file last and
//! exit 1.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const PRESET: &str = "llama3-8b-full-finetune-h100";
const SNAPSHOT: &str = "tests/data/snapshots/training_step.pickle";

#[test]
fn timeline_json_has_the_peak_and_the_measured_snapshot() {
    let (code, out, err) = run(&[
        "timeline",
        "--preset",
        PRESET,
        "--json",
        "--measured",
        SNAPSHOT,
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema_version"], 2);
    let s = vram_explorer::presets::bundled_scenario(PRESET).unwrap();
    let est = vram_explorer::estimator::estimate(&s);
    let peak = v["peak_index"].as_u64().unwrap() as usize;
    assert_eq!(
        v["points"][peak]["tensor_bytes"].as_f64().unwrap(),
        est.memory.tensor_peak.get()
    );
    let m = &v["measured"];
    assert_eq!(m["allocated_peak_bytes"].as_f64().unwrap(), 76_546_048.0);
    assert_eq!(
        m["at_peak"]["optimizer_state"].as_f64().unwrap(),
        33_554_432.0
    );
    let phases: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["forward", "loss_backward", "backward", "optimizer"]
    );
}

#[test]
fn timeline_csv_has_one_row_per_point() {
    let (code, out, _) = run(&["timeline", "--preset", PRESET, "--csv"]);
    assert_eq!(code, 0);
    let mut lines = out.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("index,step,phase,tensor_bytes,weights,")
    );
    let s = vram_explorer::presets::bundled_scenario(PRESET).unwrap();
    let t = vram_explorer::estimator::timeline::build(&s, &vram_explorer::estimator::estimate(&s));
    assert_eq!(lines.count(), t.points.len());
}

#[test]
fn compare_reports_each_statistic_with_its_error() {
    let (code, out, err) = run(&[
        "compare",
        "--preset",
        PRESET,
        "--measured",
        "tests/data/measured_light/torch_pair.txt",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("| max_memory_allocated | tensor peak | 14.0 GiB |"),
        "{out}"
    );
    assert!(
        out.contains("| max_memory_reserved | tensor peak + allocator reserve | 16.5 GiB |"),
        "{out}"
    );
    assert!(
        out.contains("overheads.allocator_reserve_fraction"),
        "{out}"
    );
}

#[test]
fn a_hostile_snapshot_is_an_error_naming_the_file_last() {
    let bad = "tests/data/snapshots/shared_blowup.pickle";
    let (code, out, err) = run(&["compare", "--preset", PRESET, "--measured", bad]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(err.trim_end().ends_with(bad), "{err}");
    let (code, _, err) = run(&[
        "timeline",
        "--preset",
        PRESET,
        "--json",
        "--measured",
        "tests/data/measured_light/nvidia_smi.csv",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("use `compare`"), "{err}");
}

/// `--measured` goes into the JSON only: without `--json` it is a usage error (exit 2), not a
/// snapshot silently ignored by the table or the CSV.
#[test]
fn a_measured_snapshot_needs_the_json() {
    for format in [None, Some("--csv")] {
        let mut args = vec![
            "timeline",
            "--preset",
            PRESET,
            "--measured",
            "tests/data/snapshots/demo_llama3_8b_step.pickle",
        ];
        args.extend(format);
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{format:?}: {out}{err}");
        assert!(err.contains("--json"), "{err}");
    }
}
