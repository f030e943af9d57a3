//! A served request's fixed overhead (issue 13: "a served request has a fixed overhead besides its
//! FLOPs and bytes"; `estimator::performance::launch`, docs/time-model.md "Fixed overhead per
//! forward"): kernel floors on the GPU, ops issued from Python in eager PyTorch, Hugging Face
//! `generate`'s loop, and CUDA graphs that remove the issuing. Held to the measured op counts
//! (tests/data/measured/hf-decode-ops.json) and checked against gpt-fast's published batch-1 decode
//! rates (tests/data/published/gpt-fast-readme-a100.json; nothing fitted to them).
//! `cargo test --test inference_overhead -- --nocapture` prints the table.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::performance::Bound;
use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::estimator::performance::launch::{
    EAGER_LAYER_OPS, EAGER_MOE_LAYER_OPS, EAGER_OUTSIDE_OPS,
};
use vram_explorer::estimator::{Diagnostic, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;

const MEASURED: &str = include_str!("data/measured/hf-decode-ops.json");
const MEASURED_MOE: &str = include_str!("data/measured/hf-moe-decode-ops.json");
const GPT_FAST: &str = include_str!("data/published/gpt-fast-readme-a100.json");

/// A Llama-2-shaped decoder serving one request on A100 80 GB.
fn llama2(dims: [u32; 5], tp: u32, weights: WeightFormat) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        gpu: GpuChoice::Catalog(GpuId::A100Sxm80),
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    [t.layers, t.hidden, t.heads, t.kv_heads, t.ffn] = dims;
    t.vocab = 32000;
    s.workload.micro_batch = 1;
    s.inference.prompt_tokens = 5;
    s.inference.generated_tokens = 200;
    s.parallel.tp = tp;
    s.quantization.weights = weights;
    s.quantization.group_size = 32;
    s
}

const LLAMA2_7B: [u32; 5] = [32, 4096, 32, 32, 11008];

#[test]
fn the_eager_constants_are_the_measured_ones() {
    let r: Value = serde_json::from_str(MEASURED).unwrap();
    let sdpa = &r["decode_ops"]["sdpa"];
    assert_eq!(sdpa["ops_per_layer"].as_f64(), Some(EAGER_LAYER_OPS));
    assert_eq!(sdpa["ops_outside_layers"].as_f64(), Some(EAGER_OUTSIDE_OPS));
    let p = PartsTiming::default();
    assert!((r["eager_op_us"].as_f64().unwrap() - p.eager_op_us).abs() < 0.5);
    assert!((r["generate_loop_us"].as_f64().unwrap() - p.generate_step_us).abs() < 1.0);
    // Seven matrix multiplies per layer (q, k, v, o, gate, up, down): the count is of kernels.
    assert_eq!(sdpa["layer_ops"]["mm"].as_f64(), Some(7.0));
}

/// A Mixtral layer's eager decode dispatches 59 ops whatever its expert count and top-k (transformers
/// 5.24, grouped_mm experts; tests/data/measured/hf-moe-decode-ops.json), and an eager MoE model's
/// forward counts them on its MoE layers.
#[test]
fn an_eager_moe_layer_issues_the_measured_ops() {
    let r: Value = serde_json::from_str(MEASURED_MOE).unwrap();
    let rows = r["decode_ops"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for row in rows {
        assert_eq!(row["experts_implementation"], "grouped_mm");
        assert_eq!(
            row["ops_per_layer"].as_f64(),
            Some(EAGER_MOE_LAYER_OPS),
            "{row}"
        );
        assert_eq!(row["ops_outside_layers"].as_f64(), Some(EAGER_OUTSIDE_OPS));
    }
    let mut s = llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision);
    let dense = estimate(&s).performance.throughput.launch.kernels;
    assert_eq!(dense, 32.0 * EAGER_LAYER_OPS + EAGER_OUTSIDE_OPS);
    s.model.moe.experts = 8;
    s.model.moe.top_k = 2;
    let moe = estimate(&s).performance.throughput.launch.kernels;
    assert_eq!(moe, 32.0 * EAGER_MOE_LAYER_OPS + EAGER_OUTSIDE_OPS);
}

