//! The time model against published GPU runs (issue 13): the calibration set (Narayanan et al. 2021
//! Table 1 on A100, the Megatron-LM README's weak-scaling table on H100) and check records
//! (Korthikanti et al. 2022 Table 5), all in tests/data/published/ (schema in its README).
//!
//! Each record is rebuilt as a scenario from its configuration and compared in the source's own
//! convention: Table 1 reports achieved TFLOP/s per GPU by the paper's Eq. 3 (which counts the
//! recompute forward), the H100 table reports model TFLOP/s (MFU × peak; no recomputation), Table 5
//! reports seconds per iteration. The errors are printed (`cargo test --test published_time --
//! --nocapture`) and held by regression guards at what the parts model reaches: the issue's
//! targets (mean |error| ≤ 3 %, every case ≤ 8 %) are not met yet (docs/time-model.md says why),
//! and these guards make a change that makes the model worse fail.

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
    AttentionKernel, Checkpointing, Dtype, FfnKind, GpuChoice, Mode, PositionKind, PrecisionMode,
    Profile, Scenario, ZeroStage,
};

const FILES: [(&str, &str); 3] = [
    (
        "megatron-sc21-table1.json",
        include_str!("data/published/megatron-sc21-table1.json"),
    ),
    (
        "megatron-core-weak-scaling-h100.json",
        include_str!("data/published/megatron-core-weak-scaling-h100.json"),
    ),
    (
        "korthikanti-2022-table5.json",
        include_str!("data/published/korthikanti-2022-table5.json"),
    ),
];

/// Every record of every published file.
fn records() -> Vec<Value> {
    let mut all = Vec::new();
    for (name, text) in FILES {
        let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(doc["schema"], "vram-explorer.published/1", "{name}");
        all.extend(doc["records"].as_array().expect("records").iter().cloned());
    }
    all
}

fn u(v: &Value, k: &str) -> u32 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("missing {k} in {v}")) as u32
}

/// The scenario a published training run describes: a Megatron GPT (GELU MLP of 4h, LayerNorm,
/// biases), FP16/BF16 mixed precision with Adam, the run's layout and recomputation.
fn scenario_for(r: &Value) -> Scenario {
    let c = &r["config"];
    let (m, l) = (&c["model"], &c["layout"]);
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = u(m, "layers");
    t.hidden = u(m, "hidden");
    t.heads = u(m, "heads");
    t.kv_heads = t.heads;
    t.ffn = u(m, "ffn");
    t.ffn_kind = FfnKind::Gelu;
    t.vocab = m["vocab"].as_u64().map_or(51_200, |v| v as u32);
    t.max_positions = u(m, "seq_len");
    // Megatron's default `--position-embedding-type` is `learned_absolute`; the H100 table does
    // not say (a table of seq × h parameters, < 0.02 % of these models).
    t.positions = if m["positions"] == "rotary" {
        PositionKind::Rotary
    } else {
        PositionKind::Learned
    };
    t.tied_embeddings = m["tied_embeddings"].as_bool().unwrap_or(true);
    t.bias = true;
    s.workload.seq_len = u(m, "seq_len");
    let (tp, pp) = (u(l, "tp"), u(l, "pp"));
    let dp = u(l, "dp");
    let micro = l["micro_batch"].as_u64().map_or(1, |v| v as u32);
    let global = u(l, "global_batch");
    s.parallel.tp = tp;
    s.parallel.pp = pp;
    s.parallel.dp = dp;
    s.parallel.pp_interleave = l["virtual_stages"].as_u64().map_or(1, |v| v as u32);
    s.parallel.sequence_parallel = l["sequence_parallel"].as_bool().unwrap_or(false);
    if l["distributed_optimizer"].as_bool() == Some(true) {
        // Megatron's distributed optimizer shards the optimizer state over DP (ZeRO-1).
        s.strategies.zero = ZeroStage::Stage1;
    }
    s.workload.micro_batch = micro;
    s.workload.grad_accum_steps = (global / (micro * dp)).max(1);
    s.precision.mode = PrecisionMode::MasterWeights;
    let h100 = r["hardware"]["gpu"]
        .as_str()
        .unwrap_or("")
        .starts_with("H100");
    s.precision.compute = if h100 { Dtype::Bf16 } else { Dtype::Fp16 };
    s.gpu = GpuChoice::Catalog(if h100 {
        GpuId::H100Sxm
    } else {
        GpuId::A100Sxm80
    });
    s.implementation.profile = Profile::Megatron;
    // How each framework generation ran (sources in the records' `framework` and
    // docs/time-model.md): Megatron-LM 2021/2022 materialised the attention scores (fused
    // softmax, no flash), all-reduced gradients after the backward (no overlap) and ran the
    // tensor-parallel all-reduces on the critical path; Selene has 8 × 200 Gb/s HDR per node
    // (25 GB/s per GPU). Megatron-Core r0.8's table names --overlap-grad-reduce,
    // --overlap-param-gather, --tp-comm-overlap and pipeline overlap; it runs fused attention
    // (Transformer Engine) and sequence parallelism with TP (assumed, not published).
    if h100 {
        s.strategies.attention = AttentionKernel::Flash;
        s.parallel.sequence_parallel = tp > 1;
        s.timing.comm_overlap = 1.0;
        s.timing.parts.tp_overlap = 1.0;
        s.timing.parts.pp_overlap = 1.0;
    } else {
        s.strategies.attention = AttentionKernel::Materialized;
        s.timing.comm_overlap = 0.0;
        s.timing.internode_gb_s = 25.0;
    }
    let recompute = c["recompute"].as_str().unwrap_or("");
    s.strategies.checkpointing = if recompute.starts_with("full") {
        Checkpointing::Full
    } else if recompute.starts_with("selective") {
        Checkpointing::Selective
    } else {
        Checkpointing::None
    };
    s
}

