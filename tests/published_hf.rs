//! The Hugging Face family against published GPU memory (issue 12 step 3; records in
//! tests/data/published/, what each is in docs/published-memory.md). Each record is rebuilt as a
//! scenario with the Hugging Face profile and compared like with like: `max_memory_allocated`
//! with the allocated tensor peak, `max_memory_reserved` (minus what was reserved at start, so no
//! CUDA context) with the estimate's reserved figure (tensor peak + allocator reserve + workspace).
//! Check records: nothing is fitted to them. Records whose mechanism is not modelled (DoRA, LoRA-FA,
//! Liger + activation offloading on a T4, GRPO generation, an unpublished prompt length) are printed
//! with the reason and left out of the statistics. Run with
//! `cargo test --test published_hf -- --nocapture` to see the table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

use serde_json::Value;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;
use vram_explorer::units::GIB;

const FILES: [&str; 3] = [
    include_str!("data/published/transformers-llm-optimization-octocoder.json"),
    include_str!("data/published/peft-metamathqa-l40s.json"),
    include_str!("data/published/trl-notebooks-qlora.json"),
];

fn u(v: &Value, k: &str) -> u32 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("missing {k} in {v}")) as u32
}

/// The transformer of a record's `config.model`; GPTBigCode (OctoCoder) is a GPT-2-style block
/// with multi-query attention, the others Llama-style.
fn model(r: &Value) -> ModelSpec {
    let m = &r["config"]["model"];
    let mut spec = ModelSpec::default();
    let t = &mut spec.transformer;
    t.layers = u(m, "layers");
    t.hidden = u(m, "hidden");
    t.heads = u(m, "heads");
    t.kv_heads = u(m, "kv_heads");
    t.head_dim = u(m, "head_dim");
    t.ffn = u(m, "ffn");
    t.vocab = u(m, "vocab");
    t.tied_embeddings = m["tied_embeddings"].as_bool().unwrap();
    let family = m["family"].as_str().unwrap();
    if family.starts_with("GPTBigCode") {
        t.max_positions = u(m, "positions");
        t.positions = PositionKind::Learned;
        t.norm = NormKind::LayerNorm;
        t.ffn_kind = FfnKind::Gelu;
        t.gelu_tanh = true;
        t.bias = true;
        t.fused_qkv = true;
    } else {
        t.positions = PositionKind::Rotary;
        t.norm = NormKind::RmsNorm;
        t.ffn_kind = FfnKind::SwiGlu;
        t.bias = family.contains("QKV bias");
    }
    spec
}

fn targets(t: &Value) -> LoraTargets {
    let f = |k: &str| t[k].as_bool().unwrap_or(false);
    LoraTargets {
        q: f("q"),
        k: f("k"),
        v: f("v"),
        o: f("o"),
        gate: f("mlp"),
        up: f("mlp"),
        down: f("mlp"),
    }
}

/// The scenario a record describes, or why it cannot be expressed.
fn scenario_for(r: &Value) -> Result<Scenario, &'static str> {
    let id = r["id"].as_str().unwrap();
    let c = &r["config"];
    let mut s = Scenario {
        model: model(r),
        ..Scenario::default()
    };
    s.implementation.profile = Profile::HuggingFace;
    s.gpu = GpuChoice::Catalog(GpuId::A100Sxm40);
    if id.starts_with("transformers-llm-optimization") {
        if id.contains("long-prompt") {
            return Err("the long prompt's token count is not published");
        }
        s.mode = Mode::Inference;
        s.precision.mode = PrecisionMode::Uniform;
        s.precision.compute = Dtype::Bf16;
        s.precision.kv_cache = Dtype::Bf16;
        s.workload.micro_batch = 1;
        s.inference.prompt_tokens = 20;
        s.inference.generated_tokens = 60;
        s.inference.all_logits = false;
        s.inference.dynamic_batching = false;
        s.implementation.hf.attention = Some(HfAttention::Eager);
        if id.contains("int8") {
            s.quantization.weights = WeightFormat::Int8PerChannel;
        } else if id.contains("4bit") {
            // `load_in_4bit=True` alone: FP4, no double quantization, FP32 compute dtype.
            s.quantization.weights = WeightFormat::Nf4;
            s.implementation.hf.bitsandbytes = Bitsandbytes {
                quant_type: Bnb4bitType::Fp4,
                compute_dtype: Dtype::Fp32,
                version: BnbVersion::Current,
            };
        }
        return Ok(s);
    }
    s.mode = Mode::Training;
    s.optimizer.kind = OptimizerKind::AdamW;
    if id.starts_with("peft-metamathqa") {
        if id.contains("dora") {
            return Err("DoRA's magnitude and weight-norm tensors are not modelled");
        }
        if id.contains("lorafa") {
            return Err("LoRA-FA (A frozen) is not modelled");
        }
        s.gpu = GpuChoice::Catalog(GpuId::L40S);
        let t = &c["training"];
        s.precision.mode = PrecisionMode::Uniform;
        s.precision.compute = Dtype::Bf16;
        s.workload.micro_batch = u(t, "micro_batch");
        s.workload.seq_len = u(t, "max_seq_length");
        s.implementation.hf.attention = Some(HfAttention::Sdpa);
        if c["method"] == "lora" {
            s.peft.method = PeftMethod::Lora;
            s.peft.rank = u(&c["lora"], "r");
            s.peft.targets = targets(&c["lora"]["targets"]);
        }
        return Ok(s);
    }
    if id.contains("grpo") {
        return Err("GRPO's generation phase (vLLM-less sampling) is not modelled");
    }
    if id.contains("t4") {
        return Err(
            "Liger + TRL activation offloading on a pre-quantized checkpoint: not modelled",
        );
    }
    // TRL SFT QLoRA: prepare_model_for_kbit_training upcasts every non-quantized parameter to
    // FP32, so the residual stream and the 4-bit layers' outputs are FP32 (docs/frameworks/
    // bitsandbytes.md): uniform FP32 with an FP16 compute dtype for the de-quantized matrices.
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Fp32;
    s.optimizer.kind = OptimizerKind::Adam8bit;
    s.workload.micro_batch = u(&c["layout"], "micro_batch");
    s.workload.grad_accum_steps = u(&c["layout"], "gradient_accumulation");
    s.workload.seq_len = 1024;
    s.strategies.checkpointing = Checkpointing::Full;
    s.implementation.hf.attention = Some(HfAttention::Sdpa);
    s.peft.method = PeftMethod::Qlora;
    s.peft.rank = u(&c["lora"], "r");
    s.peft.targets = targets(&c["lora"]["targets"]);
    s.peft.double_quant = true;
    s.implementation.hf.bitsandbytes.compute_dtype = Dtype::Fp16;
    Ok(s)
}

