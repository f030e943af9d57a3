//! AMD, Apple, Qualcomm and Google entries.

use super::super::{Capacity, Confidence, GpuSpec, Link, MemoryTech, Peaks};
use super::{BASE, PCIE5, d, ds};

pub(super) const MI250_X: GpuSpec = GpuSpec {
    name: "MI250X",
    memory: MemoryTech::Hbm2e,
    capacity: Capacity::Gib(128.0),
    bandwidth_gb_s: 3276.8,
    peaks: Peaks {
        fp32: d(95.7),
        fp16: d(383.0),
        int8: d(383.0),
        ..BASE.peaks
    },
    tdp_w: Some(560.0),
    source: "AMD launch table [S]; ROCm docs 220 CUs [T]",
    note: "Two GCDs of 64 GB / 1638.4 GB/s, each a separate device to software. FP32 95.7 \
           is matrix (47.9 vector). Infinity Fabric bandwidth unverified. TDP 500–560 W.",
    ..BASE
};

pub(super) const MI300_X: GpuSpec = GpuSpec {
    name: "MI300X",
    memory: MemoryTech::Hbm3,
    capacity: Capacity::Gib(192.0),
    bandwidth_gb_s: 5300.0,
    peaks: Peaks {
        fp32: d(163.4),
        tf32: ds(653.7, 1307.4),
        fp16: ds(1307.4, 2614.9),
        fp8: ds(2614.9, 5229.8),
        int8: ds(2614.9, 5229.8),
        int4: None,
    },
    gpu_link: Some(Link::bidir("Infinity Fabric 7 × 128 GB/s", 896.0)),
    host_link: PCIE5,
    tdp_w: Some(750.0),
    source: "MI300X datasheet copies [S]; ROCm arch table 304 CUs [T]",
    note: "Some sites list 2615 as dense FP16: that is the sparse figure.",
    ..BASE
};

pub(super) const APPLE_M2_ULTRA: GpuSpec = GpuSpec {
    name: "Apple M2 Ultra",
    memory: MemoryTech::Lpddr5,
    capacity: Capacity::Gib(192.0),
    // Metal lets the GPU wire at most `recommendedMaxWorkingSetSize` of the unified memory by
    // default: 144 GiB on a 192 GB M2 Ultra (raullenchai/Rapid-MLX PR #183's table), the 75 % that
    // llama.cpp prints on a 96 GB M2 Max ("recommendedMaxWorkingSetSize = 73728.00 MB", llama.cpp
    // issue #3213). macOS's `iogpu.wired_limit_mb` raises it; a custom GPU can model that.
    runtime_reserve_gib: 48.0,
    bandwidth_gb_s: 800.0,
    peaks: Peaks {
        fp32: d(27.0),
        ..BASE.peaks
    },
    source: "Apple/press tables [S]; 1024-bit × 6400 MT/s = 819.2 GB/s [D]",
    compute_confidence: Confidence::Unverified,
    note: "Unified memory (no host link). FP32 ~27 TFLOP/s is unverified; no tensor units.",
    ..BASE
};

pub(super) const APPLE_M3_ULTRA: GpuSpec = GpuSpec {
    name: "Apple M3 Ultra",
    memory: MemoryTech::Lpddr5,
    capacity: Capacity::Gib(512.0),
    bandwidth_gb_s: 819.2,
    source: "Apple newsroom quotes (\"over 800 GB/s\") [S]",
    compute_confidence: Confidence::Unverified,
    note: "Unified memory. Compute peak not sourced: time is shown as memory-bound only. Metal's default working-set limit on 512 GB is not sourced here: all of it is counted usable (the M2 Ultra keeps 75 %).",
    ..BASE
};

pub(super) const SNAPDRAGON865: GpuSpec = GpuSpec {
    name: "Snapdragon 865",
    memory: MemoryTech::Lpddr5,
    capacity: Capacity::Gib(16.0),
    bandwidth_gb_s: 44.0,
    peaks: Peaks {
        int8: d(15.0),
        ..BASE.peaks
    },
    source: "Qualcomm launch coverage [S]; LPDDR5-5500 × 64-bit = 44 GB/s [D]",
    compute_confidence: Confidence::Unverified,
    note: "\"15 TOPS\" AI engine is unverified (and a marketing INT8 figure). LPDDR4X-4266 \
           variant: 34.1 GB/s.",
    ..BASE
};

pub(super) const TPU_V4: GpuSpec = GpuSpec {
    name: "TPU v4",
    memory: MemoryTech::Hbm2,
    capacity: Capacity::Gib(32.0),
    bandwidth_gb_s: 1200.0,
    peaks: Peaks {
        fp16: d(275.0),
        int8: d(275.0),
        ..BASE.peaks
    },
    tdp_w: Some(192.0),
    source: "cloud.google.com/tpu/docs/v4 [P]",
    confidence: Confidence::Primary,
    compute_confidence: Confidence::Primary,
    note: "Capacity quoted in GiB. Power: measured 90/170/192 W min/mean/max (max used). \
           ICI 3D torus bandwidth not given.",
    ..BASE
};

pub(super) const TPU_V5E: GpuSpec = GpuSpec {
    name: "TPU v5e",
    memory: MemoryTech::Hbm2,
    capacity: Capacity::Gib(16.0),
    bandwidth_gb_s: 819.0,
    peaks: Peaks {
        fp16: d(197.0),
        int8: d(393.0),
        ..BASE.peaks
    },
    gpu_link: Some(Link::bidir("ICI (1600 Gb/s)", 400.0)),
    source: "cloud.google.com/tpu/docs/v5e [P]",
    confidence: Confidence::Primary,
    compute_confidence: Confidence::Primary,
    note: "16-bit is bf16. Power not given.",
    ..BASE
};
