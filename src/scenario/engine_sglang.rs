//! SGLang's memory-relevant server arguments, spelled as `python -m sglang.launch_server` spells
//! them (without the dashes). Derivation: docs/engines/sglang.md (sglang 0.5.23, the 0.4.9 rule).
//! `--tp-size` / `--pp-size` are the scenario's `parallel.tp` / `parallel.pp`.

use serde::{Deserialize, Serialize};

use super::KvCacheDtype;

/// Which release's default `mem_fraction_static` applies (docs/engines/sglang.md §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SglangVersion {
    /// 0.4.9 `server_args.py`: reserved = (2.8 + tp·pp/10) GiB below 35 GiB, (9.5 + tp·pp/2) below
    /// 90 GiB, (12 + tp·pp/2) below 160 GiB, else 32 GiB.
    V0_4_9,
    /// 0.5.23 `arg_groups/memory_hook.py`: reserved from the chunked-prefill activations, TP, and the
    /// CUDA graphs (decode and prefill).
    #[default]
    V0_5_23,
}

impl SglangVersion {
    pub const ALL: [SglangVersion; 2] = [SglangVersion::V0_4_9, SglangVersion::V0_5_23];

    pub const fn label(self) -> &'static str {
        match self {
            SglangVersion::V0_4_9 => "0.4.9",
            SglangVersion::V0_5_23 => "0.5.23",
        }
    }
}

/// SGLang's server arguments that change memory. 0 (or `None`) means "the default", as an omitted
/// flag does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sglang {
    pub version: SglangVersion,
    /// `--mem-fraction-static`: the share of the free memory before the weights that weights and the
    /// KV pool may take. `None`: the version's default by GPU size and TP (sglang.md §3). Valid: (0, 1).
    pub mem_fraction_static: Option<f64>,
    /// `--max-running-requests`; 0 = `clamp(tokens / context × 512, 2048, 4096)`, ≤ tokens / 2.
    pub max_running_requests: u32,
    /// `--chunked-prefill-size`; 0 = by GPU size (2,048 … 16,384).
    pub chunked_prefill_size: u32,
    /// `--page-size`: tokens per page (pool rounded down to it; one padding page). Default 1.
    pub page_size: u32,
    /// `--kv-cache-dtype`.
    pub kv_cache_dtype: KvCacheDtype,
    /// `--context-length`; 0 = the scenario's prompt + generated tokens.
    pub context_length: u32,
    /// `--max-total-tokens`: a cap on the pool (0 = none).
    pub max_total_tokens: u32,
    /// `--cuda-graph-max-bs`; 0 = by GPU size and TP.
    pub cuda_graph_max_bs: u32,
    /// `--disable-cuda-graph`: no graph reserve in the default fraction.
    pub disable_cuda_graph: bool,
    /// `--swa-full-tokens-ratio`: sliding-window layers' pool as a share of the full layers'. Default 0.8.
    pub swa_full_tokens_ratio: f64,
    /// `--mamba-full-memory-ratio`: recurrent-state pool ÷ KV pool. Default 0.9.
    pub mamba_full_memory_ratio: f64,
    /// The device's total memory in MiB as nvidia-smi reports it (the default fraction's input);
    /// `None`: the catalog's figure (docs/engines/README.md).
    pub gpu_memory_mib: Option<f64>,
}

impl Default for Sglang {
    fn default() -> Self {
        Sglang {
            version: SglangVersion::default(),
            mem_fraction_static: None,
            max_running_requests: 0,
            chunked_prefill_size: 0,
            page_size: 1,
            kv_cache_dtype: KvCacheDtype::Auto,
            context_length: 0,
            max_total_tokens: 0,
            cuda_graph_max_bs: 0,
            disable_cuda_graph: false,
            swa_full_tokens_ratio: 0.8,
            mamba_full_memory_ratio: 0.9,
            gpu_memory_mib: None,
        }
    }
}
