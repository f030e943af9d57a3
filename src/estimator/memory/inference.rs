//! Inference phases: prefill of the prompt (KV cache built, logits) and decode (one token per step
//! against the cache), with static or dynamic batching and paged KV blocks.

use super::activations::{self as act, Sizes};
use super::ctx::{Ctx, ceil};
use super::serving;
use crate::estimator::model::{CacheShape, ResolvedModel};
use crate::estimator::{Breakdown, Component, Phase, PhasePeaks};
use crate::scenario::{ArchKind, AttentionKernel, FfnKind, ServingEngine};
use crate::units::Bytes;

/// KV-cache bytes per token of one sequence: 2 (K and V) × layers × KV heads × head dim × element
/// bytes (kipply, *Transformer Inference Arithmetic* 2022; GQA/MQA: KV heads, Ainslie et al. 2023).
///
/// ```
/// use vram_explorer::estimator::memory::inference::kv_bytes_per_token;
/// assert_eq!(kv_bytes_per_token(40.0, 40.0, 128.0, 2.0), 819_200.0); // OPT-13B (vLLM §3)
/// assert_eq!(kv_bytes_per_token(80.0, 8.0, 128.0, 2.0), 327_680.0); // Llama-2-70B, GQA
/// ```
pub fn kv_bytes_per_token(layers: f64, kv_heads: f64, head_dim: f64, elem_bytes: f64) -> f64 {
    2.0 * layers * kv_heads * head_dim * elem_bytes
}

/// The cache of `layers` layers on one GPU of this layout. Recurrent state is kept in the compute
/// type (Hugging Face `MambaCache` and vLLM's `mamba_cache_dtype = "auto"` use the model's dtype).
pub fn cache_shape(c: &Ctx, layers: f64) -> CacheShape {
    CacheShape {
        tp: c.tp,
        layers,
        e_kv: c.e_kv,
        e_state: c.ec,
    }
}

/// Tokens of KV cache held per GPU (all sequences) at prefill and at the last decode step.
/// Static batch: b sequences padded to the longest, prompt + generated. Dynamic batching: R requests
/// of mean length φ·(prompt + generated); paged blocks of B tokens round each request up to a block
/// (vLLM, Kwon et al. 2023 §4); without paging each request reserves the maximum length.
/// Speculative decoding reserves k lookahead slots per sequence (vLLM `num_lookahead_slots` = k:
/// the verify pass writes k + 1 positions); a shared prefix or n sequences per request share full
/// blocks ([`serving::paged_shared_tokens`]).
pub fn kv_tokens(c: &Ctx) -> (f64, f64) {
    let max_len = c.s + c.generated + serving::lookahead(c);
    if !c.dynamic_batching {
        return (c.b * c.s, c.b * max_len);
    }
    let mean = c.mean_length_fraction * max_len;
    if serving::shares_blocks(c) {
        let held = if c.kv_block_tokens >= 1.0 {
            serving::paged_shared_tokens(
                c.b,
                c.mean_length_fraction * c.s,
                mean,
                c.kv_block_tokens,
                serving::shared_prefix_tokens(c),
                c.fork,
            )
        } else {
            c.b * c.fork * max_len
        };
        return (held, held);
    }
    let per_request = if c.kv_block_tokens >= 1.0 {
        ceil(mean / c.kv_block_tokens) * c.kv_block_tokens
    } else {
        max_len
    };
    let held = c.b * per_request;
    (held, held)
}

/// [`kv_tokens`] of a model that caches: an encoder caches no tokens (its recurrent layers' state
/// stays).
pub fn cached_tokens(c: &Ctx, m: &ResolvedModel) -> (f64, f64) {
    if m.arch == ArchKind::Encoder {
        (0.0, 0.0)
    } else {
        kv_tokens(c)
    }
}

/// Sequences whose caches the tokens of [`kv_tokens`] spread over: b, or R × n with dynamic
/// batching and n sequences per request.
pub fn cache_sequences(c: &Ctx) -> f64 {
    (c.b * c.fork).max(1.0)
}

/// The stage's KV cache (target + draft) for `tokens` held over `seqs` sequences, the share on
/// the GPU only (KV offload).
fn gpu_cache(c: &Ctx, m: &ResolvedModel, layers: f64, last: bool, tokens: f64) -> f64 {
    let cache = cache_shape(c, layers);
    let seqs = cache_sequences(c);
    let len = tokens / seqs;
    let target =
        m.cache_bytes(&cache, seqs, len) + super::blocks::cache_extra(c, m, layers, seqs, len);
    let draft = serving::draft_kv_per_token(c, m, last) * tokens;
    // Off: + 0 and × 1, exact.
    (target + draft) * serving::kv_on_gpu(c)
}

