//! The encoder-decoder models (T5, Whisper) against their CPU-measured tiny records,
//! tests/data/measured/blocks-encdec-cpu-steps.json (Transformers 5.24.0, torch 2.15 CPU; provenance
//! in docs/blocks-measured.md): every record is imported from its config kwargs
//! (`import::from_hf_config`), given the record's encoder length and decoder tokens, and compared
//! per phase (training step 2's forward, backward and optimizer peaks; prefill; the first decode
//! step). Run with `cargo test --test towers_encdec -- --nocapture` to see the table. Every phase of
//! every record holds 1 %: T5 (ReLU, tied head) and Whisper in FP32 and AMP-bf16, and T5 v1.1
//! (gated-GELU, its own head: `t5-gated-d256`) in FP32 and AMP-bf16.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::{Phase, estimate};
use vram_explorer::scenario::*;

#[path = "support/block_records.rs"]
mod block_records;

fn records() -> Vec<Value> {
    block_records::records(include_str!("data/measured/blocks-encdec-cpu-steps.json"))
}

fn u(v: &Value) -> u32 {
    v.as_u64().expect("a count") as u32
}

/// The scenario a record ran: the imported model; the decoder reads `decoder_tokens`, the encoder
/// `seq` positions (T5 tokens; Whisper frames after the convolution stem).
fn scenario_for(r: &Value, mode: Mode) -> Scenario {
    let settings = &r["framework"]["settings"];
    let (b, enc, dec) = (u(&r["batch"]), u(&r["seq"]), u(&settings["decoder_tokens"]));
    let mut model = block_records::imported_model(r);
    for t in &mut model.towers {
        if let Tower::Encoder(e) = t {
            e.input_len = enc;
        }
    }
    let mut s = block_records::measured_step(r, mode, model, b, dec);
    // T5's attention is explicit matmul + softmax (its additive position bias); Whisper runs SDPA.
    if r["family"] == "t5" {
        s.strategies.attention = AttentionKernel::Materialized;
    }
    s
}

struct Row {
    name: String,
    phase: &'static str,
    est: f64,
    meas: f64,
}

fn total(e: &vram_explorer::estimator::Estimate, ph: Phase) -> f64 {
    e.memory
        .phases
        .get(ph)
        .map_or(0.0, |b| b.tensor_total().get())
}

fn rows() -> Vec<Row> {
    let mut out = Vec::new();
    for r in records() {
        let name = r["name"].as_str().unwrap_or("?").to_owned();
        let train = estimate(&scenario_for(&r, Mode::Training));
        let ours = [
            ("forward", total(&train, Phase::Forward)),
            (
                "backward",
                total(&train, Phase::LossBackward).max(total(&train, Phase::Backward)),
            ),
            ("optimizer", total(&train, Phase::OptimizerStep)),
        ];
        for (phase, est) in ours {
            let meas = r["train"]["step2"]["phase_peaks"][phase].as_f64().unwrap();
            out.push(Row {
                name: name.clone(),
                phase,
                est,
                meas,
            });
        }
        let inf = estimate(&scenario_for(&r, Mode::Inference));
        for (phase, ph) in [("prefill", Phase::Prefill), ("decode", Phase::Decode)] {
            let meas = r["inference"][phase]["peak_total"].as_f64().unwrap();
            out.push(Row {
                name: name.clone(),
                phase,
                est: total(&inf, ph),
                meas,
            });
        }
    }
    out
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
fn phases_within_one_percent() {
    let mut fails = Vec::new();
    for r in rows() {
        let e = (r.est - r.meas) / r.meas;
        println!(
            "{:<40} {:<9} {:>13.0} {:>13.0} {:>+7.2}%",
            r.name,
            r.phase,
            r.est,
            r.meas,
            e * 100.0
        );
        if e.abs() > 0.01 {
            fails.push(format!("{} {}: {:+.2}%", r.name, r.phase, e * 100.0));
        }
    }
    assert!(fails.is_empty(), "{fails:#?}");
}

/// The decoder's cross-attention cache is computed once over the encoder's positions and does not
/// grow with generated tokens: per layer 2 · S · kv_heads · head_dim (the records' Whisper: 2
/// decoder layers, 4 heads of 64, S encoder frames), beside the self-attention cache of the
/// decoder's tokens.
#[test]
fn cross_attention_cache_is_fixed_by_the_encoder_length() {
    let r = records()
        .into_iter()
        .find(|r| r["name"] == "whisper-d256_b1_s256_fp32_adamw")
        .unwrap();
    let kv = |generated: u32| {
        let mut s = scenario_for(&r, Mode::Inference);
        s.inference.generated_tokens = generated;
        let e = estimate(&s);
        let b = e.memory.phases.get(Phase::Decode).unwrap();
        b.get(vram_explorer::estimator::Component::KvCache).get()
    };
    let (layers, h, enc, dec) = (2.0, 256.0, 256.0, 32.0);
    let per_token = 2.0 * layers * h * 4.0;
    assert_eq!(kv(1), per_token * (enc + dec + 1.0));
    assert_eq!(kv(101), per_token * (enc + dec + 101.0));
    // Measured after prefill: self (32 tokens) + cross (256 frames), the record's cache layout.
    let pre = r["inference"]["prefill"]["peak_breakdown"]["detail"]["kv_cache"].as_f64();
    let end = r["inference"]["prefill"]["live_at"]["end_forward"]["detail"]["kv_cache"]
        .as_f64()
        .unwrap();
    assert_eq!(end, per_token * (enc + dec), "{pre:?}");
}
