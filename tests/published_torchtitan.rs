//! torchtitan against its published GPU memory (issue 12 item 5): the Llama 3 H100 benchmarks of
//! December 2024 (`max_memory_reserved`, the maximum over all GPUs), in
//! tests/data/published/torchtitan-llama3-h100-202412.json (sources in docs/published-memory.md).
//!
//! torchtitan shards with FSDP2 (`fully_shard` per block): each record runs `Sharding::Fsdp2` with
//! torchtitan's FP32 reduce-scatter and its default reshard policy. Every row is still a known miss
//! (printed with its reason), so only regression guards on today's figures are asserted. Check records: nothing is fitted.
//! The records' published throughput is a second, time check (issue 13), also a known miss.
//! `cargo test --test published_torchtitan -- --nocapture` prints the tables.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

#[path = "support/published_table.rs"]
mod published_table;

use published_table::{Case, Stat, copy_dims, records, report, u, value_bytes};
use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;

const TORCHTITAN: &str = include_str!("data/published/torchtitan-llama3-h100-202412.json");

/// The full-checkpointing rows without a pipeline: FSDP2 is modelled (`Sharding::Fsdp2`, FP32
/// reduce-scatter, resharded after forward, its side streams' pools in the reserved peak) and, for
/// the 70B rows, DTensor's `loss_parallel()`; the estimate is still 7–8 % (8B) and 8–14 % (70B on
/// FSDP 32 × TP 8) below the reserved peak.
const UNDER: &str = "unexplained: FSDP2 is modelled (unsharded BF16 blocks in flight, FP32 \
    reduce-scatter, the sharded gradients and flat all-gather buffers reserved in their streams' \
    pools), with TP DTensor's loss_parallel() (measured on CPU), and the estimate stays 7-8 % (8B) \
    and 8-14 % (70B 2D) below the published reserved peak (max over GPUs); torch.compile and \
    torchao Float8Linear casts are not modelled, NCCL and allocator effects of the 2D runs are \
    not either";

/// The pipelined (405B) rows: FSDP2 under `torch.distributed.pipelining` is modelled since 5
/// December 2026 (no gradient sync per micro-batch, the stage's unsharded gradients accumulated in
/// FP32 until the reduce-scatters after the last one; before, the rows were 31–39 % low).
const PIPE: &str = "FSDP2 under torch.distributed.pipelining is modelled (stage.py \
    backward_maybe_with_nosync: no gradient sync per micro-batch; the stage's unsharded \
    gradients accumulate in FP32, _fsdp_param.py to_accumulated_grad_if_needed); not modelled: \
    torch.compile, torchao Float8Linear and the 405B toml's FP8 all-gather (1-byte unsharded \
    weights), torchtitan's stage split (generate_split_points gives the first and last stages \
    one layer fewer; the estimate gives the first stages one more)";

/// The rows with torchtitan's per-op selective checkpointing: modelled since 4 December 2026
/// (`Checkpointing::PerOp`; before, `Selective` kept the whole layer but the attention core and
/// the rows were +75 … +113 %).
const SAC: &str = "per-op SAC is modelled (Checkpointing::PerOp, parallelize_llama.py lines \
    214-260 at 9dec370), with FSDP2's stream pools in the reserved peak; the eager rows stay 7 % \
    below it (unexplained; the compiled ones are within 2 %); torch.compile, and with float8 \
    torchao's _scaled_mm linears (whose outputs the 9dec370 policy does not keep), are not \
    modelled";

