//! Memory against Megatron-LM's CI functional tests (issue 12 item 5's validation table): the
//! golden `mem-max-allocated-bytes` of 18 real 8-GPU runs, in
//! tests/data/published/megatron-functional-tests-memory.json (schema in its README, sources in
//! docs/published-memory.md).
//!
//! Megatron's `training_log` writes the memory of the LAST rank only (world_size − 1: the last
//! pipeline stage, the last TP / CP rank), so each record is compared with the estimate of the
//! last stage class (`MemoryEstimate::stage_class(pp − 1)`), not with the limiting stage. The
//! statistic is `max_memory_allocated`: the stage's tensor peak, without CUDA context and
//! allocator reserve (docs/gpu-overheads.md). These are check records: nothing is fitted to them;
//! errors are printed (`cargo test --test published_megatron -- --nocapture`) and held by
//! regression guards at what the estimator reaches today.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use serde_json::Value;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{
    AttentionKernel, Checkpointing, Dtype, FfnKind, Fp8Recipe, GpuChoice, Mode, NormKind,
    OptimizerKind, PositionKind, PrecisionMode, Profile, Scenario, ZeroStage,
};

const MEGATRON: &str = include_str!("data/published/megatron-functional-tests-memory.json");

fn records() -> Vec<Value> {
    let doc: Value = serde_json::from_str(MEGATRON).unwrap();
    assert_eq!(doc["schema"], "vram-explorer.published/1");
    doc["records"].as_array().unwrap().clone()
}

fn u(v: &Value, k: &str) -> u32 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("missing {k} in {v}")) as u32
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

/// A flag of the test's `model_config.yaml` (`config.megatron_args`, records transcribed with the
/// full argument list), or `""`.
fn arg<'a>(c: &'a Value, flag: &str) -> &'a str {
    text(&c["megatron_args"], flag)
}

/// Which attention kernel the test ran: `--attention-backend unfused` (set by most small-GPT tests)
/// and `--transformer-impl local` (Megatron's own `DotProductAttention`) materialise the
/// b × heads × s × s scores and their softmax; the default backend (`auto`) and `flash` pick
/// Transformer Engine's fused / flash attention, which saves none of them
/// (megatron/core/transformer/enums.py `AttnBackend`, megatron/core/transformer/dot_product_attention.py
/// at the records' commits).
fn attention_kernel(c: &Value) -> AttentionKernel {
    let unfused = text(c, "attention").contains("unfused")
        || arg(c, "--attention-backend") == "unfused"
        || arg(c, "--transformer-impl") == "local";
    if unfused {
        AttentionKernel::Materialized
    } else {
        AttentionKernel::Flash
    }
}

/// Megatron's padded vocabulary: the tokenizer's size rounded up to a multiple of
/// `make_vocab_size_divisible_by` (128) × TP (megatron/training/tokenizer/tokenizer.py
/// `_vocab_size_with_padding`, as the records' `vocab` field states: 50257 → 50304 at TP1, 50432 at
/// TP2; 131072 → 131200 at TP1 is the record's own figure for the unpadded 131073).
fn padded_vocab(tokens: u32, tp: u32) -> u32 {
    let m = 128 * tp;
    tokens.div_ceil(m) * m
}

