//! Inputs of the time and cost model.

use serde::{Deserialize, Serialize};

/// Which all-reduce algorithm sets the latency term (the bandwidth term is the same for all,
/// nccl-tests `doc/PERFORMANCE.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CollectiveAlgorithm {
    /// The faster of the two, as NCCL's tuner picks by size and platform.
    #[default]
    Auto,
    /// Ring: 2(n−1) latency steps.
    Ring,
    /// Double binary tree (NCCL ≥ 2.4): 2·log₂n latency steps.
    Tree,
    /// Inference tensor-parallel all-reduces inside a node run a P2P one-/two-shot all-reduce
    /// (PyTorch symmetric memory, as gpt-fast's `ENABLE_INTRA_NODE_COMM`; vLLM and SGLang always do:
    /// `estimator::performance::p2p_allreduce`); every other collective as `Auto`.
    P2p,
}

/// Whose memory-bound kernels a training step's layers run (the parts model's elementwise work,
/// docs/time-model.md "Eager elementwise work").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElementwiseKernels {
    /// From the implementation: Megatron-Core's fused kernels, and torchtune under `compile`, run
    /// `Fused`; every other profile (Hugging Face, LitGPT, eager torchtune) runs `Eager`.
    #[default]
    Auto,
    /// One kernel per norm, bias-dropout-add and activation (Megatron-LM's fused kernels,
    /// Korthikanti et al. 2022 §4; what torch.compile makes of a layer, and Liger's or Unsloth's
    /// kernels when they patch the layers' modules — `Auto` cannot tell: Liger's
    /// `apply_liger_kernel_to_*` called after the model is built swaps only RoPE,
    /// docs/frameworks/unsloth-liger.md).
    Fused,
    /// Eager PyTorch: every op of an RMSNorm, the rotary embedding and SwiGLU is a kernel of its own,
    /// with FP32 upcasts (measured: tests/data/measured/eager-elementwise-traffic.json).
    Eager,
}

impl ElementwiseKernels {
    pub const ALL: [ElementwiseKernels; 3] = [
        ElementwiseKernels::Auto,
        ElementwiseKernels::Fused,
        ElementwiseKernels::Eager,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            ElementwiseKernels::Auto => "From the implementation",
            ElementwiseKernels::Fused => "Fused",
            ElementwiseKernels::Eager => "Eager PyTorch",
        }
    }
}

/// Inputs of the time and cost model (bandwidth issue): achievable fractions and prices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timing {
    /// Achievable fraction of peak FLOP/s. Valid: [0.01, 1].
    pub compute_efficiency: f64,
    /// Achievable fraction of peak memory bandwidth. Valid: [0.01, 1]. kipply measured 0.87–0.90 on A100.
    pub memory_efficiency: f64,
    /// Achievable fraction of link bandwidth for collectives. Valid: [0.01, 1].
    pub link_efficiency: f64,
    /// Share of communication hidden behind compute. Valid: [0, 1].
    pub comm_overlap: f64,
    /// Share of offload / tier traffic hidden by prefetch. Valid: [0, 1].
    pub offload_overlap: f64,
    /// Host buffers pinned (page-locked): host transfers run at the pinned bandwidth.
    pub pinned_host_memory: bool,
    /// Pageable host-to-device bandwidth as a fraction of pinned (example measurement 3.96/12.18,
    /// reference §4). Valid: [0.01, 1].
    pub pageable_fraction: f64,
    /// Inter-node network per GPU, GB/s per direction (e.g. 400 Gb/s InfiniBand NDR = 50 GB/s).
    /// Valid: 0.001 ..= 10^6.
    pub internode_gb_s: f64,
    /// Per-message latency α of a collective step, µs. Valid: 0 ..= 10^4. kipply uses ~8 µs
    /// (V100 NVLink).
    pub link_latency_us: f64,
    /// Which all-reduce latency term applies.
    pub collective: CollectiveAlgorithm,
    /// NVMe read/write bandwidth per GPU for ZeRO-Infinity offload, GB/s. An assumption to set for
    /// your drives (a PCIe 4.0 x4 SSD reads ~7 GB/s). Valid: 0.001 ..= 10^6.
    pub nvme_gb_s: f64,
    /// Memory bandwidth a node's CPUs reach in the optimizer update when it is offloaded
    /// (ZeRO-Offload's CPU-Adam, Megatron-Core's `--optimizer-cpu-offload`), GB/s, shared by the
    /// node's GPUs: the update reads and writes each parameter's weight, master copy and
    /// optimizer states and reads its gradient, the bytes it moves on a GPU. An assumption to
    /// set for your hosts: THUDM/slime issue #1139 profiled 9.6 s of CPU Adam per step for
    /// GLM-4.5-Air (106 B parameters, 26.5 B a node of 8 × H100) under Megatron's CPU
    /// optimizer, 32 B per parameter (BF16 weight, FP32 master, moments and main gradient, which
    /// Megatron accumulates in FP32 under `--bf16`): ≈ 88 GB/s (a lower bound: the profiler
    /// slowed the step from 12 s to 18 s).
    /// Valid: 0.001 ..= 10^6.
    pub host_optimizer_gb_s: f64,
    /// Tokens to train on (training) or to generate (inference), for time and cost. Valid: ≥ 0.
    pub token_budget: f64,
    /// Price per GPU-hour in the user's currency. Valid: ≥ 0.
    pub price_per_gpu_hour: f64,
    /// The measured constants of the step-time parts model (transformer training;
    /// docs/time-model.md). `compute_efficiency` above still times what has no parts model
    /// (CNN, recommender, inference phases).
    pub parts: PartsTiming,
}

