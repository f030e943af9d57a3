//! The hardware catalog: GPUs (and other accelerators) and memory technologies, every entry with its
//! source and confidence tag. Static data: a lookup is a `match`, it never allocates.
//!
//! Figures come from `../shared/reference/formulas-hardware-sources.md` §2 (devices) and §3 (memory
//! technologies); confidence tags follow that file: [P] primary, [T] verbatim transcription, [S]
//! consistent secondary sources, [D] derived by arithmetic, [U] unverified. A figure that is only [U]
//! is kept as `None` (shown as unknown) unless the entry says it is unverified in `compute_confidence`.
//!
//! Units: capacity is entered in the unit the vendor used (GB = 10^9 B or GiB = 2^30 B, recorded in
//! [`Capacity`]); bandwidth in GB/s (10^9 B/s); compute in dense TFLOP/s (10^12), sparse shown apart.
//! Links are stored **per direction**; [`Link::quoted_gb_s`] keeps the vendor's figure and how it
//! was quoted (NVIDIA's NVLink 600/900 GB/s are both directions added).

mod article;
mod figures;
mod gpus;
mod memory_tech;

use serde::{Deserialize, Serialize};

pub use article::{ArticleTech, article_tech};
pub use figures::{Capacity, Confidence, Link, Quoted};
pub use gpus::{CUDA_RUNTIME_RESERVE_GIB, gpu, gpu_ref};
pub use memory_tech::{MemoryTech, TechSpec, tech};

use crate::tensor::Dtype;
use crate::units::{Bytes, BytesPerSec, FlopsPerSec};

listed_enum! {
    /// Catalog GPUs. Serialized by variant name in scenario files, so never rename a variant
    /// (add `#[serde(alias)]` if one must change).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum GpuId {
        V100Sxm32,
        A100Pcie40,
        A100Sxm40,
        A100Pcie80,
        A100Sxm80,
        #[default]
        H100Sxm,
        H100Pcie,
        H200,
        B200,
        L40S,
        T4,
        Rtx3090,
        Rtx4090,
        Rtx5090,
        Mi250X,
        Mi300X,
        AppleM2Ultra,
        AppleM3Ultra,
        Snapdragon865,
        TpuV4,
        TpuV5e,
    }
}

impl GpuId {
    /// The catalog entry.
    pub fn spec(self) -> GpuSpec {
        gpu(self)
    }

    pub fn name(self) -> &'static str {
        gpu(self).name
    }
}

/// Memory capacity of a catalog GPU (what the vendor quotes, as binary bytes: see [`Capacity`]).
pub fn capacity(id: GpuId) -> Bytes {
    gpu(id).capacity.bytes()
}

/// What a program can allocate on a catalog GPU ([`GpuSpec::usable`]).
pub fn usable(id: GpuId) -> Bytes {
    gpu_ref(id).usable()
}

/// Peak throughput of one element type: dense, and with 2:4 structured sparsity where quoted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub dense_tflops: f64,
    pub sparse_tflops: Option<f64>,
}

/// Peaks per compute type (tensor/matrix units where the device has them). `None`: not supported or
/// not sourced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    /// FP32 (non-tensor / vector).
    pub fp32: Option<Peak>,
    pub tf32: Option<Peak>,
    /// FP16/BF16 tensor with FP32 accumulate.
    pub fp16: Option<Peak>,
    pub fp8: Option<Peak>,
    pub int8: Option<Peak>,
    pub int4: Option<Peak>,
}

impl Peaks {
    /// Dense peak for computing in `dtype`. A type the device has no units for runs on the next wider
    /// units (INT4 → INT8 → FP8 → FP16 → TF32 → FP32; TF32 → FP32), the way frameworks upcast.
    pub fn dense(&self, dtype: Dtype) -> Option<FlopsPerSec> {
        let chain: &[Option<Peak>] = match dtype {
            Dtype::Int4 => &[
                self.int4, self.int8, self.fp8, self.fp16, self.tf32, self.fp32,
            ],
            Dtype::Int8 => &[self.int8, self.fp8, self.fp16, self.tf32, self.fp32],
            Dtype::Fp8E4M3 | Dtype::Fp8E5M2 => &[self.fp8, self.fp16, self.tf32, self.fp32],
            Dtype::Fp16 | Dtype::Bf16 => &[self.fp16, self.tf32, self.fp32],
            Dtype::Tf32 => &[self.tf32, self.fp32],
            Dtype::Fp32 => &[self.fp32],
        };
        chain
            .iter()
            .flatten()
            .map(|p| FlopsPerSec::from_tflops(p.dense_tflops))
            .find(|p| p.get().is_finite() && p.get() > 0.0)
    }
}

/// A GPU or accelerator of the catalog (or a custom one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub name: &'static str,
    pub memory: MemoryTech,
    pub capacity: Capacity,
    /// What the runtime keeps of `capacity`, GiB: the device memory minus the total that
    /// `torch.cuda.mem_get_info` (`cudaMemGetInfo`) reports, the most any process can hold. Zero
    /// where no source gives it (non-NVIDIA devices, custom GPUs).
    pub runtime_reserve_gib: f64,
    /// Peak memory bandwidth, GB/s.
    pub bandwidth_gb_s: f64,
    pub peaks: Peaks,
    /// GPU-GPU link (`None`: only through the host).
    pub gpu_link: Option<Link>,
    /// Host link (`None`: unified memory or not sourced).
    pub host_link: Option<Link>,
    /// Board power, W.
    pub tdp_w: Option<f64>,
    /// Measured load-to-use DRAM latency, ns (markdewing/AI_kernels `latency/README.md`, cycles at
    /// boost clock [D]).
    pub latency_ns: Option<f64>,
    /// Where the memory and bandwidth figures come from.
    pub source: &'static str,
    pub confidence: Confidence,
    /// Confidence of the compute peaks (some are only [U]).
    pub compute_confidence: Confidence,
    /// Caveats (what the vendor number means, what differs between sources).
    pub note: &'static str,
}

impl GpuSpec {
    /// The memory a program can allocate: `capacity` minus the runtime's reserve (what
    /// `cudaMemGetInfo` reports as total). Fit and headroom are measured against it, since the
    /// CUDA context and everything a process allocates come out of it.
    pub fn usable(&self) -> Bytes {
        Bytes((self.capacity.bytes().get() - self.runtime_reserve_gib * crate::units::GIB).max(0.0))
    }
    pub fn bandwidth(&self) -> BytesPerSec {
        BytesPerSec::from_gb_per_s(self.bandwidth_gb_s)
    }
    /// Roofline ridge point for computing in `dtype`: peak FLOP/s ÷ peak B/s (Williams et al. 2009).
    pub fn ridge(&self, dtype: Dtype) -> Option<f64> {
        let peak = self.peaks.dense(dtype)?;
        let bw = self.bandwidth().get();
        (bw > 0.0).then(|| peak.get() / bw)
    }
}