/// The scenario a functional test's `model_config.yaml` describes (every setting from the record's
/// `config`): Megatron-Core GPT with Transformer Engine layers (fused attention, 1-byte dropout masks,
/// the vocab-parallel cross-entropy: `Profile::Megatron`), learned absolute positions, biases,
/// dropout 0.1 (Megatron's default `--hidden-dropout` / `--attention-dropout`), `--bf16` with FP32
/// main gradients in the DDP buffer (megatron/training/arguments.py sets
/// `accumulate_allreduce_grads_in_fp32` for bf16), FP32 master weights and Adam moments, sharded
/// over DP with `--use-distributed-optimizer` (ZeRO-1).
fn scenario_for(r: &Value) -> Scenario {
    let c = &r["config"];
    let (m, l) = (&c["model"], &c["layout"]);
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let tp = u(l, "tp");
    let t = &mut s.model.transformer;
    t.layers = u(m, "layers");
    t.hidden = u(m, "hidden");
    t.heads = u(m, "heads");
    t.kv_heads = u(m, "kv_heads");
    t.head_dim = u(m, "head_dim");
    t.ffn = u(m, "ffn");
    t.ffn_kind = if text(m, "activation").starts_with("SwiGLU") {
        FfnKind::SwiGlu
    } else {
        FfnKind::Gelu
    };
    t.norm = if text(m, "normalization").starts_with("RMSNorm") {
        NormKind::RmsNorm
    } else {
        NormKind::LayerNorm
    };
    t.bias = true;
    t.tied_embeddings = m["tied_embeddings"].as_bool().unwrap();
    t.positions = PositionKind::Learned;
    let seq = u(c, "sequence");
    t.max_positions = seq;
    let vocab = text(m, "vocab");
    let tokens = if vocab.starts_with("GPT-2") {
        50_257
    } else if text(&r["hardware"], "gpu").contains("A100") {
        // NullTokenizer --vocab-size 131072 (A100 golden) / 131073 (H100, GB200 golden).
        131_072
    } else {
        131_073
    };
    t.vocab = padded_vocab(tokens, tp);
    s.workload.seq_len = seq;
    s.workload.micro_batch = u(l, "micro_batch");
    s.workload.grad_accum_steps = u(l, "microbatches_per_step");
    // Megatron's defaults `--hidden-dropout 0.1`, `--attention-dropout 0.1`; the CP test sets both
    // to 0.0.
    s.workload.dropout = arg(c, "--hidden-dropout") != "0.0";
    s.parallel.tp = tp;
    s.parallel.pp = u(l, "pp");
    s.parallel.dp = u(l, "dp");
    s.parallel.cp = l["cp"].as_u64().map_or(1, |v| v as u32);
    s.parallel.sequence_parallel = l["sequence_parallel"].as_bool().unwrap_or(false);
    s.parallel.pp_microbatches = u(l, "microbatches_per_step");
    s.parallel.pp_interleave = l["virtual_pp"].as_u64().map_or(1, |v| v as u32);
    let optimizer = text(c, "optimizer").to_lowercase();
    s.optimizer.kind = OptimizerKind::AdamW;
    let distributed = optimizer.contains("distributed") && !optimizer.contains("not distributed");
    if distributed || arg(c, "--use-distributed-optimizer") == "true" {
        s.strategies.zero = ZeroStage::Stage1;
    }
    let p = &mut s.precision;
    p.mode = PrecisionMode::Custom;
    (p.compute, p.weights, p.activations) = (Dtype::Bf16, Dtype::Bf16, Dtype::Bf16);
    (p.gradients, p.optimizer_states) = (Dtype::Fp32, Dtype::Fp32);
    p.master_weights = Some(Dtype::Fp32);
    if text(c, "precision").contains("FP8") || arg(c, "--fp8-recipe") == "tensorwise" {
        // The weekly test's name: `current_scaling_native_fp8` (Transformer Engine per-tensor
        // current scaling).
        p.fp8_recipe = Fp8Recipe::TeCurrent;
    }
    s.strategies.checkpointing = if text(c, "recompute").contains("granularity full")
        || arg(c, "--recompute-granularity") == "full"
    {
        Checkpointing::Full
    } else {
        Checkpointing::None
    };
    s.strategies.attention = attention_kernel(c);
    // `--cross-entropy-loss-fusion` fuses the vocab-parallel cross-entropy's element-wise steps
    // (megatron/core/fusions/fused_cross_entropy.py) on the whole logits: not the chunked loss
    // `fused_cross_entropy` means, so the flag stays off.
    s.implementation.profile = Profile::Megatron;
    s.implementation.megatron_local_layers = arg(c, "--transformer-impl") == "local";
    let gpu = text(&r["hardware"], "gpu");
    s.gpu = GpuChoice::Catalog(if gpu.contains("A100") {
        GpuId::A100Sxm80
    } else if gpu.contains("GB200") {
        GpuId::B200
    } else {
        GpuId::H100Sxm
    });
    s
}

