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
//!   Transformer Engine under Megatron-Core; vLLM and SGLang's attention backends; llama.cpp's CPU
//!   `flash_attn_ext`, which skips each key whose mask is −∞, ggml-cpu `ops.cpp`).
//! - **Ubatched**: llama.cpp on a GPU scores each ubatch of `u` prompt tokens against the cache cells
//!   filled by then (`n_kv`, llama-kv-cache.cpp `get_n_kv`), with or without flash attention: the
//!   CUDA kernel trims only the fully masked key tiles at the end of each query tile's range, and
//!   only for a ubatch of at least 1,024 tokens or several sequences (ggml-cuda `fattn-common.cuh`
//!   `launch_fattn`, `flash_attn_mask_to_KV_max`), which takes out each ubatch's upper triangle. A
//!   prompt of s > u tokens scores (s + u)/2 keys per token on average untrimmed (s/2 trimmed); a
//!   sliding-window layer at most the cells of its own cache (window + ubatch, `kv::swa_cells`; the
//!   whole context with `--swa-full`). Without flash attention the CPU backend scores the same.

use crate::estimator::engines::llamacpp::{self, kv, layer_kinds::LayerKinds};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{AttentionKernel, HfAttention, LlamaCpp, Profile, Scenario, ServingEngine};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScoreKernel {
    Materialised,
    CausalOnly,
    Banded,
    /// llama.cpp scoring the cells filled by each ubatch ([`Ubatches`]).
    Ubatched(Ubatches),
}

/// The query tokens from which ggml-cuda's flash attention computes each tile's last unmasked key
/// (`launch_fattn`: `Q->ne[1] >= 1024`, one sequence).
const TRIM_FROM: f64 = 1024.0;

/// How llama.cpp's prompt processing fills its caches, for [`ScoreKernel::Ubatched`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ubatches {
    /// Tokens per ubatch (`-ub`, at most `-b` and the context: `kv::sizes`).
    pub u: f64,
    /// The CUDA flash kernel: it trims the upper triangle of each ubatch of at least 1,024 tokens.
    pub trim: bool,
    /// The settings that size a sliding-window cache (`kv::swa_cells`); `None` with `--swa-full`.
    pub swa: Option<(u32, u32, u32, bool)>,
}

impl Ubatches {
    /// `interleaved`: the model has windowed and global attention layers, so llama.cpp gives the
    /// windowed ones their own, smaller cache (`LayerKinds::interleaved_swa`; else every layer
    /// holds the context).
    fn of(l: &LlamaCpp, fallback_ctx: u32, interleaved: bool) -> Ubatches {
        let (n_ctx, _, u, n_seq) = kv::sizes(l, fallback_ctx);
        Ubatches {
            u: f64::from(u),
            trim: !l.cpu_only && llamacpp::flash_attn(l),
            swa: (interleaved && !l.swa_full).then_some((n_ctx, n_seq, u, l.kv_unified)),
        }
    }

    /// Cells a layer with a window of `window` tokens (0 = none) holds, for a prompt of `ctx`.
    fn cells(&self, ctx: f64, window: f64) -> f64 {
        match self.swa {
            Some((n_ctx, n_seq, u, unified)) if window > 0.0 && window < ctx => {
                let w = window.min(f64::from(u32::MAX)) as u32;
                f64::from(kv::swa_cells(n_ctx, n_seq, u, w, unified)).min(ctx)
            }
            _ => ctx,
        }
    }

