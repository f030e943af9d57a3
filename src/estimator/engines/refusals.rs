//! What a serving engine itself refuses, which no memory total shows: a KV cache too small for one
//! request of the engine's maximum length (vLLM does not start; SGLang starts and caps requests at
//! its pool), and a request longer than the engine's context (the engine rejects or cuts it).

use super::figures::EngineFigures;
use super::llamacpp::Buffers;
use crate::estimator::{Diagnostic, Diagnostics};
use crate::scenario::Scenario;

/// Marks the scenario as not fitting when the engine would not start, and warns when the
/// scenario's request (prompt + generated tokens) is longer than the engine admits:
/// - vLLM refuses to start when the KV cache holds less than one `max_model_len` request
///   (`vllm/v1/core/kv_cache_utils.py` `check_enough_kv_cache_memory`, the `ValueError` the report
///   prints) and rejects a prompt longer than `max_model_len` (`vllm/v1/engine/processor.py`
///   `_validate_model_input`); SGLang rejects input longer than `context_len`
///   (`sglang/srt/managers/tokenizer_manager.py` `_validate_one_request`).
/// - vLLM sized to the request (`max_model_len` 0) is warned about when `vllm serve` without
///   `--max-model-len`, which takes the model's whole context, would refuse to start.
/// - llama.cpp gives each of `-np` slots `n_ctx / -np` cells (llama-context.cpp ~290–305): a
///   longer request is truncated or context-shifted by `llama-server`, not served whole.
pub fn check(
    s: &Scenario,
    figures: Option<&EngineFigures>,
    llamacpp: Option<&Buffers>,
    fits: &mut bool,
    d: &mut Diagnostics,
) {
    if context_above_model(s) {
        d.insert(Diagnostic::EngineContextAboveModel);
    }
    let request = f64::from(s.inference.prompt_tokens) + f64::from(s.inference.generated_tokens);
    if let Some(f) = figures {
        if f.too_small {
            *fits = false;
            d.insert(Diagnostic::EngineWouldNotStart);
        }
        if f.model_context_refused {
            d.insert(Diagnostic::EngineDefaultContextRefused);
        }
        if f.max_model_len > 0.0 && request > f.max_model_len {
            d.insert(Diagnostic::RequestLongerThanEngineContext);
        }
        if let Some(limit) = super::sglang::pool_request_limit(f).filter(|_| !f.too_small) {
            d.insert(Diagnostic::EnginePoolBelowContext);
            if request > limit {
                d.insert(Diagnostic::RequestLongerThanEngineContext);
            }
        }
    }
    if let Some(b) = llamacpp {
        let per_slot = f64::from(b.stream_cells());
        if per_slot > 0.0 && request > per_slot {
            d.insert(Diagnostic::RequestLongerThanEngineContext);
        }
    }
}

/// vLLM's `max_model_len` or SGLang's `context_length` above the model's context: vLLM raises
/// "User-specified max_model_len (…) is greater than the derived max_model_len" unless
/// `VLLM_ALLOW_LONG_MAX_MODEL_LEN` is set (vllm 0.34 `config/model.py` `_get_and_verify_max_len`),
/// SGLang likewise unless `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN` (sglang 0.5.23
/// `srt/configs/model_config.py` `_derive_context_length`). The derived length is taken as
/// `max_positions` (vLLM multiplies it by a linear or dynamic RoPE factor; not YaRN, Llama 3's or
/// LongRoPE's, whose configs already give the scaled length).
fn context_above_model(s: &Scenario) -> bool {
    use crate::scenario::ServingEngine;
    let model = s.model.transformer.max_positions;
    let set = match s.inference.engine {
        Some(ServingEngine::Vllm(v)) => v.max_model_len,
        Some(ServingEngine::Sglang(g)) => g.context_length,
        _ => 0,
    };
    model > 0 && set > model
}
