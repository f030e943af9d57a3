//! The Hugging Face family of framework profiles against their CPU-measured records
//! (tests/data/measured/{peft,bitsandbytes,trl}-cpu-steps.json, bitsandbytes-linear4bit-probe.json;
//! provenance in tests/data/measured/README.md, derivations in docs/frameworks/). Every record is
//! rebuilt as a `Scenario` and compared per phase. Run with
//! `cargo test --test framework_hf -- --nocapture` to see the tables.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

#[path = "support/hf_records.rs"]
mod hf_records;

use hf_records::{records, rows, table};

const PEFT: &str = include_str!("data/measured/peft-cpu-steps.json");
const BNB: &str = include_str!("data/measured/bitsandbytes-cpu-steps.json");
const TRL: &str = include_str!("data/measured/trl-cpu-steps.json");

fn check(file: &str, count: usize) {
    let recs = records(file);
    assert_eq!(recs.len(), count, "record count");
    let all: Vec<_> = recs.iter().flat_map(rows).collect();
    let fails = table(&all, 0.01);
    assert!(
        fails.is_empty(),
        "phases off by more than 1 %:\n{}",
        fails.join("\n")
    );
}

#[test]
fn peft_records_within_one_percent_per_phase() {
    check(PEFT, 10);
}

#[test]
fn bitsandbytes_records_within_one_percent_per_phase() {
    check(BNB, 5);
}

/// TRL's records run SFTTrainer's defaults on CPU: gradient checkpointing and its fused LM head,
/// whose **torch fallback** (`_forward_tile` / `_backward_tile`, N × 32,768-wide FP32 tiles) sets the
/// forward and backward peaks; on CUDA a Triton kernel replaces those tiles
/// (docs/frameworks/trl.md). So the backend-independent phases are asserted: the checkpointed saved
/// set at the end of the forward, the peak of SFTTrainer's loss (after the model: saved set, no
/// b·s·V logits), and the optimizer step (the Trainer's `adamw_torch` on CPU: per-tensor). The tile
/// phases are printed beside the estimate of the GPU kernel, not asserted.
#[test]
fn trl_backend_independent_phases_within_one_percent() {
    use vram_explorer::estimator::{Component, Phase, estimate};
    use vram_explorer::scenario::Mode;
    let recs = records(TRL);
    assert_eq!(recs.len(), 2, "record count");
    let mut rows = Vec::new();
    let mut cpu_only = Vec::new();
    for r in &recs {
        let name = r["name"].as_str().unwrap().to_owned();
        let e = estimate(&hf_records::scenario_for(r, Mode::Training));
        let ph = |p: Phase| e.memory.phases.get(p).unwrap();
        let step = &r["train"]["step2"];
        let live = &step["live_at"];
        let saved = live["end_forward"]["detail"]["created_in_forward"]
            .as_f64()
            .unwrap();
        let row = |phase, estimate, measured| hf_records::Row {
            name: name.clone(),
            phase,
            estimate,
            measured,
        };
        rows.push(row(
            "saved",
            ph(Phase::Forward).get(Component::Activations).get(),
            saved,
        ));
        rows.push(row(
            "loss",
            ph(Phase::Forward).tensor_total().get(),
            step["phase_peaks"]["loss"].as_f64().unwrap(),
        ));
        rows.push(row(
            "optimizer",
            ph(Phase::OptimizerStep).tensor_total().get(),
            step["phase_peaks"]["optimizer"].as_f64().unwrap(),
        ));
        for (phase, p) in [("forward", Phase::Forward), ("backward", Phase::Backward)] {
            cpu_only.push(row(
                phase,
                ph(p).tensor_total().get(),
                step["phase_peaks"][phase].as_f64().unwrap(),
            ));
        }
    }
    let fails = table(&rows, 0.01);
    println!("CPU fallback tiles (not asserted: a CUDA kernel replaces them):");
    let _ = table(&cpu_only, f64::INFINITY);
    assert!(
        fails.is_empty(),
        "phases off by more than 1 %:\n{}",
        fails.join("\n")
    );
}

/// The one-layer probe (bitsandbytes-linear4bit-probe.json): a frozen 4-bit linear saves nothing
/// for backward with bitsandbytes 0.50.2 (what `BnbVersion::Current` assumes), whatever the compute
/// type and double quantization; with a LoRA r = 8 adapter (FP32) it saves x and A·x.
#[test]
fn bitsandbytes_probe_frozen_4bit_linear_saves_nothing() {
    let probe: serde_json::Value = serde_json::from_str(include_str!(
        "data/measured/bitsandbytes-linear4bit-probe.json"
    ))
    .unwrap();
    assert_eq!(probe["bitsandbytes"], "0.50.2");
    let sh = &probe["shape"];
    let (b, s, h) = (
        sh["b"].as_f64().unwrap(),
        sh["s"].as_f64().unwrap(),
        sh["h"].as_f64().unwrap(),
    );
    for row in probe["rows"].as_array().unwrap() {
        let name = row["probe"].as_str().unwrap();
        let saved = row["saved_for_backward"].as_f64().unwrap();
        // The rule of `frameworks::hf::lora_layer` for one targeted linear with an FP32 adapter:
        // its input (4 B) and the rank-8 A·x (4 B).
        let expected = if name.contains("LoRA r8") {
            4.0 * b * s * h + 4.0 * b * s * 8.0
        } else {
            0.0
        };
        assert_eq!(saved, expected, "{name}");
    }
}
