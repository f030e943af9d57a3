//! Collectives: bus factors, latency terms, compression, pipeline bubble.
//!
//! α–β model: a collective of S bytes over n ranks takes bus_factor(n) · S / B + steps(n) · α, with B
//! the per-direction link bandwidth and α the per-step latency.

use crate::scenario::CollectiveAlgorithm;

/// All-reduce bus factor 2(n−1)/n: each rank sends and receives that multiple of the buffer,
/// "independent of the algorithm used (ring, tree, or other)" (NVIDIA/nccl-tests `doc/PERFORMANCE.md`).
///
/// ```
/// use vram_explorer::estimator::performance::comm::allreduce_bus_factor;
/// assert_eq!(allreduce_bus_factor(8), 1.75);
/// assert_eq!(allreduce_bus_factor(1), 0.0);
/// ```
pub fn allreduce_bus_factor(n: u32) -> f64 {
    let n = n.max(1) as f64;
    2.0 * (n - 1.0) / n
}

/// Reduce-scatter and all-gather bus factor (n−1)/n (nccl-tests `doc/PERFORMANCE.md`).
///
/// ```
/// use vram_explorer::estimator::performance::comm::allgather_bus_factor;
/// assert_eq!(allgather_bus_factor(8), 0.875);
/// ```
pub fn allgather_bus_factor(n: u32) -> f64 {
    let n = n.max(1) as f64;
    (n - 1.0) / n
}

/// Latency steps of a ring all-reduce: 2(n−1) (Thakur, Rabenseifner, Gropp 2005).
pub fn ring_steps(n: u32) -> f64 {
    2.0 * (n.max(1) as f64 - 1.0)
}

/// Latency steps of a tree (double binary tree, NCCL ≥ 2.4) all-reduce: 2·log₂n. Powers of two (the
/// usual group sizes) take the exact integer logarithm instead of a libm call.
///
/// ```
/// use vram_explorer::estimator::performance::comm::tree_steps;
/// assert_eq!(tree_steps(8), 6.0);
/// for k in 0..32 {
///     assert_eq!(tree_steps(1 << k), 2.0 * f64::from(1u32 << k).log2());
/// }
/// ```
pub fn tree_steps(n: u32) -> f64 {
    let n = n.max(1);
    if n.is_power_of_two() {
        2.0 * f64::from(n.ilog2())
    } else {
        2.0 * f64::from(n).log2()
    }
}

/// Time of an all-reduce of `bytes` over `n` ranks at `bw` B/s per direction and `alpha_s` per step.
/// Returns (time, ring latency term, tree latency term). `Auto` takes the faster, as NCCL's tuner
/// chooses by size and platform (NVIDIA/nccl-tests issue #196).
pub fn allreduce_time(
    bytes: f64,
    n: u32,
    bw: f64,
    alpha_s: f64,
    algo: CollectiveAlgorithm,
) -> (f64, f64, f64) {
    if n <= 1 || bytes <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let transfer = if bw > 0.0 {
        allreduce_bus_factor(n) * bytes / bw
    } else {
        0.0
    };
    let ring = ring_steps(n) * alpha_s;
    let tree = tree_steps(n) * alpha_s;
    (transfer + chosen_latency(ring, tree, algo), ring, tree)
}

/// The latency term `algo` picks from the ring and tree terms (see [`allreduce_time`]).
pub fn chosen_latency(ring: f64, tree: f64, algo: CollectiveAlgorithm) -> f64 {
    match algo {
        CollectiveAlgorithm::Ring => ring,
        CollectiveAlgorithm::Tree => tree,
        // P2P all-reduces are inference's (`p2p_allreduce`); NCCL runs the rest.
        CollectiveAlgorithm::Auto | CollectiveAlgorithm::P2p => ring.min(tree),
    }
}

/// Time of a collective whose transfer part ran at `old_bw` when the link runs at `new_bw`
/// instead: the latency part stays, the transfer part scales with old ÷ new.
pub fn rescale(time: f64, latency: f64, old_bw: f64, new_bw: f64) -> f64 {
    if old_bw > 0.0 && new_bw > 0.0 {
        latency + (time - latency).max(0.0) * old_bw / new_bw
    } else {
        time
    }
}