/// Named, adjustable constants of the step-time parts model (docs/time-model.md), each with its
/// source. Two are fitted to the calibration set of issue 13 and say so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PartsTiming {
    /// Share of the tensor-core kernels' benchmark rates (calculon's GEMM efficiency curve, and
    /// the fused attention efficiencies below) a full training step reaches on Ampere-class GPUs
    /// (16-bit dense peak < 600 TFLOP/s); memory-bound kernels are timed by bytes without it.
    /// FITTED to Narayanan et al. 2021 Table 1 (the only fitted A100 constant): it absorbs what
    /// the parts model leaves out (kernel launch gaps, host overhead, stragglers). Valid: [0.05, 1].
    pub gemm_efficiency: f64,
    /// The same for Hopper-class and newer GPUs (16-bit dense peak ≥ 600 TFLOP/s), whose GEMMs
    /// follow tilelang's measured H800 curve (`parts::gemm::Curve::Hopper`). FITTED to the
    /// Megatron-Core r0.8 H100 weak-scaling table. Valid: [0.05, 1].
    pub gemm_efficiency_hopper: f64,
    /// Fused (flash) attention forward, fraction of the 16-bit peak: FlashAttention-2 (Dao 2023,
    /// abstract and §4.1) reaches 50–73 % of A100 peak; the middle is taken. Valid: [0.05, 1].
    pub flash_forward_efficiency: f64,
    /// Fused attention backward, fraction of peak: FlashAttention-2 §4.1 Fig. 6, backward runs
    /// below forward (≈ 45–63 %). Valid: [0.05, 1].
    pub flash_backward_efficiency: f64,
    /// Share of the tensor-parallel collectives hidden behind GEMMs (Megatron-Core
    /// `--tp-comm-overlap`, Transformer Engine userbuffers; 0 for Megatron-LM 2021, which ran
    /// them on the critical path, Narayanan et al. 2021 §4.2). Valid: [0, 1].
    pub tp_overlap: f64,
    /// Share of the pipeline point-to-point sends hidden behind compute (Megatron-Core
    /// overlaps them; Megatron-LM 2021 did not). Valid: [0, 1].
    pub pp_overlap: f64,
    /// Training: whether the layers' norms, rotary embedding and activation run fused or as eager
    /// PyTorch's separate kernels (≈ 3.7× the bytes of a fused Llama layer, forward and backward;
    /// `Auto` follows the profile).
    pub elementwise: ElementwiseKernels,
    /// Inference: GPU time of one kernel beyond its bytes and FLOPs (launch, ramp-up, tail), µs.
    /// Vidur's A100 profile of Llama-2-7B at one token (microsoft/vidur
    /// `data/profiling/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv`): its GEMVs take
    /// 5.1 µs + bytes ÷ 1.64 TB/s (±1.5 µs), its norms, RoPE, activation and add 2–7 µs (median 5).
    /// Valid: 0 ..= 1000.
    pub kernel_floor_us: f64,
    /// Inference in eager PyTorch: host time to issue one op from Python, µs. Measured here with
    /// Transformers 5.24 / torch 2.15 on CPU at tiny sizes (scripts/measure/decode_ops_probe.py,
    /// tests/data/measured/hf-decode-ops.json); a GPU host's own CPU decides the real figure.
    /// Valid: 0 ..= 10^4.
    pub eager_op_us: f64,
    /// Hugging Face `generate`: host time of its loop per generated token beyond the model's
    /// forward (input preparation, logits processors, stopping checks), µs; measured as above.
    /// Valid: 0 ..= 10^6.
    pub generate_step_us: f64,
    /// Hugging Face `generate` and preallocated caches: the forward is replayed from a CUDA graph
    /// (`torch.compile(mode="reduce-overhead")` with a static cache, as gpt-fast): no op is issued
    /// from Python, and the layer runs fused kernels. vLLM and SGLang follow their own flags
    /// (`enforce_eager`, `disable_cuda_graph`).
    pub cuda_graphs: bool,
    /// Inference in PyTorch (Hugging Face `generate`, a preallocated cache, gpt-fast): a decode
    /// step's weight-only INT8 matrices (`quantization.weights: Int8PerChannel`) are read at
    /// this share of the bandwidth BF16 weights reach: the dequantising GEMV is slower per byte.
    /// torchao's batch-1 decode table (pytorch/ao@fd6e4b1 `torchao/quantization/README.md`,
    /// torch.compile, `int8wo` against `Base (bfloat16)`): A100 Llama-2-7B 1,131 / 1,419 GB/s
    /// (0.797), Llama-3-8B 1,151 / 1,436 (0.802); H100 Llama-3.1-8B 1,495 / 1,905 (0.785).
    /// Serving engines run their own kernels and are not slowed. Valid: [0.05, 1].
    pub int8_weight_only_read: f64,
    /// The same for INT4 weights in groups (`Int4Group`), torchao's `int4wo-64` (tinygemm
    /// `_weight_int4pack_mm`, the kernel gpt-fast's int4 runs): A100 751 / 1,419 GB/s (0.530),
    /// 763 / 1,436 (0.532); H100 1,019 / 1,905 (0.535). Valid: [0.05, 1].
    pub int4_weight_only_read: f64,
}

