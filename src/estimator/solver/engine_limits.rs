//! "Largest batch" and "largest context" for a scenario served by an engine that sizes its KV cache
//! at startup (vLLM, SGLang, llama.cpp). The engine takes its budget (vLLM
//! `gpu_memory_utilization`, SGLang `mem_fraction_static`, llama.cpp's `-c` cells) whatever the
//! load, and what runs is bounded by that cache and the engine's own limits — vLLM prints the
//! requests at once as its maximum concurrency and refuses a prompt over `max_model_len` — not by
//! where the live memory of the requests would reach the GPU's capacity, which a bisection on the
//! peak would find.

use super::Solved;
use crate::estimator::engines::llamacpp::kv::{MAX_SLOTS, sizes, slots_holding, streams};
use crate::estimator::estimate;
use crate::scenario::{LlamaCpp, Mode, Scenario, ServingEngine};

/// `Some` for an inference scenario served by vLLM, SGLang or llama.cpp: how many requests of
/// `prompt_tokens + generated_tokens` tokens the engine's cache holds at once.
/// - vLLM / SGLang: the token capacity the engine prints ("GPU KV cache size: N tokens",
///   `max_total_num_tokens`) over one request, capped by `max_num_seqs` / `max_running_requests`
///   (the same ratio vLLM prints for `max_model_len` as "Maximum concurrency", vllm
///   `v1/core/kv_cache_utils.py` `get_max_concurrency_for_kv_cache_config`; docs/engines/vllm.md).
/// - llama.cpp: `-np` slots each get `n_ctx / -np` cells (llama-context.cpp ~290–305,
///   docs/engines/llamacpp.md); the largest `-np` at the current `-c` whose slot still holds one
///   request; with `--kv-unified` the slots share the `n_ctx` cells: `n_ctx / request` requests.
///
/// `NoneFits` when the engine would not start (weights over the GPU, a KV budget below one
/// request) or not one request fits.
pub fn engine_batch(s: &Scenario) -> Option<Solved> {
    if s.mode != Mode::Inference {
        return None;
    }
    let request = u64::from(s.inference.prompt_tokens) + u64::from(s.inference.generated_tokens);
    let request = request.max(1);
    match s.inference.engine {
        Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_)) => {
            let e = estimate(s);
            let f = e.engine?;
            if !e.memory.fits || f.too_small || !f.tokens.is_finite() {
                return Some(Solved::NoneFits);
            }
            Some(match f.requests_at_once(request as f64) {
                0 => Solved::NoneFits,
                n => Solved::Found(n),
            })
        }
        Some(ServingEngine::LlamaCpp(l)) => {
            if !estimate(s).memory.fits {
                return Some(Solved::NoneFits);
            }
            Some(llamacpp_slots(&l, request))
        }
        _ => None,
    }
}

/// [`slots_holding`] as the solver reports it.
fn llamacpp_slots(l: &LlamaCpp, request: u64) -> Solved {
    match slots_holding(l, request) {
        0 => Solved::NoneFits,
        MAX_SLOTS => Solved::AtLimit(u64::from(MAX_SLOTS)),
        n => Solved::Found(u64::from(n)),
    }
}

/// `Some` for an inference scenario whose engine fixes the longest request: vLLM with
/// `max_model_len`, SGLang with `context_length` (or its token pool less 2 when that is shorter:
/// `sglang::pool_request_limit`), llama.cpp with `-c` (one slot's
/// `GGML_PAD(n_ctx / -np, 256)` cells, or all `n_ctx` with `--kv-unified`). The answer is the longest prompt beside the scenario's
/// generated tokens: the engine's limit minus them (vLLM `_validate_model_input` rejects a longer
/// prompt; llama-server cuts or shifts it). `NoneFits` when the engine would not start or not one
/// prompt token fits; `None` (bisect on the peak) when the limit follows the request (0 = auto).
pub fn engine_context(s: &Scenario) -> Option<Solved> {
    if s.mode != Mode::Inference {
        return None;
    }
    let limit = match s.inference.engine {
        Some(ServingEngine::Vllm(v)) if v.max_model_len > 0 => u64::from(v.max_model_len),
        Some(ServingEngine::Sglang(g)) if g.context_length > 0 => u64::from(g.context_length),
        Some(ServingEngine::LlamaCpp(l)) if l.n_ctx > 0 => {
            let (n_ctx, _, _, seqs) = sizes(&l, l.n_ctx);
            u64::from(n_ctx / streams(&l, seqs).max(1))
        }
        _ => return None,
    };
    let e = estimate(s);
    if !e.memory.fits {
        return Some(Solved::NoneFits);
    }
    // SGLang with a pool shorter than `context_length` serves requests up to the pool's cap.
    let limit = match e
        .engine
        .as_ref()
        .and_then(crate::estimator::engines::sglang::pool_request_limit)
    {
        // `as` saturates; the pool is a whole number of tokens ≥ 0.
        Some(pool) => limit.min(pool as u64),
        None => limit,
    };
    Some(
        match limit.saturating_sub(u64::from(s.inference.generated_tokens)) {
            0 => Solved::NoneFits,
            n => Solved::Found(n),
        },
    )
}