/// The logged rank's allocated tensor peak and its model states (weights, master weights,
/// gradients, optimizer states), bytes: the last pipeline stage's class with PP, the whole model
/// otherwise.
fn last_rank(s: &Scenario) -> (f64, f64) {
    let e = estimate(s);
    let states = |b: &vram_explorer::estimator::Breakdown| {
        [
            Component::Weights,
            Component::MasterWeights,
            Component::Gradients,
            Component::OptimizerStates,
        ]
        .iter()
        .map(|c| b.get(*c).get())
        .sum::<f64>()
    };
    if s.parallel.pp > 1 {
        let c = e
            .memory
            .stage_class(s.parallel.pp - 1)
            .expect("the last stage's class");
        (c.peak.tensor_total().get(), states(&c.peak))
    } else {
        (e.memory.tensor_peak.get(), states(&e.memory.peak))
    }
}

/// Every record's model rebuilds with the parameter count its shape implies (a wrong transcription
/// of a dimension fails here): GPT-3 7B of the memory-speed tests is 32 × (12h² + 13h) + V·h +
/// s·h (positions) + 2h + V·h (untied output), the small GPT 12 layers of h = 512.
#[test]
fn megatron_models_have_their_sizes() {
    for r in records() {
        let s = scenario_for(&r);
        let t = &s.model.transformer;
        let (h, l, f, v) = (
            f64::from(t.hidden),
            f64::from(t.layers),
            f64::from(t.ffn),
            f64::from(t.vocab),
        );
        let kv = f64::from(t.kv_heads * t.head_dim);
        // Attention: Q and O h×h, K and V h×kv, their biases; MLP: up (×2 gated) and down, biases;
        // two norms (LayerNorm weight + bias, RMSNorm weight).
        let gated = if t.ffn_kind == FfnKind::SwiGlu {
            2.0
        } else {
            1.0
        };
        let norm = if t.norm == NormKind::RmsNorm {
            1.0
        } else {
            2.0
        };
        let layer = 2.0 * h * h
            + 2.0 * h * kv
            + 2.0 * h
            + 2.0 * kv
            + gated * h * f
            + f * h
            + gated * f
            + h
            + 2.0 * norm * h;
        let untied = if t.tied_embeddings { 0.0 } else { v * h };
        let want = l * layer + v * h + f64::from(t.max_positions) * h + norm * h + untied;
        let got = estimate(&s).model.params.total;
        assert_eq!(got, want, "{}", r["id"]);
    }
}

/// Records whose gap has no mechanism in the estimator yet, with the reason (printed, and kept out
/// of the modelled statistics; they stay in the all-records figures).
const KNOWN_MISSES: [(&str, &str); 2] = [
    (
        "cross_entropy_loss_fusion",
        "published above the unfused tp2_pp2 run (2.245 vs 1.900 GB) although this test runs the \
         default (fused) attention: an older golden (no --deterministic-mode, the_pile data, \
         NVTE_ALLOW_NONDETERMINISTIC_ALGO=1); the extra 0.38-0.88 GB is one to two FP32 copies of \
         the b*s*V/t logits, not traced in megatron/core/fusions/fused_cross_entropy.py yet",
    ),
    (
        "native_fp8",
        "--fp8-param-gather keeps FP8 primary weights with BF16/FP32 copies and --tp-comm-overlap \
         preallocates Userbuffers; the Fp8Recipe::TeCurrent model holds neither (post-step \
         allocated 0.476 GB vs 0.290 GB of estimated states)",
    ),
];