/// Prefill and decode of one stage. `weights` are the stage's weight bytes, `casts` the autocast
/// copies (matmul weights and biases), `layers` the stage's layers.
pub fn phases(
    c: &Ctx,
    m: &ResolvedModel,
    weights: f64,
    casts: f64,
    layers: f64,
    last: bool,
) -> PhasePeaks {
    let cache = cache_shape(c, layers);
    let (kv_prefill, kv_decode) = cached_tokens(c, m);
    // Dynamic batching prefills one request at a time; a static batch prefills all b at once.
    let b_prefill = if c.dynamic_batching { 1.0 } else { c.b };
    // Chunked prefill: one forward holds a chunk's activations (its queries attend to the whole
    // prompt so far: materialised scores are chunk × prompt).
    let s_fwd = serving::prefill_forward_tokens(c);
    let mut zp = super::layer_kinds::widest_sizes(c, m, b_prefill, s_fwd);
    zp.bas2 *= c.s / s_fwd;
    // Hugging Face generate on the Transformers torch paths: the measured per-kind prefill rule.
    let hf_torch = c.engine == ServingEngine::HfGenerate
        && !c.dynamic_batching
        && s_fwd == c.s
        && super::blocks::torch_paths(c)
        && super::blocks::applies(c, m);
    let prefill = if hf_torch {
        super::blocks::prefill::transient(c, m, b_prefill, last)
    } else {
        prefill_transient(c, m, &zp, last)
    };
    // Weights on the GPU: the stage's and the draft's, less what is offloaded (× 1 when off).
    let weights = (weights + serving::draft_weights(c, m, last)) * serving::weights_on_gpu(c);
    let mut out = PhasePeaks::default();
    let mut phase = |ph: Phase, kv: f64, transient: f64| {
        let mut b = Breakdown::default();
        b.set(Component::Weights, Bytes(weights));
        b.set(Component::KvCache, Bytes(kv));
        b.set(Component::Transient, Bytes(casts + transient));
        out.set(ph, b);
    };
    let kv = gpu_cache(c, m, layers, last, kv_prefill);
    let (fw_prefill, fw_decode) =
        super::frameworks::inference_extra(c, m, kv_decode / cache_sequences(c));
    let decoder = prefill + 8.0 * b_prefill * c.s + fw_prefill;
    // While the encoder runs, the decoder's autocast casts (counted with `casts`) are not made yet.
    let later = kv + super::towers::casts_after_encoder(c, m, casts);
    phase(
        Phase::Prefill,
        kv,
        super::towers::prefill_transient(c, m, b_prefill, decoder, later),
    );
    if m.arch != ArchKind::Encoder {
        let seqs = cache_sequences(c);
        let zd = super::layer_kinds::widest_sizes(c, m, seqs, 1.0);
        let ctx_len = kv_decode / seqs;
        // HF `DynamicCache` appends with `torch.cat`: while the last layer's V is re-allocated the old
        // one (ctx − 1 tokens) is still live. Preallocated caches (Megatron, vLLM) have no copy.
        // Beam search also reorders the cache every step: `index_select` over the beams copies a
        // layer's K, then its V, at the full context (transformers 4.57 `cache_utils.py`
        // `DynamicLayer.reorder_cache`), one half-layer more than the `cat` copy.
        let cat = if c.engine == ServingEngine::HfGenerate && !c.dynamic_batching {
            let beams = serving::reorders_beams(c);
            let len = if beams { ctx_len } else { ctx_len - 1.0 };
            m.largest_layer_half_kv(&cache, c.b, len.max(0.0))
        } else {
            0.0
        };
        // A verify step scores k + 1 positions per sequence (Leviathan et al. 2023 §3.1).
        let positions = 1.0 + serving::lookahead(c);
        let logits = if last { c.ec * zd.bsv * positions } else { 0.0 };
        let transient = if hf_torch {
            super::blocks::decode::transient(c, m, ctx_len, (cat, logits), casts)
        } else {
            cat.max(logits)
        };
        phase(
            Phase::Decode,
            gpu_cache(c, m, layers, last, kv_decode),
            transient + 8.0 * seqs * ctx_len + super::towers::encoder_states(c, m, c.b) + fw_decode,
        );
    }
    out
}

/// The largest short-lived set in a prefill forward under `no_grad`: the LM head (logits for every
/// position or the last one, plus its input), the MLP (its f-wide intermediates plus the residual
/// and norm output) or materialised attention (scores and softmax output).
pub(super) fn prefill_transient(c: &Ctx, m: &ResolvedModel, z: &Sizes, last: bool) -> f64 {
    let head = if last && act::has_lm_loss(m) {
        let positions = if c.all_logits || m.arch == ArchKind::Encoder {
            1.0
        } else {
            1.0 / serving::prefill_forward_tokens(c).max(1.0)
        };
        let inputs = if m.arch == ArchKind::Encoder {
            2.0 * c.er
        } else {
            c.er + if c.amp { c.ec } else { 0.0 }
        };
        c.ec * z.bsv * positions + inputs * z.bsh / z.tr
    } else {
        0.0
    };
    let f_live = match m.ffn_kind {
        FfnKind::Gelu if m.gelu_tanh && c.engine == ServingEngine::HfGenerate => 4.0,
        // Squared ReLU: the up output, then its ReLU, then the square (each f wide, two live).
        FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
        FfnKind::SwiGlu => 3.0,
    };
    let mlp = c.ec * f_live * z.bsf + 2.0 * c.er * z.bsh / z.tr;
    let attn = if c.attention == AttentionKernel::Materialized {
        let e_sm = if c.amp || m.softmax_fp32 { 4.0 } else { c.ec };
        (c.ec + e_sm) * z.bas2 + 2.0 * c.er * z.bsh / z.tr
    } else {
        0.0
    };
    head.max(mlp).max(attn)
}
