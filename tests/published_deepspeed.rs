//! DeepSpeed against its published GPU memory (issue 12 item 5): the BF16 master-weights example
//! (ZeRO-3 on 4 H100, `max_memory_allocated`), the Muon blog (ZeRO-2, statistic and sequence
//! unpublished) and the AutoTP inference tutorial (`memory_allocated()` after `init_inference`), in
//! tests/data/published/deepspeed-published-memory.json (sources in docs/published-memory.md).
//!
//! Training records are rebuilt with `Sharding::DeepSpeed` and the record's `zero_optimization`
//! buckets (`implementation.deepspeed`, docs/frameworks/deepspeed.md). Check records: nothing is
//! fitted. `cargo test --test published_deepspeed -- --nocapture` prints the table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

#[path = "support/published_table.rs"]
mod published_table;

use published_table::{Case, Stat, copy_mha_dims, records, report, u, value_bytes};
use serde_json::Value;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;

const DEEPSPEED: &str = include_str!("data/published/deepspeed-published-memory.json");

/// The BF16 master-weight example's `SimpleTransformerModel` (DeepSpeedExamples
/// training/bf16_master_weight/train.py at 6a3d817a): learned positions, LayerNorm blocks of
/// `torch.nn.MultiheadAttention` (need_weights left on, so the softmax weights are materialised)
/// and a GELU MLP, biases, an untied output Linear over the GPT-2 vocabulary, no dropout; every
/// The DeepSpeedExamples BF16-master baseline (stage 3, 4 × H100) as a scenario.
fn baseline_zero3() -> Scenario {
    let r = records(DEEPSPEED)
        .into_iter()
        .find(|r| r["id"] == "deepspeed-bf16-master-baseline-zero3-4xh100")
        .unwrap();
    bf16_master(&r)
}

/// block checkpointed; ZeRO-3 over 4 GPUs with the record's buckets.
fn bf16_master(r: &Value) -> Scenario {
    let c = &r["config"];
    let m = &c["model"];
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    copy_mha_dims(m, t);
    t.vocab = 50_257;
    t.max_positions = u(m, "positions");
    t.tied_embeddings = false;
    t.ffn_kind = FfnKind::Gelu;
    t.norm = NormKind::LayerNorm;
    t.positions = PositionKind::Learned;
    t.bias = true;
    s.workload.seq_len = u(c, "sequence");
    s.workload.micro_batch = 1;
    s.workload.grad_accum_steps = 1;
    s.workload.dropout = false;
    s.strategies.attention = AttentionKernel::Materialized;
    s.strategies.checkpointing = Checkpointing::Full;
    s.strategies.zero = ZeroStage::Stage3;
    s.parallel.dp = u(&c["layout"], "data_parallel");
    s.optimizer.kind = OptimizerKind::AdamW;
    s.optimizer.foreach = false; // FusedAdam: one multi-tensor kernel, no foreach temporaries
    let p = &mut s.precision;
    p.mode = PrecisionMode::Custom;
    (p.compute, p.weights, p.activations, p.gradients) =
        (Dtype::Bf16, Dtype::Bf16, Dtype::Bf16, Dtype::Bf16);
    (p.master_weights, p.optimizer_states) = (Some(Dtype::Fp32), Dtype::Fp32);
    s.implementation.sharding = Sharding::DeepSpeed;
    // configs/bf16_full.json: `bf16: {bf16_master_weights_and_grads, bf16_optimizer_states}`.
    let low = r["id"].as_str().unwrap().contains("low-precision");
    let ds = &mut s.implementation.deepspeed;
    (ds.bf16_master_weights_and_grads, ds.bf16_optimizer_states) = (low, low);
    let z = &c["zero"];
    s.implementation.deepspeed.reduce_bucket_size = z["reduce_bucket_size"].as_f64().unwrap();
    s.implementation.deepspeed.overlap_comm = z["overlap_comm"] == true;
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    s
}

/// OPT-13B in FP16 (Transformers `OPTForCausalLM`: learned positions, LayerNorm, ReLU MLP, biases,
/// tied head) after `init_inference` with AutoTP over `tensor_parallel` GPUs: the weights alone.
fn opt_autotp(r: &Value) -> Scenario {
    let c = &r["config"];
    let m = &c["model"];
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    copy_mha_dims(m, t);
    t.vocab = u(m, "vocab");
    // OPT's learned positions carry an offset of 2 rows (`OPTLearnedPositionalEmbedding`).
    t.max_positions = u(m, "positions") + 2;
    t.tied_embeddings = true;
    t.ffn_kind = FfnKind::Gelu;
    t.norm = NormKind::LayerNorm;
    t.positions = PositionKind::Learned;
    t.bias = true;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Fp16;
    s.parallel.tp = u(&c["layout"], "tensor_parallel");
    s.implementation.auto_tp = true;
    s.gpu = GpuChoice::Catalog(GpuId::V100Sxm32);
    s
}