#[test]
fn eager_generate_at_batch_one_is_bound_by_the_host_and_a_cuda_graph_removes_it() {
    let e = estimate(&llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision));
    // The note names what bounds the step: the overhead, not the decode roofline's bandwidth.
    assert!(e.diagnostics.contains(Diagnostic::OverheadBound));
    assert!(!e.diagnostics.contains(Diagnostic::MemoryBound));
    let eager = e.performance;
    let mut g = llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision);
    g.timing.parts.cuda_graphs = true;
    let graphs = estimate(&g).performance;
    let l = eager.throughput.launch;
    // 32 layers × 40 ops + 22 = 1,302 ops issued from Python, 12 µs each: 15.6 ms per token
    // plus generate's loop, above the ~8 ms the A100 needs to read 13.5 GB.
    assert_eq!(l.kernels, 32.0 * EAGER_LAYER_OPS + EAGER_OUTSIDE_OPS);
    assert!(!l.graphs && graphs.throughput.launch.graphs);
    assert!(l.issue_s > eager.decode.unwrap().time_s);
    assert_eq!(eager.step.bound, Bound::Overhead);
    let expect = l.issue_s + l.loop_s;
    assert!(
        (eager.throughput.tpot_s - expect).abs() < 1e-9,
        "{} vs {expect}",
        eager.throughput.tpot_s
    );
    // Under a graph the step is the roofline plus 10 fused kernels' floors per layer.
    let d = graphs.decode.unwrap().time_s;
    let floors = (32.0 * 10.0 + 3.0) * 5e-6;
    let g_loop = graphs.throughput.launch.loop_s;
    assert!((graphs.throughput.tpot_s - (d + floors + g_loop)).abs() < 1e-9);
    assert!(graphs.throughput.tpot_s < 0.65 * eager.throughput.tpot_s);
}

#[test]
fn out_of_range_overheads_are_clamped_and_reported() {
    let mut s = llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision);
    s.timing.parts.kernel_floor_us = -5.0;
    s.timing.parts.eager_op_us = f64::NAN;
    s.timing.parts.generate_step_us = 1e12;
    let e = estimate(&s);
    assert!(e.diagnostics.contains(Diagnostic::InputClamped));
    let l = e.performance.throughput.launch;
    assert_eq!(l.gpu_s, 0.0);
    // NaN takes the default (12 µs per op), the huge loop its maximum (1 s).
    assert!((l.issue_s - l.kernels * 12e-6).abs() < 1e-12);
    assert!((l.loop_s - 1.0).abs() < 1e-12);
    assert!(e.performance.throughput.tpot_s.is_finite());
}

#[test]
fn vllm_enforce_eager_issues_its_ops_from_python() {
    let mut s = llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision);
    s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
    let graphs = estimate(&s).performance;
    if let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine {
        v.enforce_eager = true;
    }
    let eager = estimate(&s).performance;
    assert!(graphs.throughput.launch.graphs);
    assert_eq!(graphs.throughput.launch.issue_s, 0.0);
    // 32 × 10 + 3 custom ops at 12 µs: 3.9 ms, below the 7.8 ms weight read, so hidden.
    assert!(eager.throughput.launch.issue_s > 3.8e-3);
    assert!(eager.throughput.tpot_s >= graphs.throughput.tpot_s);
}

#[test]
fn vllm_tensor_parallel_decode_uses_its_p2p_all_reduce() {
    let mut s = llama2([80, 8192, 64, 8, 28672], 8, WeightFormat::AsPrecision);
    s.inference.engine = Some(ServingEngine::Preallocated);
    let nccl = estimate(&s).performance.communication;
    s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
    let p2p = estimate(&s).performance.communication;
    // 160 decode all-reduces of 16 KiB over 8 A100s: NCCL's tree pays 2·log₂8 = 6 latency steps
    // of 5 µs each, vLLM's one-stage P2P kernel two barriers.
    assert!(nccl.tp_time_s > 0.0 && p2p.tp_time_s < nccl.tp_time_s);
    // On GPUs without NVLink, 8 GPUs fall back to NCCL.
    s.gpu = GpuChoice::Catalog(GpuId::Rtx4090);
    let pcie = estimate(&s).performance.communication;
    s.inference.engine = Some(ServingEngine::Preallocated);
    assert_eq!(
        pcie.tp_time_s,
        estimate(&s).performance.communication.tp_time_s
    );
}

/// SGLang 0.5.23 runs the same custom all-reduce (`custom_all_reduce.py` `should_custom_ar`: 2
/// GPUs or a full NVLink mesh, up to 8 MiB; sgl-kernel's `custom_all_reduce.cuh` keeps vLLM's
/// one-/two-stage rule): its TP decode all-reduces cost what vLLM's do, less than NCCL's.
#[test]
fn sglang_tensor_parallel_decode_uses_the_same_p2p_all_reduce() {
    let mut s = llama2([80, 8192, 64, 8, 28672], 8, WeightFormat::AsPrecision);
    s.inference.engine = Some(ServingEngine::Preallocated);
    let nccl = estimate(&s).performance.communication.tp_time_s;
    s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
    let vllm = estimate(&s).performance.communication.tp_time_s;
    s.inference.engine = Some(ServingEngine::Sglang(Sglang::default()));
    let sglang = estimate(&s).performance.communication.tp_time_s;
    assert!(sglang < nccl, "{sglang} vs NCCL {nccl}");
    assert!(
        (sglang - vllm).abs() <= 1e-12 * vllm,
        "{sglang} vs vLLM {vllm}"
    );
}

#[test]
fn the_breakdown_shows_the_overhead_as_its_own_part() {
    let p = estimate(&llama2(LLAMA2_7B, 1, WeightFormat::AsPrecision)).performance;
    let b = step_breakdown(&p);
    let parts = b.parts();
    let launch = parts
        .iter()
        .find(|(k, _)| *k == StepPart::Launch)
        .unwrap()
        .1;
    assert!((launch - p.step.launch_s).abs() < 1e-12);
    let sum: f64 = parts.iter().map(|(_, t)| t).sum();
    assert!((sum - p.step.total_s).abs() <= 1e-9 * p.step.total_s);
}

