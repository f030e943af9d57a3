//! NVIDIA entries (source notes in the parent module and on each entry).

use super::super::{Capacity, Confidence, GpuSpec, Link, MemoryTech, Peaks};
use super::{NV, PCIE3, PCIE4, PCIE5, d, ds};

/// A100 compute (whitepaper Table 1 [T]): FP32 19.5, TF32 156 (312), FP16/BF16 312 (624), INT8 624 (1248).
const A100_PEAKS: Peaks = Peaks {
    fp32: d(19.5),
    tf32: ds(156.0, 312.0),
    fp16: ds(312.0, 624.0),
    fp8: None,
    int8: ds(624.0, 1248.0),
    int4: None,
};

/// GH100 SXM compute (glennklockwood transcription of the H100 datasheet [S]); H200 shares it.
/// TF32 989 in the datasheet is the sparse figure; dense is 494.7.
const GH100_SXM_PEAKS: Peaks = Peaks {
    fp32: d(66.9),
    tf32: ds(494.7, 989.0),
    fp16: ds(989.4, 1979.0),
    fp8: ds(1979.0, 3958.0),
    int8: ds(1979.0, 3958.0),
    int4: None,
};

pub(super) const V100_SXM32: GpuSpec = GpuSpec {
    name: "V100 SXM2 32GB",
    memory: MemoryTech::Hbm2,
    capacity: Capacity::Gib(32.0),
    bandwidth_gb_s: 900.0,
    peaks: Peaks {
        fp32: d(15.7),
        fp16: d(125.0),
        ..NV.peaks
    },
    gpu_link: Some(Link::bidir("NVLink 2", 300.0)),
    host_link: PCIE3,
    tdp_w: Some(300.0),
    latency_ns: Some(300.0),
    source: "A100 whitepaper Table 1, V100 column [T]; NVLink/TDP [S]",
    confidence: Confidence::Transcribed,
    compute_confidence: Confidence::Transcribed,
    note: "No INT8 tensor cores. Latency: 460 cycles pointer chase (markdewing/AI_kernels) [D].",
    ..NV
};

pub(super) const A100_PCIE40: GpuSpec = GpuSpec {
    name: "A100 40GB PCIe",
    capacity: Capacity::Gib(40.0),
    bandwidth_gb_s: 1555.0,
    peaks: A100_PEAKS,
    gpu_link: Some(Link::bidir("NVLink bridge (2 GPUs)", 600.0)),
    host_link: PCIE4,
    tdp_w: Some(250.0),
    source: "A100 whitepaper [T]; form-factor rows [S]",
    confidence: Confidence::Transcribed,
    compute_confidence: Confidence::Transcribed,
    ..NV
};

pub(super) const A100_SXM40: GpuSpec = GpuSpec {
    name: "A100 40GB SXM4",
    capacity: Capacity::Gib(40.0),
    bandwidth_gb_s: 1555.0,
    peaks: A100_PEAKS,
    gpu_link: Some(Link::bidir("NVLink 3", 600.0)),
    host_link: PCIE4,
    tdp_w: Some(400.0),
    source: "A100 whitepaper [T]; NVLink 12 × 50 GB/s; TDP [S]",
    confidence: Confidence::Transcribed,
    compute_confidence: Confidence::Transcribed,
    note: "kipply takes 1.5 TB/s and 300 GB/s per NVLink direction for this part.",
    ..NV
};

pub(super) const A100_PCIE80: GpuSpec = GpuSpec {
    name: "A100 80GB PCIe",
    memory: MemoryTech::Hbm2e,
    capacity: Capacity::Gib(80.0),
    bandwidth_gb_s: 1935.0,
    peaks: A100_PEAKS,
    gpu_link: Some(Link::bidir("NVLink bridge (2 GPUs)", 600.0)),
    host_link: PCIE4,
    tdp_w: Some(300.0),
    source: "NVIDIA A100 datasheet via 2 sources [S]",
    compute_confidence: Confidence::Transcribed,
    ..NV
};

