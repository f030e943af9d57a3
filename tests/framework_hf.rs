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
#[path = "support/record_dims.rs"]
mod record_dims;
#[path = "support/saved.rs"]
mod saved;

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

use saved::forward_activations as saved;

/// bitsandbytes ≤ 0.43.1 kept every 4-bit linear's input (`ctx.tensors = (A, B)`): in the compute
/// type, one copy per linear when it differs from the activations, else the shared tensor when no
/// adapter already keeps it (docs/frameworks/bitsandbytes.md).
#[test]
fn legacy_bitsandbytes_keeps_the_4bit_inputs() {
    use vram_explorer::scenario::{BnbVersion, Dtype, Mode};
    let recs = records(BNB);
    let r = recs
        .iter()
        .find(|r| r["name"] == "llama-tiny_b2_s256_nf4-fp32_qlora-qv-r8_drop0_adamw_sdpa")
        .unwrap();
    let mut s = hf_records::scenario_for(r, Mode::Training);
    let (l, bsh, bsq, bsf) = (4.0, 512.0 * 256.0, 512.0 * 256.0, 512.0 * 688.0);
    let current = saved(&s);
    s.implementation.hf.bitsandbytes.version = BnbVersion::Legacy0_43_1;
    // FP32 compute = the activations' type: q/k/v share the q/v adapters' saved input, o_proj's is
    // the SDPA output; the MLP input (gate, up) and down's input are kept once each.
    assert_eq!(saved(&s) - current, l * 4.0 * (bsh + bsf));
    // BF16 compute: every one of the 7 linears keeps its own BF16 copy.
    s.implementation.hf.bitsandbytes.compute_dtype = Dtype::Bf16;
    assert_eq!(
        saved(&s) - current,
        l * 2.0 * (5.0 * bsh + bsq + bsf),
        "BF16 copies"
    );
    // Full checkpointing keeps only layer inputs: the leak lives one layer at a time.
    s.strategies.checkpointing = vram_explorer::scenario::Checkpointing::Full;
    let legacy_ckpt = saved(&s);
    s.implementation.hf.bitsandbytes.version = BnbVersion::Current;
    assert_eq!(legacy_ckpt, saved(&s));
}

/// The framework's attention implementation decides the kernel (eager saves b·a·s² scores);
/// unset, `strategies.attention` does (files before issue 12); another profile ignores it.
#[test]
fn attention_implementation_selects_the_kernel() {
    use vram_explorer::scenario::{AttentionKernel, HfAttention, Mode, Profile};
    let r = &records(PEFT)[0];
    let mut s = hf_records::scenario_for(r, Mode::Training);
    let sdpa = saved(&s);
    s.strategies.attention = AttentionKernel::Materialized;
    let eager = saved(&s);
    assert!(
        eager > sdpa + 4.0 * 2.0 * 4.0 * 256.0 * 256.0,
        "scores saved"
    );
    s.implementation.hf.attention = Some(HfAttention::Sdpa);
    assert_eq!(saved(&s), sdpa);
    s.implementation.hf.attention = Some(HfAttention::FlashAttention2);
    assert_eq!(saved(&s), sdpa, "FA2 saves what SDPA's flash kernel saves");
    s.implementation.hf.attention = Some(HfAttention::Eager);
    s.strategies.attention = AttentionKernel::Flash;
    assert_eq!(saved(&s), eager);
    s.implementation.profile = Profile::Megatron;
    let megatron_flash = saved(&s);
    s.implementation.hf.attention = None;
    assert_eq!(saved(&s), megatron_flash, "Megatron ignores the HF setting");
}

/// Combinations the profile cannot express are said, not silently dropped.
#[test]
fn inexpressible_combinations_get_diagnostics() {
    use vram_explorer::estimator::{Diagnostic, estimate};
    use vram_explorer::scenario::{Dtype, FusedLoss, HfAttention, Mode, PrecisionMode, Profile};
    let r = &records(PEFT)[0];
    let mut s = hf_records::scenario_for(r, Mode::Training);
    s.peft.inference_adapters = false;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::FrameworkSettingsIgnored)
    );
    s.implementation.hf.attention = Some(HfAttention::FlashAttention2);
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::FlashAttention2NeedsHalfPrecision)
    );
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::FlashAttention2NeedsHalfPrecision)
    );
    s.implementation.profile = Profile::Megatron;
    s.implementation.hf.fused_loss = FusedLoss::Liger;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::FrameworkSettingsIgnored)
    );
    s.implementation.profile = Profile::HuggingFace;
    s.peft.lora_dropout = 0.1;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::FrameworkSettingsIgnored),
        "dropout without LoRA"
    );
    s.peft.lora_dropout = 0.0;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::FrameworkSettingsIgnored)
    );
    s.implementation.megatron_local_layers = true;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::FrameworkSettingsIgnored),
        "Megatron's local layers under another profile"
    );
}

/// TRL's SFTTrainer and the fused losses never hold b·s·V logits: the FP32 log-softmax (saved) and
/// its two gradients disappear from the peak.
#[test]
fn fused_heads_drop_the_logits() {
    use vram_explorer::estimator::estimate;
    use vram_explorer::scenario::{FusedLoss, HfTrainer, Mode};
    let r = &records(PEFT)[2];
    let mut s = hf_records::scenario_for(r, Mode::Training);
    let plain = estimate(&s).memory.tensor_peak.get();
    let bsv4 = 2.0 * 256.0 * 32000.0 * 4.0;
    for (trainer, loss) in [
        (HfTrainer::TrlSft, FusedLoss::Off),
        (HfTrainer::Transformers, FusedLoss::Liger),
        (HfTrainer::Transformers, FusedLoss::Unsloth),
    ] {
        s.implementation.hf.trainer = trainer;
        s.implementation.hf.fused_loss = loss;
        let fused = estimate(&s).memory.tensor_peak.get();
        assert!(
            plain - fused > 2.0 * bsv4,
            "{trainer:?} {loss:?}: {plain} → {fused}"
        );
    }
}
