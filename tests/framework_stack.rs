//! The framework profiles of issue 12's "stack" lane (LitGPT, torchtune, DeepSpeed ZeRO) against their
//! CPU-measured records: every phase of step 2 (and LitGPT's prefill and decode) within 1 %.
//! `cargo test --test framework_stack -- --nocapture` prints the tables.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

#[path = "support/framework_records.rs"]
mod framework_records;

use framework_records::{apply_peft, base_scenario, compare, print_table, records};
use vram_explorer::scenario::{Mode, Profile};

const LITGPT: &str = include_str!("data/measured/litgpt-cpu-steps.json");
const TORCHTUNE: &str = include_str!("data/measured/torchtune-cpu-steps.json");

#[test]
fn litgpt_records_within_one_percent_per_phase() {
    let recs = records(LITGPT);
    assert_eq!(recs.len(), 7);
    let mut rows = Vec::new();
    for r in &recs {
        let mut train = base_scenario(r, Mode::Training, Profile::LitGpt);
        apply_peft(&mut train, &r["framework"]["settings"]);
        let inf = base_scenario(r, Mode::Inference, Profile::LitGpt);
        rows.extend(compare(r, &train, Some(&inf)));
    }
    let worst = print_table("LitGPT 0.5.13 (CPU)", &rows);
    assert_eq!(rows.len(), 7 * 5);
    assert!(worst <= 0.01, "worst |error| {:.2}% > 1%", worst * 100.0);
}

#[test]
fn torchtune_records_within_one_percent_per_phase() {
    let recs = records(TORCHTUNE);
    assert_eq!(recs.len(), 5);
    let mut rows = Vec::new();
    for r in &recs {
        let mut train = base_scenario(r, Mode::Training, Profile::Torchtune);
        apply_peft(&mut train, &r["framework"]["settings"]);
        rows.extend(compare(r, &train, None));
    }
    let worst = print_table("torchtune 0.6.1 (CPU)", &rows);
    assert_eq!(rows.len(), 5 * 3);
    assert!(worst <= 0.01, "worst |error| {:.2}% > 1%", worst * 100.0);
}

/// torchtune's `optimizer_in_bwd`: one parameter's gradient at a time (the largest: the 32000 × 256
/// embedding or head, FP32), so the optimizer phase holds that instead of all 77 MB of gradients.
#[test]
fn torchtune_optimizer_in_backward_keeps_one_gradient() {
    use vram_explorer::estimator::{Component, Phase, estimate};
    let r = &records(TORCHTUNE)[0];
    let mut s = base_scenario(r, Mode::Training, Profile::Torchtune);
    let before = estimate(&s);
    s.implementation.torchtune.optimizer_in_backward = true;
    let after = estimate(&s);
    let grads = |e: &vram_explorer::estimator::Estimate| {
        e.memory
            .phases
            .get(Phase::OptimizerStep)
            .unwrap()
            .get(Component::Gradients)
            .get()
    };
    assert_eq!(grads(&before), 77_145_088.0);
    assert_eq!(grads(&after), 32_000.0 * 256.0 * 4.0);
    // The step's peak stays in backward: the head's gradient is summed over the output chunks in
    // autograd's input buffer before any hook runs.
    assert_eq!(after.memory.tensor_peak, before.memory.tensor_peak);
}

/// torchtune's activation offloading keeps one layer's saved tensors on the device.
#[test]
fn torchtune_activation_offloading_keeps_one_layer() {
    use vram_explorer::estimator::{Component, Phase, estimate};
    let r = &records(TORCHTUNE)[0];
    let mut s = base_scenario(r, Mode::Training, Profile::Torchtune);
    let acts = |s: &vram_explorer::scenario::Scenario| {
        let e = estimate(s);
        e.memory
            .phases
            .get(Phase::Forward)
            .unwrap()
            .get(Component::Activations)
            .get()
    };
    let before = acts(&s);
    s.implementation.torchtune.activation_offloading = true;
    let after = acts(&s);
    // 4 layers of 11,415,552 − 524,288 (no LitGPT o-proj copy) = 10,891,264 B each → 1 on device.
    assert_eq!(before - after, 3.0 * 10_891_264.0);
}

const DEEPSPEED: &str = include_str!("data/measured/deepspeed-cpu-steps.json");

#[test]
fn deepspeed_records_within_one_percent_per_phase() {
    use vram_explorer::scenario::{Sharding, ZeroStage};
    let recs = records(DEEPSPEED);
    assert_eq!(recs.len(), 6);
    let mut rows = Vec::new();
    for r in &recs {
        let settings = &r["framework"]["settings"];
        let mut s = base_scenario(r, Mode::Training, Profile::HuggingFace);
        s.implementation.sharding = Sharding::DeepSpeed;
        s.strategies.zero = match settings["zero_stage"].as_u64() {
            Some(1) => ZeroStage::Stage1,
            Some(2) => ZeroStage::Stage2,
            Some(3) => ZeroStage::Stage3,
            _ => ZeroStage::None,
        };
        let zero = &settings["ds_config"]["zero_optimization"];
        if let Some(b) = zero["reduce_bucket_size"].as_f64() {
            s.implementation.deepspeed.reduce_bucket_size = b;
        }
        rows.extend(compare(r, &s, None));
    }
    let worst = print_table(
        "DeepSpeed 0.19.8 ZeRO, CPU accelerator, world size 1",
        &rows,
    );
    assert_eq!(rows.len(), 6 * 3);
    assert!(worst <= 0.01, "worst |error| {:.2}% > 1%", worst * 100.0);
}
