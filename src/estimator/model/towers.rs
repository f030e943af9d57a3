//! Parameters of the stacks beside the language model (`scenario::towers`), exact against the
//! Hugging Face modules at transformers 5.25.0 (`sum(p.numel())`, tests/data/hf/params.json):
//! - vision: `CLIPVisionModel` (class embedding, bias-free patch convolution, position table,
//!   `pre_layrnorm`, `post_layernorm`), `SiglipVisionModel` without its pooling head (patch
//!   convolution with bias, `post_layernorm`), `Qwen2_5_VisionTransformerPretrainedModel` (3-D patch
//!   convolution, RMSNorm blocks with a fused qkv and a gated MLP, the `merger`); projectors
//!   `LlavaMultiModalProjector` (two linears), `Gemma3MultiModalProjector` (RMSNorm + one matrix) and
//!   `Qwen2_5_VLPatchMerger` (RMSNorm, then two linears over 4 merged patches); `Llama4VisionModel`
//!   (unfold-linear patches, class token, positions, pre/post LayerNorm) with its pixel-shuffle
//!   `vision_adapter` (`fc1`, `fc2`) and `Llama4MultiModalProjector`;
//! - encoders: `T5Stack` (no biases, relative position table in layer 0, final RMSNorm; the token
//!   embedding shared with the decoder) and `WhisperEncoder` (two width-3 convolutions, position
//!   table, biases except on k, final LayerNorm).
//!
//! Their memory is modelled simply for now: the weights only (see `scenario::towers`).

use crate::estimator::Diagnostics;
use crate::scenario::validate::{FieldRange, field};
use crate::scenario::{
    EncoderInput, EncoderStack, FfnKind, NormKind, Projector, Tower, VisionTower,
};

const DIMS: &FieldRange = field("model.towers.dims");
const COUNT: &FieldRange = field("model.towers.count");

fn norm(kind: NormKind, n: f64) -> f64 {
    match kind {
        NormKind::LayerNorm => 2.0 * n,
        NormKind::RmsNorm => n,
    }
}

/// One MLP h → f → h: two or three matrices, with biases when `bias`.
fn mlp(h: f64, f: f64, kind: FfnKind, bias: bool) -> f64 {
    let mats = if kind == FfnKind::SwiGlu { 2.0 } else { 1.0 };
    let b = if bias { mats * f + h } else { 0.0 };
    mats * h * f + f * h + b
}

/// Parameters of all towers (numbers clamped into the pattern's ranges, reported as clamped).
pub fn params(towers: &[Tower], d: &mut Diagnostics) -> f64 {
    towers
        .iter()
        .map(|t| match t {
            Tower::Vision(v) => vision(v, d),
            Tower::Encoder(e) => encoder(e, d),
        })
        .sum()
}

fn vision(v: &VisionTower, d: &mut Diagnostics) -> f64 {
    let mut dim = |x: u32| f64::from(DIMS.clamp_u32(x, d).max(1));
    let (h, f) = (dim(v.hidden), dim(v.ffn));
    let (image, patch) = (dim(v.image_size), dim(v.patch_size));
    let (channels, frames) = (dim(v.channels), dim(v.temporal_patch));
    let layers = f64::from(COUNT.clamp_u32(v.layers, d));
    let patches = (image / patch).floor().powi(2);
    let mut total = channels * frames * patch * patch * h;
    if v.patch_bias {
        total += h;
    }
    if v.class_token {
        total += h;
    }
    if v.learned_positions {
        total += (patches + f64::from(v.class_token)) * h;
    }
    total += (f64::from(v.pre_norm) + f64::from(v.post_norm)) * norm(v.norm, h);
    // q, k, v, o (h × h each, fused or not), biases, two norms, the MLP.
    let attn = 4.0 * h * h + if v.bias { 4.0 * h } else { 0.0 };
    let layer = attn + 2.0 * norm(v.norm, h) + mlp(h, f, v.ffn_kind, v.bias);
    total + layers * layer + projector(&v.projector, h, d)
}

fn projector(p: &Projector, vision_h: f64, d: &mut Diagnostics) -> f64 {
    let merge = f64::from(DIMS.clamp_u32(p.merge, d).max(1));
    let out = f64::from(DIMS.clamp_u32(p.out, d).max(1));
    let mid = f64::from(DIMS.clamp_u32(p.hidden, d));
    let input = vision_h * merge;
    let bias = |n: f64| if p.bias { n } else { 0.0 };
    let norm_p = p.norm.map_or(0.0, |k| norm(k, vision_h));
    let extra = f64::from(COUNT.clamp_u32(p.mid_layers, d)) * (mid * mid + bias(mid));
    let layers = if mid > 0.0 {
        input * mid + bias(mid) + extra + mid * out + bias(out)
    } else {
        input * out + bias(out)
    };
    norm_p + layers
}

fn encoder(e: &EncoderStack, d: &mut Diagnostics) -> f64 {
    let mut dim = |x: u32| f64::from(DIMS.clamp_u32(x, d).max(1));
    let (h, heads, f) = (dim(e.hidden), dim(e.heads), dim(e.ffn));
    let hd = if e.head_dim > 0 {
        dim(e.head_dim)
    } else {
        (h / heads).floor().max(1.0)
    };
    let inner = heads * hd;
    let layers = f64::from(COUNT.clamp_u32(e.layers, d));
    // q, k, v (h → inner), o (inner → h); Whisper's biases: q, v, o (k_proj has none).
    let attn = 4.0 * h * inner + if e.bias { 2.0 * inner + h } else { 0.0 };
    let layer = attn + 2.0 * norm(e.norm, h) + mlp(h, f, e.ffn_kind, e.bias);
    let relative = f64::from(DIMS.clamp_u32(e.relative_buckets, d)) * heads;
    let input = match &e.input {
        EncoderInput::SharedEmbedding => 0.0,
        EncoderInput::AudioConv {
            mel_bins,
            positions,
        } => {
            let mel = f64::from(DIMS.clamp_u32(*mel_bins, d).max(1));
            let pos = f64::from(DIMS.clamp_u32(*positions, d));
            // conv1: mel → h, width 3, bias; conv2: h → h, width 3, bias; positions × h.
            mel * h * 3.0 + h + h * h * 3.0 + h + pos * h
        }
    };
    input + layers * layer + relative + norm(e.norm, h)
}
