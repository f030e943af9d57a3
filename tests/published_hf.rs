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

const FILES: [&str; 6] = [
    include_str!("data/published/transformers-llm-optimization-octocoder.json"),
    include_str!("data/published/peft-metamathqa-l40s.json"),
    include_str!("data/published/trl-notebooks-qlora.json"),
    include_str!("data/published/liger-kernel-memory.json"),
    include_str!("data/published/peft-docs-sharded-qlora-70b.json"),
    include_str!("data/published/unsloth-context-length.json"),
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
    if id.starts_with("liger-bench") {
        return Err("one loss op measured alone (op_memory), not a training step");
    }
    if id.starts_with("peft-docs") {
        return Err("statistic not stated; FSDP1 / ZeRO-3 of a 4-bit base (fw-stack's profiles)");
    }
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
            s.peft.double_quant = false;
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
    if id.starts_with("liger-bench") {
        return Err("one loss op measured alone (op_memory), not a training step");
    }
    if id.starts_with("peft-docs") {
        return Err(
            "statistic not stated; FSDP1 / ZeRO-3 sharding of a 4-bit base (fw-stack's profiles)",
        );
    }
    if id.starts_with("liger-example") {
        return liger_example(r, s);
    }
    if id.starts_with("unsloth") {
        if id.ends_with("-unsloth") {
            return Err("Unsloth offloads the checkpointed layer inputs to CPU: not modelled");
        }
        return Ok(unsloth_hf(r, s));
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

/// Liger's Hugging Face example: Qwen2-7B, TRL SFTTrainer on FSDP1 FULL_SHARD over 4 A100 80GB,
/// every layer checkpointed; the Liger rows' fused linear cross-entropy. The model is loaded in
/// BF16, but `--bf16` sets Accelerate's mixed precision, and `Accelerator.prepare_model` then
/// upcasts every FSDP flat parameter to FP32 ("if model is loaded in 16bit … we still want to
/// upcast the flat_param", accelerate `accelerator.py`, the `upcasted_log` loop): FP32 sharded
/// parameters, gradients and AdamW states with BF16 compute copies — autocast-style mixed precision.
/// The batch's padded length is not published (≤ 512): 512 assumed.
fn liger_example(r: &Value, mut s: Scenario) -> Result<Scenario, &'static str> {
    let c = &r["config"];
    s.gpu = GpuChoice::Catalog(GpuId::A100Sxm80);
    s.precision.mode = PrecisionMode::Amp;
    s.precision.compute = Dtype::Bf16;
    s.parallel.dp = 4;
    s.strategies.zero = ZeroStage::Stage3;
    s.strategies.checkpointing = Checkpointing::Full;
    s.workload.micro_batch = u(&c["layout"], "per_device_batch");
    s.workload.seq_len = 512;
    s.implementation.hf.attention = Some(HfAttention::Sdpa);
    s.implementation.hf.trainer = HfTrainer::Transformers;
    if c["liger"] != false {
        s.implementation.hf.fused_loss = FusedLoss::Liger;
    }
    Ok(s)
}

/// Unsloth README's Hugging Face column: Transformers + PEFT + bitsandbytes QLoRA r32 on every
/// linear, FlashAttention-2, batch 1; checkpointing, optimizer and compute dtype are not published:
/// gradient checkpointing on, AdamW 8-bit (Unsloth's notebooks), BF16 compute assumed.
fn unsloth_hf(r: &Value, mut s: Scenario) -> Scenario {
    let c = &r["config"];
    let gb = r["hardware"]["vram_GB"].as_f64().unwrap();
    s.gpu = GpuChoice::Custom(CustomGpu {
        // "8 GB" cards hold 8 GiB: `memory_gb` reads the datasheet's "GB" as GiB.
        memory_gb: gb,
        ..CustomGpu::default()
    });
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.optimizer.kind = OptimizerKind::Adam8bit;
    s.workload.micro_batch = 1;
    // PEFT `prepare_model_for_kbit_training(use_gradient_checkpointing=True)` (its default).
    s.strategies.checkpointing = Checkpointing::Full;
    s.implementation.hf.attention = Some(HfAttention::FlashAttention2);
    s.peft.method = PeftMethod::Qlora;
    s.peft.rank = u(&c["lora"], "r");
    s.peft.targets = targets(&c["lora"]["targets"]);
    s
}

/// The longest sequence whose estimate fits the GPU (0: none).
fn max_sequence(s: &Scenario) -> f64 {
    let fits = |seq: u32| {
        let mut t = s.clone();
        t.workload.seq_len = seq;
        estimate(&t).memory.fits
    };
    let (mut lo, mut hi) = (0u32, 1u32 << 20);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { lo = mid } else { hi = mid }
    }
    f64::from(lo)
}