pub(super) const A100_SXM80: GpuSpec = GpuSpec {
    name: "A100 80GB SXM4",
    memory: MemoryTech::Hbm2e,
    capacity: Capacity::Gib(80.0),
    bandwidth_gb_s: 2039.0,
    peaks: A100_PEAKS,
    gpu_link: Some(Link::bidir("NVLink 3", 600.0)),
    host_link: PCIE4,
    tdp_w: Some(400.0),
    source: "NVIDIA A100 datasheet via 2 sources [S]",
    compute_confidence: Confidence::Transcribed,
    ..NV
};

pub(super) const H100_SXM: GpuSpec = GpuSpec {
    name: "H100 SXM5",
    memory: MemoryTech::Hbm3,
    capacity: Capacity::Gib(80.0),
    // vLLM's log on an H100 80GB: "total_gpu_memory (79.19GiB)" (gateway-api-inference-extension #550).
    runtime_reserve_gib: 80.0 - 79.19,
    bandwidth_gb_s: 3350.0,
    peaks: GH100_SXM_PEAKS,
    gpu_link: Some(Link::bidir("NVLink 4", 900.0)),
    host_link: PCIE5,
    tdp_w: Some(700.0),
    source: "glennklockwood.com H100 table from the datasheet, several copies [S]",
    ..NV
};

pub(super) const H100_PCIE: GpuSpec = GpuSpec {
    name: "H100 PCIe",
    memory: MemoryTech::Hbm2e,
    capacity: Capacity::Gib(80.0),
    // vLLM's log on an H100 80GB: "total_gpu_memory (79.19GiB)" (gateway-api-inference-extension #550).
    runtime_reserve_gib: 80.0 - 79.19,
    bandwidth_gb_s: 2000.0,
    peaks: Peaks {
        fp32: d(51.0),
        tf32: ds(378.0, 756.0),
        fp16: ds(756.0, 1513.0),
        fp8: ds(1513.0, 3026.0),
        int8: ds(1513.0, 3026.0),
        int4: None,
    },
    gpu_link: Some(Link::bidir("NVLink bridge", 600.0)),
    host_link: PCIE5,
    tdp_w: Some(350.0),
    source: "cli99/llm-analysis gpu_configs (756/1513); lamonoai/gpumap [S]",
    note: "TDP quoted 300–350 W; the upper figure is used.",
    ..NV
};

pub(super) const H200: GpuSpec = GpuSpec {
    name: "H200 SXM",
    memory: MemoryTech::Hbm3e,
    capacity: Capacity::Gib(141.0),
    bandwidth_gb_s: 4800.0,
    peaks: GH100_SXM_PEAKS,
    gpu_link: Some(Link::bidir("NVLink 4", 900.0)),
    host_link: PCIE5,
    tdp_w: Some(700.0),
    source: "NVIDIA H200 figures [S]; same GH100 compute as H100 SXM",
    ..NV
};

pub(super) const B200: GpuSpec = GpuSpec {
    name: "B200 (HGX, 1000 W)",
    memory: MemoryTech::Hbm3e,
    capacity: Capacity::Gib(180.0),
    bandwidth_gb_s: 8000.0,
    peaks: Peaks {
        fp32: d(75.0),
        tf32: ds(1100.0, 2200.0),
        fp16: ds(2250.0, 4500.0),
        fp8: ds(4500.0, 9000.0),
        int8: ds(4500.0, 9000.0),
        int4: None,
    },
    gpu_link: Some(Link::bidir("NVLink 5", 1800.0)),
    tdp_w: Some(1000.0),
    latency_ns: Some(438.0),
    source: "glennklockwood.com (HGX column), docs.vultr.com HGX B200 [S]",
    note: "192 GB physical (8 stacks); HGX exposes ~180 GB per GPU (1,440 GB per 8 GPUs, \
           nvidia-smi 179.1 GiB). FP32 quoted ~75–80 (lower used). FP4 9000 (18000) dense \
           (sparse). Host link not sourced.",
    ..NV
};

