//! What a serving engine prints at startup, as the estimate reports it (allocation-free; the text of
//! the lines is written by `report::engine_lines`).

use super::{sglang, vllm};
use crate::estimator::resolve::Resolved;
use crate::estimator::{MAX_STAGE_CLASSES, MemoryEstimate};
use crate::scenario::{Mode, ServingEngine};
use crate::units::Bytes;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EngineKind {
    #[default]
    Vllm,
    Sglang,
}

impl EngineKind {
    pub const fn label(self) -> &'static str {
        match self {
            EngineKind::Vllm => "vLLM",
            EngineKind::Sglang => "SGLang",
        }
    }
}

/// The engine's sizing of one GPU, term by term: with pipeline stages, vLLM's rank that sets the
/// common block count (the reported peak may be another stage's when `kv_cache_memory_bytes` fixes
/// every rank's pool budget), SGLang's largest stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EngineFigures {
    pub kind: EngineKind,
    /// The release whose rules were applied (its label).
    pub version: &'static str,
    /// The device memory the rule starts from: vLLM `total_gpu_memory` (`mem_get_info` total);
    /// SGLang the free memory before the weights (`pre_model_load_memory`).
    pub device: Bytes,
    /// vLLM `gpu_memory_utilization` or SGLang `mem_fraction_static`, as applied.
    pub fraction: f64,
    /// vLLM: `total × U` (the instance's budget). SGLang: `pre × mem_fraction_static`.
    pub requested: Bytes,
    /// Weights as loaded on this GPU (the estimate's weights; with pipeline stages under vLLM, those
    /// of the stage that sets the common block count).
    pub weights: Bytes,
    /// vLLM: the profiling run's activation peak (dummy batch or sampler). SGLang: 0 (not profiled).
    pub activation_peak: Bytes,
    /// Non-PyTorch memory the rule charges (CUDA context growth, library workspaces).
    pub non_torch: Bytes,
    /// The CUDA context the instance holds beside what its budget charged: vLLM 0.6.4 none (its
    /// non-torch term is everything on the device outside torch, the context included); later vLLM
    /// the context at CUDA initialisation (the budget's baseline is taken after it, and the kernels
    /// the profile loads are in `non_torch`); SGLang the running process's context (its free memory
    /// is read before the kernels load). docs/gpu-overheads.md §2.
    pub context: Bytes,
    /// vLLM 0.20+: the CUDA-graph estimate subtracted from the budget.
    pub cudagraph: Bytes,
    /// SGLang hybrid models: the recurrent-state pool taken from the budget first.
    pub state_pool: Bytes,
    /// vLLM 0.34's extensible cache: what its headroom rule keeps off the budget (free memory after
    /// warmup, which lacks the CUDA context and NCCL's buffers, less its margin of
    /// max(1 GiB, 0.75 × the activation peak)) when that is the tighter bound; 0 elsewhere.
    pub held_back: Bytes,
    /// What the KV cache may take on this GPU (vLLM "Available KV cache memory"; SGLang `rest`).
    pub kv_budget: Bytes,
    /// What the pool allocates: blocks × bytes per block (vLLM), (tokens + page) × cell (SGLang).
    pub kv_pool: Bytes,
    /// Tokens per block (vLLM `block_size`, raised for hybrid models) or SGLang `page_size`.
    pub block_tokens: f64,
    /// Bytes of one block across the layers of one KV-cache group (vLLM) or of one token (SGLang cell).
    pub block_bytes: f64,
    /// vLLM: `num_gpu_blocks`. SGLang: pages.
    pub blocks: f64,
    /// V0: `# CPU blocks` (`swap_space` ÷ block bytes).
    pub cpu_blocks: f64,
    /// The printed capacity: vLLM "GPU KV cache size: N tokens" (V0: blocks × block size); SGLang
    /// `max_total_num_tokens`.
    pub tokens: f64,
    /// vLLM `max_model_len` / SGLang `context_len`.
    pub max_model_len: f64,
    /// vLLM "Maximum concurrency for max_model_len tokens per request" (two decimals as printed).
    pub max_concurrency: f64,
    /// vLLM `max_num_seqs` / SGLang `max_running_requests`, as resolved.
    pub max_requests: f64,
    /// vLLM `max_num_batched_tokens` / SGLang `chunked_prefill_size`, as resolved.
    pub batched_tokens: f64,
    /// The engine would not start: vLLM's KV budget does not hold one request of `max_model_len`;
    /// SGLang's pool is below `sglang::MIN_POOL_TOKENS` (a pool below `context_len` starts, with
    /// requests capped to it: `sglang::pool_request_limit`).
    pub too_small: bool,
    /// vLLM: the longest `max_model_len` whose one request the KV budget holds, when the engine
    /// would refuse (`too_small`, or `model_context_refused`: bisected up to that length, as vLLM's
    /// "the estimated maximum model length is N"); 0 otherwise, and for SGLang.
    pub longest_len: f64,
    /// vLLM V1 with `max_model_len` 0 (sized to the request) where the model's context
    /// (`model.transformer.max_positions`) is longer: that context, which `vllm serve` without
    /// `--max-model-len` takes (vllm 0.34 `config/model.py` `_get_and_verify_max_len`); else 0.
    pub model_context: f64,
    /// The KV budget does not hold one request of `model_context`: vLLM run without
    /// `--max-model-len` would refuse to start.
    pub model_context_refused: bool,
    /// The pool is one latent buffer (MLA: SGLang prints "KV size", not K and V).
    pub latent: bool,
    /// vLLM with pipeline stages: each stage class's pool (the common block count × the class's
    /// bytes per block) and what its instance holds, in `MemoryEstimate::stages`' slots. All
    /// `None` without stages, and for SGLang.
    pub stages: [Option<StagePool>; MAX_STAGE_CLASSES],
}

