//! Issue 16, the CLI and the Markdown report speak like the window: one formatting of the
//! throughput figure (a memory-only bound marked "≤"), the model family's units (images, samples;
//! no prompt or tokens for a CNN), and a scenario's title where a file left the default name.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::path::PathBuf;
use std::process::{Command, Output};

use vram_explorer::estimator::estimate;
use vram_explorer::presets::{self, bundled_scenario};
use vram_explorer::report::family::{throughput_text, view};
use vram_explorer::report::markdown;
use vram_explorer::scenario::{Mode, Scenario, ShapeSource};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn report_of(s: &Scenario, name: &str) -> (String, PathBuf) {
    let dir = std::env::temp_dir().join(format!("vram-cli-family-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("{name}.ron"));
    presets::save(&path, s).expect("saved");
    let o = run(&["report", path.to_str().expect("utf-8")]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (String::from_utf8_lossy(&o.stdout).into_owned(), path)
}

#[test]
fn a_memory_only_throughput_is_marked_as_a_bound_in_app_cli_and_markdown_alike() {
    // BERT-tiny on a Snapdragon 865: no sourced compute peak.
    let s = bundled_scenario("bert-tiny-snapdragon865").expect("bundled");
    let e = estimate(&s);
    assert!(!e.performance.peak_known);
    let shown = throughput_text(&e, view(s.model.family));
    assert!(
        shown.starts_with("≤ ") && shown.ends_with(" tokens/s"),
        "{shown}"
    );
    let o = run(&["report", "--preset", "bert-tiny-snapdragon865"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("Throughput {shown}")),
        "{shown} not in\n{text}"
    );
    let md = markdown(&s, &e);
    assert!(md.contains(&shown), "{shown} not in\n{md}");
}

#[test]
fn a_cnn_inference_report_counts_images_not_tokens() {
    let mut s = bundled_scenario("resnet50-batch32").expect("bundled");
    s.mode = Mode::Inference;
    let (text, _) = report_of(&s, "resnet-inference");
    let step = text
        .lines()
        .find(|l| l.starts_with("Step:"))
        .expect("a step line");
    assert!(
        step.contains("32 images") && !step.contains("token"),
        "{step}"
    );
    let throughput = text
        .lines()
        .find(|l| l.trim_start().starts_with("Throughput"))
        .expect("a throughput line");
    assert!(
        throughput.contains("images/s") && !throughput.contains("token"),
        "{throughput}"
    );
    let md = markdown(&s, &estimate(&s));
    assert!(!md.contains("tokens"), "tokens in a CNN report:\n{md}");
    assert!(md.contains("images/s"), "{md}");
}

#[test]
fn check_names_a_parameter_count_scenario_by_its_title() {
    // A file that leaves `name` out gets the default scenario's; its model is not the default's.
    let mut s = Scenario::default();
    s.model.shape = ShapeSource::ParamCount;
    s.model.params = 13e9;
    s.mode = Mode::Training;
    let (_, path) = report_of(&s, "params-only");
    let o = run(&["check", path.to_str().expect("utf-8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(&s.title()), "{out}");
    assert!(
        !out.contains(vram_explorer::scenario::DEFAULT_NAME),
        "{out}"
    );
}

#[test]
fn a_recommenders_hidden_sequence_length_changes_nothing() {
    // Issue 16: the sequence length is not shown for a recommender, yet it changed the step time.
    let s = bundled_scenario("recommender-hbm-a100").expect("bundled");
    let base = estimate(&s);
    for seq in [1, 32, 4096] {
        let mut t = s.clone();
        t.workload.seq_len = seq;
        let e = estimate(&t);
        assert_eq!(
            e.performance.step.total_s, base.performance.step.total_s,
            "seq {seq}"
        );
        assert_eq!(e.memory.gpu_total, base.memory.gpu_total, "seq {seq}");
    }
}