pub(super) const L40_S: GpuSpec = GpuSpec {
    name: "L40S",
    memory: MemoryTech::Gddr6,
    capacity: Capacity::Gib(48.0),
    bandwidth_gb_s: 864.0,
    peaks: Peaks {
        fp32: d(91.6),
        tf32: ds(183.0, 366.0),
        fp16: ds(362.05, 733.0),
        fp8: ds(733.0, 1466.0),
        int8: ds(733.0, 1466.0),
        int4: None,
    },
    host_link: PCIE4,
    tdp_w: Some(350.0),
    source: "L40S datasheet transcriptions (mullet.se, omegaco.ae) [S]",
    note: "No NVLink: GPU-GPU traffic goes over PCIe. GDDR6 with ECC.",
    ..NV
};

pub(super) const T4: GpuSpec = GpuSpec {
    name: "T4",
    memory: MemoryTech::Gddr6,
    capacity: Capacity::Gib(16.0),
    bandwidth_gb_s: 320.0,
    peaks: Peaks {
        fp32: d(8.1),
        fp16: d(65.0),
        int8: d(130.0),
        int4: d(260.0),
        ..NV.peaks
    },
    host_link: PCIE3,
    tdp_w: Some(70.0),
    source: "T4 datasheet figures in ≥3 sources [S]",
    note: "FP16 65 TFLOP/s is mixed precision. No NVLink.",
    ..NV
};

pub(super) const RTX3090: GpuSpec = GpuSpec {
    name: "RTX 3090",
    memory: MemoryTech::Gddr6x,
    capacity: Capacity::Gib(24.0),
    // vLLM #10517 on an RTX 3090: "total_gpu_memory=23.58GiB".
    runtime_reserve_gib: 24.0 - 23.58,
    bandwidth_gb_s: 936.0,
    peaks: Peaks {
        fp32: d(35.6),
        tf32: ds(35.6, 71.0),
        fp16: ds(71.0, 142.0),
        int8: ds(284.0, 568.0),
        ..NV.peaks
    },
    host_link: PCIE4,
    tdp_w: Some(350.0),
    source: "GA102 whitepaper values quoted in repos [T]; INT8/TDP [S]",
    compute_confidence: Confidence::Transcribed,
    note: "FP16 with FP32 accumulate; 142 (284) with FP16 accumulate. NVLink bridge \
           bandwidth unverified (112.5 GB/s), not used.",
    ..NV
};

pub(super) const RTX4090: GpuSpec = GpuSpec {
    name: "RTX 4090",
    memory: MemoryTech::Gddr6x,
    capacity: Capacity::Gib(24.0),
    bandwidth_gb_s: 1008.0,
    peaks: Peaks {
        fp32: d(82.6),
        tf32: ds(82.6, 165.2),
        fp16: ds(165.2, 330.4),
        fp8: ds(330.3, 660.6),
        int8: ds(660.6, 1321.2),
        int4: None,
    },
    host_link: PCIE4,
    tdp_w: Some(450.0),
    latency_ns: Some(252.0),
    source: "Ada whitepaper v2.1 App. A, quoted verbatim [T]",
    confidence: Confidence::Transcribed,
    compute_confidence: Confidence::Transcribed,
    note: "FP16/FP8 with FP32 accumulate (FP16 accumulate doubles them). No NVLink.",
    ..NV
};

pub(super) const RTX5090: GpuSpec = GpuSpec {
    name: "RTX 5090",
    memory: MemoryTech::Gddr7,
    capacity: Capacity::Gib(32.0),
    bandwidth_gb_s: 1792.0,
    peaks: Peaks {
        fp32: d(104.8),
        fp16: ds(209.5, 419.0),
        ..NV.peaks
    },
    host_link: PCIE5,
    tdp_w: Some(575.0),
    latency_ns: Some(389.0),
    source: "memory, bandwidth, FP32, TDP [S]",
    compute_confidence: Confidence::Unverified,
    note: "Tensor FP16 is a [U] estimate (680 tensor cores × clock vs 4090), FP32 accumulate. \
           FP4 \"3352 AI TOPS\" is sparse. No NVLink.",
    ..NV
};