/// The errors of the last rank's allocated peak on every record, with regression guards at
/// today's figures. The second error column compares the post-step `mem-allocated-bytes` with the
/// estimated model states (weights, FP32 master weights, FP32 gradient buffer, optimizer states):
/// printed for reading, not asserted (it also holds whatever else outlives the step).
#[test]
fn megatron_last_rank_allocated_peaks() {
    println!(
        "{:<92} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}",
        "record", "published", "estimate", "error", "after", "states", "error"
    );
    let (mut errs, mut modelled) = (Vec::new(), Vec::new());
    for r in records() {
        let id = r["id"].as_str().unwrap();
        let s = scenario_for(&r);
        let (peak, states) = last_rank(&s);
        let published = r["value"].as_f64().unwrap();
        let after = r["also_reported"]
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_f64)
            .unwrap();
        let err = peak / published - 1.0;
        let err_states = states / after - 1.0;
        let miss = KNOWN_MISSES.iter().find(|(k, _)| id.contains(k));
        println!(
            "{:<92} {:>6.3} GB {:>6.3} GB {:>+6.1}% {:>6.3} GB {:>6.3} GB {:>+6.1}%{}",
            id,
            published / 1e9,
            peak / 1e9,
            err * 100.0,
            after / 1e9,
            states / 1e9,
            err_states * 100.0,
            miss.map_or(String::new(), |(_, why)| format!("\n    known miss: {why}")),
        );
        errs.push(err.abs());
        if miss.is_none() {
            modelled.push(err.abs());
        }
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (median, worst) = stats(&mut errs);
    let (median_m, worst_m) = stats(&mut modelled);
    println!(
        "{} records: median |error| {:.1} %, worst {:.1} %; {} modelled records: median {:.1} %, \
         worst {:.1} %",
        errs.len(),
        median * 100.0,
        worst * 100.0,
        modelled.len(),
        median_m * 100.0,
        worst_m * 100.0,
    );
    assert_eq!(errs.len(), 18);
    assert_eq!(modelled.len(), 16);
    // Guards at today's figures (1.2 % / 39.2 %; modelled 1.2 % / 3.3 %).
    assert!(median < 0.015, "median {median:.3}");
    assert!(worst < 0.40, "worst {worst:.3}");
    assert!(median_m < 0.015, "modelled median {median_m:.3}");
    assert!(worst_m < 0.03, "modelled worst {worst_m:.3}");
}

/// The unfused attention the small-GPT tests select is what closes their gap: with Transformer
/// Engine's fused attention instead, the scores and softmax are not saved and the estimate falls
/// 20-45 % under the published peaks (the mechanism, not a fitted constant).
#[test]
fn megatron_unfused_attention_is_the_mechanism() {
    for r in records() {
        let c = &r["config"];
        if attention_kernel(c) != AttentionKernel::Materialized
            || text(c, "recompute").contains("granularity full")
        {
            continue;
        }
        let published = r["value"].as_f64().unwrap();
        let mut s = scenario_for(&r);
        let unfused = last_rank(&s).0 / published - 1.0;
        s.strategies.attention = AttentionKernel::Flash;
        s.implementation.megatron_local_layers = false;
        let fused = last_rank(&s).0 / published - 1.0;
        assert!(unfused.abs() < 0.035, "{} unfused {unfused:.3}", r["id"]);
        assert!(fused < -0.15, "{} fused {fused:.3}", r["id"]);
    }
}

/// The one test on Megatron's own layers (`--transformer-impl local`, `gpt3_mcore_tp1_pp4`) holds
/// `DotProductAttention`'s score input in the global gather buffer for the whole run (b·np·s² in
/// BF16, 67 MB at micro-batch 4): with it the last rank is within 1.5 %, without it 3 % under.
#[test]
fn megatron_local_layers_keep_the_score_buffer() {
    let local: Vec<Value> = records()
        .into_iter()
        .filter(|r| arg(&r["config"], "--transformer-impl") == "local")
        .collect();
    assert_eq!(local.len(), 1);
    let r = &local[0];
    let published = r["value"].as_f64().unwrap();
    let mut s = scenario_for(r);
    let with = last_rank(&s).0 / published - 1.0;
    s.implementation.megatron_local_layers = false;
    let without = last_rank(&s).0 / published - 1.0;
    // Within 1 % until 7 December 2026, when the last stage stopped holding a copy of the position
    // table (a tied head copies the word embeddings alone): 1.2 % under since, the rest not found.
    assert!(with.abs() < 0.015, "with the buffer {with:.4}");
    assert!(without < -0.025, "without the buffer {without:.4}");
}
