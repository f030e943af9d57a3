//! Which GPU a scenario runs on.

use serde::{Deserialize, Serialize};

use crate::hardware::{GpuId, MemoryTech};

/// A GPU of the catalog, or one described by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum GpuChoice {
    Catalog(GpuId),
    Custom(CustomGpu),
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
    /// Memory capacity in GB (10^9 B), as vendors quote it.
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
