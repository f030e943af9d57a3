//! Forward FLOPs of the stacks beside the language model (`model::tower_shape`), with the
//! convention of `flops` (2 FLOPs per multiply-accumulate; attention core 4 · keys · heads · d_head
//! per query, Kaplan et al. 2020 Table 1):
//! - an encoder layer per position: q, k, v, o 2 · 4 · h · inner, MLP 2 · m · h · f (m = 2, or 3
//!   gated), core 4 · S · inner over its S positions (bidirectional); Whisper's stem: conv1
//!   2 · 2S · mel · 3 · h, conv2 (stride 2) 2 · S · h · 3 · h (diffusers/transformers Conv1d,
//!   width 3);
//! - the decoder's cross-attention layers per decoder token: q and o 2 · 2 · h · inner, core
//!   4 · S · inner; per encoder position, once per request: k and v 2 · 2 · h · kv_inner;
//! - a vision tower per image: the patch embedding 2 · P · patch_elems · h, layers as the encoder's
//!   over P patches, the projector 2 · tokens · (in · mid + mid · out) (or in · out).

use crate::estimator::model::ResolvedModel;
use crate::estimator::model::tower_shape::{EncoderClass, EncoderShape, VisionShape};

/// One bidirectional transformer layer over `n` positions, per sample.
fn stack_layer(n: f64, h: f64, inner: f64, f: f64, gated: bool) -> f64 {
    let mats = if gated { 3.0 } else { 2.0 };
    n * (2.0 * 4.0 * h * inner + 2.0 * mats * h * f + 4.0 * n * inner)
}

fn encoder(e: &EncoderShape) -> f64 {
    let inner = e.heads * e.head_dim;
    let stem = if e.class == EncoderClass::Whisper {
        2.0 * 2.0 * e.len * e.mel_bins * 3.0 * e.hidden + 2.0 * e.len * e.hidden * 3.0 * e.hidden
    } else {
        0.0
    };
    stem + e.layers * stack_layer(e.len, e.hidden, inner, e.ffn, e.gated)
}

fn vision(v: &VisionShape) -> f64 {
    let embed = 2.0 * v.patches * v.patch_elems * v.hidden;
    let layers = v.layers * stack_layer(v.patches, v.hidden, v.hidden, v.ffn, v.gated);
    let projector = if v.proj_mid > 0.0 {
        2.0 * v.tokens * (v.proj_in * v.proj_mid + v.proj_mid * v.proj_out)
    } else {
        2.0 * v.tokens * v.proj_in * v.proj_out
    };
    v.images * (embed + layers + projector)
}

/// FLOPs per sample that run once per request: the encoder, the cross-attention keys and values
/// over its output, the vision tower over the sample's images.
fn once(m: &ResolvedModel) -> f64 {
    let t = &m.towers;
    let mut f = 0.0;
    if t.has_encoder() {
        let x = &t.cross;
        f += encoder(&t.encoder)
            + x.layers * t.encoder.len * 2.0 * 2.0 * t.encoder.hidden * x.kv_heads * x.head_dim;
    }
    if t.sees_images() {
        f += vision(&t.vision);
    }
    f
}

/// Cross-attention FLOPs per decoder token (q, o and the core over the encoder's positions).
fn per_decoder_token(m: &ResolvedModel) -> f64 {
    let t = &m.towers;
    if !t.has_encoder() {
        return 0.0;
    }
    let x = &t.cross;
    let inner = x.heads * x.head_dim;
    x.layers * (2.0 * 2.0 * t.encoder.hidden * inner + 4.0 * t.encoder.len * inner)
}

/// Forward FLOPs of the towers for `b` samples whose decoder reads `tokens` tokens (training step,
/// or a prefill of `tokens` prompt tokens).
pub fn forward(m: &ResolvedModel, b: f64, tokens: f64) -> f64 {
    b * (once(m) + tokens * per_decoder_token(m))
}

/// Forward FLOPs of the towers in one decode step of `b` sequences (the cross-attention reads the
/// encoder's keys and values; nothing else beside the decoder runs again).
pub fn decode_step(m: &ResolvedModel, b: f64) -> f64 {
    b * per_decoder_token(m)
}
