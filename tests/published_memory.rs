//! Memory against published GPU runs (issue 12's validation table): LitGPT's config-hub
//! fine-tuning table (17 Llama-family rows on one A10G, `max_memory_allocated`), in
//! tests/data/published/ (schema in its README).
//!
//! Each record is rebuilt as a scenario with the estimator's LitGPT profile (`Profile::LitGpt`,
//! docs/frameworks/litgpt.md) and its allocated tensor peak (what `max_memory_allocated` reports) is
//! compared with the published figure. These are check records: nothing is fitted to them. The
//! errors are printed (`cargo test --test published_memory -- --nocapture`) and held by regression
//! guards at what the estimator reaches today; issue 12's bar (median |error| ≤ 3 %, every
//! allocated case ≤ 10 %) is met on the rows in the statistics (see the guards).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{
    AttentionKernel, BnbVersion, Dtype, FfnKind, GpuChoice, LoraTargets, Mode, NormKind,
    OptimizerKind, PeftMethod, PrecisionMode, Profile, Scenario,
};

const LITGPT: &str = include_str!("data/published/litgpt-config-hub-a10g.json");

fn records() -> Vec<Value> {
    let doc: Value = serde_json::from_str(LITGPT).unwrap();
    assert_eq!(doc["schema"], "vram-explorer.published/1");
    doc["records"].as_array().unwrap().clone()
}

fn u(v: &Value, k: &str) -> u32 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("missing {k} in {v}")) as u32
}

/// The scenario a LitGPT row describes: a Llama-family model in `bf16-true` (everything BF16),
/// AdamW, SDPA (flash kernel on an A10G), one GPU, the row's micro-batch at 512 tokens; LoRA / QLoRA (bnb.nf4, no double
/// quantization) with the row's rank and targets. A LoRA head target cannot be expressed (the
/// scenario's targets are the blocks' matrices): returned as `false` in the second value.
fn scenario_for(r: &Value) -> (Scenario, bool) {
    let c = &r["config"];
    let m = &c["model"];
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = u(m, "layers");
    t.hidden = u(m, "hidden");
    t.heads = u(m, "heads");
    t.kv_heads = u(m, "kv_heads");
    t.head_dim = u(m, "head_dim");
    t.ffn = u(m, "ffn");
    t.vocab = u(m, "vocab");
    t.tied_embeddings = m["tied_embeddings"].as_bool().unwrap();
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.bias = false;
    s.workload.seq_len = u(c, "max_seq_length");
    s.workload.micro_batch = u(&c["layout"], "micro_batch");
    s.workload.grad_accum_steps = u(&c["layout"], "global_batch") / s.workload.micro_batch;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.optimizer.kind = OptimizerKind::AdamW;
    s.strategies.attention = AttentionKernel::Flash;
    s.implementation.profile = Profile::LitGpt;
    // No A10G in the catalog; the tensor peak does not depend on the card.
    s.gpu = GpuChoice::Catalog(GpuId::L40S);
    let mut expressible = true;
    match c["method"].as_str().unwrap() {
        "full" => s.peft.method = PeftMethod::Full,
        method => {
            s.peft.method = if method == "qlora" {
                PeftMethod::Qlora
            } else {
                PeftMethod::Lora
            };
            s.peft.double_quant = false;
            // LitGPT pinned bitsandbytes 0.42.0 (`pyproject.toml` at 00af8b0d): the 4-bit matmul
            // kept its input (docs/frameworks/bitsandbytes.md).
            s.implementation.hf.bitsandbytes.version = BnbVersion::Legacy0_43_1;
            let l = &c["lora"];
            s.peft.rank = u(l, "r");
            let tg = &l["targets"];
            let on = |k: &str| tg[k].as_bool().unwrap();
            s.peft.targets = LoraTargets {
                q: on("q"),
                k: on("k"),
                v: on("v"),
                o: on("o"),
                gate: on("mlp"),
                up: on("mlp"),
                down: on("mlp"),
            };
            s.workload.dropout = l["dropout"].as_f64().unwrap() > 0.0;
            expressible = !on("head");
        }
    }
    (s, expressible)
}

