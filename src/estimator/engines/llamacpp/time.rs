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
/// tokens, the decode's mean context tokens and the tokens one decode step computes (sequences ×
/// positions: a mixture's routed experts are read for those tokens only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    pub prefill_flops: f64,
    pub decode_flops: f64,
    pub prompt_tokens: f64,
    pub mean_ctx: f64,
    pub decode_tokens: f64,
}

impl Work {
    pub const fn new(
        prefill_flops: f64,
        decode_flops: f64,
        prompt_tokens: f64,
        (mean_ctx, decode_tokens): (f64, f64),
    ) -> Work {
        Work {
            prefill_flops,
            decode_flops,
            prompt_tokens,
            mean_ctx,
            decode_tokens,
        }
    }
}

/// The weight bytes a forward over `tokens` tokens reads of `model` bytes of which `experts` are
/// routed experts: all the rest, and of the experts those some token is sent to, 1 − (1 − k/E)^tokens
/// of them under uniform, independent routing (a decode token of Qwen3-30B-A3B reads 8 of 128;
/// the same rule as `performance::peft_moe::read_scale`).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::time::weights_read;
/// assert_eq!(weights_read(1000, 800, (8, 128), 1.0), 250.0); // 200 + 800 × 8/128
/// assert_eq!(weights_read(1000, 0, (0, 0), 1.0), 1000.0);
/// assert!(weights_read(1000, 800, (8, 128), 512.0) > 999.9); // a micro-batch reads them all
/// ```
pub fn weights_read(model: u64, experts: u64, (k, e): (u64, u64), tokens: f64) -> f64 {
    let experts = experts.min(model) as f64;
    let touched = if e > 0 {
        let miss = (1.0 - k as f64 / e as f64).clamp(0.0, 1.0);
        1.0 - miss.powf(tokens.max(1.0))
    } else {
        1.0
    };
    model as f64 - experts + experts * touched
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
            let (ttft, tpot) = partial_offload(&b, (gpu.1, gpu.0), host_link_bw, work);
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
/// let w = Work { prefill_flops: 16e12, decode_flops: 16e9, prompt_tokens: 1000.0, mean_ctx: 1024.0, decode_tokens: 1.0 };
/// let h = cpu_phases(&b, &w);
/// assert!((h.time(h.prefill) - 8.0).abs() < 1e-12); // 16 TFLOP at 2 TFLOP/s (2 reads of 4 GB: 0.16 s)
/// assert!((h.time(h.decode) - 0.080).abs() < 1e-12); // 4 GB at 50 GB/s (16 GFLOP: 8 ms)
/// ```
pub fn cpu_phases(b: &Buffers, w: &Work) -> HostPhases {
    let weights = b.host_model.saturating_sub(b.host_embd);
    let kv_read = b.host_kv as f64 * (w.mean_ctx / f64::from(b.n_ctx.max(1))).min(1.0);
    let ub = f64::from(b.n_ubatch.max(1));
    let ubatches = (w.prompt_tokens / ub).ceil().max(1.0);
    let read = |tokens: f64| weights_read(weights, b.host_experts, b.experts, tokens);
    HostPhases {
        peak: b.settings.host_tflops * 1e12,
        bandwidth: b.settings.host_memory_gb_s * 1e9,
        prefill: (w.prefill_flops, ubatches * read(ub.min(w.prompt_tokens))),
        decode: (w.decode_flops, read(w.decode_tokens) + kv_read),
    }
}

/// Decode and prefill times for llama.cpp: decode is the GPU's share of the all-GPU time plus
/// the host's reads; prefill the all-GPU time plus the host layers' uploads.
/// `tpot_gpu_s` / `ttft_gpu_s` are the estimator's times with every weight on the GPU,
/// `host_link_bw` the host link's bytes per second, `mean_ctx` the decode's mean context tokens.
/// Returns (ttft_s, tpot_s).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::{Buffers, time::{Work, partial_offload}};
/// let mut b = Buffers { host_model: 2_000_000_000, n_ctx: 4096, n_ubatch: 512, ..Buffers::default() };
/// b.dev[0].model = 2_000_000_000;
/// b.settings.host_memory_gb_s = 50.0;
/// // half the weights on the host: half the GPU time plus 2 GB at 50 GB/s = 40 ms per token
/// let w = Work { prompt_tokens: 1.0, mean_ctx: 1024.0, decode_tokens: 1.0, ..Work::default() };
/// let (_, tpot) = partial_offload(&b, (0.010, 0.0), 25e9, &w);
/// assert!((tpot - (0.005 + 0.040)).abs() < 1e-12);
/// ```
pub fn partial_offload(
    b: &Buffers,
    (tpot_gpu_s, ttft_gpu_s): (f64, f64),
    host_link_bw: f64,
    w: &Work,
) -> (f64, f64) {
    let (mean_ctx, prompt_tokens) = (w.mean_ctx, w.prompt_tokens);
    let host_model = b.host_model.saturating_sub(b.host_embd);
    // A decode step reads the dense weights and its tokens' experts (a mixture's share).
    let read = |model: u64, experts: u64| weights_read(model, experts, b.experts, w.decode_tokens);
    let host_read = read(host_model, b.host_experts);
    let gpu_read: f64 = b.dev.iter().map(|d| read(d.model, d.experts)).sum();
    let total = host_read + gpu_read;
    if total <= 0.0 {
        return (ttft_gpu_s, tpot_gpu_s);
    }
    let gpu_share = gpu_read / total;
    let host_bw = b.settings.host_memory_gb_s * 1e9;
    let kv_read = b.host_kv as f64 * (mean_ctx / f64::from(b.n_ctx.max(1))).min(1.0);
    let tpot = tpot_gpu_s * gpu_share + (host_read + kv_read) / host_bw.max(1.0);
    // Prefill: with op offload each micro-batch of at least 32 tokens copies the host weights up
    // once, of a mixture's experts only those its tokens use (ggml-backend.cpp
    // `ggml_backend_sched_compute_splits`: "copying only the experts that are used"), and the GPU
    // computes; a smaller one (or `--no-op-offload`) leaves the host's share to the CPU, at the
    // longer of its reads at the host's bandwidth and its FLOPs at `host_tflops`.
    let ub = f64::from(b.n_ubatch.max(1));
    let t = ub.min(prompt_tokens.max(1.0));
    let ubatches = (prompt_tokens / ub).ceil().max(1.0);
    let per_ubatch = weights_read(host_model, b.host_experts, b.experts, t);
    let offloaded = b.settings.op_offload
        && t >= super::sched::OFFLOAD_MIN_BATCH as f64
        && b.gpus > 0
        && host_link_bw > 0.0;
    if offloaded {
        return (ttft_gpu_s + ubatches * per_ubatch / host_link_bw, tpot);
    }
    let gpu_t: f64 = b
        .dev
        .iter()
        .map(|d| weights_read(d.model, d.experts, b.experts, t))
        .sum();
    let host_share = per_ubatch / (per_ubatch + gpu_t).max(1.0);
    let host_flops = w.prefill_flops * host_share;
    let host = (ubatches * per_ubatch / host_bw.max(1.0))
        .max(host_flops / (b.settings.host_tflops * 1e12).max(1.0));
    (ttft_gpu_s * (1.0 - host_share) + host, tpot)
}
