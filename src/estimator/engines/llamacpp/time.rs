//! Partial offload in time (issue 15 item 2). llama.cpp runs the layers `-ngl` leaves on the CPU
//! on the CPU backend (`ggml_backend_sched` splits the graph by the weights' device), so a decode
//! step reads their weights (and the host's KV cache) from host memory at its bandwidth, one
//! device after the other (layer split: no overlap within a step). For a prompt, the CUDA backend
//! offloads the host layers' matrix products when the batch is large (`op_offload`, default on;
//! `ggml_backend_cuda_device_offload_op`: ≥ 32 tokens), copying those weights over the host link
//! once per micro-batch: prefill computes on the GPU as if every layer were there, plus that
//! upload (host-link bound). A CPU build (`-dev none`) has no GPU time at all: each phase takes
//! the longer of its FLOPs at the host's rate (`host_tflops`) and its reads from host memory
//! (roofline; Williams et al. 2009).

use super::Buffers;
use crate::estimator::model::ResolvedModel;
use crate::scenario::Scenario;

/// What one request asks of the engine: FLOPs of its prefill and of one decode step, its prompt
/// tokens and the decode's mean context tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    pub prefill_flops: f64,
    pub decode_flops: f64,
    pub prompt_tokens: f64,
    pub mean_ctx: f64,
}

impl Work {
    pub const fn new(
        prefill_flops: f64,
        decode_flops: f64,
        prompt_tokens: f64,
        mean_ctx: f64,
    ) -> Work {
        Work {
            prefill_flops,
            decode_flops,
            prompt_tokens,
            mean_ctx,
        }
    }
}

/// A CPU build's two phases on the host's roofline: its achievable rate and memory bandwidth,
/// and the (FLOPs, bytes moved) of the prompt and of one decode step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostPhases {
    /// `host_tflops` and `host_memory_gb_s`, per second.
    pub peak: f64,
    pub bandwidth: f64,
    pub prefill: (f64, f64),
    pub decode: (f64, f64),
}

impl HostPhases {
    /// The longer of a phase's FLOPs at the host's rate and its bytes at its bandwidth.
    pub fn time(&self, (flops, bytes): (f64, f64)) -> f64 {
        (flops / self.peak.max(1.0)).max(bytes / self.bandwidth.max(1.0))
    }
}

/// (TTFT, TPOT) of a resolved scenario: [`partial_offload`] for llama.cpp, `gpu` unchanged
/// otherwise; a CPU build's from its [`HostPhases`], which are returned too.
pub fn of(
    s: &Scenario,
    m: &ResolvedModel,
    gpu: (f64, f64),
    host_link_bw: f64,
    work: &Work,
) -> (f64, f64, Option<HostPhases>) {
    match super::buffers_of(s, m) {
        Some(b) if b.gpus == 0 => {
            let h = cpu_phases(&b, work);
            (h.time(h.prefill), h.time(h.decode), Some(h))
        }
        Some(b) => {
            let (ttft, tpot) = partial_offload(
                &b,
                gpu.1,
                gpu.0,
                host_link_bw,
                work.mean_ctx,
                work.prompt_tokens,
            );
            (ttft, tpot, None)
        }
        None => (gpu.0, gpu.1, None),
    }
}

/// A CPU build's phases: the prompt's FLOPs and one read of the weights per micro-batch; a decode
/// step's FLOPs and a read of the weights and of the cache it attends over. Each takes the longer
/// of its FLOPs at `host_tflops` and its bytes at `host_memory_gb_s` ([`HostPhases::time`]).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::{Buffers, time::{Work, cpu_phases}};
/// let mut b = Buffers { host_model: 4_000_000_000, n_ctx: 4096, n_ubatch: 512, ..Buffers::default() };
/// b.settings.host_memory_gb_s = 50.0;
/// b.settings.host_tflops = 2.0;
/// let w = Work { prefill_flops: 16e12, decode_flops: 16e9, prompt_tokens: 1000.0, mean_ctx: 1024.0 };
/// let h = cpu_phases(&b, &w);
/// assert!((h.time(h.prefill) - 8.0).abs() < 1e-12); // 16 TFLOP at 2 TFLOP/s (2 reads of 4 GB: 0.16 s)
/// assert!((h.time(h.decode) - 0.080).abs() < 1e-12); // 4 GB at 50 GB/s (16 GFLOP: 8 ms)
/// ```
pub fn cpu_phases(b: &Buffers, w: &Work) -> HostPhases {
    let weights = b.host_model.saturating_sub(b.host_embd) as f64;
    let kv_read = b.host_kv as f64 * (w.mean_ctx / f64::from(b.n_ctx.max(1))).min(1.0);
    let ubatches = (w.prompt_tokens / f64::from(b.n_ubatch.max(1)))
        .ceil()
        .max(1.0);
    HostPhases {
        peak: b.settings.host_tflops * 1e12,
        bandwidth: b.settings.host_memory_gb_s * 1e9,
        prefill: (w.prefill_flops, ubatches * weights),
        decode: (w.decode_flops, weights + kv_read),
    }
}

/// Decode and prefill times for llama.cpp: decode is the GPU's share of the all-GPU time plus
/// the host's reads; prefill the all-GPU time plus the host layers' uploads.
/// `tpot_gpu_s` / `ttft_gpu_s` are the estimator's times with every weight on the GPU,
/// `host_link_bw` the host link's bytes per second, `mean_ctx` the decode's mean context tokens.
/// Returns (ttft_s, tpot_s).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::{Buffers, time::partial_offload};
/// let mut b = Buffers { host_model: 2_000_000_000, n_ctx: 4096, n_ubatch: 512, ..Buffers::default() };
/// b.dev[0].model = 2_000_000_000;
/// b.settings.host_memory_gb_s = 50.0;
/// // half the weights on the host: half the GPU time plus 2 GB at 50 GB/s = 40 ms per token
/// let (_, tpot) = partial_offload(&b, 0.010, 0.0, 25e9, 1024.0, 1.0);
/// assert!((tpot - (0.005 + 0.040)).abs() < 1e-12);
/// ```
pub fn partial_offload(
    b: &Buffers,
    tpot_gpu_s: f64,
    ttft_gpu_s: f64,
    host_link_bw: f64,
    mean_ctx: f64,
    prompt_tokens: f64,
) -> (f64, f64) {
    let host_w = b.host_model.saturating_sub(b.host_embd) as f64;
    let gpu_w: f64 = b.dev.iter().map(|d| d.model as f64).sum();
    let total = host_w + gpu_w;
    if total <= 0.0 {
        return (ttft_gpu_s, tpot_gpu_s);
    }
    let gpu_share = gpu_w / total;
    let host_bw = b.settings.host_memory_gb_s * 1e9;
    let kv_read = b.host_kv as f64 * (mean_ctx / f64::from(b.n_ctx.max(1))).min(1.0);
    let tpot = tpot_gpu_s * gpu_share + (host_w + kv_read) / host_bw.max(1.0);
    // Prefill: each micro-batch of n_ubatch tokens copies the host layers' weights up once.
    let ubatches = (prompt_tokens / f64::from(b.n_ubatch.max(1)))
        .ceil()
        .max(1.0);
    let upload = if b.gpus > 0 && host_link_bw > 0.0 {
        ubatches * host_w / host_link_bw
    } else {
        ubatches * host_w / host_bw.max(1.0)
    };
    (ttft_gpu_s + upload, tpot)
}
