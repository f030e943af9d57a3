//! The first decode step under Hugging Face generate on the Transformers torch paths (measured on
//! CPU, transformers 5.24.0; docs/blocks-measured.md "The estimator against these records"; live
//! sets at the peak listed with `scripts/measure/prefill_probe.py NAME --decode`).
//!
//! - Sliding layers (`DynamicSlidingWindowLayer`, cache_utils.py): right after prefill each one's
//!   cache is a view of the last w − 1 tokens of the whole prefill K/V storage (s tokens), which
//!   stays live until that layer's own update replaces it by a fresh w-token storage. So at a peak
//!   inside layer i the sliding layers *after* i still hold their prefill storage and those before
//!   it do not (the layer order, `LayerOrder::before`); at the LM head none does.
//! - A step's short-lived set is largest inside a mixer (per kind, below) or at the cache append /
//!   the logits (the flat rules, passed in).

use super::super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape};

/// The decode step's transient on top of the cache (`cache_bytes` at `ctx` tokens) and the inputs:
/// the largest of `cat` (the flat `DynamicCache` append, early in the step: every sliding layer
/// still holds its prefill storage), `logits` (at the end: none does) and each kind's in-mixer set
/// at its first layer plus the sliding storage of the layers after it. The casts not made during
/// a decode step (the LM head's inside a layer, the encoder's, the cross k and v projections')
/// come out of `counted_casts`, the
/// autocast copies the caller counts beside this transient, never more than those: a quantized
/// base counts only the head's.
pub fn transient(
    c: &Ctx,
    m: &ResolvedModel,
    ctx: f64,
    (cat, logits): (f64, f64),
    counted_casts: f64,
) -> f64 {
    let kinds = m.blocks.kinds();
    let all: f64 = kinds
        .iter()
        .map(|k| f64::from(k.count) * sliding_extra(c, m, k))
        .sum();
    // Inside the layers the LM head's autocast cast does not exist yet (`super::head_cast`).
    let head_cast = super::head_cast(c, m).min(counted_casts);
    let mut best = (cat + all - head_cast).max(logits);
    // A decode step does not run the encoder, nor project its output for the cross-attention
    // (the cross K and V come from the cache): those casts (counted with the casts) are not made.
    let encoder_casts = if c.amp {
        let towers = crate::estimator::memory::towers::encoder_cast_elems(m)
            + crate::estimator::memory::towers::vision_cast_elems(m)
            + crate::estimator::memory::towers::cross_kv_cast_elems(m);
        (c.ec * towers).min(counted_casts - head_cast)
    } else {
        0.0
    };
    for (i, k) in kinds.iter().enumerate() {
        let t = mixer_step(c, f64::from(m.hidden), k, ctx);
        if t <= 0.0 {
            continue;
        }
        let mut later = 0.0;
        for (j, kj) in kinds.iter().enumerate() {
            let not_yet = f64::from(kj.count) - f64::from(m.blocks.order.before(i, j));
            let not_yet = if i == j { not_yet - 1.0 } else { not_yet };
            later += not_yet.max(0.0) * sliding_extra(c, m, kj);
        }
        best = best.max(t + later - head_cast);
    }
    best - encoder_casts
}

/// A sliding layer's prefill K/V beyond its window, per layer: 2·nkv·hd·(s − w) per sequence.
fn sliding_extra(c: &Ctx, m: &ResolvedModel, k: &LayerKind) -> f64 {
    match k.mixer {
        MixerShape::Attention {
            kv_heads,
            head_dim,
            window,
            ..
        } if window > 0.0 && c.s > window => {
            2.0 * kv_heads * head_dim * super::kv_elem_bytes(c, m, k) * c.b * (c.s - window)
        }
        _ => 0.0,
    }
}

/// The largest short-lived set inside one layer of kind `k` during a decode step, `ctx` tokens in
/// context (measured; the records' decode peak ops):
/// - `DeepseekV3Attention` decompresses the whole latent cache every step (peak at its `bmm`): per
///   cached token the kv_b output nh·(nope + v), the keys with the shared roped part (`cat`,
///   nh·(nope + rope)) and their contiguous copy for the matmul (as much again), the scores (nh).
///   Measured 644 elements per cached token at nh = 4, nope = 32, rope = 16, v = 32.
/// - gpt-oss's eager attention with sinks: K and V expanded to nh heads (2·nh·hd per cached token)
///   and the scores, the sink-extended scores and the probabilities (3·nh). Measured 525 at nh = 4,
///   hd = 64.
/// - `Mamba2Mixer.torch_forward`'s single-step update: dA, dB, dB·x, state·dA and the new state (5
///   states nh·hd·N), the rolled conv state (cd·k) and two inner-width vectors (2·di), per sequence.
///   Measured exactly at nh·hd·N = 32,768 and 4,096.
/// - `torch_recurrent_gated_delta_rule` (Qwen3-Next's one-token path): the decayed state, k·δ and
///   their sum (3·nv·dk·dv), q and k (2·nv·dk), the output, the state read and δ (3·nv·dv); the
///   layer's input, norm and embedding (3h); the projections and their contiguous pieces
///   (2Kd + 3Vd + cd + 7nv), per sequence.
fn mixer_step(c: &Ctx, h: f64, k: &LayerKind, ctx: f64) -> f64 {
    let per_seq = match k.mixer {
        MixerShape::Mla(s) => {
            ctx * (s.heads * s.kv_b_head_dim() + 2.0 * s.heads * s.qk_head_dim() + s.heads)
        }
        MixerShape::Attention {
            heads,
            head_dim,
            sinks: true,
            ..
        } => k.cached_tokens(ctx) * (2.0 * heads * head_dim + 3.0 * heads),
        MixerShape::Mamba {
            inner,
            conv_channels,
            d_conv,
            d_state,
            version: crate::scenario::MambaVersion::Mamba2,
            ..
        } => 5.0 * inner * d_state + conv_channels * d_conv + 2.0 * inner,
        MixerShape::DeltaNet {
            key_dim,
            value_dim,
            value_heads: nv,
            key_head_dim: dk,
            value_head_dim: dv,
            ..
        } => {
            let cd = 2.0 * key_dim + value_dim;
            3.0 * nv * dk * dv
                + 2.0 * nv * dk
                + 3.0 * nv * dv
                + 3.0 * h
                + 2.0 * key_dim
                + 3.0 * value_dim
                + cd
                + 7.0 * nv
        }
        _ => 0.0,
    };
    c.ec * c.b * per_seq
}
