//! TRL 1.16 DPOTrainer and GRPOTrainer against their CPU-measured phases
//! (tests/data/measured/trl-rl-cpu-steps.json, made by scripts/measure/trl_rl.py; provenance in
//! tests/data/measured/README.md, derivation in docs/frameworks/trl-rl.md). Run with
//! `cargo test --test trl_rl -- --nocapture` to see the table.
//!
//! Asserted (within 1 %), per record, on step 2 (the steady state): the saved set at the end of the
//! policy's forward (its checkpointed layers and TRL's fused head), the peak of the loss, the
//! reference's no-grad forward (the scoring phase, its layers: the fused head's CPU fallback tiles
//! of N × 32,768 FP32, replaced by a Triton kernel on CUDA, are printed, not asserted, as for
//! SFTTrainer in tests/framework_hf.rs), the optimizer step, and GRPO's generation phase (HF
//! `generate` with its dynamic KV cache and its sampling step).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

#[path = "support/hf_records.rs"]
mod hf_records;
#[path = "support/record_dims.rs"]
mod record_dims;

use hf_records::{Row, records, table};
use serde_json::Value;
use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::scenario::*;

const RL: &str = include_str!("data/measured/trl-rl-cpu-steps.json");

/// The scenario a record ran: the tiny Llama of `hf_records::scenario_for` under TRL's fused head
/// (`add_fused_lm_head`, `HfTrainer::TrlSft`'s rule) with the record's post-training settings.
fn scenario(r: &Value) -> Scenario {
    let mut s = hf_records::scenario_for(r, Mode::Training);
    let p = &r["post_training"];
    let n = |k: &str| u32::try_from(p[k].as_u64().unwrap()).unwrap();
    s.implementation.hf.trainer = HfTrainer::TrlSft;
    s.optimizer.foreach = false;
    s.workload.seq_len = n("prompt_tokens") + n("completion_tokens");
    s.post_training.prompt_tokens = n("prompt_tokens");
    let set = &r["framework"]["settings"];
    s.post_training.reference = if set["ref_model"] == "none" {
        Reference::Off
    } else {
        Reference::Scored
    };
    if p["algorithm"] == "dpo" {
        s.post_training.algorithm = RlAlgorithm::Dpo;
        s.workload.micro_batch = n("pairs");
    } else {
        s.post_training.algorithm = RlAlgorithm::Grpo;
        s.workload.micro_batch = n("sequences");
        s.post_training.num_generations = n("num_generations");
        s.post_training.rollout = Rollout::HfGenerate;
    }
    s
}

fn rows(r: &Value, asserted: &mut Vec<Row>, generation: &mut Vec<Row>, printed: &mut Vec<Row>) {
    let name = r["name"].as_str().unwrap().to_owned();
    let e = estimate(&scenario(r));
    let total = |p: Phase| {
        e.memory
            .phases
            .get(p)
            .map_or(0.0, |b| b.tensor_total().get())
    };
    let step = &r["train"]["step2"];
    let peaks = &step["phase_peaks"];
    let live = &step["live_at"];
    let row = |phase, estimate, measured| Row {
        name: name.clone(),
        phase,
        estimate,
        measured,
    };
    let detail = |at: &str, k: &str| live[at]["detail"][k].as_f64().unwrap_or(0.0);
    let saved = detail("end_head", "created_in_forward") + detail("end_head", "created_in_head");
    let fwd = e.memory.phases.get(Phase::Forward).unwrap();
    asserted.push(row("saved", fwd.get(Component::Activations).get(), saved));
    // After the policy's forward TRL's losses work on per-token log-probabilities (N-vectors): the
    // fused head's b·s·h transient (the estimate's forward peak, on the GPU its kernel's) is gone.
    let head_t = 4.0
        * f64::from(record_dims::u(&r["config"], "batch"))
        * f64::from(record_dims::u(&r["config"], "seq"))
        * f64::from(record_dims::u(r, "hidden"));
    let loss = peaks["loss"]
        .as_f64()
        .unwrap()
        .max(peaks["ref_after"].as_f64().unwrap_or(0.0));
    asserted.push(row("loss", total(Phase::Forward) - head_t, loss));
    if let Some(m) = peaks["ref_forward"].as_f64() {
        asserted.push(row("scoring", total(Phase::Scoring), m));
    }
    if let Some(m) = peaks["generation"].as_f64() {
        generation.push(row("generation", total(Phase::Generation), m));
    }
    asserted.push(row(
        "optimizer",
        total(Phase::OptimizerStep),
        peaks["optimizer"].as_f64().unwrap(),
    ));
    for (phase, k) in [
        ("head", "head"),
        ("ref_head", "ref_head"),
        ("backward", "backward"),
    ] {
        if let Some(m) = peaks[k].as_f64() {
            let ours = if k == "backward" {
                total(Phase::Backward).max(total(Phase::LossBackward))
            } else {
                total(Phase::Forward)
            };
            printed.push(row(phase, ours, m));
        }
    }
}

#[test]
fn trl_dpo_and_grpo_phases_within_one_percent() {
    let recs = records(RL);
    assert_eq!(recs.len(), 5, "record count");
    let (mut asserted, mut generation, mut printed) = (Vec::new(), Vec::new(), Vec::new());
    for r in &recs {
        rows(r, &mut asserted, &mut generation, &mut printed);
    }
    asserted.extend(generation);
    let fails = table(&asserted, 0.01);
    println!("CPU fallback tiles of the fused head (not asserted: a CUDA kernel replaces them):");
    let _ = table(&printed, f64::INFINITY);
    assert!(
        fails.is_empty(),
        "phases off by more than 1 %:\n{}",
        fails.join("\n")
    );
}

/// The reference of a full fine-tune is a second copy of the weights; under LoRA it is the base
/// with the adapters disabled (no copy), as the measured `start` totals show.
#[test]
fn the_reference_is_a_copy_only_for_full_fine_tuning() {
    for r in &records(RL) {
        let e = estimate(&scenario(r));
        let peak = e.memory.phases.get(Phase::Forward).unwrap();
        let measured = r["framework"]["settings"]["ref_param_bytes"]
            .as_f64()
            .unwrap();
        assert_eq!(
            peak.get(Component::ReferenceModel).get(),
            measured,
            "{}",
            r["name"]
        );
    }
}

/// Settings that do not apply are reported, not silently used: post-training in inference mode,
/// and DPO without a reference (estimated reference-free: no copy, no scoring phase).
#[test]
fn post_training_settings_that_do_not_apply_are_reported() {
    use vram_explorer::estimator::Diagnostic;
    let mut s = scenario(&records(RL)[0]);
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::PostTrainingSettingsIgnored)
    );
    s.post_training.reference = Reference::Off;
    let e = estimate(&s);
    assert!(
        e.diagnostics
            .contains(Diagnostic::PostTrainingSettingsIgnored)
    );
    assert!(e.memory.phases.get(Phase::Scoring).is_none());
    s.post_training.reference = Reference::Scored;
    s.mode = Mode::Inference;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::PostTrainingSettingsIgnored)
    );
}
