//! The all-reduce inference engines run inside a node instead of NCCL for the small per-layer
//! tensor-parallel messages of decode: every GPU reads its peers' buffers directly over P2P links
//! between flag barriers. Derived from vLLM 0.34 `csrc/custom_all_reduce.cuh` (the same one-/two-shot
//! shape as PyTorch's symmetric-memory all-reduce behind gpt-fast's `ENABLE_INTRA_NODE_COMM`):
//! - one stage (`cross_device_reduce_1stage`): a start and an end barrier (each "Latency = 1 p2p
//!   write", `custom_collective_common.cuh`), and each GPU reads the n − 1 other buffers whole;
//! - two stages (`cross_device_reduce_2stage`): two barriers, a reduce-scatter and an all-gather,
//!   each GPU reading (n − 1)/n of the buffer in each;
//! - chosen by `REDUCE_CASE`: one stage for 2 GPUs, or on a fully connected node below 512 KiB (≤ 4
//!   GPUs) or 256 KiB (≤ 8); two stages otherwise; NCCL above `max_size` = 8 MiB
//!   (`vllm/distributed/device_communicators/custom_all_reduce.py`) and for group sizes other than
//!   2, 4, 6, 8, or more than 2 GPUs without a full NVLink mesh.
//!
//! A barrier is charged the collective model's per-step latency α (`timing.link_latency_us`).

const KIB: f64 = 1024.0;
/// vLLM's `max_size`: larger buffers go to NCCL.
const MAX_BYTES: f64 = 8192.0 * KIB;

/// (time, latency part) of a P2P all-reduce of `bytes` over `n` GPUs of one node at `bw` B/s per
/// direction, or `None` where the engine would use NCCL. `nvlink_mesh`: the GPUs have a direct
/// GPU-GPU link (NVLink), so a node is fully connected.
///
/// ```
/// use vram_explorer::estimator::performance::p2p_allreduce::time;
/// // 8 GPUs, 16 KiB: one stage, two barriers of 5 µs and 7 × 16 KiB read at 240 GB/s.
/// let (t, lat) = time(16384.0, 8, 240e9, 5e-6, true).unwrap();
/// assert_eq!(lat, 10e-6);
/// assert!((t - (10e-6 + 7.0 * 16384.0 / 240e9)).abs() < 1e-15);
/// // 1 MiB over 8 GPUs: two stages; 16 MiB: NCCL; 8 GPUs on PCIe only: NCCL.
/// let (t2, _) = time(1048576.0, 8, 240e9, 5e-6, true).unwrap();
/// assert!((t2 - (10e-6 + 1.75 * 1048576.0 / 240e9)).abs() < 1e-15);
/// assert!(time(16.0 * 1048576.0, 8, 240e9, 5e-6, true).is_none());
/// assert!(time(16384.0, 8, 32e9, 5e-6, false).is_none());
/// ```
pub fn time(bytes: f64, n: u32, bw: f64, alpha_s: f64, nvlink_mesh: bool) -> Option<(f64, f64)> {
    let supported = matches!(n, 2 | 4 | 6 | 8) && (n == 2 || nvlink_mesh);
    if !supported || bytes >= MAX_BYTES || bw <= 0.0 {
        return None;
    }
    let k = f64::from(n - 1);
    let one_stage = n == 2 || (n <= 4 && bytes < 512.0 * KIB) || (n <= 8 && bytes < 256.0 * KIB);
    let read = if one_stage {
        k * bytes
    } else {
        2.0 * k / f64::from(n) * bytes
    };
    let latency = 2.0 * alpha_s;
    Some((latency + read / bw, latency))
}