/// T5-11B (Transformers `T5ForConditionalGeneration`) in FP16 after `init_inference` with AutoTP:
/// the model imported from t5-base's `config.json` (tests/data/hf) with t5-11b's sizes, which the
/// record lists (d_model 1024, 128 heads of 128, d_ff 65,536, 24 + 24 layers, vocabulary 32,128,
/// tied): the weights alone.
fn t5_autotp(r: &Value) -> Scenario {
    let c = &r["config"];
    let m = &c["model"];
    let mut v: Value = serde_json::from_str(include_str!("data/hf/t5-base.json")).unwrap();
    for (k, x) in [
        ("d_model", u(m, "hidden")),
        ("num_heads", u(m, "heads")),
        ("d_kv", u(m, "head_dim")),
        ("d_ff", u(m, "ffn")),
        ("num_layers", 24),
        ("num_decoder_layers", 24),
        ("vocab_size", u(m, "vocab")),
    ] {
        v[k] = x.into();
    }
    let imported =
        vram_explorer::import::from_hf_config(&v.to_string(), &ModelSpec::default()).unwrap();
    let mut s = Scenario {
        mode: Mode::Inference,
        model: imported.model,
        ..Scenario::default()
    };
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Fp16;
    s.parallel.tp = u(&c["layout"], "tensor_parallel");
    s.implementation.auto_tp = true;
    s.gpu = GpuChoice::Catalog(GpuId::V100Sxm32);
    s
}

/// Records the test cannot rebuild, with the reason.
const NOT_REBUILT: [(&str, &str); 1] = [(
    "deepspeed-muon-blog-",
    "the sequence length, the per-GPU batch, checkpointing and the statistic are unpublished (the \
     blog's demo repository is not in the snapshot)",
)];

/// Records rebuilt whose gap has a mechanism not modelled, with the reason (none left).
const KNOWN_MISSES: [(&str, &str); 0] = [];

fn cases() -> Vec<Case> {
    records(DEEPSPEED)
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap().to_owned();
            let stat = Stat::of(r);
            let skip = NOT_REBUILT.iter().find(|(k, _)| id.starts_with(k));
            let (estimate, note) = if let Some((_, why)) = skip {
                (None, Some(*why))
            } else {
                let est = if id.starts_with("deepspeed-autotp-opt-") {
                    // After init_inference: the weights alone.
                    let m = estimate(&opt_autotp(r)).memory;
                    m.peak.get(Component::Weights).get()
                } else if id.starts_with("deepspeed-autotp-t5-") {
                    let m = estimate(&t5_autotp(r)).memory;
                    m.peak.get(Component::Weights).get()
                } else {
                    stat.pick(&estimate(&bf16_master(r)).memory)
                };
                let miss = KNOWN_MISSES.iter().find(|(k, _)| id.starts_with(k));
                (Some(est), miss.map(|(_, why)| *why))
            };
            Case {
                id,
                stat,
                published: value_bytes(r),
                estimate,
                note,
            }
        })
        .collect()
}

#[test]
fn deepspeed_published_memory_table() {
    let cases = cases();
    assert_eq!(cases.len(), 10, "records");
    let s = report("DeepSpeed (Sharding::DeepSpeed; AutoTP inference)", &cases);
    assert_eq!((s.rebuilt, s.modelled), (8, 8));
    // Issue 12's bar (median ≤ 3 %, every allocated case within 10 %) holds on the 8 modelled
    // records: the ZeRO-3 baseline +0.4 % (+7.1 % before stage 3's gradient partition, sub-group
    // step and FusedAdam were read from stage3.py), bf16_master_weights_and_grads +
    // bf16_optimizer_states −4.8 % (−6.8 %), the six AutoTP inference rows (OPT-13B, T5-11B at
    // TP 1/2/4) within 0.1 % with `implementation.auto_tp`. Guards a little above today's
    // figures (median 0.0 %, worst 4.8 %).
    s.hold(0.01, 0.06, 0.01, 0.06);
}

/// AutoTP's replicated embeddings are the whole gap the Megatron-style TP leaves on the TP rows:
/// with `implementation.auto_tp` off the vocabulary is sharded and the OPT-13B TP 2 / 4 rows are
/// 2–6 % low; on, every AutoTP row is within 0.5 % (v0.8.2 `replace_wo_policy` slices only the
/// blocks' linears and embeddings).
#[test]
fn deepspeed_autotp_keeps_the_embeddings_whole() {
    let mut n = 0;
    for r in records(DEEPSPEED) {
        let id = r["id"].as_str().unwrap();
        let mut s = if id.starts_with("deepspeed-autotp-opt-") {
            opt_autotp(&r)
        } else if id.starts_with("deepspeed-autotp-t5-") {
            t5_autotp(&r)
        } else {
            continue;
        };
        let weights = |s: &Scenario| estimate(s).memory.peak.get(Component::Weights).get();
        let published = value_bytes(&r);
        let whole = weights(&s) / published - 1.0;
        s.implementation.auto_tp = false;
        let sharded = weights(&s) / published - 1.0;
        println!(
            "{id}: {:+.2}% with AutoTP, {:+.2}% with the vocabulary sharded",
            whole * 100.0,
            sharded * 100.0
        );
        assert!(whole.abs() < 0.005, "{id}: {whole:.4}");
        if s.parallel.tp > 1 {
            assert!(sharded < whole - 0.001, "{id}: {sharded:.4}");
        }
        n += 1;
    }
    assert_eq!(n, 6);
}