/// One pipeline stage class's share of an engine's memory (vLLM: every rank allocates the smallest
/// rank's block count with its own layers' bytes per block).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StagePool {
    /// The KV pool one GPU of the class allocates.
    pub pool: Bytes,
    /// What one GPU's instance holds: weights, profiled activations, non-torch memory, CUDA graphs
    /// and the pool.
    pub held: Bytes,
}

impl EngineFigures {
    /// Requests of `request` tokens (prompt + generated) the KV cache holds at once: the printed
    /// token capacity over one request, at most `max_num_seqs` / `max_running_requests` (vLLM's
    /// "Maximum concurrency" is the same division by `max_model_len`).
    pub fn requests_at_once(&self, request: f64) -> u64 {
        if !self.tokens.is_finite() || request <= 0.0 {
            return 0;
        }
        // `as` saturates; token counts are far below u64::MAX.
        let by_cache = (self.tokens / request).floor().max(0.0) as u64;
        by_cache.min(self.max_requests.max(1.0) as u64)
    }
}

/// Whether [`of`] gives figures: an inference scenario served by vLLM or SGLang.
pub fn applies(r: &Resolved) -> bool {
    r.scenario.mode == Mode::Inference
        && matches!(
            r.scenario.inference.engine,
            Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_))
        )
}

/// The figures of the scenario's engine, `None` unless it is an inference scenario served by vLLM
/// or SGLang. Reads the memory estimate's weights (vLLM: every stage class's, with its layers;
/// SGLang: the peak stage's) and the model's layout.
pub fn of(r: &Resolved, memory: &MemoryEstimate) -> Option<EngineFigures> {
    if r.scenario.mode != Mode::Inference {
        return None;
    }
    match r.scenario.inference.engine {
        Some(ServingEngine::Vllm(v)) => Some(vllm::figures(r, memory, &v)),
        Some(ServingEngine::Sglang(s)) => Some(sglang::figures(r, memory, &s)),
        _ => None,
    }
}
