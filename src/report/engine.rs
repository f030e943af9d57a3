//! A serving engine's startup lines as the engine would print them (its wording and rounding,
//! docs/engines/vllm.md §4 and §6, sglang.md §4), and the budget behind them, term by term.

use crate::estimator::engines::{EngineFigures, EngineKind};
use crate::format::grouped;
use crate::units::{Bytes, GIB, MemoryUnit};

/// vLLM's `format_gib`: GiB rounded to two decimals.
fn gib(b: Bytes) -> String {
    format!("{:.2}", b.get() / GIB)
}

/// The lines the engine prints at startup, for this estimate.
pub fn printed_lines(f: &EngineFigures) -> Vec<String> {
    match f.kind {
        EngineKind::Vllm => vllm_lines(f),
        EngineKind::Sglang => sglang_lines(f),
    }
}

fn vllm_lines(f: &EngineFigures) -> Vec<String> {
    let t = grouped(f.max_model_len);
    let concurrency = format!(
        "Maximum concurrency for {t} tokens per request: {:.2}x",
        f.max_concurrency
    );
    let mut out = Vec::new();
    match f.version {
        v if v.starts_with("0.6.4") => {
            out.push(format!(
                "Memory profiling results: total_gpu_memory={}GiB … kv_cache_size={}GiB gpu_memory_utilization={:.2}",
                gib(f.device),
                gib(f.kv_budget),
                f.fraction
            ));
            out.push(format!(
                "# GPU blocks: {}, # CPU blocks: {}",
                f.blocks, f.cpu_blocks
            ));
            out.push(concurrency);
        }
        v if v.contains("V0") => {
            out.push(format!(
                "the current vLLM instance can use total_gpu_memory ({}GiB) x gpu_memory_utilization ({:.2}) = {}GiB",
                gib(f.device),
                f.fraction,
                gib(f.requested)
            ));
            out.push(format!(
                "model weights take {}GiB; non_torch_memory takes {}GiB; PyTorch activation peak memory takes {}GiB; the rest of the memory reserved for KV Cache is {}GiB.",
                gib(f.weights),
                gib(f.non_torch),
                gib(f.activation_peak),
                gib(f.kv_budget)
            ));
            out.push(format!(
                "# cuda blocks: {}, # CPU blocks: {}",
                f.blocks, f.cpu_blocks
            ));
            out.push(concurrency);
        }
        v if v.starts_with("0.34") => {
            out.push(format!(
                "Available KV cache memory: {} GiB",
                gib(f.kv_budget)
            ));
            out.push(format!(
                "GPU KV cache size: {} tokens, {concurrency}",
                grouped(f.tokens)
            ));
        }
        _ => {
            out.push(format!(
                "Available KV cache memory: {} GiB",
                gib(f.kv_budget)
            ));
            out.push(format!("GPU KV cache size: {} tokens", grouped(f.tokens)));
            out.push(concurrency);
        }
    }
    if f.too_small {
        out.push(format!(
            "ValueError: To serve at least one request with the model's max seq len ({t}), more KV cache is needed than the available KV cache memory ({} GiB).{}",
            gib(f.kv_budget),
            estimated_max_len(f.longest_len)
        ));
    }
    out
}

/// vLLM's sentence naming the longest length that fits (`_check_enough_kv_cache_memory`: printed
/// only when it is above 0), with a leading space.
fn estimated_max_len(longest: f64) -> String {
    if longest > 0.0 {
        // vLLM prints the integer without separators.
        format!(
            " Based on the available memory, the estimated maximum model length is {longest:.0}."
        )
    } else {
        String::new()
    }
}

/// vLLM sized to the request where `vllm serve` without `--max-model-len` would take the model's
/// whole context and refuse to start: one line saying so, with the longest length that fits.
pub fn default_context_line(f: &EngineFigures) -> Option<String> {
    f.model_context_refused.then(|| {
        format!(
            "without --max-model-len vLLM takes the model's context ({} tokens) and would not start: one such request needs more KV cache than {} GiB.{} Pass --max-model-len.",
            grouped(f.model_context),
            gib(f.kv_budget),
            estimated_max_len(f.longest_len)
        )
    })
}

fn sglang_lines(f: &EngineFigures) -> Vec<String> {
    let pool = f.kv_pool.get() / GIB;
    let tokens = f.tokens;
    let mut out = vec![if f.latent {
        format!("KV Cache is allocated. #tokens: {tokens}, KV size: {pool:.2} GB")
    } else {
        let half = pool / 2.0;
        format!(
            "KV Cache is allocated. #tokens: {tokens}, K size: {half:.2} GB, V size: {half:.2} GB"
        )
    }];
    if f.too_small {
        // 0.5.23 model_executor/pool_configurator.py (no token) or tp_worker.py's assertion (one).
        out.push(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
                .to_owned(),
        );
    } else if tokens < f.max_model_len {
        // 0.5.23 managers/tp_worker.py get_worker_info's warning (the pool caps requests).
        out.push(format!(
            "KV pool holds {tokens} tokens, fewer than --context-length {}. One full-length request cannot fit, so long requests will be refused or truncated at serving time.",
            f.max_model_len
        ));
    }
    out.push(format!(
        "max_total_num_tokens={tokens}, chunked_prefill_size={}, max_running_requests={}, context_len={}",
        f.batched_tokens, f.max_requests, f.max_model_len
    ));
    out
}

/// Why: the budget the engine computes, term by term, in `unit`.
pub fn budget_lines(f: &EngineFigures, unit: MemoryUnit) -> Vec<String> {
    let m = |b: Bytes| unit.format(b);
    let mut out = Vec::new();
    match f.kind {
        EngineKind::Vllm => {
            out.push(format!(
                "budget: {} × gpu_memory_utilization {:.2} = {}",
                m(f.device),
                f.fraction,
                m(f.requested)
            ));
            out.push(format!(
                "minus weights {}, profile-run activations {} ({} tokens over {} requests), non-torch {}, CUDA graphs {}",
                m(f.weights),
                m(f.activation_peak),
                grouped(f.batched_tokens),
                grouped(f.max_requests),
                m(f.non_torch),
                m(f.cudagraph)
            ));
            if f.held_back.get() > 0.0 {
                out.push(format!(
                    "minus {} held back by the extensible cache: free memory after warmup (without the \
                     CUDA context and NCCL's buffers) less its margin of max(1 GiB, 0.75 × activations)",
                    m(f.held_back)
                ));
            }
        }
        EngineKind::Sglang => {
            out.push(format!(
                "free before the weights {} × mem_fraction_static {:.3} = {}",
                m(f.device),
                f.fraction,
                m(f.requested)
            ));
            out.push(format!(
                "minus weights {}, recurrent-state pool {}",
                m(f.weights),
                m(f.state_pool)
            ));
        }
    }
    out.push(match f.kind {
        EngineKind::Vllm => format!(
            "= KV budget {}: {} blocks of {} tokens × {} B per block = {} (rules of vLLM {})",
            m(f.kv_budget),
            grouped(f.blocks),
            grouped(f.block_tokens),
            grouped(f.block_bytes),
            m(f.kv_pool),
            f.version
        ),
        EngineKind::Sglang => format!(
            "= KV budget {}: {} tokens × {} B per token (page {}) = {} (rules of SGLang {})",
            // `rest` less the recurrent-state pool the line above took from it.
            m(Bytes((f.kv_budget.get() - f.state_pool.get()).max(0.0))),
            grouped(f.tokens),
            grouped(f.block_bytes),
            grouped(f.block_tokens),
            m(f.kv_pool),
            f.version
        ),
    });
    out
}