/// The ZeRO-3 example's "Allocated Memory" (`torch.cuda.memory_allocated()` after training) is what
/// a step starts from: the BF16 parameter partition, the master partition (FP32; BF16 under
/// `bf16_master_weights_and_grads`, a copy even then: stage 3's alias test compares a
/// `torch.device` with a string), the Adam moments, the reduced-gradient partition in the model's
/// type (`grad_partitions_flat_buffer`) and the reduce bucket. The timeline's first point holds
/// exactly those: within 1 % of both printed figures (25.74 and 16.17 GiB). Before: the baseline
/// charged the gradient partition in FP32 (+12 %) and the low-precision run no master (−20 %).
#[test]
fn deepspeed_zero3_states_match_the_allocation_after_training() {
    use vram_explorer::estimator::timeline::build;
    for r in records(DEEPSPEED)
        .iter()
        .filter(|r| r["id"].as_str().unwrap().contains("bf16-master"))
    {
        let s = bf16_master(r);
        let t = build(&s, &estimate(&s));
        let start = t.points[0].bytes.total().get();
        let key = "Allocated Memory (torch.cuda.memory_allocated() at the end of training, GiB)";
        let printed = r["also_reported"][key].as_f64().unwrap() * 1024f64.powi(3);
        let e = start / printed - 1.0;
        println!(
            "{}: start {:.2} GiB, printed {:.2} GiB ({:+.2} %)",
            r["id"],
            start / 1024f64.powi(3),
            printed / 1024f64.powi(3),
            e * 100.0
        );
        assert!(e.abs() < 0.01, "{}: {e:+.4}", r["id"]);
    }
}

/// The explanation names what stage 3 holds at its step: one sub-group's (≈ 1e9 elements) flattened
/// BF16 gradients and their FP32 cast as the gradients, and the reduced-gradient partition with
/// the reduce bucket among the transient buffers, no unattributed remainder in either.
#[test]
fn deepspeed_zero3_step_is_explained_by_its_copies() {
    use vram_explorer::estimator::explain::explain;
    let s = baseline_zero3();
    let e = estimate(&s);
    let g = explain(&s, &e, Component::Gradients);
    let bytes: Vec<f64> = g.terms.iter().map(|(_, b)| b.get()).collect();
    // The sub-group: 1e9 elements and at most one more parameter's partition (the largest, the
    // 50,257 × 4,096 embedding, over 4 ranks).
    let sub = 1e9 + 50_257.0 * 4096.0 / 4.0;
    assert_eq!(bytes, [2.0 * sub, 4.0 * sub], "{:?}", g.terms);
    let t = explain(&s, &e, Component::Transient);
    assert!(
        t.terms
            .iter()
            .any(|(n, b)| n.contains("reduced-gradient partition")
                && (b.get() - (5e7 * 2.0 + 2.0 * 6_858_015_825.0 / 4.0)).abs() < 2e6),
        "{:?}",
        t.terms
    );
    assert!(
        t.terms.iter().all(|(n, _)| !n.contains("autocast copies")),
        "{:?}",
        t.terms
    );
}

/// Stage 3 reduces every gradient into its partition buffer, across micro-batches too: under
/// accumulation no phase holds a gradient tensor of its own beside it. At the step, a client
/// foreach AdamW's temporary (one sub-group in FP32, 4 B per element) comes after the flattened
/// BF16 copy (2 B) is freed: the step grows by the difference, not the sum.
#[test]
fn deepspeed_zero3_gradients_live_in_the_partition_buffer() {
    use vram_explorer::estimator::Phase;
    let mut s = baseline_zero3();
    s.workload.grad_accum_steps = 4;
    let e = estimate(&s);
    for ph in [Phase::Forward, Phase::LossBackward] {
        let g = e
            .memory
            .phases
            .get(ph)
            .unwrap()
            .get(Component::Gradients)
            .get();
        assert_eq!(g, 0.0, "{ph:?}");
    }
    let total = |s: &Scenario| {
        estimate(s)
            .memory
            .phases
            .get(Phase::OptimizerStep)
            .unwrap()
            .tensor_total()
            .get()
    };
    let fused = total(&s);
    s.optimizer.foreach = true;
    let sub = 1e9 + 50_257.0 * 4096.0 / 4.0;
    let grown = total(&s) - fused;
    assert!((grown - 2.0 * sub).abs() < 1e3, "{grown} vs {}", 2.0 * sub);
}
