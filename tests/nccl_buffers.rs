//! NCCL's own buffers (`estimator::memory::nccl`, docs/gpu-overheads.md §3 "As implemented"): one
//! communicator per parallel group of more than one rank a GPU joins, at the published
//! per-communicator totals of NVIDIA/nccl#964 (688 MB for 3 or more ranks, 544 MB for 2), in the
//! GPU total (what nvidia-smi shows) and never in the allocator's statistics.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::explain::explain;
use vram_explorer::estimator::{Component, MemoryEstimate, estimate};
use vram_explorer::scenario::{Mode, Scenario, ServingEngine, Sglang, Vllm};

const MB: f64 = 1e6;

fn nccl(m: &MemoryEstimate) -> f64 {
    m.peak.get(Component::NcclBuffers).get()
}

fn training(dp: u32, tp: u32, pp: u32) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    (s.parallel.dp, s.parallel.tp, s.parallel.pp) = (dp, tp, pp);
    s
}

/// The defaults are the published record's figures (tests/data/published/gpu-overheads.json,
/// NVIDIA/nccl#964: 544 MB per 2-rank group, 688 MB per group of 3 or 4 ranks).
#[test]
fn the_defaults_are_the_published_per_communicator_totals() {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("data/published/gpu-overheads.json")).unwrap();
    let r = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "gpu-overheads-nccl-issue964-a100x4")
        .expect("the nccl#964 record");
    assert_eq!(r["unit"], "MB");
    let two = r["value"].as_f64().unwrap() * MB;
    let more = r["also_reported"]["per group of 3 or 4 ranks, MB"]
        .as_f64()
        .unwrap()
        * MB;
    let o = Scenario::default().overheads;
    assert_eq!(o.nccl_mib_per_communicator * 1_048_576.0, more);
    assert_eq!(o.nccl_mib_two_rank_communicator * 1_048_576.0, two);
}

#[test]
fn one_communicator_per_parallel_group_of_more_than_one_rank() {
    assert_eq!(nccl(&estimate(&training(1, 1, 1)).memory), 0.0);
    // Data parallel over 8: one group of 8.
    let m = estimate(&training(8, 1, 1)).memory;
    assert_eq!(nccl(&m), 688.0 * MB);
    // 2 × 4 × 4: a 2-rank data-parallel group, tensor and pipeline groups of 4.
    let m = estimate(&training(2, 4, 4)).memory;
    assert_eq!(nccl(&m), 544.0 * MB + 2.0 * 688.0 * MB);
    // Context and expert parallel add theirs.
    let mut s = training(8, 1, 1);
    s.parallel.cp = 2;
    assert_eq!(nccl(&estimate(&s).memory), 688.0 * MB + 544.0 * MB);
}

#[test]
fn they_count_in_the_gpu_total_not_in_the_allocators_statistics() {
    let mut s = training(8, 1, 1);
    let with = estimate(&s).memory;
    s.overheads.nccl_mib_per_communicator = 0.0;
    let without = estimate(&s).memory;
    assert_eq!(nccl(&without), 0.0);
    assert_eq!(with.tensor_peak, without.tensor_peak);
    assert_eq!(with.reserved_peak(), without.reserved_peak());
    assert!((with.gpu_total.get() - without.gpu_total.get() - 688.0 * MB).abs() < 1.0);
    assert!(with.headroom < without.headroom);
}

#[test]
fn inference_counts_its_tensor_parallel_group_and_engines_their_own_rules() {
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    s.parallel.tp = 2;
    // Data-parallel replicas of a server do not communicate.
    s.parallel.dp = 4;
    assert_eq!(nccl(&estimate(&s).memory), 544.0 * MB);
    // vLLM makes its communicators before its budget's baseline (docs/engines/vllm.md §1): they are
    // in the GPU total beside the budget, and a KV cache sized by `gpu_memory_utilization` does
    // not move.
    s.inference.engine = Some(ServingEngine::Vllm(Vllm {
        gpu_memory_utilization: Some(0.9),
        ..Vllm::default()
    }));
    let with = estimate(&s);
    assert_eq!(nccl(&with.memory), 544.0 * MB);
    s.overheads.nccl_mib_two_rank_communicator = 0.0;
    let without = estimate(&s);
    assert_eq!(
        with.engine.unwrap().kv_pool,
        without.engine.unwrap().kv_pool
    );
    assert!(
        (with.memory.gpu_total.get() - without.memory.gpu_total.get() - 544.0 * MB).abs() < 1.0
    );
    // vLLM 0.34's extensible cache at its default 1.0 sizes from the free memory after warmup,
    // which the communicators' buffers are not: its pool is smaller by them (within one block).
    s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
    s.overheads.nccl_mib_two_rank_communicator = 544e6 / 1_048_576.0;
    let with = estimate(&s).engine.unwrap();
    s.overheads.nccl_mib_two_rank_communicator = 0.0;
    let without = estimate(&s).engine.unwrap();
    let less = without.kv_pool.get() - with.kv_pool.get();
    assert!(
        less > 544.0 * MB - with.block_bytes && less < 544.0 * MB + with.block_bytes,
        "{less}"
    );
    s.overheads.nccl_mib_two_rank_communicator = 0.0;
    // SGLang sizes from the free memory after its communicators exist: a smaller pool.
    s.inference.engine = Some(ServingEngine::Sglang(Sglang::default()));
    let small = estimate(&s).engine.unwrap().kv_pool;
    s.overheads.nccl_mib_two_rank_communicator = 544e6 / 1_048_576.0;
    let smaller = estimate(&s).engine.unwrap().kv_pool;
    assert!(smaller < small, "{smaller:?} vs {small:?}");
}

#[test]
fn the_explanation_names_the_source_and_the_assumption() {
    let s = training(8, 1, 1);
    let e = estimate(&s);
    let x = explain(&s, &e, Component::NcclBuffers);
    assert!(x.source.contains("nccl#964"), "{}", x.source);
    assert!(x.assumption.contains("channel"), "{}", x.assumption);
    assert_eq!(x.value.get(), 688.0 * MB);
}