/// Narayanan et al. 2021 Eq. 3: FLOPs of one iteration of batch `b` with full recomputation,
/// 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
fn eq3_flops(b: f64, s: f64, l: f64, h: f64, v: f64) -> f64 {
    96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// Model FLOPs of one iteration (no recomputation): 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)); the
/// logits are not recomputed, so removing the recompute forward from Eq. 3 leaves 6·B·s·h·V.
fn model_flops(b: f64, s: f64, l: f64, h: f64, v: f64) -> f64 {
    72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))
}

struct Row {
    id: String,
    role: String,
    published: f64,
    estimated: f64,
    unit: &'static str,
}

fn rows() -> Vec<Row> {
    rows_with(|_| {})
}

/// The rows with `tweak` applied to every rebuilt scenario (the fit below).
fn rows_with(tweak: impl Fn(&mut Scenario)) -> Vec<Row> {
    let mut out = Vec::new();
    for r in records() {
        let mut s = scenario_for(&r);
        tweak(&mut s);
        let e = estimate(&s);
        let step = e.performance.step.total_s;
        assert!(step.is_finite() && step > 0.0, "{}: step {step}", r["id"]);
        let m = &r["config"]["model"];
        let l = &r["config"]["layout"];
        let (b, seq) = (f64::from(u(l, "global_batch")), f64::from(u(m, "seq_len")));
        let (layers, h) = (f64::from(u(m, "layers")), f64::from(u(m, "hidden")));
        let v = f64::from(s.model.transformer.vocab);
        let gpus = f64::from(u(&r["hardware"], "gpus"));
        let id = r["id"].as_str().unwrap().to_string();
        let (estimated, unit) = if id.starts_with("megatron-sc21") {
            (
                eq3_flops(b, seq, layers, h, v) / step / gpus / 1e12,
                "TFLOP/s",
            )
        } else if id.starts_with("megatron-core") {
            (
                model_flops(b, seq, layers, h, v) / step / gpus / 1e12,
                "TFLOP/s",
            )
        } else {
            (step, "s")
        };
        out.push(Row {
            id,
            role: r["role"].as_str().unwrap().to_string(),
            published: r["value"].as_f64().unwrap(),
            estimated,
            unit,
        });
    }
    out
}

/// Every record's layout uses exactly the GPUs the source reports, and the rebuilt scenario does
/// too (the fields themselves are checked for every published file by tests/published_schema.rs).
#[test]
fn layouts_use_the_reported_gpus() {
    let all = records();
    assert_eq!(all.len(), 10 + 9 + 8);
    for r in &all {
        let l = &r["config"]["layout"];
        let gpus = u(l, "tp") * u(l, "pp") * u(l, "dp");
        assert_eq!(gpus, u(&r["hardware"], "gpus"), "{}", r["id"]);
        let s = scenario_for(r);
        assert_eq!(s.parallel.gpus(), u64::from(gpus), "{}", r["id"]);
    }
}

/// The rebuilt models have the sizes the sources print: Table 1's parameter counts to its one
/// decimal or 0.3 %, whichever is wider (its 145.6 B is 145.7 B by the paper's own parameter
/// formula), and the H100 table's size labels (rounded billions) within 4 %. A wrong
/// transcription of a dimension fails here.
#[test]
fn rebuilt_models_have_the_published_sizes() {
    for r in records() {
        let id = r["id"].as_str().unwrap();
        let params = estimate(&scenario_for(&r)).model.params.total / 1e9;
        if let Some(pb) = r["also_reported"]["parameters_billion"].as_f64() {
            assert!(
                (params - pb).abs() <= 0.05_f64.max(0.003 * pb),
                "{id}: {params:.2} B vs Table 1's {pb} B"
            );
        } else if id.starts_with("megatron-core") {
            let label: f64 = id
                .rsplit('-')
                .next()
                .unwrap()
                .trim_end_matches('B')
                .parse()
                .unwrap();
            assert!(
                (params - label).abs() / label < 0.04,
                "{id}: {params:.2} B vs the {label} B label"
            );
        }
    }
}

