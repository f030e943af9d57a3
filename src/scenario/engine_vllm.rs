//! vLLM's memory-relevant engine arguments, spelled as `vllm serve` spells them (without the
//! dashes). Derivation of what each one does: docs/engines/vllm.md (vLLM 0.34.0 and the older rules
//! by version). The tensor- and pipeline-parallel sizes are the scenario's `parallel.tp` / `parallel.pp`
//! (`--tensor-parallel-size` / `--pipeline-parallel-size` fill them).

use serde::{Deserialize, Serialize};

/// Which release's rules size the cache (docs/engines/vllm.md §6: the budget, the default block
/// size and utilization, and the printed lines changed between releases).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum VllmVersion {
    /// 0.6.4 (V0): `kv = total × U − torch peak − non-torch memory`, a global limit (PR #9352).
    V0_6_4,
    /// 0.6.5 – 0.10.x V0 engine: `kv = total × U − (weights + non-torch increase + activation
    /// peak increase)`, per instance (PR #10511); prints `# cuda blocks`.
    V0,
    /// V1 engine up to 0.19: the same three-term budget, chunked prefill always on, block 16,
    /// `GPU KV cache size = blocks // groups × block`.
    V1,
    /// 0.21 – 0.33: the CUDA-graph memory estimate comes out of the budget (default on from 0.20),
    /// default U 0.92, tokens `int(concurrency × max_model_len)`.
    V1_21,
    /// 0.34: default block 64 and the extensible KV cache (U defaults to 1.0; sized after warmup).
    #[default]
    V1_34,
}

impl VllmVersion {
    pub const ALL: [VllmVersion; 5] = [
        VllmVersion::V0_6_4,
        VllmVersion::V0,
        VllmVersion::V1,
        VllmVersion::V1_21,
        VllmVersion::V1_34,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            VllmVersion::V0_6_4 => "0.6.4 (V0)",
            VllmVersion::V0 => "0.6.5 – 0.10 (V0)",
            VllmVersion::V1 => "0.7 – 0.19 (V1)",
            VllmVersion::V1_21 => "0.21 – 0.33 (V1)",
            VllmVersion::V1_34 => "0.34 (V1)",
        }
    }

    /// The V0 engine's rules (blocks printed, profile without chunked prefill).
    pub const fn is_v0(self) -> bool {
        matches!(self, VllmVersion::V0_6_4 | VllmVersion::V0)
    }
}

/// `--kv-cache-dtype` (vLLM and SGLang spell the common values alike).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum KvCacheDtype {
    /// `auto`: the model's compute type.
    #[default]
    Auto,
    Bfloat16,
    Float16,
    /// `fp8` (= `fp8_e4m3` on CUDA), 1 byte per element.
    Fp8,
    Fp8E4m3,
    Fp8E5m2,
}

impl KvCacheDtype {
    pub const ALL: [KvCacheDtype; 6] = [
        KvCacheDtype::Auto,
        KvCacheDtype::Bfloat16,
        KvCacheDtype::Float16,
        KvCacheDtype::Fp8,
        KvCacheDtype::Fp8E4m3,
        KvCacheDtype::Fp8E5m2,
    ];

    /// The spelling on the command line.
    pub const fn arg(self) -> &'static str {
        match self {
            KvCacheDtype::Auto => "auto",
            KvCacheDtype::Bfloat16 => "bfloat16",
            KvCacheDtype::Float16 => "float16",
            KvCacheDtype::Fp8 => "fp8",
            KvCacheDtype::Fp8E4m3 => "fp8_e4m3",
            KvCacheDtype::Fp8E5m2 => "fp8_e5m2",
        }
    }

    /// Parses a command-line value (`bf16`/`fp16` accepted as SGLang spells them).
    pub fn parse(s: &str) -> Option<KvCacheDtype> {
        Some(match s {
            "auto" => KvCacheDtype::Auto,
            "bfloat16" | "bf16" => KvCacheDtype::Bfloat16,
            "float16" | "fp16" | "half" => KvCacheDtype::Float16,
            "fp8" => KvCacheDtype::Fp8,
            "fp8_e4m3" => KvCacheDtype::Fp8E4m3,
            "fp8_e5m2" => KvCacheDtype::Fp8E5m2,
            _ => return None,
        })
    }

    /// Bytes per element; `auto` = the model's (`model_bytes`).
    pub fn bytes(self, model_bytes: f64) -> f64 {
        match self {
            KvCacheDtype::Auto => model_bytes,
            KvCacheDtype::Bfloat16 | KvCacheDtype::Float16 => 2.0,
            KvCacheDtype::Fp8 | KvCacheDtype::Fp8E4m3 | KvCacheDtype::Fp8E5m2 => 1.0,
        }
    }
}

