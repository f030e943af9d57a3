//! GPU and accelerator datasheets. Source: `../shared/reference/formulas-hardware-sources.md` §2, which
//! names the primary documents (NVIDIA A100 whitepaper Table 1, Ada whitepaper v2.1 App. A, GA102
//! whitepaper, cloud.google.com/tpu/docs/v4 and /v5e, glennklockwood.com transcriptions of NVIDIA
//! datasheets, AMD launch tables, cli99/llm-analysis `gpu_configs`). Peaks are dense; sparse (2:4) apart.
//!
//! Links: PCIe 3.0 x16 is quoted "32 GB/s" (both directions), 4.0 x16 "64 GB/s", 5.0 x16 "128 GB/s"
//! (A100/H100 datasheets, as the reference transcribes them); NVLink 300/600/900/1800 GB/s are both
//! directions added (kipply: "Nvidia is adding up 300GB/s into each chip and 300GB/s out").

use super::{Capacity, Confidence, GpuId, GpuSpec, Link, MemoryTech, Peak, Peaks};
use nvidia::*;
use others::*;

mod nvidia;
mod others;

pub(super) const fn ds(dense: f64, sparse: f64) -> Option<Peak> {
    Some(Peak {
        dense_tflops: dense,
        sparse_tflops: Some(sparse),
    })
}

pub(super) const fn d(dense: f64) -> Option<Peak> {
    Some(Peak {
        dense_tflops: dense,
        sparse_tflops: None,
    })
}

pub(super) const PCIE3: Option<Link> = Some(Link::bidir("PCIe 3.0 x16", 32.0));
pub(super) const PCIE4: Option<Link> = Some(Link::bidir("PCIe 4.0 x16", 64.0));
pub(super) const PCIE5: Option<Link> = Some(Link::bidir("PCIe 5.0 x16", 128.0));

pub(super) const BASE: GpuSpec = GpuSpec {
    name: "",
    memory: MemoryTech::Hbm2,
    capacity: Capacity::Gib(0.0),
    runtime_reserve_gib: 0.0,
    bandwidth_gb_s: 0.0,
    peaks: Peaks {
        fp32: None,
        tf32: None,
        fp16: None,
        fp8: None,
        int8: None,
        int4: None,
    },
    gpu_link: None,
    host_link: None,
    tdp_w: None,
    latency_ns: None,
    source: "",
    confidence: Confidence::Secondary,
    compute_confidence: Confidence::Secondary,
    note: "",
};

/// The CUDA runtime's reserve where no log gives a card's own: the mean of the two cards with
/// both nvidia-smi's capacity and `mem_get_info`'s total published, H100 80GB 79.65 − 79.19 =
/// 0.46 GiB (vLLM log of gateway-api-inference-extension #550; nvidia-smi 81,559 MiB, sglang.md
/// §3) and RTX 3090 24.00 − 23.58 = 0.42 GiB (vLLM #10517).
pub const CUDA_RUNTIME_RESERVE_GIB: f64 = 0.44;

/// The base of an NVIDIA entry: [`BASE`] with the CUDA runtime's reserve.
pub(super) const NV: GpuSpec = GpuSpec {
    runtime_reserve_gib: CUDA_RUNTIME_RESERVE_GIB,
    ..BASE
};

/// The whole catalog as one static table indexed by `GpuId as usize`, built at compile time from
/// [`gpu`], so hot paths can borrow an entry instead of copying it.
static CATALOG: [GpuSpec; GpuId::COUNT] = {
    let mut table = [BASE; GpuId::COUNT];
    let mut i = 0;
    while i < GpuId::COUNT {
        let id = GpuId::ALL[i];
        table[id as usize] = gpu(id);
        i += 1;
    }
    table
};

/// The catalog entry of `id`, borrowed: the same entry as [`gpu`] without copying it (the estimator
/// reads a few fields of it per evaluation).
pub fn gpu_ref(id: GpuId) -> &'static GpuSpec {
    CATALOG.get(id as usize).unwrap_or(&BASE)
}

/// The catalog entry of `id` (a copy of a constant: no allocation).
pub const fn gpu(id: GpuId) -> GpuSpec {
    match id {
        GpuId::V100Sxm32 => V100_SXM32,
        GpuId::A100Pcie40 => A100_PCIE40,
        GpuId::A100Sxm40 => A100_SXM40,
        GpuId::A100Pcie80 => A100_PCIE80,
        GpuId::A100Sxm80 => A100_SXM80,
        GpuId::H100Sxm => H100_SXM,
        GpuId::H100Pcie => H100_PCIE,
        GpuId::H200 => H200,
        GpuId::B200 => B200,
        GpuId::L40S => L40_S,
        GpuId::T4 => T4,
        GpuId::Rtx3090 => RTX3090,
        GpuId::Rtx4090 => RTX4090,
        GpuId::Rtx5090 => RTX5090,
        GpuId::Mi250X => MI250_X,
        GpuId::Mi300X => MI300_X,
        GpuId::AppleM2Ultra => APPLE_M2_ULTRA,
        GpuId::AppleM3Ultra => APPLE_M3_ULTRA,
        GpuId::Snapdragon865 => SNAPDRAGON865,
        GpuId::TpuV4 => TPU_V4,
        GpuId::TpuV5e => TPU_V5E,
    }
}