/// The scenario a benchmark row describes: torchtitan's Llama 3 (RMSNorm, RoPE, SwiGLU, SDPA
/// flash), BF16 compute over FP32 sharded parameters (`mixed_precision_param bfloat16`,
/// `mixed_precision_reduce float32`), AdamW (foreach) with FP32 moments, selective (`op`) or full
/// activation checkpointing, TP with sequence parallel, CP ring attention, 1F1B pipelining with as
/// many microbatches as stages (torchtitan's default `pipeline_parallel_microbatches`).
fn scenario_for(r: &Value) -> Scenario {
    let c = &r["config"];
    let (m, l) = (&c["model"], &c["layout"]);
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let seq = u(c, "sequence");
    let t = &mut s.model.transformer;
    copy_dims(m, t);
    t.vocab = u(m, "vocab");
    t.tied_embeddings = false;
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.positions = PositionKind::Rotary;
    t.bias = false;
    t.max_positions = seq;
    let (tp, pp, cp) = (u(l, "tp"), u(l, "pp"), u(l, "cp"));
    let local = u(l, "local_batch");
    s.workload.seq_len = seq;
    s.workload.dropout = false;
    s.parallel.tp = tp;
    s.parallel.pp = pp;
    s.parallel.cp = cp;
    s.parallel.dp = u(l, "fsdp_shard");
    s.parallel.sequence_parallel = tp > 1;
    if pp > 1 {
        s.parallel.pp_microbatches = pp;
        s.workload.micro_batch = local / pp;
        s.workload.grad_accum_steps = pp;
        if text(l, "pp_schedule").starts_with("Interleaved") {
            s.parallel.pp_interleave = 2;
        }
    } else {
        s.workload.micro_batch = local;
    }
    s.strategies.zero = ZeroStage::Stage3;
    // torchtitan shards with FSDP2 `fully_shard` per block, `mixed_precision_reduce float32`;
    // `reshard_after_forward` follows its "default" policy: True without PP, False with PP
    // (torchtitan parallelize_llama.py `apply_fsdp`, the docs of `reshard_after_forward_policy`).
    s.implementation.sharding = Sharding::Fsdp2;
    s.implementation.fsdp.reshard_after_forward = pp == 1;
    s.implementation.fsdp.reduce_dtype = ReduceDtype::Fp32;
    // train.py computes the loss on the model's output (`pred = model(input_ids)`, then
    // `loss_fn(pred, labels)`); the December 2024 nightlies kept the root unsharded after forward
    // whatever `reshard_after_forward` said (the explicit root resharding came with torch 2.8).
    s.implementation.fsdp.loss = vram_explorer::scenario::LossCall::AfterModelForward;
    s.strategies.attention = AttentionKernel::Flash;
    // `loss_parallel()` whenever TP shards the logits (torchtitan's default:
    // `--training.disable_loss_parallel` off; train.py `get_train_context`).
    s.implementation.loss_parallel = tp > 1;
    s.strategies.checkpointing = if text(c, "activation_checkpointing").starts_with("selective") {
        Checkpointing::PerOp
    } else {
        Checkpointing::Full
    };
    s.optimizer.kind = OptimizerKind::AdamW;
    s.optimizer.foreach = true;
    // FSDP2's `MixedPrecisionPolicy(param_dtype=bfloat16)`: FP32 sharded parameters, gradients
    // and AdamW moments, BF16 compute copies (the all-gathered units), no autocast.
    s.precision.mode = PrecisionMode::Amp;
    s.precision.compute = Dtype::Bf16;
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    s
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or("")
}

