//! A tiny Qwen2.5-VL with one image per sequence against its CPU-measured records,
//! tests/data/measured/blocks-vision-cpu-steps.json (`scripts/measure/vl_run.py`, Transformers
//! 5.24.0, torch 2.15 CPU): the model imported from the record's config kwargs
//! (`import::from_hf_config`), the vision tower given the record's image, compared per phase.
//! Every phase holds 1 %, one bar for all, FP32 and the AMP-bf16 record (`vl_run.py --amp`: the
//! vision tower's weight casts, its 16-bit residual and pixel cast; `memory::towers`) (the prefill
//! peak lies in the language model's last MLP with the vision pass's outputs still held:
//! `memory::towers::vision_held`). Run with `--nocapture` for the table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::{Estimate, Phase, estimate};
use vram_explorer::scenario::*;

#[path = "support/block_records.rs"]
mod block_records;

fn records() -> Vec<Value> {
    block_records::records(include_str!("data/measured/blocks-vision-cpu-steps.json"))
}

fn scenario_for(r: &Value, mode: Mode) -> Scenario {
    let side = r["image"]["side"].as_u64().unwrap() as u32;
    let mut model = block_records::imported_model(r);
    for t in &mut model.towers {
        if let Tower::Vision(v) = t {
            v.image_size = side;
            v.images = 1;
        }
    }
    let (b, seq) = (
        r["batch"].as_u64().unwrap() as u32,
        r["seq"].as_u64().unwrap() as u32,
    );
    block_records::measured_step(r, mode, model, b, seq)
}

fn total(e: &Estimate, ph: Phase) -> f64 {
    e.memory
        .phases
        .get(ph)
        .map_or(0.0, |b| b.tensor_total().get())
}

#[test]
fn parameter_counts_are_exact() {
    for r in records() {
        let e = estimate(&scenario_for(&r, Mode::Training));
        assert_eq!(
            e.model.params.total,
            r["n_params"].as_f64().unwrap(),
            "{}",
            r["name"]
        );
    }
}

#[test]
fn phases_against_the_records() {
    let mut fails = Vec::new();
    for r in records() {
        let name = r["name"].as_str().unwrap();
        let train = estimate(&scenario_for(&r, Mode::Training));
        let inf = estimate(&scenario_for(&r, Mode::Inference));
        let rows = [
            ("forward", total(&train, Phase::Forward)),
            (
                "backward",
                total(&train, Phase::Backward).max(total(&train, Phase::LossBackward)),
            ),
            ("optimizer", total(&train, Phase::OptimizerStep)),
            ("prefill", total(&inf, Phase::Prefill)),
            ("decode", total(&inf, Phase::Decode)),
        ];
        for (phase, est) in rows {
            let meas = if matches!(phase, "prefill" | "decode") {
                r["inference"][phase]["peak_total"].as_f64().unwrap()
            } else {
                r["train"]["step2"]["phase_peaks"][phase].as_f64().unwrap()
            };
            let e = (est - meas) / meas;
            println!(
                "{name:<44} {phase:<9} {est:>12.0} {meas:>12.0} {:>+7.2}%",
                e * 100.0
            );
            if e.abs() > 0.01 {
                fails.push(format!("{name} {phase}: {:+.2}%", e * 100.0));
            }
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}
