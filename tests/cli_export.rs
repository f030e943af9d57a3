//! `vram-explorer report --format … --output …`: the built binary writes the same Markdown, CSV and
//! JSON as `vram_explorer::report` and the JSON report, parsed back here; `--output` replaces files
//! atomically and fails with the message first and the path last.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use vram_explorer::estimator::performance::compare;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::report::{
    breakdown_csv, comparison_csv, csv::parse, markdown, phases_csv, roofline_csv,
};

const ID: &str = "llama2-70b-inference-gqa-2xa100";
const TRAINING: &str = "gpt3-175b-mp32-a100";

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8 output")
}

/// A fresh directory under the target dir's tmp.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-export-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn every_format_prints_what_the_library_renders() {
    for id in [ID, TRAINING] {
        let s = bundled_scenario(id).expect("preset");
        let e = estimate(&s);
        let report = |extra: &[&str]| ok(&[&["report", "--preset", id], extra].concat());
        assert_eq!(report(&["--format", "markdown"]), markdown(&s, &e), "{id}");
        assert_eq!(report(&["--format", "csv"]), breakdown_csv(&e), "{id}");
        let tables = [
            ("breakdown", breakdown_csv(&e)),
            ("phases", phases_csv(&e)),
            ("roofline", roofline_csv(&e)),
            ("comparison", comparison_csv(&compare(&s))),
        ];
        for (table, expected) in tables {
            assert_eq!(
                report(&["--format", "csv", "--csv-table", table]),
                expected,
                "{id} {table}"
            );
            // Naming a CSV table implies the CSV format.
            assert_eq!(report(&["--csv-table", table]), expected, "{id} {table}");
        }
        assert_eq!(report(&["--format", "json"]), report(&["--json"]), "{id}");
        assert_eq!(report(&["--format", "table"]), report(&[]), "{id}");
    }
}

#[test]
fn csv_and_json_parse_back_to_the_estimate() {
    let s = bundled_scenario(TRAINING).expect("preset");
    let e = estimate(&s);
    let rows = parse(&ok(&["report", "--preset", TRAINING, "--format", "csv"]));
    assert_eq!(rows[0], ["component", "label", "bytes", "gib"]);
    for (row, c) in rows[1..].iter().zip(Component::ALL) {
        assert_eq!(row[0], c.key());
        let bytes: f64 = row[2].parse().expect("a number");
        assert_eq!(bytes, e.memory.peak.get(c).get(), "{}", c.key());
    }
    let v: Value = serde_json::from_str(&ok(&["report", "--preset", TRAINING, "--format", "json"]))
        .expect("JSON");
    assert_eq!(v["memory"]["fits"], e.memory.fits);
    let total = v["memory"]["gpu_total_bytes"].as_f64().expect("a number");
    assert!((total - e.memory.gpu_total.get()).abs() <= 1e-6 * total);
    let md = ok(&["report", "--preset", TRAINING, "--format", "markdown"]);
    assert!(
        md.starts_with(&format!("# VRAM report: {}", s.name)),
        "{md}"
    );
}

#[test]
fn output_replaces_the_file_atomically_and_takes_the_format_from_its_extension() {
    let dir = scratch("output");
    let s = bundled_scenario(ID).expect("preset");
    let e = estimate(&s);
    let cases = [
        ("report.md", markdown(&s, &e)),
        ("breakdown.csv", breakdown_csv(&e)),
        ("report.json", ok(&["report", "--preset", ID, "--json"])),
        ("report.txt", ok(&["report", "--preset", ID])),
    ];
    for (name, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, "an older file").expect("write");
        let o = run(&["report", "--preset", ID, "--output", utf8(&path)]);
        assert_eq!(o.status.code(), Some(0), "{name}");
        assert!(o.stdout.is_empty(), "{name}: nothing on stdout");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("wrote the ") && err.trim_end().ends_with(utf8(&path)),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), expected);
    }
    // An explicit CSV table wins over the extension.
    let path = dir.join("phases.md");
    ok(&[
        "report",
        "--preset",
        ID,
        "--csv-table",
        "phases",
        "-o",
        utf8(&path),
    ]);
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        phases_csv(&e)
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .expect("list")
        .filter_map(Result::ok)
        .filter(|f| f.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_failed_write_names_the_problem_first_and_the_path_last() {
    let dir = scratch("errors");
    let missing = dir.join("no/such/dir/report.md");
    let o = run(&["report", "--preset", ID, "-o", utf8(&missing)]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("error: cannot write the Markdown report"),
        "{err}"
    );
    assert!(err.trim_end().ends_with(utf8(&missing)), "{err}");

    // A directory in the way: nothing inside it is touched, no temporary is left.
    let target = dir.join("taken.csv");
    std::fs::create_dir(&target).expect("dir");
    std::fs::write(target.join("keep"), "x").expect("write");
    assert_eq!(
        run(&["report", "--preset", ID, "-o", utf8(&target)])
            .status
            .code(),
        Some(1)
    );
    assert!(target.join("keep").exists());
    assert_eq!(std::fs::read_dir(&dir).expect("list").count(), 1);

    // Contradictory options.
    let usage = run(&["report", "--preset", ID, "--json", "--format", "csv"]);
    assert_eq!(usage.status.code(), Some(2));
    let o = run(&[
        "report",
        "--preset",
        ID,
        "--format",
        "markdown",
        "--csv-table",
        "roofline",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--csv-table"));
    assert_eq!(
        run(&["report", "--preset", ID, "--format", "pdf"])
            .status
            .code(),
        Some(2)
    );
}
