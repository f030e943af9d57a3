//! What the tests of the Hugging Face family's CPU-measured records share
//! (tests/data/measured/{peft,bitsandbytes,trl}-cpu-steps.json, made by `scripts/measure/`; provenance
//! in tests/data/measured/README.md, derivations in docs/frameworks/{peft,bitsandbytes,trl}.md):
//! reading a file, and the scenario a record ran (one tiny Llama shape, AdamW foreach, SDPA, CPU).

#![allow(dead_code, reason = "each test file uses a part")]

use crate::record_dims::{copy_dims, u};
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

/// PEFT's `target_modules` of a record as the scenario's targets.
fn targets(v: &Value) -> LoraTargets {
    if v == "all-linear" {
        return LoraTargets::ALL_LINEAR;
    }
    let names: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let has = |n: &str| names.contains(&n);
    LoraTargets {
        q: has("q_proj"),
        k: has("k_proj"),
        v: has("v_proj"),
        o: has("o_proj"),
        gate: has("gate_proj"),
        up: has("up_proj"),
        down: has("down_proj"),
    }
}

/// The scenario a record ran, in `mode`: the tiny untied Llama (RMSNorm, SwiGLU, RoPE), batch and
/// sequence of the record, AdamW (foreach), SDPA (the CPU flash kernel: no s × s tensor), a plain
/// Transformers/PEFT loop (the `HuggingFace` framework) unless the record names TRL's trainer.
/// Inference: prefill of `seq` tokens with all-position logits, then one decode token.
pub fn scenario_for(r: &Value, mode: Mode) -> Scenario {
    let c = &r["config"];
    let set = &r["framework"]["settings"];
    let mut s = Scenario {
        mode,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    copy_dims(r, t);
    t.arch = ArchKind::Decoder;
    t.positions = PositionKind::Rotary;
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.bias = false;
    t.softmax_fp32 = true;
    s.workload.micro_batch = u(c, "batch");
    s.workload.seq_len = u(c, "seq");
    s.inference.prompt_tokens = s.workload.seq_len;
    s.inference.generated_tokens = 1;
    s.inference.all_logits = true;
    s.inference.dynamic_batching = false;
    let bf16 = r["param_dtype"] == "bfloat16" || set["base_dtype"] == "bfloat16";
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = if bf16 { Dtype::Bf16 } else { Dtype::Fp32 };
    s.precision.kv_cache = s.precision.compute;
    s.optimizer.kind = OptimizerKind::AdamW;
    s.optimizer.foreach = c["foreach"].as_bool().unwrap_or(true);
    s.strategies.checkpointing = if c["checkpointing"].as_bool().unwrap_or(false) {
        Checkpointing::Full
    } else {
        Checkpointing::None
    };
    s.strategies.attention = AttentionKernel::Flash;
    s.gpu = GpuChoice::default();
    let dropout = set["lora_dropout"].as_f64().unwrap_or(0.0);
    s.workload.dropout = false;
    match set["peft"].as_str() {
        Some("lora") => {
            s.peft.method = if set["quant"].as_str().is_some_and(|q| q.starts_with("nf4")) {
                PeftMethod::Qlora
            } else {
                PeftMethod::Lora
            };
            s.peft.rank = u(set, "r");
            s.peft.targets = targets(&set["target_modules"]);
            s.peft.double_quant = set["bnb_4bit_use_double_quant"].as_bool().unwrap_or(false);
        }
        _ => s.peft.method = PeftMethod::Full,
    }
    s.peft.lora_dropout = dropout;
    // CPU `nn.Dropout` runs `_dropout_impl` (bernoulli noise times x): a mask of x's own type.
    s.implementation.dropout_mask = DropoutMask::Float;
    s.peft.inference_adapters = true;
    if let Some(t) = set["bnb_4bit_compute_dtype"].as_str() {
        s.implementation.hf.bitsandbytes.compute_dtype = if t == "bfloat16" {
            Dtype::Bf16
        } else {
            Dtype::Fp32
        };
    }
    if set["trainer"] == "SFTTrainer" {
        s.implementation.hf.trainer = HfTrainer::TrlSft;
        // The Trainer's `adamw_torch` on CPU tensors: torch's `_default_to_fused_or_foreach`
        // picks the per-tensor loop (foreach only on CUDA).
        s.optimizer.foreach = false;
    }
    s
}

/// One phase of one record: what the estimate says and what was measured.
pub struct Row {
    pub name: String,
    pub phase: &'static str,
    pub estimate: f64,
    pub measured: f64,
}

impl Row {
    pub fn error(&self) -> f64 {
        (self.estimate - self.measured) / self.measured
    }
}

fn phase_total(e: &Estimate, p: Phase) -> f64 {
    e.memory
        .phases
        .get(p)
        .map_or(0.0, |b| b.tensor_total().get())
}

/// Every measured phase of a record beside the estimate's: step 2's forward, backward (the larger of
/// the estimate's loss-backward and backward phases) and optimizer peaks, and the prefill and decode
/// peaks where the record has them.
pub fn rows(r: &Value) -> Vec<Row> {
    let name = r["name"].as_str().unwrap_or("?").to_owned();
    let train = estimate(&scenario_for(r, Mode::Training));
    let step = &r["train"]["step2"]["phase_peaks"];
    let mut out = Vec::new();
    let ours = [
        ("forward", phase_total(&train, Phase::Forward)),
        (
            "backward",
            phase_total(&train, Phase::LossBackward).max(phase_total(&train, Phase::Backward)),
        ),
        ("optimizer", phase_total(&train, Phase::OptimizerStep)),
    ];
    for (phase, est) in ours {
        if let Some(m) = step[phase].as_f64() {
            out.push(Row {
                name: name.clone(),
                phase,
                estimate: est,
                measured: m,
            });
        }
    }
    let inf = estimate(&scenario_for(r, Mode::Inference));
    // bitsandbytes de-quantizes one weight inside its `gemm_4bit` op, where a `TorchDispatchMode`
    // cannot see it; a GPU's `max_memory_allocated` does: for the 4-bit records the allocator's
    // view (`allocator_check`: its peak minus the tracker's, per region) is the measured figure.
    let four_bit = r["framework"]["settings"]["quant"]
        .as_str()
        .is_some_and(|q| q.starts_with("nf4"));
    for (phase, p) in [("prefill", Phase::Prefill), ("decode", Phase::Decode)] {
        if let Some(m) = r["inference"][phase]["peak_total"].as_f64() {
            let unseen = if four_bit {
                r["allocator_check"][phase]["diff_bytes"]
                    .as_f64()
                    .unwrap_or(0.0)
            } else {
                0.0
            };
            out.push(Row {
                name: name.clone(),
                phase,
                estimate: phase_total(&inf, p),
                measured: m + unseen,
            });
        }
    }
    out
}

/// Prints the rows as a table and returns the phases off by more than `bar`.
pub fn table(rows: &[Row], bar: f64) -> Vec<String> {
    println!(
        "{:<62} {:<9} {:>14} {:>14} {:>8}",
        "record", "phase", "estimate B", "measured B", "error"
    );
    let mut fails = Vec::new();
    for r in rows {
        let e = r.error();
        println!(
            "{:<62} {:<9} {:>14.0} {:>14.0} {:>7.2}%",
            r.name,
            r.phase,
            r.estimate,
            r.measured,
            e * 100.0
        );
        if e.abs() > bar {
            fails.push(format!("{} {}: {:+.2}%", r.name, r.phase, e * 100.0));
        }
    }
    fails
}