#[test]
fn torchtitan_published_memory_table() {
    let cases: Vec<Case> = records(TORCHTITAN)
        .iter()
        .map(|r| {
            let stat = Stat::of(r);
            assert_eq!(stat, Stat::Reserved, "{}", r["id"]);
            Case {
                id: r["id"].as_str().unwrap().to_owned(),
                stat,
                published: value_bytes(r),
                estimate: Some(stat.pick(&estimate(&scenario_for(r)).memory)),
                note: Some(
                    if text(&r["config"], "activation_checkpointing").starts_with("selective") {
                        SAC
                    } else if u(&r["config"]["layout"], "pp") > 1 {
                        PIPE
                    } else {
                        UNDER
                    },
                ),
            }
        })
        .collect();
    assert_eq!(cases.len(), 18, "records");
    let s = report("torchtitan (Sharding::Fsdp2)", &cases);
    assert_eq!((s.rebuilt, s.modelled), (18, 0));
    // Every row is a known miss; guards a little above today's figures (median |error| 6.9 %,
    // worst 14.0 %; before DTensor's sequence-parallel linears saved the gathered sequence
    // (tests/dtensor_sequence_parallel.rs: the recomputed layer's transient grows, the final
    // norm's sharded output is no longer counted beside the gathered one) 6.9 % / 13.6 %; before
    // the blocks' FSDP units and the loss's place were measured 6.2 % / 13.3 %; before FSDP2's side-stream pools were added to the reserved peak 9.7 % /
    // 16.0 %; before FSDP's mixed precision was written as AMP without autocast (a BF16
    // shard counted beside the FP32 one) 8.9 % / 14.4 %; before DTensor's loss_parallel 10.1 % /
    // 28.7 %; before FSDP2 under a pipeline 11.2 % / 38.8 %; before the per-op policy 32.6 % /
    // 112.8 %; with the generic ZeRO-3 rule before the FSDP profile: 51.7 %, 110.3 %) keep them
    // from drifting unnoticed.
    assert!(s.median_all < 0.072, "median {:.3}", s.median_all);
    assert!(s.worst_all < 0.143, "worst {:.3}", s.worst_all);
    // The pipelined rows: −11.1 … +3.4 % (−13.3 … +0.8 % before the gathered sequence-parallel
    // inputs entered the recomputed layer, which is their backward peak: 1F1B −11.1 → −8.9 %,
    // interleaved +0.8 → +3.4 %, the CP rows −2.5 … −13.3 → −0.1 … −11.1 %; the published 1F1B
    // and interleaved peaks differ by 9.8 GiB where the estimate's first stages are the same;
    // −12.4 … +1.9 % before the blocks' FSDP units were
    // measured, docs/frameworks/fsdp.md "Inside the blocks": one unit fewer in forward, no
    // reduce-scatter buffers beside the first layer's backward; −28.9 … −38.8 % before FSDP2
    // under a pipeline, −2.3 … −16.0 % before the stream pools).
    for c in cases.iter().filter(|c| c.id.contains("405b")) {
        let e = c.estimate.unwrap() / c.published - 1.0;
        assert!((-0.12..0.04).contains(&e), "{}: {e:.3}", c.id);
    }
}

/// The benchmark's GPU, "H100 96 GB HBM2e" (the records' `hardware.gpu`): the H100 SXM's tensor
/// peaks (989 / 1,979 TFLOP/s dense, as torchao's float8 roofline takes them) with "2.4 TB per
/// second, custom to Meta's H100 variant" (pytorch/ao at eab345c, the benchmarks' torchao commit,
/// `torchao/float8/roofline_utils.py` `H100_PEAK_MEM_BW_BYTES_SEC`), NVLink 4 within the host.
/// Its 500 W power limit is not modelled (no published clock under it).
fn meta_h100() -> GpuChoice {
    GpuChoice::Custom(CustomGpu {
        name: "H100 96 GB HBM2e (Grand Teton, 500 W)".to_owned(),
        memory_gb: 96.0,
        bandwidth_gb_s: 2400.0,
        tflops_16: 989.0,
        tflops_32: 67.0,
        tflops_8: 1979.0,
        memory_tech: vram_explorer::hardware::MemoryTech::Hbm2e,
        link_gb_s: 450.0,
        tdp_w: 500.0,
        ..CustomGpu::default()
    })
}