/// The published value in bytes.
fn value_bytes(r: &Value) -> f64 {
    let v = r["value"].as_f64().unwrap_or(0.0);
    match r["unit"].as_str().unwrap() {
        "GiB" => v * GIB,
        "MiB" => v * vram_explorer::units::MIB,
        "tokens" => v,
        "GB (as printed)" => v * 1e9,
        "B" => v,
        other => panic!("unit {other}"),
    }
}

/// Rebuilt records whose error is not explained by a modelled mechanism, or whose decisive setting
/// is unpublished: (id prefix, regression guard on |error|, what is known). Kept visible, never
/// tuned away; left out of the median and the allocated bar.
const KNOWN_MISSES: [(&str, f64, &str); 2] = [
    (
        "liger-example-",
        0.25,
        "the batches' padded length is unpublished (<= 512, 512 assumed): an upper bound",
    ),
    (
        "unsloth-readme-ctx-",
        2.5,
        "the HF column trains shorter sequences than estimated: the checkpointing mode and the \
         transformers version are unpublished (the Transformers 4.x loss of the time also made a \
         contiguous FP32 copy of the shifted b*s*V logits, not modelled: the estimator follows 5.24)",
    ),
];

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
            let statistic = if r["kind"] == "training_max_sequence" {
                "max seq"
            } else if allocated {
                "allocated"
            } else {
                "reserved"
            };
            let (estimate, why) = match scenario_for(r) {
                Ok(s) if statistic == "max seq" => (Some(max_sequence(&s)), ""),
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
    assert_eq!(cases.len(), 14 + 42 + 3 + 18, "records");
    println!(
        "{:<60} {:<9} {:>11} {:>11} {:>8}",
        "record", "statistic", "published", "estimate", "error"
    );
    let mut errors = Vec::new();
    for c in &cases {
        match c.estimate {
            Some(e) if c.statistic == "max seq" => {
                // An OOM row (published 0 tokens) agrees when nothing fits.
                let err = if c.published == 0.0 {
                    if e == 0.0 { 0.0 } else { 1.0 }
                } else {
                    (e - c.published) / c.published
                };
                errors.push((c.id.clone(), c.statistic, err));
                println!(
                    "{:<60} {:<9} {:>7.0} tok {:>7.0} tok {:>7.1}%",
                    c.id,
                    c.statistic,
                    c.published,
                    e,
                    err * 100.0
                );
            }
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
            None if c.statistic == "max seq" => println!(
                "{:<60} {:<9} {:>7.0} tok {:>11} not rebuilt: {}",
                c.id, c.statistic, c.published, "—", c.why
            ),
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
    let miss = |id: &str| KNOWN_MISSES.iter().find(|k| id.starts_with(k.0));
    let mut all: Vec<f64> = errors.iter().map(|e| e.2.abs()).collect();
    all.sort_by(f64::total_cmp);
    let mut abs: Vec<f64> = errors
        .iter()
        .filter(|e| miss(&e.0).is_none())
        .map(|e| e.2.abs())
        .collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    println!(
        "rebuilt {} of {}; all rebuilt: median |error| {:.1}%, worst {:.1}%; without the known \
         misses ({}): median {:.1}%, worst {:.1}%",
        all.len(),
        cases.len(),
        all[all.len() / 2] * 100.0,
        all[all.len() - 1] * 100.0,
        abs.len(),
        median * 100.0,
        abs[abs.len() - 1] * 100.0
    );
    assert!(
        median <= 0.03,
        "median |error| {:.1}% > 3 %",
        median * 100.0
    );
    for (id, stat, err) in &errors {
        if let Some((_, guard, why)) = miss(id) {
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
