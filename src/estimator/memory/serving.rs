//! Serving features in memory (issue 15 items 2–3; `scenario::InferenceFeatures`): speculative
//! decoding's draft weights, draft KV and lookahead slots; prefix caching and parallel sampling's
//! shared KV blocks; chunked prefill's forward size; KV and weight offload to the host. Every
//! function returns the unchanged figure when its feature is off, so default scenarios estimate
//! exactly as before. Allocation-free.

use super::ctx::{Ctx, ceil};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{Speculative, SpeculativeMethod};

/// Expected tokens one verify step produces with k draft tokens accepted each with probability α:
/// (1 − α^(k+1)) / (1 − α) (Leviathan, Kalman & Matias 2023, "Fast Inference from Transformers via
/// Speculative Decoding", §3.1 Eq. 1); k + 1 when α = 1, 1 when α = 0.
///
/// ```
/// use vram_explorer::estimator::memory::serving::expected_tokens_per_step;
/// // Leviathan et al. Table 3 regime: α = 0.8, γ = k = 4 → 3.36 tokens per target forward.
/// assert!((expected_tokens_per_step(0.8, 4.0) - 3.3616).abs() < 1e-12);
/// assert_eq!(expected_tokens_per_step(1.0, 4.0), 5.0);
/// assert_eq!(expected_tokens_per_step(0.0, 4.0), 1.0);
/// ```
pub fn expected_tokens_per_step(alpha: f64, k: f64) -> f64 {
    if alpha >= 1.0 {
        return k + 1.0;
    }
    (1.0 - alpha.powf(k + 1.0)) / (1.0 - alpha)
}

/// Draft tokens per verify step, 0 when speculative decoding is off.
pub fn lookahead(c: &Ctx) -> f64 {
    match c.features.speculative.method {
        SpeculativeMethod::Off => 0.0,
        _ => f64::from(c.features.speculative.num_speculative_tokens),
    }
}

/// Parameters of the draft: a draft model's count, or one target-shaped layer plus the 2h × h
/// projection and two h-wide norms of an MTP module (DeepSeek-V3 report §2.2: embedding and output
/// head shared with the main model) or an EAGLE head (Li et al. 2024 §3: one decoder layer and a
/// feature-fusion FC over [feature; embedding], LM head shared).
pub fn draft_params(spec: &Speculative, m: &ResolvedModel) -> f64 {
    let h = f64::from(m.hidden);
    match spec.method {
        SpeculativeMethod::Off => 0.0,
        SpeculativeMethod::DraftModel => spec.draft_params_b * 1e9,
        SpeculativeMethod::Mtp | SpeculativeMethod::Eagle => {
            m.params.per_layer + 2.0 * h * h + 2.0 * h
        }
    }
}

/// Draft weight bytes on one GPU (the last pipeline stage holds the draft; split over TP as vLLM
/// runs the draft at the target's TP by default), in the weights' element type.
pub fn draft_weights(c: &Ctx, m: &ResolvedModel, last: bool) -> f64 {
    if !last {
        return 0.0;
    }
    draft_params(&c.features.speculative, m) * c.e_weights / c.tp
}

/// KV bytes per token of the draft on one GPU: 2 · L_d · ⌈k_d/t⌉ · d_d · e_kv for a draft model
/// (kipply 2022), one target layer's cache for an MTP module or EAGLE head (each keeps its own
/// cache of every token, as vLLM allocates it one extra attention layer).
pub fn draft_kv_per_token(c: &Ctx, m: &ResolvedModel, last: bool) -> f64 {
    let spec = &c.features.speculative;
    if !last {
        return 0.0;
    }
    match spec.method {
        SpeculativeMethod::Off => 0.0,
        SpeculativeMethod::DraftModel => super::inference::kv_bytes_per_token(
            f64::from(spec.draft_layers),
            ceil(f64::from(spec.draft_kv_heads) / c.tp),
            f64::from(spec.draft_head_dim),
            c.e_kv,
        ),
        SpeculativeMethod::Mtp | SpeculativeMethod::Eagle => {
            m.kv_bytes_per_token(&super::inference::cache_shape(c, 1.0))
        }
    }
}

/// Whether paged KV tokens need the shared-block rule (a prefix shared across requests, or several
/// sequences per prompt); otherwise today's per-request rounding applies unchanged.
pub fn shares_blocks(c: &Ctx) -> bool {
    c.fork > 1.0 || c.features.shared_prefix_fraction > 0.0
}