/// Overall volume reduction of 1-bit Adam/LAMB with an uncompressed warm-up share `warmup` of the
/// steps: 1 / (w + (1 − w)/r), where r is the compression of the compressed stage (16 for FP16
/// gradients, 32 for FP32). DeepSpeed blog `2020-09-09-onebit-adam-blog-post.md`: "16x during the
/// compression stage for 16-bit (FP16) training", ~5× overall at 15 % warm-up.
///
/// ```
/// use vram_explorer::estimator::performance::comm::one_bit_ratio;
/// assert!((one_bit_ratio(0.15, 16.0) - 4.92).abs() < 0.005);
/// assert!((one_bit_ratio(0.25, 16.0) - 3.37).abs() < 0.005);
/// ```
pub fn one_bit_ratio(warmup: f64, r: f64) -> f64 {
    let w = warmup.clamp(0.0, 1.0);
    let r = r.max(1.0);
    1.0 / (w + (1.0 - w) / r)
}

/// Pipeline bubble as a fraction of the ideal time: (p − 1)/(m · v) for p stages, m micro-batches and
/// v interleaved stages per GPU (Narayanan et al. 2021 §2.2.1–2.2.2), the interleaving credited
/// only where it runs ([`interleave_runs`]: m a multiple of p); otherwise the 1F1B bubble
/// (p − 1)/m. With fewer micro-batches than stages every micro-batch still crosses all p stages
/// one after another, so one micro-batch over two stages idles each GPU half the time (1.0),
/// whatever v: interleaving cuts the fill and drain of a pipeline that has micro-batches to fill it.
///
/// ```
/// use vram_explorer::estimator::performance::comm::bubble_fraction;
/// assert_eq!(bubble_fraction(4, 12, 1), 0.25);
/// assert_eq!(bubble_fraction(4, 12, 3), 0.25 / 3.0);
/// assert_eq!(bubble_fraction(1, 1, 1), 0.0);
/// // One micro-batch through two stages: the interleaving cannot help (and Megatron refuses it).
/// assert_eq!(bubble_fraction(2, 1, 4), 1.0);
/// assert_eq!(bubble_fraction(4, 6, 2), 0.5);
/// ```
pub fn bubble_fraction(p: u32, m: u32, v: u32) -> f64 {
    let v = if interleave_runs(p, m) { v.max(1) } else { 1 };
    (p.max(1) - 1) as f64 / (m.max(1) as f64 * v as f64)
}

/// Whether an interleaved schedule over `p` stages runs as Narayanan et al. 2021 §2.2.2 derive it
/// with `m` micro-batches: m a multiple of p (the paper's assumption; its Fig. 4 runs m = 8 over
/// p = 4). Megatron-Core refuses anything else at its default `microbatch_group_size_per_vp_stage`
/// (= PP): `megatron/core/pipeline_parallel/schedules.py`
/// `forward_backward_pipelining_with_interleaving` at d98e8a6 raises a `ValueError` when the group
/// size exceeds m and a `RuntimeError` when m mod group leaves 0 < r < PP; r0.8 (f2e5db402c, the
/// H100 table's version) raised when "number of microbatches … is not divisible by
/// pipeline-model-parallel-size when using interleaved schedule". Where it does not run, the
/// step is timed as 1F1B (v = 1): its bubble, sends and warm-up.
pub fn interleave_runs(p: u32, m: u32) -> bool {
    p <= 1 || (m >= p && m.is_multiple_of(p))
}

/// The interleaved stages the schedule runs: `v` where [`interleave_runs`], else 1.
pub fn effective_interleave(p: u32, m: u32, v: u32) -> u32 {
    if interleave_runs(p, m) { v.max(1) } else { 1 }
}

/// Micro-batches per pipeline flush: `parallel.pp_microbatches` (0: the accumulation steps), never
/// more than the step runs (`workload.grad_accum_steps`): a flush cannot hold micro-batches the
/// step does not have (the resolve pass clamps it and says so,
/// `pipeline_microbatches_beyond_step`).
pub fn pipeline_microbatches(s: &crate::scenario::Scenario) -> u32 {
    let accum = s.workload.grad_accum_steps.max(1);
    match s.parallel.pp_microbatches {
        0 => accum,
        n => n.min(accum),
    }
}
