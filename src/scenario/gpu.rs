//! Which GPU a scenario runs on.

use serde::{Deserialize, Serialize};

use crate::hardware::{
    Capacity, Confidence, GpuId, GpuSpec, Link, MemoryTech, Peak, Peaks, Quoted, gpu, gpu_ref,
};
use crate::units::Bytes;

/// A GPU of the catalog, or one described by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum GpuChoice {
    Catalog(GpuId),
    Custom(CustomGpu),
}

impl GpuChoice {
    /// The catalog entry, or one built from the [`CustomGpu`]. Never allocates (the custom GPU's name
    /// stays in the scenario; the spec says "Custom GPU").
    pub fn spec(&self) -> GpuSpec {
        match self {
            GpuChoice::Catalog(id) => gpu(*id),
            GpuChoice::Custom(c) => c.spec(),
        }
    }

    /// `f` applied to the GPU's spec, as [`GpuChoice::spec`] gives it, but a catalog entry is borrowed
    /// from the static table instead of copied (the estimator's per-evaluation paths read a few fields).
    pub fn with_spec<R>(&self, f: impl FnOnce(&GpuSpec) -> R) -> R {
        match self {
            GpuChoice::Catalog(id) => f(gpu_ref(*id)),
            GpuChoice::Custom(c) => f(&c.spec()),
        }
    }

    /// Memory capacity of the GPU, catalog or custom.
    pub fn capacity(&self) -> Bytes {
        self.with_spec(|g| g.capacity.bytes())
    }

    /// What a program can allocate on the GPU ([`crate::hardware::GpuSpec::usable`]): fit and
    /// headroom are measured against it.
    pub fn usable(&self) -> Bytes {
        self.with_spec(crate::hardware::GpuSpec::usable)
    }
}

impl Default for GpuChoice {
    fn default() -> Self {
        GpuChoice::Catalog(GpuId::H100Sxm)
    }
}

/// A GPU described by its headline figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CustomGpu {
    pub name: String,
    /// Memory capacity as the datasheet quotes it ("24 GB"), read as GiB: a datasheet's "GB" of
    /// DRAM is binary (`hardware::Capacity`). Fit is measured against all of it (no runtime
    /// reserve is known for a custom GPU).
    pub memory_gb: f64,
    /// Memory bandwidth in GB/s.
    pub bandwidth_gb_s: f64,
    /// Dense 16-bit tensor throughput, TFLOP/s.
    pub tflops_16: f64,
    /// Dense FP32 (non-tensor) throughput, TFLOP/s.
    pub tflops_32: f64,
    /// Dense FP8 tensor throughput, TFLOP/s; 0 = no FP8 units (FP8 then runs at the 16-bit rate).
    /// Valid: 0 ..= 10^5; below 0.001 counts as 0.
    pub tflops_8: f64,
    /// The memory technology (for latency and energy per bit in the comparison).
    pub memory_tech: MemoryTech,
    /// GPU-GPU link, GB/s per direction.
    pub link_gb_s: f64,
    /// Host link (PCIe), GB/s per direction.
    pub host_link_gb_s: f64,
    /// Board power, W.
    pub tdp_w: f64,
}

impl Default for CustomGpu {
    fn default() -> Self {
        CustomGpu {
            name: "Custom GPU".to_owned(),
            ..CustomGpu::unnamed()
        }
    }
}

impl CustomGpu {
    /// The default figures with an empty name: what [`Default`] gives, without allocating (the
    /// estimator's resolve pass reads the defaults on every estimate).
    pub fn unnamed() -> Self {
        CustomGpu {
            name: String::new(),
            memory_gb: 80.0,
            bandwidth_gb_s: 2000.0,
            tflops_16: 300.0,
            tflops_32: 20.0,
            tflops_8: 0.0,
            memory_tech: MemoryTech::Hbm3,
            link_gb_s: 300.0,
            host_link_gb_s: 32.0,
            tdp_w: 400.0,
        }
    }
}

impl CustomGpu {
    /// The GPU as the catalog describes devices: the numbers are the user's ([`Confidence::User`]).
    pub fn spec(&self) -> GpuSpec {
        let c = self;
        let pos = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        let peak = |x: f64| {
            pos(x).map(|t| Peak {
                dense_tflops: t,
                sparse_tflops: None,
            })
        };
        let link = |name, x: f64| {
            pos(x).map(|v| Link {
                name,
                quoted_gb_s: v,
                quoted: Quoted::PerDirection,
            })
        };
        GpuSpec {
            name: "Custom GPU",
            memory: c.memory_tech,
            capacity: Capacity::Gib(pos(c.memory_gb).unwrap_or(0.0)),
            runtime_reserve_gib: 0.0,
            bandwidth_gb_s: pos(c.bandwidth_gb_s).unwrap_or(0.0),
            peaks: Peaks {
                fp32: peak(c.tflops_32),
                tf32: None,
                fp16: peak(c.tflops_16),
                fp8: peak(c.tflops_8),
                int8: None,
                int4: None,
            },
            gpu_link: link("GPU link", c.link_gb_s),
            host_link: link("Host link", c.host_link_gb_s),
            tdp_w: pos(c.tdp_w),
            latency_ns: None,
            source: "entered by the user",
            confidence: Confidence::User,
            compute_confidence: Confidence::User,
            note: "",
        }
    }
}
