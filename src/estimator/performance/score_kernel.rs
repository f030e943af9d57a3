//! How an attention kernel executes a layer's scores: which keys it computes for a query, as the
//! step-time model needs it (the FLOP counts of `flops.rs` keep the convention of every key).
//!
//! - **Materialised**: every key is scored and the mask applied after (eager attention, Megatron's
//!   unfused softmax), a window or a chunk included.
//! - **Causal only**: a fused kernel that skips the blocks above a causal diagonal but scores an
//!   explicit mask's keys like any other. PyTorch SDPA runs its flash backend only under
//!   `is_causal` without a mask; a sliding-window or chunked layer hands it a mask, which sends it
//!   to the memory-efficient or math backend, neither of which skips masked blocks (Transformers
//!   `sdpa_attention_forward` and `masking_utils.py`; docs/blocks-measured.md "SDPA"). Hugging Face
//!   `sdpa` (Transformers' default), LitGPT and torchtune run this way.
//! - **Banded**: a kernel that skips every fully masked block, the causal triangle and what lies
//!   outside a window's band or a chunk (FlashAttention-2 `window_size`, Dao 2023 §3.1.1;
//!   Transformer Engine under Megatron-Core; vLLM and SGLang's attention backends; llama.cpp's
//!   `flash_attn_ext`, which skips each key whose mask is −∞).
//! - **Ubatched**: llama.cpp without flash attention scores each ubatch of `u` prompt tokens
//!   against the cells the cache holds by then (`n_kv`, padded to 256: llama-kv-cache.cpp
//!   `get_n_kv`), so a prompt of s > u tokens scores (s + u)/2 keys per token on average, a window
//!   at most w + u (its cache holds window + ubatch cells).

use crate::scenario::{AttentionKernel, FlashAttn, HfAttention, Profile, Scenario, ServingEngine};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScoreKernel {
    Materialised,
    CausalOnly,
    Banded,
    /// llama.cpp without flash attention, ubatches of this many tokens.
    Ubatched(f64),
}

/// The kernel of a training step's attention: materialised as the scenario says, else
/// Megatron-Core's Transformer Engine and Hugging Face's explicit FlashAttention-2 banded, every
/// other framework PyTorch SDPA.
pub fn training(s: &Scenario) -> ScoreKernel {
    if s.strategies.attention == AttentionKernel::Materialized {
        return ScoreKernel::Materialised;
    }
    let i = &s.implementation;
    let fa2 =
        i.profile == Profile::HuggingFace && i.hf.attention == Some(HfAttention::FlashAttention2);
    if i.profile == Profile::Megatron || fa2 {
        ScoreKernel::Banded
    } else {
        ScoreKernel::CausalOnly
    }
}

/// The kernel of a prefill: a serving engine's own (vLLM and SGLang always fused and banded;
/// llama.cpp by its `-fa`), else as a training step's.
pub fn prefill(s: &Scenario) -> ScoreKernel {
    match s.inference.engine.as_ref() {
        Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_)) => ScoreKernel::Banded,
        Some(ServingEngine::LlamaCpp(l)) if l.flash_attn == FlashAttn::Off => {
            ScoreKernel::Ubatched(f64::from(l.n_ubatch.max(1)))
        }
        Some(ServingEngine::LlamaCpp(_)) => ScoreKernel::Banded,
        _ => training(s),
    }
}

/// Keys a query scores on average over a sequence of `ctx` tokens in a layer whose mask allows
/// `window` keys (0 = every earlier key; `chunked`: only its own chunk of `window`).
pub fn keys(kernel: ScoreKernel, ctx: f64, window: f64, chunked: bool, causal: bool) -> f64 {
    let ctx = ctx.max(0.0);
    let limited = window > 0.0 && window < ctx;
    match kernel {
        ScoreKernel::Materialised => ctx,
        ScoreKernel::CausalOnly if limited => ctx,
        ScoreKernel::CausalOnly => half_if(causal, ctx),
        ScoreKernel::Banded if !limited => half_if(causal, ctx),
        ScoreKernel::Banded if !causal => window,
        ScoreKernel::Banded if chunked => chunk_keys(ctx, window),
        ScoreKernel::Banded => window - window * window / (2.0 * ctx),
        ScoreKernel::Ubatched(u) => {
            let scored = if ctx <= u { ctx } else { 0.5 * (ctx + u) };
            if limited {
                scored.min(window + u)
            } else {
                scored
            }
        }
    }
}

fn half_if(causal: bool, ctx: f64) -> f64 {
    if causal { 0.5 * ctx } else { ctx }
}

/// Causal chunked attention (Llama 4: a token sees the earlier tokens of its own chunk): c/2 over
/// each whole chunk, r/2 over the last r tokens, so (q·c² + r²) / 2s for s = q·c + r > c.
fn chunk_keys(ctx: f64, chunk: f64) -> f64 {
    let whole = (ctx / chunk).floor();
    let rest = ctx - whole * chunk;
    (whole * chunk * chunk + rest * rest) / (2.0 * ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window w < s under a causal mask: ∫₀ˢ min(x, w) dx / s = w − w²/2s; at s = w it meets s/2.
    #[test]
    fn a_band_meets_the_triangle_at_the_window() {
        let k = |w: f64, s: f64| keys(ScoreKernel::Banded, s, w, false, true);
        assert_eq!(k(256.0, 4096.0), 256.0 - 256.0 * 256.0 / 8192.0);
        assert_eq!(k(4096.0, 4096.0), 2048.0);
        assert!((k(4095.999, 4096.0) - 2048.0).abs() < 1e-2);
    }

    /// 1,000 tokens in chunks of 256: three whole chunks and 232 tokens, (3·256² + 232²)/2000.
    #[test]
    fn chunks_count_their_remainder() {
        let got = keys(ScoreKernel::Banded, 1000.0, 256.0, true, true);
        assert_eq!(got, (3.0 * 256.0 * 256.0 + 232.0 * 232.0) / 2000.0);
    }

    /// SDPA skips the causal triangle of a full layer but scores every key of a windowed one.
    #[test]
    fn sdpa_scores_a_windowed_layer_whole() {
        assert_eq!(
            keys(ScoreKernel::CausalOnly, 4096.0, 0.0, false, true),
            2048.0
        );
        assert_eq!(
            keys(ScoreKernel::CausalOnly, 4096.0, 256.0, false, true),
            4096.0
        );
        assert_eq!(
            keys(ScoreKernel::Materialised, 4096.0, 0.0, false, true),
            4096.0
        );
    }

    /// llama.cpp without flash attention: one ubatch scores the whole prompt; 8,192 tokens in
    /// ubatches of 512 score (8,192 + 512)/2 keys; a window of 1,024 at most 1,024 + 512.
    #[test]
    fn ubatches_score_the_cells_filled_so_far() {
        let u = ScoreKernel::Ubatched(512.0);
        assert_eq!(keys(u, 300.0, 0.0, false, true), 300.0);
        assert_eq!(keys(u, 8192.0, 0.0, false, true), 4352.0);
        assert_eq!(keys(u, 8192.0, 1024.0, false, true), 1536.0);
    }

    #[test]
    fn no_tokens_no_keys() {
        for k in [
            ScoreKernel::Materialised,
            ScoreKernel::CausalOnly,
            ScoreKernel::Banded,
            ScoreKernel::Ubatched(512.0),
        ] {
            assert_eq!(keys(k, 0.0, 256.0, true, true), 0.0);
            assert_eq!(keys(k, 0.0, 0.0, false, true), 0.0);
        }
    }
}