/// The same records' published throughput (`also_reported.tokens_per_sec_per_gpu`) against the
/// step-time parts model (issue 13: other frameworks' runs are checks, never fitted). torchtitan
/// overlaps FSDP2's all-gathers and reduce-scatters with compute (`timing.comm_overlap` 1), runs
/// TP collectives on the critical path unless AsyncTP micro-pipelines them (`tp_overlap` 1 there),
/// and the float8 rows run torchao's tensorwise-scaled FP8 linears (`Fp8Recipe::TeCurrent`: FP8
/// GEMMs, the output head in BF16, their operands cast as torchao's float8 roofline counts). The
/// eager rows run eager PyTorch's elementwise kernels (`timing.parts.elementwise` `Auto` under the
/// default profile), the compiled rows fused ones. The GPU is the benchmark's ([`meta_h100`]).
/// Every row is estimated too fast (+5 … +64 %, median +23 %): the 500 W power limit,
/// torch.compile's layers and ring-attention CP are not modelled. A known miss: the guard only
/// keeps it from drifting unnoticed.
#[test]
fn torchtitan_published_throughput_is_a_known_miss() {
    let mut errors = Vec::new();
    let mut by_id = Vec::new();
    println!(
        "record                                                 published  estimate   error (tokens/s per GPU)"
    );
    for r in &records(TORCHTITAN) {
        let (c, l) = (&r["config"], &r["config"]["layout"]);
        let mut s = scenario_for(r);
        s.timing.comm_overlap = 1.0;
        s.timing.parts.tp_overlap = if text(l, "tp_note").contains("asynchronous") {
            1.0
        } else {
            0.0
        };
        s.timing.parts.pp_overlap = 1.0;
        if c["float8"].is_string() {
            s.precision.fp8_recipe = Fp8Recipe::TeCurrent;
        }
        // Eager rows run eager PyTorch's elementwise kernels (`Auto` under the default profile);
        // compiled rows inductor's fused ones.
        if c["compile"].as_bool() == Some(true) {
            s.timing.parts.elementwise = ElementwiseKernels::Fused;
        }
        s.gpu = meta_h100();
        let e = estimate(&s);
        let per_gpu = e.performance.throughput.tokens_per_s / f64::from(u(l, "gpus"));
        let published = r["also_reported"]["tokens_per_sec_per_gpu"]
            .as_f64()
            .unwrap();
        let err = per_gpu / published - 1.0;
        println!(
            "{:55} {published:9.0} {per_gpu:9.0} {:+7.1} %",
            r["id"].as_str().unwrap(),
            err * 100.0
        );
        errors.push(err);
        by_id.push((r["id"].as_str().unwrap().to_owned(), err));
    }
    // The eager rows were +29.3 % / +32.7 % with the fused count, 18 points above the compiled rows
    // of the same tables; with eager PyTorch's kernels they are +4.9 / +7.9 % against +8.4 /
    // +11.0 % (on the benchmark's 2.4 TB/s; +13.2 / +16.2 against +11.7 / +14.2 % at the SXM's
    // 3.35 TB/s): the published eager-to-compiled ratio (0.864 / 0.860) is what the eager
    // elementwise bytes cost, the estimate's 0.837 / 0.837 within 3.1 % / 2.8 % of it (1.000
    // before).
    let err = |id: &str| by_id.iter().find(|(i, _)| i == id).unwrap().1;
    for (table, published) in [("t1", 5762.0 / 6667.0), ("t3", 5605.0 / 6514.0)] {
        let eager = err(&format!("torchtitan-h100-202412-{table}-8b-fsdp"));
        let compiled = err(&format!(
            "torchtitan-h100-202412-{table}-8b-fsdp-torchcompile"
        ));
        let ratio = (1.0 + eager) * published / (1.0 + compiled);
        assert!(
            (ratio / published - 1.0).abs() < 0.04,
            "{table}: estimated eager / compiled {ratio:.3}, published {published:.3}"
        );
    }
    assert_eq!(errors.len(), 18);
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    println!("median error {:+.1} %", median * 100.0);
    // Today: median +22.8 %, every row between +4.9 % and +63.8 % (median +30.0 % before the eager
    // kernels, +28.8 % before the FP8 casts and the benchmark GPU's 2.4 TB/s, +26.6 % with the
    // casts at 3.35 TB/s). Every row is still too fast; the worst must not grow.
    assert!(
        errors.iter().all(|e| *e > 0.0),
        "a row is no longer too fast: {errors:?}"
    );
    assert!(errors[17] < 0.66, "worst {:.3}", errors[17]);
    assert!(median > 0.2 && median < 0.25, "median {median:.3}");
}
