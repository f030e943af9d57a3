//! The Markdown report honours the memory unit, and comparison rows without a sourced compute peak
//! are marked as bounds (≥ time, ≤ throughput) in the Markdown report and the CLI table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::process::Command;

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::compare;
use vram_explorer::report::markdown_in;
use vram_explorer::scenario::Scenario;
use vram_explorer::units::MemoryUnit;

#[test]
fn markdown_in_gb_labels_every_memory_figure_gb() {
    let s = Scenario::default();
    let e = estimate(&s);
    let md = markdown_in(&s, &e, Some(&compare(&s)), MemoryUnit::GB);
    assert!(md.contains("| Component | GB | Bytes |"), "{md}");
    assert!(!md.contains("GiB"), "a GiB figure in a GB report:\n{md}");
    let gb = format!(
        "{} GB",
        vram_explorer::format::sig(e.memory.gpu_total.as_gb())
    );
    assert!(md.contains(&gb), "expected {gb} in\n{md}");
}

#[test]
fn devices_without_a_compute_peak_are_bounds_in_markdown() {
    let s = Scenario::default();
    let c = compare(&s);
    let unknown: Vec<_> = c
        .rows()
        .filter(|r| !r.peak_known)
        .map(|r| r.label)
        .collect();
    assert!(
        !unknown.is_empty(),
        "the catalog has devices without a sourced peak"
    );
    let md = markdown_in(&s, &estimate(&s), Some(&c), MemoryUnit::GiB);
    for label in unknown {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("no row for {label}"));
        assert!(row.contains("| ≥ "), "time not marked as a bound: {row}");
        assert!(
            row.contains("| ≤ "),
            "throughput not marked as a bound: {row}"
        );
    }
    let known = c
        .rows()
        .find(|r| r.peak_known)
        .map(|r| r.label)
        .unwrap_or("");
    let row = md
        .lines()
        .find(|l| l.starts_with(&format!("| {known} |")))
        .unwrap_or("");
    assert!(
        !row.contains('≥'),
        "a device with a peak marked as a bound: {row}"
    );
}

#[test]
fn cli_markdown_honours_unit_gb_and_table_marks_bounds() {
    let bin = env!("CARGO_BIN_EXE_vram-explorer");
    let out = Command::new(bin)
        .args([
            "report",
            "--preset",
            "llama3-8b-full-finetune-h100",
            "--format",
            "markdown",
        ])
        .args(["--unit", "gb"])
        .output()
        .expect("run the CLI");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(md.contains("| Component | GB | Bytes |"), "{md}");
    // The preset's notes are free text (quoted with '>'); every figure the report computes is in GB.
    let computed = md.lines().filter(|l| !l.starts_with('>'));
    assert!(computed.clone().all(|l| !l.contains("GiB")), "{md}");
    let out = Command::new(bin)
        .args(["report", "--preset", "llama3-8b-full-finetune-h100"])
        .output()
        .expect("run the CLI");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("≥ "),
        "no bound marked in the CLI comparison:\n{table}"
    );
}

#[test]
fn markdown_escapes_control_characters_in_names_and_notes() {
    let s = Scenario {
        name: "evil\u{1b}[2J name".to_owned(),
        notes: "line one\nbell \u{7} here".to_owned(),
        ..Scenario::default()
    };
    let md = markdown_in(&s, &estimate(&s), None, MemoryUnit::GiB);
    assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'), "{md}");
    assert!(md.contains("evil\\u{1b}[2J name"), "{md}");
    assert!(md.contains("> line one\n> bell \\u{7} here"), "{md}");
}

/// SGLang's budget lines add up for a hybrid model: the "= KV budget" is what is left after the
/// weights and the recurrent-state pool the line above names (it showed the budget before the
/// state pool was taken off).
#[test]
fn sglang_budget_lines_add_up_with_a_state_pool() {
    use vram_explorer::scenario::{ServingEngine, Sglang, SglangVersion};
    let mut s =
        vram_explorer::presets::bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    s.inference.engine = Some(ServingEngine::Sglang(Sglang {
        version: SglangVersion::V0_5_23,
        ..Sglang::default()
    }));
    let f = vram_explorer::estimator::estimate(&s)
        .engine
        .expect("SGLang figures");
    assert!(f.state_pool.get() > 0.0);
    let lines = vram_explorer::report::engine::budget_lines(&f, MemoryUnit::GiB);
    let last = lines.last().expect("a KV budget line");
    let kv = f.requested.get() - f.weights.get() - f.state_pool.get();
    let shown = MemoryUnit::GiB.format(vram_explorer::units::Bytes(kv));
    assert!(
        last.starts_with(&format!("= KV budget {shown}:")),
        "{last} vs {shown}"
    );
}
