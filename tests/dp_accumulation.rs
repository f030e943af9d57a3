//! The data-parallel collectives under gradient accumulation (docs/time-model.md, "DP gradients";
//! `performance/training.rs` `DpCollectives`): DDP and ZeRO-1 reduce once, at the accumulation
//! boundary; ZeRO-2 reduce-scatters every micro-batch's gradients into the partition and gathers
//! the weights once; ZeRO-3 / FSDP gathers the weights for every micro-batch's forward and backward
//! (FSDP without `reshard_after_forward`: forward only) and reduce-scatters every micro-batch;
//! FSDP2 under a pipeline once per step. Before, every stage was charged once per step: Llama-3-8B
//! under DeepSpeed ZeRO-3 over DP 32 moved 24.09 GB in 1.167 s at 1 and at 8 accumulation steps.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::Communication;
use vram_explorer::presets::from_ron_str;
use vram_explorer::scenario::{Scenario, Sharding, ZeroStage};

/// The reviewer's base: Llama-3-8B, Megatron profile, H100 SXM, DP 8, micro-batch 1 × 4096,
/// 8 accumulation steps, ZeRO-1 (shared with the other time tests).
const BASE: &str = include_str!("data/scenarios/llama3-8b-megatron-dp8-accum8.ron");

fn base() -> Scenario {
    from_ron_str(BASE).expect("scenario")
}

/// `s` at DP 32 under `sharding` (the Hugging Face profile unless Megatron's own) and `zero`.
fn at(sharding: Option<Sharding>, zero: ZeroStage, accum: u32) -> Scenario {
    let mut s = base();
    s.parallel.dp = 32;
    s.strategies.zero = zero;
    s.workload.grad_accum_steps = accum;
    if let Some(sh) = sharding {
        s.implementation.profile = vram_explorer::scenario::Profile::HuggingFace;
        s.implementation.sharding = sh;
    }
    s
}

