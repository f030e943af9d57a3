//! An offloaded optimizer's update runs on the host's CPUs after backward (ZeRO-Offload's CPU-Adam,
//! Ren et al. 2021 §4; Megatron-Core's `--optimizer-cpu-offload`), memory-bound as on a GPU, and a
//! node's GPUs share one host: this GPU's update bytes at the node's bandwidth
//! (`timing.host_optimizer_gb_s`) divided among the node's GPUs of the job. Before, the step
//! charged nothing for it, and the layout search ranked optimizer offload among the fastest
//! layouts.

#![allow(clippy::expect_used, reason = "a test fails by panicking")]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{OffloadTarget, Scenario};

/// Llama-3-70B, ZeRO-3 over one node of 8 × H100, optimizer states on the CPU.
fn llama70b() -> Scenario {
    let s = bundled_scenario("llama3-70b-zero3-8xh100").expect("preset");
    assert_eq!(s.strategies.offload_optimizer, OffloadTarget::Cpu);
    assert_eq!((s.parallel.dp, s.parallel.gpus_per_node), (8, 8));
    s
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

/// Mixed-precision Adam moves 30 B per parameter in its update: the BF16 weight, FP32 master and
/// two FP32 moments read and written (2 × 14), the BF16 gradient read.
const MIXED_ADAM_BYTES: f64 = 2.0 * (2.0 + 4.0 + 8.0) + 2.0;

/// ZeRO-3 over 8 GPUs: each updates an eighth of the parameters, and the 8 share the host, so the
/// node moves all of their update bytes at 88 GB/s: 70.6 B parameters in ≈ 25 s (slime #1139
/// profiled 9.6 s for 26.5 B a node). The part is in the step and in its breakdown.
#[test]
fn the_host_updates_the_nodes_parameters_at_its_bandwidth() {
    let s = llama70b();
    let e = estimate(&s);
    let trainable = e.model.params.trainable;
    let host = e.performance.step.host_optimizer_s;
    assert!(
        close(host, trainable * MIXED_ADAM_BYTES / 88e9),
        "{host} s for {trainable}"
    );
    assert!((24.0..27.0).contains(&host), "{host}");
    let b = step_breakdown(&e.performance);
    let part = b
        .parts()
        .iter()
        .find(|(p, _)| *p == StepPart::HostOptimizer);
    assert_eq!(part.map(|(_, t)| *t), Some(host));
    let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
    assert!(close(sum, e.performance.step.total_s));
    // A host twice as fast takes half the time.
    let mut fast = s.clone();
    fast.timing.host_optimizer_gb_s = 176.0;
    assert!(close(
        estimate(&fast).performance.step.host_optimizer_s,
        host / 2.0
    ));
}

/// With the optimizer on the GPU the host does no update (the GPU's memory-bound update is the
/// optimizer part instead); NVMe-offloaded states are updated by the host's CPUs as well, after
/// they are read from NVMe, and written back after it (ZeRO-Infinity): FP32 master weights and
/// two Adam moments, 12 B per parameter each way at `timing.nvme_gb_s` (7 GB/s) per GPU.
#[test]
fn only_an_offloaded_optimizer_runs_on_the_host() {
    let mut s = llama70b();
    let cpu = estimate(&s).performance.step.host_optimizer_s;
    s.strategies.offload_optimizer = OffloadTarget::None;
    let on_gpu = estimate(&s).performance.step;
    assert_eq!(on_gpu.host_optimizer_s, 0.0);
    assert!(on_gpu.optimizer_s > 0.0);
    s.strategies.offload_optimizer = OffloadTarget::Nvme;
    let e = estimate(&s);
    let per_gpu = e.model.params.trainable / 8.0;
    let swap = 2.0 * per_gpu * 12.0 / 7e9;
    assert!(close(e.performance.step.host_optimizer_s, cpu + swap));
}

/// A job of 2 GPUs on an 8-GPU node shares the host with nobody else of its own: each GPU updates
/// half the parameters (ZeRO-3 over 2) at half the node's rate, the whole model at the node's rate
/// again. Two nodes of 8 (DP 16) halve each node's share.
#[test]
fn the_host_is_shared_by_the_jobs_gpus_on_a_node() {
    let mut s = llama70b();
    let e = estimate(&s);
    let one_node = e.performance.step.host_optimizer_s;
    s.parallel.dp = 2;
    let two = estimate(&s).performance.step.host_optimizer_s;
    assert!(close(two, one_node), "{two} vs {one_node}");
    s.parallel.dp = 16;
    let sixteen = estimate(&s).performance.step.host_optimizer_s;
    assert!(close(sixteen, one_node / 2.0), "{sixteen} vs {one_node}");
}

/// The host's update adds to the step: nothing else moves with the host's bandwidth, so a tenth
/// of it adds nine times the update at the default.
#[test]
fn a_slower_host_adds_its_update_to_the_step() {
    let mut s = llama70b();
    let mut step = |bandwidth: f64| {
        s.timing.host_optimizer_gb_s = bandwidth;
        estimate(&s).performance.step
    };
    let at_default = step(88.0);
    let at_tenth = step(8.8);
    let added = at_tenth.total_s - at_default.total_s;
    assert!(
        (added - 9.0 * at_default.host_optimizer_s).abs() < 1e-6 * added,
        "{added} vs {}",
        at_default.host_optimizer_s
    );
}

/// Under hybrid sharding (FSDP HYBRID_SHARD) the optimizer is sharded over one node's DP ranks,
/// as the memory estimate puts its states: over 4 nodes each GPU updates an eighth of the
/// parameters, and its node all of them, as on one node. (The step divided them by all 32 ranks.)
#[test]
fn hybrid_sharding_updates_a_nodes_share_on_each_host() {
    let mut s = llama70b();
    let one_node = estimate(&s).performance.step.host_optimizer_s;
    s.parallel.dp = 32;
    s.strategies.hybrid_shard = true;
    let e = estimate(&s);
    assert!(
        close(e.performance.step.host_optimizer_s, one_node),
        "{} vs {one_node}",
        e.performance.step.host_optimizer_s
    );
    s.strategies.hybrid_shard = false;
    let sharded_over_all = estimate(&s).performance.step.host_optimizer_s;
    assert!(close(sharded_over_all, one_node / 4.0));
}

/// The update's bytes follow the precision: pure BF16 training (torchtune's full fine-tunes: no
/// master copy, BF16 moments) moves 2 × (2 + 4) + 2 = 14 B per parameter, 14/30 of mixed
/// precision's.
#[test]
fn pure_bf16_states_move_fewer_bytes_on_the_host() {
    use vram_explorer::scenario::{Dtype, PrecisionMode};
    let mut s = llama70b();
    let mixed = estimate(&s).performance.step.host_optimizer_s;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    let bf16 = estimate(&s).performance.step.host_optimizer_s;
    assert!(
        close(bf16, mixed * 14.0 / MIXED_ADAM_BYTES),
        "{bf16} vs {mixed}"
    );
}

/// The GPT-3 175B preset (ZeRO-3 over 8 × A100 40 GB, optimizer states and parameters on NVMe):
/// the host moves 30 B per parameter of the whole model at 88 GB/s (≈ 60 s), and each GPU's
/// 12 B per parameter of master weights and moments are read from NVMe and written back at
/// 7 GB/s (≈ 75 s), as the preset's notes and docs/time-model.md say.
#[test]
fn the_nvme_preset_pays_the_update_and_the_swap() {
    let s = bundled_scenario("gpt3-175b-zero3-a100").expect("preset");
    assert_eq!(s.strategies.offload_optimizer, OffloadTarget::Nvme);
    let e = estimate(&s);
    let p = e.model.params.trainable;
    let update = p * MIXED_ADAM_BYTES / 88e9;
    let swap = 2.0 * p / 8.0 * 12.0 / 7e9;
    let host = e.performance.step.host_optimizer_s;
    assert!(close(host, update + swap), "{host} vs {update} + {swap}");
    assert!((59.0..61.0).contains(&update) && (74.0..76.0).contains(&swap));
}