/// The published gpt-fast rates: each row's estimate, its error, and today's figure as a guard.
/// INT8/INT4 weight-only GEMVs read at torchao's measured share of BF16's bandwidth
/// (`timing.parts.int8_weight_only_read` 0.8, `int4_weight_only_read` 0.53, from torchao's own
/// table, not from these rows): the INT8 rows went from +16 … +19 % to −3 … +4 %; the single-GPU
/// INT4 rows overshoot to −15 / −17 % (gpt-fast's group-32 tinygemm reads 0.62 of BF16 in its own
/// column, torchao's group-64 0.53: a known miss, not fitted), TP 8 INT4 −1 %.
#[test]
fn gpt_fast_published_decode_rates() {
    let doc: Value = serde_json::from_str(GPT_FAST).unwrap();
    let mut bf16 = Vec::new();
    let mut all = Vec::new();
    for r in doc["records"].as_array().unwrap() {
        let c = &r["config"];
        let m = &c["model"];
        let u = |k: &str| u32::try_from(m[k].as_u64().unwrap()).unwrap();
        let dims = [
            u("layers"),
            u("hidden"),
            u("heads"),
            u("kv_heads"),
            u("ffn"),
        ];
        let tp = u32::try_from(c["tp"].as_u64().unwrap()).unwrap();
        let w = match c["weights"].as_str().unwrap() {
            "bf16" => WeightFormat::AsPrecision,
            "int8" => WeightFormat::Int8PerChannel,
            _ => WeightFormat::Int4Group,
        };
        let mut s = llama2(dims, tp, w);
        // gpt-fast's own loop over a static cache, every step a CUDA graph; tensor parallelism
        // with PyTorch's intra-node (P2P) all-reduce (the README's `ENABLE_INTRA_NODE_COMM=1`).
        s.inference.engine = Some(ServingEngine::Preallocated);
        s.timing.parts.cuda_graphs = true;
        s.timing.collective = CollectiveAlgorithm::P2p;
        let est = 1.0 / estimate(&s).performance.throughput.tpot_s;
        let published = r["value"].as_f64().unwrap();
        let err = est / published - 1.0;
        println!(
            "{:28} {est:7.1} tok/s vs {published:7.2}: {:+5.1} %",
            r["id"].as_str().unwrap(),
            100.0 * err
        );
        if w == WeightFormat::AsPrecision {
            bf16.push(err);
        }
        all.push(err);
    }
    assert_eq!(all.len(), 13);
    // BF16, TP 1–8 (7 rows): every one within 6 % (today −5.7 … +3.6 %).
    for e in &bf16 {
        assert!(e.abs() <= 0.06, "{e}");
    }
    assert_eq!(bf16.len(), 7);
    // Every row within −18 … +5 % today (INT4 single-GPU rows the low end); mean |error| 5.3 %
    // (13.9 % before the weight-only read shares).
    for e in &all {
        assert!((-0.18..=0.05).contains(e), "{e}");
    }
    let mean = all.iter().map(|e| e.abs()).sum::<f64>() / all.len() as f64;
    println!("mean |error| {:.1} %", 100.0 * mean);
    assert!(mean < 0.06, "{mean}");
}

/// The weight-only read share slows a PyTorch decode of INT4/INT8 weights and nothing else: not a
/// serving engine's (its own kernels), not BF16 weights.
#[test]
fn the_weight_only_read_share_applies_to_pytorch_decodes_of_quantized_weights() {
    let tpot = |engine: Option<ServingEngine>, w: WeightFormat, share: f64| {
        let mut s = llama2(LLAMA2_7B, 1, w);
        s.inference.engine = engine;
        // CUDA graphs: the eager issuing would otherwise hide the GPU time.
        s.timing.parts.cuda_graphs = true;
        s.timing.parts.int4_weight_only_read = share;
        s.timing.parts.int8_weight_only_read = share;
        estimate(&s).performance.throughput.tpot_s
    };
    let pytorch = Some(ServingEngine::Preallocated);
    let slow = tpot(pytorch, WeightFormat::Int4Group, 0.5);
    let full = tpot(pytorch, WeightFormat::Int4Group, 1.0);
    assert!(slow > 1.5 * full, "{slow} vs {full}");
    assert!(
        tpot(None, WeightFormat::Int8PerChannel, 0.5)
            > tpot(None, WeightFormat::Int8PerChannel, 1.0)
    );
    let vllm = Some(ServingEngine::Vllm(Vllm::default()));
    assert_eq!(
        tpot(vllm, WeightFormat::Int4Group, 0.5),
        tpot(vllm, WeightFormat::Int4Group, 1.0)
    );
    assert_eq!(
        tpot(pytorch, WeightFormat::AsPrecision, 0.5),
        tpot(pytorch, WeightFormat::AsPrecision, 1.0)
    );
}