/// vLLM's engine arguments that change memory. 0 (or `None`) means "the version's default", as an
/// omitted flag does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Vllm {
    /// The release whose rules apply.
    pub version: VllmVersion,
    /// `--gpu-memory-utilization`: the fraction of the device's total memory this instance may use.
    /// `None`: 0.9 (≤ 0.19), 0.92 (0.20 – 0.33), 1.0 with 0.34's extensible KV cache. Valid: (0, 1].
    pub gpu_memory_utilization: Option<f64>,
    /// `--max-model-len`: the longest request (prompt + output). 0: the scenario's prompt +
    /// generated tokens (vLLM without the flag takes the model's context, `max_positions`: a
    /// pasted command line fills that, and the estimate warns when it would not fit).
    pub max_model_len: u32,
    /// `--max-num-seqs`: requests per step; 0 = the default by GPU (256, or 1,024 on ≥ 70 GiB cards
    /// other than the A100; vllm `engine/arg_utils.py`).
    pub max_num_seqs: u32,
    /// `--max-num-batched-tokens`: tokens per step (the profiling run's dummy batch); 0 = the
    /// default by GPU (2,048 / 8,192 / 16,384; V0 without chunked prefill: max(max_model_len, 2,048)).
    pub max_num_batched_tokens: u32,
    /// `--block-size`: tokens per KV page; 0 = 16 (≤ 0.33) or 64 (0.34).
    pub block_size: u32,
    /// `--kv-cache-dtype`.
    pub kv_cache_dtype: KvCacheDtype,
    /// `--enforce-eager`: no CUDA graphs (nothing for their memory).
    pub enforce_eager: bool,
    /// CUDA-graph memory the profiler subtracts (0.20+ with graphs), GiB; `None`: 0.49 GiB, the one
    /// published reading (docs/engines/vllm.md §4, club-3090 #104: U 0.88 ≡ 0.8592 on 23.58 GiB).
    pub cudagraph_memory_gib: Option<f64>,
    /// `--enable-prefix-caching`: with hybrid (Mamba) models a request keeps 2 state pages instead of 1.
    pub enable_prefix_caching: bool,
    /// `--kv-cache-memory-bytes`: a fixed KV budget per GPU, bypassing the utilization rule (0 = off).
    pub kv_cache_memory_bytes: u64,
    /// `--swap-space` (V0): host KV blocks per GPU, GiB (`# CPU blocks`). Default 4.
    pub swap_space: f64,
    /// `--mamba-ssm-cache-dtype float32`: recurrent (SSM / delta-rule) state in FP32 instead of the
    /// model's type (the convolution state keeps the model's type).
    pub mamba_ssm_cache_fp32: bool,
    /// The device's total memory as `torch.cuda.mem_get_info` reports it (vLLM's `total_gpu_memory`),
    /// GiB; `None`: the catalog's figure for the GPU (docs/engines/README.md).
    pub total_gpu_memory_gib: Option<f64>,
}

impl Default for Vllm {
    fn default() -> Self {
        Vllm {
            version: VllmVersion::default(),
            gpu_memory_utilization: None,
            max_model_len: 0,
            max_num_seqs: 0,
            max_num_batched_tokens: 0,
            block_size: 0,
            kv_cache_dtype: KvCacheDtype::Auto,
            enforce_eager: false,
            cudagraph_memory_gib: None,
            enable_prefix_caching: false,
            kv_cache_memory_bytes: 0,
            swap_space: 4.0,
            mamba_ssm_cache_fp32: false,
            total_gpu_memory_gib: None,
        }
    }
}
