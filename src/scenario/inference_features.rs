//! Serving features that change what an inference step holds and how long it takes (issue 15
//! items 2 and 3): speculative decoding, prefix caching, chunked prefill, parallel sampling / beam
//! search, and KV-cache and weight offload to the host. Every default is "off": a file without this
//! section estimates exactly as before. Formulas and sources: `estimator/memory/serving.rs`,
//! docs/model.md §7.

use serde::{Deserialize, Serialize};

/// How draft tokens are proposed for speculative decoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpeculativeMethod {
    /// No speculative decoding: one token per target forward.
    #[default]
    Off,
    /// A separate, smaller draft model (Leviathan et al. 2023; vLLM `--speculative-config
    /// '{"model": …, "num_speculative_tokens": k}'`): its own weights and its own KV cache over the
    /// same tokens, `draft_*` fields below.
    DraftModel,
    /// Multi-token-prediction module (DeepSeek-V3 technical report §2.2): one extra transformer
    /// block of the target's shape plus a 2h × h projection, sharing the embedding and the output
    /// head; its own KV cache of one layer (vLLM `method: "deepseek_mtp"`).
    Mtp,
    /// EAGLE head (Li et al. 2024, EAGLE §3): one decoder layer of the target's shape plus a
    /// 2h × h feature projection, sharing the embedding and LM head; one layer of KV cache (vLLM
    /// `method: "eagle"`).
    Eagle,
}

impl SpeculativeMethod {
    pub const ALL: [SpeculativeMethod; 4] = [
        SpeculativeMethod::Off,
        SpeculativeMethod::DraftModel,
        SpeculativeMethod::Mtp,
        SpeculativeMethod::Eagle,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            SpeculativeMethod::Off => "off",
            SpeculativeMethod::DraftModel => "draft model",
            SpeculativeMethod::Mtp => "MTP module",
            SpeculativeMethod::Eagle => "EAGLE head",
        }
    }
}

/// Speculative decoding: k draft tokens proposed, then one target forward verifies k + 1 positions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Speculative {
    pub method: SpeculativeMethod,
    /// `num_speculative_tokens` k: draft tokens per verify step. Valid: 1 ..= 64.
    pub num_speculative_tokens: u32,
    /// Acceptance rate α: the chance the target accepts a draft token (Leviathan et al. 2023 §3.1);
    /// expected tokens per verify step (1 − α^(k+1)) / (1 − α). Valid: [0, 1].
    pub acceptance_rate: f64,
    /// Draft model parameters, billions (`DraftModel` only). Default: Llama-3.2-1B's 1.236 B
    /// (meta-llama/Llama-3.2-1B config.json: 16 layers, hidden 2048, 8 KV heads of 64).
    pub draft_params_b: f64,
    /// Draft model layers (`DraftModel` only).
    pub draft_layers: u32,
    /// Draft model KV heads (`DraftModel` only).
    pub draft_kv_heads: u32,
    /// Draft model head dimension (`DraftModel` only).
    pub draft_head_dim: u32,
}

impl Default for Speculative {
    fn default() -> Self {
        Speculative {
            method: SpeculativeMethod::Off,
            num_speculative_tokens: 4,
            acceptance_rate: 0.7,
            draft_params_b: 1.236,
            draft_layers: 16,
            draft_kv_heads: 8,
            draft_head_dim: 64,
        }
    }
}

impl Speculative {
    /// Reads vLLM's `--speculative-config` JSON (vllm 0.34 `config/speculative.py`
    /// `SpeculativeConfig`: `method`, `model`, `num_speculative_tokens`): `eagle` / `eagle3` → an
    /// EAGLE head, `deepseek_mtp` / `mtp` / `*_mtp` → an MTP module, `draft_model` (or a `model`
    /// without a method, unless its name says EAGLE) → a draft model with the default draft
    /// dimensions (Llama-3.2-1B; set `draft_*`). `Ok(None)`: a method without a model to hold
    /// (`ngram`, `suffix`, `medusa`, `mlp_speculator`), listed as not modelled.
    pub fn from_vllm_config(text: &str) -> Result<Option<Speculative>, String> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("--speculative-config is not JSON ({e})"))?;
        let method = v.get("method").and_then(|m| m.as_str()).unwrap_or("");
        let model = v.get("model").and_then(|m| m.as_str()).unwrap_or("");
        let method = match method {
            "eagle" | "eagle3" => SpeculativeMethod::Eagle,
            m if m == "mtp" || m.ends_with("_mtp") => SpeculativeMethod::Mtp,
            "draft_model" => SpeculativeMethod::DraftModel,
            "" if model.to_ascii_lowercase().contains("eagle") => SpeculativeMethod::Eagle,
            "" if !model.is_empty() => SpeculativeMethod::DraftModel,
            _ => return Ok(None),
        };
        let k = v
            .get("num_speculative_tokens")
            .and_then(serde_json::Value::as_u64)
            .ok_or("--speculative-config needs num_speculative_tokens")?;
        Ok(Some(Speculative {
            method,
            num_speculative_tokens: u32::try_from(k).unwrap_or(u32::MAX).clamp(1, 64),
            ..Speculative::default()
        }))
    }
}

/// How the `sequences_per_prompt` sequences of one prompt are produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sampling {
    /// n independent samples of one prompt (vLLM `SamplingParams.n`, HF `num_return_sequences`).
    #[default]
    Parallel,
    /// Beam search with `sequences_per_prompt` beams (HF `num_beams`, vLLM `beam_search`).
    Beam,
}

/// The serving features of an inference run. All off by default.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InferenceFeatures {
    pub speculative: Speculative,
    /// Fraction of the prompt that is a prefix shared by every concurrent request (a system prompt,
    /// few-shot examples), whose KV blocks are stored once (vLLM automatic prefix caching: full
    /// blocks only; SGLang RadixAttention). Needs dynamic batching. Valid: [0, 1].
    pub shared_prefix_fraction: f64,
    /// Chunked prefill: the prompt is prefilled in chunks of this many tokens (vLLM
    /// `max_num_batched_tokens`, SGLang `chunked_prefill_size`); 0 = the engine's own (vLLM V1's
    /// resolved `max_num_batched_tokens`, SGLang's resolved `chunked_prefill_size`), elsewhere the
    /// whole prompt in one forward. Valid: 0 ..= 10^7.
    pub prefill_chunk_tokens: u32,
    /// Sequences per prompt (parallel samples n or beam width b); 1 = one. Valid: 1 ..= 1024.
    pub sequences_per_prompt: u32,
    pub sampling: Sampling,
    /// Fraction of the KV cache kept in host memory and read over the host link by every decode
    /// step. Valid: [0, 1].
    pub kv_offload_fraction: f64,
    /// Fraction of the weights kept in host memory and streamed over the host link by every
    /// forward (vLLM `--cpu-offload-gb`). Valid: [0, 1].
    pub weights_offload_fraction: f64,
}

impl Default for InferenceFeatures {
    fn default() -> Self {
        InferenceFeatures {
            speculative: Speculative::default(),
            shared_prefix_fraction: 0.0,
            prefill_chunk_tokens: 0,
            sequences_per_prompt: 1,
            sampling: Sampling::Parallel,
            kv_offload_fraction: 0.0,
            weights_offload_fraction: 0.0,
        }
    }
}
