//! Input batches: bytes on the GPU (the batch being computed plus the prefetched ones), host staging,
//! and the host-to-device copy time with the share prefetch hides behind compute.
//!
//! Sources: the overlap rule is NVIDIA's (M. Harris, "How to Overlap Data Transfers in CUDA C/C++",
//! NVIDIA developer blog 2012): a copy overlaps kernels only when it runs on a non-default stream
//! *and* "the host memory involved in the data transfer must be pinned memory"; pageable copies are
//! staged by the driver and block. Pinned vs pageable bandwidth comes from the scenario's
//! `Timing::pageable_fraction` (example measurement 3.96 vs 12.18 GB/s, reference §4). Seed article
//! §2.2 claims prefetch hides 70 % of loading and `pin_memory=True` makes copies 3× faster.

use super::textures::image_bytes;
use crate::hardware::MemoryTech;
use crate::scenario::{InputKind, InputPipeline, Mode, ModelFamily, Scenario};
use crate::units::{Bytes, BytesPerSec};

/// PCIe 5.0 x16 per direction, taken when a device's host link is not sourced (as the time model,
/// `performance/inputs.rs`).
const FALLBACK_HOST_GB_S: f64 = 64.0;

/// The input side of one step on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InputTransfer {
    /// Bytes of one sample's input (tokens × token bytes, or one image).
    pub sample_bytes: Bytes,
    /// Bytes of one micro-batch of inputs.
    pub batch_bytes: Bytes,
    /// Input bytes resident on the GPU: the batch in use plus `gpu_prefetch_batches` prefetched.
    pub gpu_resident: Bytes,
    /// The prefetched batches alone (what a memory model that already counts the batch in use adds).
    pub gpu_prefetch: Bytes,
    /// Host staging buffers (pinned when `Timing::pinned_host_memory`).
    pub host_staging: Bytes,
    /// Host-to-device bandwidth per direction (pinned, or pinned × pageable fraction).
    pub bandwidth: BytesPerSec,
    /// Copy time of one optimizer step's inputs (all accumulated micro-batches).
    pub transfer_s: f64,
    /// Share of the copy hidden behind compute: min(1, compute ÷ copy) with prefetch on pinned
    /// memory, else 0.
    pub hidden_share: f64,
    /// What stays on the critical path: transfer × (1 − hidden share).
    pub exposed_s: f64,
}

/// Bytes of one sample's input.
pub fn sample_bytes(p: &InputPipeline, tokens_per_sample: f64) -> f64 {
    match p.kind {
        InputKind::Tokens => tokens_per_sample.max(0.0) * f64::from(p.token_bytes),
        InputKind::Images => image_bytes(
            p.image_height,
            p.image_width,
            p.encoding,
            p.image_channels,
            p.image_dtype,
        ),
    }
}

/// Tokens one sample carries: the training sequence, or the inference prompt. A recommender has no
/// sequence: its sample is one index per embedding lookup (DLRM's sparse feature ids), so the hidden
/// sequence length changes nothing (issue 16).
fn tokens_per_sample(s: &Scenario) -> f64 {
    if s.model.family == ModelFamily::Recommender {
        return f64::from(s.model.recommender.lookups_per_sample);
    }
    match s.mode {
        Mode::Training => f64::from(s.workload.seq_len),
        Mode::Inference => f64::from(s.inference.prompt_tokens),
    }
}

/// Host-to-device bandwidth of the scenario's GPU: its host link per direction (unified LPDDR
/// memory copies at its own bandwidth; an unsourced link is PCIe 5.0 x16), × the pageable fraction
/// when host buffers are not pinned.
pub fn host_to_device(s: &Scenario) -> f64 {
    let link = s.gpu.with_spec(|hw| match hw.host_link {
        Some(l) => l.per_direction().get(),
        None if matches!(hw.memory, MemoryTech::Lpddr5 | MemoryTech::Lpddr5x) => {
            hw.bandwidth().get()
        }
        None => FALLBACK_HOST_GB_S * 1e9,
    });
    let pinned = if s.timing.pinned_host_memory {
        1.0
    } else {
        s.timing.pageable_fraction.clamp(0.01, 1.0)
    };
    finite(link * pinned)
}

/// The input side of a step, given the compute time of one optimizer step on this GPU (seconds).
pub fn input_transfer(s: &Scenario, compute_s: f64) -> InputTransfer {
    let p = &s.input;
    let sample = finite(sample_bytes(p, tokens_per_sample(s)));
    let batch = sample * f64::from(s.workload.micro_batch.max(1));
    let prefetch = batch * f64::from(p.gpu_prefetch_batches);
    let bandwidth = host_to_device(s);
    let step_bytes = batch * f64::from(s.workload.grad_accum_steps.max(1));
    let transfer_s = if bandwidth > 0.0 {
        finite(step_bytes / bandwidth)
    } else {
        0.0
    };
    let hidden_share = hidden_share(p, s.timing.pinned_host_memory, transfer_s, compute_s);
    InputTransfer {
        sample_bytes: Bytes(sample),
        batch_bytes: Bytes(batch),
        gpu_resident: Bytes(batch + prefetch),
        gpu_prefetch: Bytes(prefetch),
        host_staging: Bytes(batch * f64::from(p.host_staging_batches)),
        bandwidth: BytesPerSec(bandwidth),
        transfer_s,
        hidden_share,
        exposed_s: transfer_s * (1.0 - hidden_share),
    }
}

/// min(1, compute ÷ transfer) when a prefetched batch copies on a side stream from pinned memory
/// (Harris 2012); 0 otherwise. A zero-length copy counts as fully hidden.
pub fn hidden_share(p: &InputPipeline, pinned: bool, transfer_s: f64, compute_s: f64) -> f64 {
    if p.gpu_prefetch_batches == 0 || !pinned {
        return 0.0;
    }
    if transfer_s <= 0.0 {
        return 1.0;
    }
    finite(compute_s / transfer_s).clamp(0.0, 1.0)
}

/// Input bytes resident on the GPU (the memory estimate's hook; see the module docs).
pub fn gpu_input_bytes(s: &Scenario) -> Bytes {
    input_transfer(s, 0.0).gpu_resident
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}