impl Default for PartsTiming {
    fn default() -> Self {
        PartsTiming {
            gemm_efficiency: 0.72,
            gemm_efficiency_hopper: 0.56,
            flash_forward_efficiency: 0.6,
            flash_backward_efficiency: 0.5,
            tp_overlap: 0.0,
            pp_overlap: 0.0,
            elementwise: ElementwiseKernels::Auto,
            kernel_floor_us: 5.0,
            // Measured (tests/data/measured/hf-decode-ops.json; tests/inference_overhead.rs
            // holds both to the record).
            eager_op_us: 12.0,
            generate_step_us: 460.0,
            cuda_graphs: false,
            int8_weight_only_read: 0.8,
            int4_weight_only_read: 0.53,
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            compute_efficiency: 0.5,
            memory_efficiency: 0.85,
            link_efficiency: 0.8,
            comm_overlap: 0.5,
            offload_overlap: 0.5,
            pinned_host_memory: true,
            pageable_fraction: 0.325,
            internode_gb_s: 50.0,
            link_latency_us: 5.0,
            collective: CollectiveAlgorithm::Auto,
            nvme_gb_s: 7.0,
            host_optimizer_gb_s: 88.0,
            token_budget: 1e12,
            price_per_gpu_hour: 2.5,
            parts: PartsTiming::default(),
        }
    }
}