/// The published value in bytes.
fn value_bytes(r: &Value) -> f64 {
    let v = r["value"].as_f64().unwrap();
    match r["unit"].as_str().unwrap() {
        "GiB" => v * GIB,
        "B" => v,
        other => panic!("unit {other}"),
    }
}

/// Rebuilt records whose error is not explained by a modelled mechanism: (id, regression guard,
/// what is known). Kept visible, never tuned away.
const KNOWN_MISSES: [(&str, f64, &str); 1] = [(
    "transformers-llm-optimization-octocoder-bnb-4bit-fp4-short-prompt",
    0.12,
    "1.03 GiB above the FP4 weights + FP32 de-quantized matrix + KV cache; the peak also covers \
     loading (bitsandbytes of 2023 quantized each FP16 weight on the GPU) and the versions are \
     unpublished: unexplained",
)];

struct Case {
    id: String,
    statistic: &'static str,
    published: f64,
    estimate: Option<f64>,
    why: &'static str,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for file in FILES {
        let doc: Value = serde_json::from_str(file).unwrap();
        assert_eq!(doc["schema"], "vram-explorer.published/1");
        for r in doc["records"].as_array().unwrap() {
            let stat = r["statistic"].as_str().unwrap();
            let allocated = stat.contains("max_memory_allocated");
            let statistic = if allocated { "allocated" } else { "reserved" };
            let (estimate, why) = match scenario_for(r) {
                Ok(s) => {
                    let m = estimate(&s).memory;
                    let est = if allocated {
                        m.tensor_peak.get()
                    } else {
                        m.gpu_total.get() - m.peak.get(Component::CudaContext).get()
                    };
                    (Some(est), "")
                }
                Err(why) => (None, why),
            };
            out.push(Case {
                id: r["id"].as_str().unwrap().to_owned(),
                statistic,
                published: value_bytes(r),
                estimate,
                why,
            });
        }
    }
    out
}

#[test]
fn published_hf_memory_table() {
    let cases = cases();
    assert_eq!(cases.len(), 14, "records");
    println!(
        "{:<60} {:<9} {:>11} {:>11} {:>8}",
        "record", "statistic", "published", "estimate", "error"
    );
    let mut errors = Vec::new();
    for c in &cases {
        match c.estimate {
            Some(e) => {
                let err = (e - c.published) / c.published;
                errors.push((c.id.clone(), c.statistic, err));
                println!(
                    "{:<60} {:<9} {:>7.2} GiB {:>7.2} GiB {:>7.1}%",
                    c.id,
                    c.statistic,
                    c.published / GIB,
                    e / GIB,
                    err * 100.0
                );
            }
            None => println!(
                "{:<60} {:<9} {:>7.2} GiB {:>11} not rebuilt: {}",
                c.id,
                c.statistic,
                c.published / GIB,
                "—",
                c.why
            ),
        }
    }
    let mut abs: Vec<f64> = errors.iter().map(|e| e.2.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    println!(
        "rebuilt {} of {}; median |error| {:.1}%, worst {:.1}%",
        abs.len(),
        cases.len(),
        median * 100.0,
        abs[abs.len() - 1] * 100.0
    );
    assert!(
        median <= 0.03,
        "median |error| {:.1}% > 3 %",
        median * 100.0
    );
    for (id, stat, err) in &errors {
        if let Some((_, guard, why)) = KNOWN_MISSES.iter().find(|k| k.0 == id) {
            println!("known miss {id}: {:+.1}% ({why})", err * 100.0);
            assert!(err.abs() <= *guard, "{id}: {:+.1}% grew", err * 100.0);
        } else if *stat == "allocated" {
            assert!(
                err.abs() <= 0.10,
                "{id}: {:+.1}% (allocated bar 10 %)",
                err * 100.0
            );
        } else {
            // Reserved adds the allocator's rounding and fragmentation, an assumption
            // (`overheads.allocator_reserve_fraction`): held at what the estimate reaches.
            assert!(
                err.abs() <= 0.05,
                "{id}: {:+.1}% (reserved guard 5 %)",
                err * 100.0
            );
        }
    }
}
