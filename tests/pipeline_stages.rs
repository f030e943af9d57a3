//! Pipeline parallelism: the estimate reports the first and last stage, and the peak is the larger.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::presets::bundled_scenario;

#[test]
fn both_stages_are_reported_and_the_peak_is_the_larger() {
    let s = bundled_scenario("gpt3-175b-mp32-a100").expect("preset");
    assert!(s.parallel.pp > 1);
    let m = estimate(&s).memory;
    let [Some(first), Some(last)] = m.stages else {
        panic!("stages missing with PP {}", s.parallel.pp);
    };
    let larger = first.total().get().max(last.total().get());
    assert!((larger - m.gpu_total.get()).abs() <= 1e-6 * larger);
    // The first stage keeps p micro-batches of activations in flight (Korthikanti §4.2.3).
    assert!(
        first
            .get(vram_explorer::estimator::Component::Activations)
            .get()
            > 0.0
    );
    let expected_stage = if last.total().get() > first.total().get() {
        s.parallel.pp - 1
    } else {
        0
    };
    assert_eq!(m.peak_stage, expected_stage);
}

#[test]
fn without_pipeline_there_are_no_stage_bars() {
    let s = bundled_scenario("llama3-8b-full-finetune-h100").expect("preset");
    assert_eq!(s.parallel.pp, 1);
    assert_eq!(estimate(&s).memory.stages, [None, None]);
}