/// Every record rebuilds as a scenario with the model's published parameter count (a wrong
/// transcription of a dimension fails here).
#[test]
fn litgpt_models_have_their_sizes() {
    // Hugging Face model cards / `sum(p.numel())` of the checkpoints; Llama 3.2 as LitGPT 00af8b0d
    // builds it: untied, its own V·h head (the generator's note, scripts/published/litgpt_config_hub.py).
    let sizes = [
        ("Llama-2-7b-hf", 6_738_415_616.0),
        ("Meta-Llama-3-8B", 8_030_261_248.0),
        ("Meta-Llama-3.1-8B", 8_030_261_248.0),
        ("Mistral-7B-v0.2", 7_241_732_096.0),
        ("TinyLlama-1.1B-intermediate-step-1431k-3T", 1_100_048_384.0),
        ("Llama-3.2-1B", 1_498_482_688.0),
        ("Llama-3.2-3B", 3_606_752_256.0),
    ];
    for r in records() {
        let hf = r["config"]["model"]["hf_id"].as_str().unwrap();
        let want = sizes
            .iter()
            .find(|(name, _)| hf.ends_with(name))
            .unwrap_or_else(|| panic!("no size for {hf}"))
            .1;
        let (s, _) = scenario_for(&r);
        let mut full = s.clone();
        full.peft.method = PeftMethod::Full;
        let got = estimate(&full).model.params.total;
        assert_eq!(got, want, "{hf}");
    }
}

/// The errors of the allocated peak on every record, with regression guards at today's figures.
/// Rows whose published peak lies below the states their own configuration must hold (the Llama 3.2
/// full fine-tunes: 8.70 GB published for 11.99 GB of BF16 weights, gradients and AdamW moments of
/// LitGPT's untied 1B; 16.51 GB for 28.85 GB, more than the A10G's 24 GB) cannot be the committed
/// configuration and are printed but left out of the statistics.
#[test]
fn litgpt_allocated_peaks() {
    println!(
        "{:<46} {:>10} {:>10} {:>8}",
        "record", "published", "estimate", "error"
    );
    let (mut errs, mut qlora) = (Vec::new(), Vec::new());
    for r in records() {
        let (s, expressible) = scenario_for(&r);
        let e = estimate(&s);
        let est = e.memory.tensor_peak.get() / 1e9;
        let published = r["value"].as_f64().unwrap();
        let err = est / published - 1.0;
        // A full fine-tune in bf16-true holds BF16 weights, gradients and two AdamW moments for
        // the whole step: 8 B per parameter is a floor no allocator statistic can undercut.
        let floor = if s.peft.method == PeftMethod::Full {
            8.0 * e.model.params.total / 1e9
        } else {
            0.0
        };
        let note = if published < floor {
            format!("  (below its own AdamW floor of {floor:.2} GB: left out)")
        } else if !expressible {
            "  (LoRA on the LM head: not expressible, left out of the scenario)".to_string()
        } else {
            String::new()
        };
        println!(
            "{:<46} {:>7.2} GB {:>7.2} GB {:>+7.1}%{note}",
            r["id"].as_str().unwrap(),
            published,
            est,
            err * 100.0,
        );
        if published >= floor {
            errs.push(err.abs());
            if s.peft.method == PeftMethod::Qlora {
                qlora.push(err.abs());
            }
        }
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (median, worst) = stats(&mut errs);
    let (median_q, worst_q) = stats(&mut qlora);
    println!(
        "all rows: median |error| {:.1} %, worst {:.1} %; QLoRA rows: median {:.1} %, worst {:.1} %",
        median * 100.0,
        worst * 100.0,
        median_q * 100.0,
        worst_q * 100.0
    );
    assert!(median < MEDIAN_GUARD, "median {median:.3}");
    assert!(worst < WORST_GUARD, "worst {worst:.3}");
    assert!(worst_q < QLORA_WORST_GUARD, "QLoRA worst {worst_q:.3}");
}

/// With the LitGPT profile and, for the QLoRA rows, bitsandbytes 0.42.0's 4-bit matmul (LitGPT's pin:
/// every frozen 4-bit linear, the LM head included, keeps its input in a plain `ctx` attribute that
/// the training loop's `logits` / `loss` keep alive until the next iteration's loss; matrices
/// quantized from FP16 by Lightning, so each de-quantization holds an FP16 and a BF16 copy) and the
/// Llama 3.2 models untied as LitGPT 00af8b0d builds them — 3 December 2026, litgpt: all rows median
/// 1.9 %, worst 8.3 % (Llama 3.2 1B LoRA; 3B LoRA −4.0 %); the 7 QLoRA rows −0.2 … −4.1 % (were
/// −14 … −31 %: docs/frameworks/litgpt.md "Published"). Issue 12's bar (median ≤ 3 %, every case
/// ≤ 10 %) is met on this table. The Hugging Face profile gave median 8.5 %, worst 26.0 % on this
/// table, partly through PEFT's FP32 adapter-input copies that LitGPT does not make (its CPU
/// records: tests/framework_stack.rs).
const MEDIAN_GUARD: f64 = 0.025;
const WORST_GUARD: f64 = 0.09;
/// The QLoRA rows alone.
const QLORA_WORST_GUARD: f64 = 0.05;