fn comm(s: &Scenario) -> Communication {
    estimate(s).performance.communication
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// ZeRO-3 under DeepSpeed, FSDP1 and FSDP2: every collective runs in every micro-batch, so the
/// step's bytes, time and exposed time are 8× those at one micro-batch (the reviewer's case:
/// 24.09 GB and 1.167 s at both before).
#[test]
fn zero3_gathers_and_reduces_in_every_micro_batch() {
    for sh in [Sharding::DeepSpeed, Sharding::Fsdp1, Sharding::Fsdp2] {
        let one = comm(&at(Some(sh), ZeroStage::Stage3, 1));
        let eight = comm(&at(Some(sh), ZeroStage::Stage3, 8));
        assert!(one.dp_time_s > 0.5, "{sh:?}: {}", one.dp_time_s);
        assert!(
            close(eight.dp_bytes.get(), 8.0 * one.dp_bytes.get()),
            "{sh:?}: {} vs {}",
            eight.dp_bytes.get(),
            one.dp_bytes.get()
        );
        assert!(close(eight.dp_time_s, 8.0 * one.dp_time_s), "{sh:?}");
        assert!(close(eight.dp_exposed_s, 8.0 * one.dp_exposed_s), "{sh:?}");
        assert!(close(one.zero_factor, 1.5) && close(eight.zero_factor, 12.0));
    }
}

/// FSDP without `reshard_after_forward` (FSDP1 `SHARD_GRAD_OP`) keeps the gathered weights from
/// forward to backward: one all-gather and one reduce-scatter per micro-batch, in their types
/// (BF16 weights, FP32 gradients under mixed precision with FP32 master weights).
#[test]
fn fsdp_without_reshard_after_forward_gathers_once_per_micro_batch() {
    let mut s = at(Some(Sharding::Fsdp2), ZeroStage::Stage3, 8);
    let twice = comm(&s);
    s.implementation.fsdp.reshard_after_forward = false;
    let once = comm(&s);
    assert!(close(once.zero_factor, 8.0), "{}", once.zero_factor);
    let ratio = once.dp_bytes.get() / twice.dp_bytes.get();
    assert!(ratio > 0.5 && ratio < 0.8, "{ratio}");
    // The gathers' type: a BF16 gather is the gradients' bytes (BF16 under MasterWeights) or less.
    assert!(once.dp_time_s < twice.dp_time_s);
}

/// ZeRO-2 (DeepSpeed, Generic, Megatron-FSDP's `optim_grads`): a reduce-scatter per micro-batch
/// and one all-gather of the updated weights per step.
#[test]
fn zero2_reduces_every_micro_batch_and_gathers_once() {
    for sh in [Some(Sharding::DeepSpeed), Some(Sharding::Generic), None] {
        let one = comm(&at(sh, ZeroStage::Stage2, 1));
        let eight = comm(&at(sh, ZeroStage::Stage2, 8));
        assert!(close(one.zero_factor, 1.0) && close(eight.zero_factor, 4.5));
        let ratio = eight.dp_bytes.get() / one.dp_bytes.get();
        assert!(ratio > 4.0 && ratio < 8.0, "{sh:?}: {ratio}");
    }
}

/// DDP and ZeRO-1 (Megatron's no_sync until the last micro-batch, DeepSpeed stages 0 and 1 at
/// the accumulation boundary) and FSDP2 under a pipeline reduce once per step, whatever the
/// accumulation.
#[test]
fn ddp_zero1_and_pipelined_fsdp2_reduce_once_per_step() {
    for (sh, zero) in [
        (None, ZeroStage::None),
        (None, ZeroStage::Stage1),
        (Some(Sharding::DeepSpeed), ZeroStage::None),
        (Some(Sharding::DeepSpeed), ZeroStage::Stage1),
    ] {
        let one = comm(&at(sh, zero, 1));
        let eight = comm(&at(sh, zero, 8));
        assert!(one.dp_time_s > 0.0);
        assert!(
            close(one.dp_bytes.get(), eight.dp_bytes.get()),
            "{sh:?} {zero:?}"
        );
        assert!(close(one.dp_time_s, eight.dp_time_s), "{sh:?} {zero:?}");
    }
    let piped = |accum: u32| {
        let mut s = at(Some(Sharding::Fsdp2), ZeroStage::Stage3, accum);
        s.parallel.pp = 4;
        s.parallel.dp = 8;
        s.implementation.fsdp.reshard_after_forward = false;
        comm(&s)
    };
    let (four, eight) = (piped(4), piped(8));
    assert!(close(four.dp_bytes.get(), eight.dp_bytes.get()));
    assert!(close(eight.zero_factor, 1.0));
}

/// Overlap hides a collective behind the kernels running beside it, never more than they last:
/// ZeRO-3 over DP 32 on the network moves more per micro-batch than its compute takes, so at full
/// overlap the excess stays exposed (before, all of it was hidden).
#[test]
fn overlap_hides_no_more_than_the_step_computes() {
    let mut s = at(Some(Sharding::DeepSpeed), ZeroStage::Stage3, 8);
    s.timing.comm_overlap = 1.0;
    let e = estimate(&s);
    let c = e.performance.communication;
    let compute = e.performance.step.compute_phase_s;
    assert!(c.dp_time_s > compute, "{} vs {compute}", c.dp_time_s);
    assert!(
        c.dp_exposed_s >= c.dp_time_s - compute - 1e-9,
        "{} of {} beside {compute}",
        c.dp_exposed_s,
        c.dp_time_s
    );
}

/// A faster step never comes from more accumulation under ZeRO-3: the model FLOPs utilisation at
/// 8 micro-batches is not above one micro-batch's (before: 19.0 % → 35.6 %).
#[test]
fn zero3_accumulation_buys_no_utilisation() {
    let mfu = |accum| {
        estimate(&at(Some(Sharding::DeepSpeed), ZeroStage::Stage3, accum))
            .performance
            .throughput
            .mfu
    };
    assert!(mfu(8) <= mfu(1) * 1.05, "{} vs {}", mfu(8), mfu(1));
}