/// The errors of today's time model on every record, in the source's convention. Guards: the
/// calibration set's mean |error| and worst case as reached on 3 December 2026 (the parts model;
/// its two fitted constants `timing.parts.gemm_efficiency` / `_hopper` were fitted to the
/// calibration records only); the check records are reported, not fitted.
#[test]
fn errors_against_published_runs() {
    let rows = rows();
    println!(
        "{:<44} {:<11} {:>10} {:>10} {:>8}",
        "record", "role", "published", "estimate", "error"
    );
    let (mut sum, mut n, mut worst) = (0.0, 0.0, 0.0f64);
    for r in &rows {
        let err = r.estimated / r.published - 1.0;
        println!(
            "{:<44} {:<11} {:>7.2} {:<2} {:>7.2} {:>+7.1}%",
            r.id,
            r.role,
            r.published,
            r.unit,
            r.estimated,
            err * 100.0
        );
        if r.role == "calibration" {
            sum += err.abs();
            n += 1.0;
            worst = worst.max(err.abs());
        }
    }
    let mean = sum / n;
    println!(
        "calibration set: mean |error| {:.1} %, worst {:.1} %",
        mean * 100.0,
        worst * 100.0
    );
    assert!(
        mean < MEAN_GUARD,
        "mean |error| {mean:.3} > guard {MEAN_GUARD}"
    );
    assert!(
        worst < WORST_GUARD,
        "worst |error| {worst:.3} > guard {WORST_GUARD}"
    );
    let checks: Vec<f64> = rows
        .iter()
        .filter(|r| r.role == "check")
        .map(|r| (r.estimated / r.published - 1.0).abs())
        .collect();
    let check_mean = checks.iter().sum::<f64>() / checks.len() as f64;
    println!("check records: mean |error| {:.1} %", check_mean * 100.0);
    assert!(
        check_mean < CHECK_MEAN_GUARD,
        "check mean |error| {check_mean:.3} > guard {CHECK_MEAN_GUARD}"
    );
}

/// Regression guards at today's errors (see the test's doc); issue 13 aims at 0.03 / 0.08.
/// Flat model (before the parts model): mean 14.8 %, worst 31.7 %. Parts model, first pass:
/// mean 4.7 %, worst 15.2 %. With the H100 table's sourced settings (interleaving, micro-batch 4
/// at PP 1), the interleaved schedule's exposed sends, the loss kernels and the overlap tax
/// (docs/time-model.md): mean 3.5 %, worst 9.0 % (the 462B H100 run, −9.0 %). With the step-level
/// share on the fused attention kernel too (Hopper share refit 0.51 → 0.54): mean 3.2 %, worst
/// 6.6 % (Table 1's 76B; the H100 rows within −5.4 … +6.4 %). Table 1 alone: mean 2.7 %. With
/// a measured Hopper GEMM curve (tilelang's H800 sweep; Hopper share refit 0.54 → 0.56): mean
/// 2.4 %, worst 6.6 % (the H100 rows within −3.7 … +2.6 % since Megatron's SP re-gather): the
/// issue's aim is met.
const MEAN_GUARD: f64 = 0.025;
const WORST_GUARD: f64 = 0.068;
/// Regression guard on the check records (Korthikanti et al. 2022 Table 5, never fitted): 5.3 %
/// since Megatron's SP re-gather (5.4 % before); issue 13 holds its held-back runs to 5 %.
const CHECK_MEAN_GUARD: f64 = 0.054;

/// How `timing.parts.gemm_efficiency` and `_hopper` were fitted: a grid (step 0.01) minimising
/// the mean |error| of the calibration records only — each GPU class on its own records (the
/// check records never enter). `cargo test --test published_time -- --ignored --nocapture`.
#[test]
#[ignore = "prints the fit of the two GEMM shares; run by hand"]
fn fit_gemm_shares() {
    for (hopper, prefix) in [(false, "megatron-sc21"), (true, "megatron-core")] {
        let mut best = (f64::INFINITY, 0.0, 0.0);
        for k in 40..=95 {
            let share = f64::from(k) / 100.0;
            let rows = rows_with(|s| {
                if hopper {
                    s.timing.parts.gemm_efficiency_hopper = share;
                } else {
                    s.timing.parts.gemm_efficiency = share;
                }
            });
            let errs: Vec<f64> = rows
                .iter()
                .filter(|r| r.role == "calibration" && r.id.starts_with(prefix))
                .map(|r| (r.estimated / r.published - 1.0).abs())
                .collect();
            let mean = errs.iter().sum::<f64>() / errs.len() as f64;
            let worst = errs.iter().copied().fold(0.0, f64::max);
            if mean < best.0 {
                best = (mean, worst, share);
            }
        }
        println!(
            "{prefix}: share {:.2}, mean |error| {:.1} %, worst {:.1} %",
            best.2,
            best.0 * 100.0,
            best.1 * 100.0
        );
    }
}