    /// Keys per prompt token: Σ over ubatches of (tokens × min(cells filled, cells held)), less
    /// the upper triangle (n²/2) of each ubatch of n ≥ 1,024 tokens the flash kernel trims, ÷ s.
    /// With q whole ubatches and r tokens left, m = min(q, ⌊C/u⌋): u·(u·m(m + 1)/2 + (q − m)·C) +
    /// r·min(s, C). (Cells are not padded to 256 here, and a wrapped window cache is trimmed as
    /// if its newest cells were last.)
    fn keys(&self, ctx: f64, window: f64) -> f64 {
        if ctx <= 0.0 {
            return 0.0;
        }
        let u = self.u.max(1.0);
        let c = self.cells(ctx, window);
        let q = (ctx / u).floor();
        let r = ctx - q * u;
        let m = q.min((c / u).floor());
        let scored = u * (u * m * (m + 1.0) / 2.0 + (q - m) * c) + r * ctx.min(c);
        let trimmed = |n: f64| self.trim && n >= TRIM_FROM;
        let triangles =
            (if trimmed(u) { q * u * u } else { 0.0 } + if trimmed(r) { r * r } else { 0.0 }) / 2.0;
        (scored - triangles).max(0.0) / ctx
    }
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
/// llama.cpp by its device and `-fa`), else as a training step's.
pub fn prefill(s: &Scenario, m: &ResolvedModel) -> ScoreKernel {
    match s.inference.engine.as_ref() {
        Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_)) => ScoreKernel::Banded,
        Some(ServingEngine::LlamaCpp(l)) if l.cpu_only && llamacpp::flash_attn(l) => {
            ScoreKernel::Banded
        }
        Some(ServingEngine::LlamaCpp(l)) => {
            let interleaved = LayerKinds::of(m).interleaved_swa;
            ScoreKernel::Ubatched(Ubatches::of(l, llamacpp::train_ctx(s), interleaved))
        }
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
        ScoreKernel::Ubatched(u) => u.keys(ctx, window),
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

    fn ubatches(u: f64, trim: bool, swa: Option<(u32, u32, u32, bool)>) -> ScoreKernel {
        ScoreKernel::Ubatched(Ubatches { u, trim, swa })
    }

    /// llama.cpp: one ubatch scores the whole prompt; 8,192 tokens in ubatches of 512 score
    /// (8,192 + 512)/2 keys, s/2 with each ubatch's triangle trimmed; a window of 4,096 (cache of
    /// 4,096 + 512 cells) 512·(512·45 + 7·4,608)/8,192 = 3,456 (the first 9 ubatches fill it).
    #[test]
    fn ubatches_score_the_cells_filled_so_far() {
        let u = ubatches(512.0, false, Some((8192, 1, 512, false)));
        assert_eq!(keys(u, 300.0, 0.0, false, true), 300.0);
        assert_eq!(keys(u, 8192.0, 0.0, false, true), 4352.0);
        assert_eq!(keys(u, 8192.0, 4096.0, false, true), 3456.0);
        let trimmed = ubatches(1024.0, true, None);
        assert_eq!(keys(trimmed, 8192.0, 0.0, false, true), 4096.0);
        // The last 832 tokens are a ubatch under 1,024: not trimmed. A prompt under 1,024 tokens
        // is one such ubatch.
        let direct =
            (1024.0 * 1024.0 * 28.0 + 832.0 * 8000.0 - 7.0 * 1024.0 * 1024.0 / 2.0) / 8000.0;
        assert_eq!(keys(trimmed, 8000.0, 0.0, false, true), direct);
        assert_eq!(
            keys(ubatches(2048.0, true, None), 600.0, 0.0, false, true),
            600.0
        );
        // --swa-full: the window's layer holds every cell.
        let full = ubatches(512.0, false, None);
        assert_eq!(keys(full, 8192.0, 4096.0, false, true), 4352.0);
    }

    #[test]
    fn no_tokens_no_keys() {
        for k in [
            ScoreKernel::Materialised,
            ScoreKernel::CausalOnly,
            ScoreKernel::Banded,
            ubatches(512.0, true, Some((4096, 1, 512, false))),
        ] {
            assert_eq!(keys(k, 0.0, 256.0, true, true), 0.0);
            assert_eq!(keys(k, 0.0, 0.0, false, true), 0.0);
        }
    }
}
