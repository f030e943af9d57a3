//! The CPU-measured framework records (tests/data/measured/{litgpt,torchtune,deepspeed}-cpu-steps.json,
//! `scripts/measure/`, README there): the scenario each record ran and its step-2 phase peaks beside
//! the estimate's. One tiny Llama shape throughout (4 layers, hidden 256, 4 / 2 heads of 64, vocab
//! 32000, untied, SwiGLU, RMSNorm, RoPE, SDPA, batch 2, 256 tokens, AdamW foreach).

#![allow(dead_code, reason = "each test file uses a part")]

use serde_json::Value;
use vram_explorer::estimator::{Estimate, Phase, estimate};
use vram_explorer::scenario::*;

/// The records of one measured file (a JSON array).
pub fn records(text: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(v)) => v,
        other => panic!("measured data is not an array: {other:?}"),
    }
}

fn u(v: &Value, k: &str) -> u32 {
    u32::try_from(v[k].as_u64().unwrap_or_else(|| panic!("missing {k}"))).expect("fits u32")
}

/// The tiny Llama of a record, its batch, length, precision and optimizer; `profile` and the
/// framework's own settings are the caller's.
pub fn base_scenario(r: &Value, mode: Mode, profile: Profile) -> Scenario {
    let mut s = Scenario {
        mode,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = u(r, "n_layers");
    t.hidden = u(r, "hidden");
    t.heads = u(r, "heads");
    t.kv_heads = u(r, "kv_heads");
    t.head_dim = u(r, "head_dim");
    t.ffn = u(r, "ffn");
    t.vocab = u(r, "vocab");
    t.max_positions = u(r, "max_positions");
    t.tied_embeddings = r["tied_embeddings"].as_bool().unwrap_or(false);
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.arch = ArchKind::Decoder;
    t.positions = PositionKind::Rotary;
    t.bias = false;
    t.softmax_fp32 = true;
    let c = &r["config"];
    let (b, seq) = (u(c, "batch"), u(c, "seq"));
    s.workload.micro_batch = b;
    s.workload.seq_len = seq;
    s.workload.dropout = false;
    s.inference.prompt_tokens = seq;
    s.inference.generated_tokens = 1;
    s.inference.all_logits = true;
    s.inference.dynamic_batching = false;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = if c["dtype_mode"] == "bf16" {
        Dtype::Bf16
    } else {
        Dtype::Fp32
    };
    s.precision.kv_cache = s.precision.compute;
    s.optimizer.kind = OptimizerKind::AdamW;
    s.optimizer.foreach = true;
    s.strategies.checkpointing = Checkpointing::None;
    s.strategies.attention = AttentionKernel::Flash;
    s.implementation.profile = profile;
    s.gpu = GpuChoice::default();
    s
}

/// LoRA settings from a record's `framework.settings` (LitGPT's `lora_query` … or torchtune's
/// `targets` = "qv" / "all"); `Full` when the method is "full".
pub fn apply_peft(s: &mut Scenario, settings: &Value) {
    let method = settings["method"].as_str().unwrap_or("full");
    s.peft.method = match method {
        "lora" => PeftMethod::Lora,
        "qlora" => PeftMethod::Qlora,
        _ => PeftMethod::Full,
    };
    if s.peft.method == PeftMethod::Full {
        return;
    }
    let rank = settings["lora_r"]
        .as_u64()
        .or_else(|| settings["lora_rank"].as_u64())
        .unwrap_or(8);
    s.peft.rank = u32::try_from(rank).expect("rank fits");
    s.peft.double_quant = true; // torchao NF4: 8-bit block scalers, FP32 factor per 256 blocks
    let all = settings["targets"] == "all" || settings["lora_mlp"] == true;
    s.peft.targets = if all {
        LoraTargets::ALL_LINEAR
    } else if settings["targets"] == "qvo-mlp" {
        // torchtune's 3B LoRA / QLoRA configs: q, v and the output projection, and the MLP.
        LoraTargets {
            k: false,
            ..LoraTargets::ALL_LINEAR
        }
    } else {
        LoraTargets::default()
    };
    let p = settings["lora_dropout"].as_f64().unwrap_or(0.0);
    s.workload.dropout = p > 0.0;
    // On CPU `dropout` is `input * noise`: the mask has the activation's type.
    s.implementation.dropout_mask = DropoutMask::Float;
}

/// One compared value: record, phase, estimate and measured bytes.
pub struct Row {
    pub record: String,
    pub phase: &'static str,
    pub estimate: f64,
    pub measured: f64,
}

impl Row {
    pub fn error(&self) -> f64 {
        (self.estimate - self.measured) / self.measured
    }
}

fn phase_bytes(e: &Estimate, phases: &[Phase]) -> f64 {
    phases
        .iter()
        .filter_map(|p| e.memory.phases.get(*p))
        .map(|b| b.tensor_total().get())
        .fold(0.0, f64::max)
}

/// Step 2's forward, backward (loss backward and the layers') and optimizer peaks, estimate beside
/// measured; prefill and decode when the record has them and `inference` is given.
pub fn compare(r: &Value, train: &Scenario, inference: Option<&Scenario>) -> Vec<Row> {
    let name = r["name"].as_str().unwrap_or("?").to_owned();
    let e = estimate(train);
    let peaks = &r["train"]["step2"]["phase_peaks"];
    let mut rows = Vec::new();
    for (key, phases) in [
        ("forward", &[Phase::Forward][..]),
        ("backward", &[Phase::LossBackward, Phase::Backward][..]),
        ("optimizer", &[Phase::OptimizerStep][..]),
    ] {
        // A record without an optimizer peak: torchtune's optimizer in backward (no step phase), or
        // a step in which the tracker sees no allocation (bitsandbytes' CPU 8-bit update runs as
        // one custom op, docs/frameworks/torchtune.md): not compared. Callers assert the row count.
        if let Some(measured) = peaks[key].as_f64() {
            rows.push(Row {
                record: name.clone(),
                phase: key,
                estimate: phase_bytes(&e, phases),
                measured,
            });
        }
    }
    if let Some(s) = inference {
        let e = estimate(s);
        for (key, phase) in [("prefill", Phase::Prefill), ("decode", Phase::Decode)] {
            if let Some(m) = r["inference"][key]["peak_total"].as_f64() {
                rows.push(Row {
                    record: name.clone(),
                    phase: key,
                    estimate: phase_bytes(&e, &[phase]),
                    measured: m,
                });
            }
        }
    }
    rows
}

/// Prints the table and returns the largest |error|.
pub fn print_table(title: &str, rows: &[Row]) -> f64 {
    println!("{title}");
    println!(
        "{:<64} {:<9} {:>13} {:>13} {:>8}",
        "record", "phase", "estimate B", "measured B", "error"
    );
    for r in rows {
        println!(
            "{:<64} {:<9} {:>13.0} {:>13.0} {:>7.2}%",
            r.record,
            r.phase,
            r.estimate,
            r.measured,
            r.error() * 100.0
        );
    }
    let mut abs: Vec<f64> = rows.iter().map(|r| r.error().abs()).collect();
    abs.sort_by(f64::total_cmp);
    let worst = abs.last().copied().unwrap_or(0.0);
    println!(
        "{} phases: median |error| {:.2} %, worst {:.2} %",
        abs.len(),
        abs.get(abs.len() / 2).copied().unwrap_or(0.0) * 100.0,
        worst * 100.0
    );
    worst
}

/// The records of `text` (`n` of them) compared under the training scenario `scenario` builds for
/// each: prints the table as `title`, asserts the `rows` compared phases and every one within 1 %.
pub fn hold_within_one_percent(
    title: &str,
    text: &str,
    (n, rows): (usize, usize),
    scenario: impl Fn(&Value) -> Scenario,
) {
    let recs = records(text);
    assert_eq!(recs.len(), n, "{title}: records");
    let compared: Vec<Row> = recs
        .iter()
        .flat_map(|r| compare(r, &scenario(r), None))
        .collect();
    let worst = print_table(title, &compared);
    assert_eq!(compared.len(), rows, "{title}: compared phases");
    assert!(worst <= 0.01, "worst |error| {:.2}% > 1%", worst * 100.0);
}