/// Prefix tokens stored once for all requests of `c` ([`prefix_tokens`] of its prompt).
pub fn shared_prefix_tokens(c: &Ctx) -> f64 {
    prefix_tokens(
        c.s,
        c.mean_length_fraction,
        c.features.shared_prefix_fraction,
        c.kv_block_tokens,
    )
}

/// Prefix tokens stored once: π × prompt, capped at the mean prompt φ × prompt, in full blocks of
/// `block` tokens only (vLLM v1 `core/kv_cache_utils.py` `hash_request_tokens`: only full blocks
/// are hashed and shared; SGLang RadixAttention shares at token granularity, a block of 1). No
/// paging (`block` < 1): nothing is shared.
///
/// ```
/// use vram_explorer::estimator::memory::serving::prefix_tokens;
/// // A 1,000-token system prompt in 4,000-token prompts (π = 0.25), blocks of 16: 62 full blocks.
/// assert_eq!(prefix_tokens(4000.0, 1.0, 0.25, 16.0), 992.0);
/// assert_eq!(prefix_tokens(4000.0, 1.0, 0.25, 1.0), 1000.0); // SGLang radix, page 1
/// assert_eq!(prefix_tokens(4000.0, 1.0, 0.25, 0.0), 0.0); // contiguous cache
/// ```
pub fn prefix_tokens(prompt: f64, mean_fraction: f64, fraction: f64, block: f64) -> f64 {
    if block < 1.0 {
        return 0.0;
    }
    let prefix = (fraction * prompt).min(mean_fraction * prompt);
    (prefix / block).floor() * block
}

/// KV tokens of all `c.b` requests with shared blocks, the request's mean length `mean`: the
/// shared prefix once; per request its own full prompt blocks once (its n sequences share them,
/// vLLM `SamplingParams.n` forks / beam search on one prompt, copy-on-write of the partial last
/// block: Kwon et al. 2023 §4.4); each of the n sequences its own blocks from the last full prompt
/// block on. Contiguous (unpaged) caches share nothing: every sequence reserves `max_len`.
///
/// ```
/// use vram_explorer::estimator::memory::serving::paged_shared_tokens;
/// // 10 requests, 1000-token prompt (mean), 16-token blocks, 200 generated, half the prompt shared,
/// // n = 1: shared 496 (31 full blocks of 500) + 10 × (496 + ⌈208/16⌉·16 = 208) = 7,536.
/// assert_eq!(paged_shared_tokens(10.0, 1000.0, 1200.0, 16.0, 496.0, 1.0), 7536.0);
/// // n = 4 samples share each prompt's 62 full blocks: 496 + 10 × (496 + 4 × 208) = 13,776.
/// assert_eq!(paged_shared_tokens(10.0, 1000.0, 1200.0, 16.0, 496.0, 4.0), 13776.0);
/// ```
pub fn paged_shared_tokens(
    requests: f64,
    prompt_mean: f64,
    mean: f64,
    block: f64,
    prefix: f64,
    fork: f64,
) -> f64 {
    let prompt_full = (prompt_mean / block).floor() * block;
    let own = ceil((mean - prompt_full).max(0.0) / block) * block;
    prefix + requests * ((prompt_full - prefix).max(0.0) + fork * own)
}

/// Tokens of one prefill forward: the chunk when chunked prefill is on and smaller than the prompt
/// (vLLM V1 `max_num_batched_tokens`; SGLang `chunked_prefill_size`), else the prompt.
pub fn prefill_forward_tokens(c: &Ctx) -> f64 {
    let chunk = f64::from(c.features.prefill_chunk_tokens);
    if chunk >= 1.0 && chunk < c.s {
        chunk
    } else {
        c.s
    }
}

/// Beam search with more than one beam (its cache is reordered every decode step).
pub fn reorders_beams(c: &Ctx) -> bool {
    c.features.sampling == crate::scenario::Sampling::Beam && c.features.sequences_per_prompt > 1
}

/// The share of the KV cache that stays on the GPU.
pub fn kv_on_gpu(c: &Ctx) -> f64 {
    1.0 - c.features.kv_offload_fraction
}

/// The share of the weights that stays on the GPU.
pub fn weights_on_gpu(c: &Ctx) -> f64 {
    1.0 - c.features.weights_offload_fraction
}
