//! Transformer dimensions ↔ parameter counts, and the other model families (memory work owns this).
//!
//! Counts are exact for the Hugging Face implementations of GPT-2 (`GPT2LMHeadModel`), BERT
//! (`BertForMaskedLM`, `BertModel`) and LLaMA (`LlamaForCausalLM`): every weight, bias and norm
//! parameter is counted the way `sum(p.numel() for p in model.parameters())` counts it (tied tensors
//! once). Checked against `tests/data/measured` and the published totals (tests/measured.rs).

mod families;
pub mod lora;
pub mod moe;

use self::families::{cnn, recommender};
pub use self::moe::MoeShape;
use super::{Diagnostic, Diagnostics, ParamCounts};
use crate::scenario::{
    ArchKind, FfnKind, ModelFamily, ModelSpec, NormKind, PositionKind, ShapeSource,
};

/// A model with its shape resolved (derived from the parameter count when asked) and counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResolvedModel {
    pub family: ModelFamily,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub ffn: u32,
    pub ffn_kind: FfnKind,
    pub vocab: u32,
    pub params: ParamCounts,
    pub arch: ArchKind,
    pub norm: NormKind,
    pub positions: PositionKind,
    pub tied_embeddings: bool,
    pub gelu_tanh: bool,
    pub fused_qkv: bool,
    pub softmax_fp32: bool,
    pub mlm_head: bool,
    /// Elements of the weight matrices that run through matmuls (layers and LM/MLM head, not the
    /// embedding lookups or norms): what autocast copies to 16 bit in training.
    pub matmul_weights: f64,
    /// Biases of those matmuls (autocast copies them too, during inference).
    pub matmul_biases: f64,
    /// Elements of the largest single parameter tensor (a non-foreach optimizer's temporaries).
    pub largest_tensor: f64,
    /// Parameter tensors (Adam keeps a 4-byte step counter per tensor).
    pub param_tensors: f64,
    /// CNN / recommender: saved activation bytes per sample in FP32 (0 for transformers).
    pub act_bytes_per_sample_fp32: f64,
    /// Mixture-of-experts shape (dense: `experts = 0`); `ffn` is then one expert's size.
    pub moe: MoeShape,
}

/// Largest parameter count accepted; larger inputs are clamped (and diagnosed).
pub const MAX_PARAMS: f64 = 1e13;

pub fn resolve(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    match spec.family {
        ModelFamily::Transformer => match spec.shape {
            ShapeSource::Dimensions => transformer(spec, diagnostics),
            ShapeSource::ParamCount => {
                diagnostics.insert(Diagnostic::ShapeDerivedFromParams);
                let p = clamp_params(spec.params, diagnostics);
                // `ModelSpec` holds no heap data: this clone does not allocate.
                let mut s = spec.clone();
                shape_from_params(p, &mut s);
                transformer(&s, diagnostics)
            }
        },
        ModelFamily::Cnn => cnn(spec, diagnostics),
        ModelFamily::Recommender => recommender(spec, diagnostics),
    }
}

fn clamp_params(p: f64, diagnostics: &mut Diagnostics) -> f64 {
    if !p.is_finite() || p < 1e3 {
        diagnostics.insert(Diagnostic::InputClamped);
        return 1e3;
    }
    if p > MAX_PARAMS {
        diagnostics.insert(Diagnostic::InputClamped);
        return MAX_PARAMS;
    }
    p
}

/// Derives a Llama-style decoder shape (SwiGLU f ≈ 8h/3 rounded to 256, RMSNorm, RoPE, untied head,
/// vocabulary 32,000, head dim 128, MHA) from a parameter count P.
///
/// Rule: width from depth at the aspect ratio h = 128·L shared by Llama-2-7B/13B (4096/32,
/// 5120/40) and GPT-3 175B (12288/96); with P ≈ 12·L·h² this gives h = (128·P/12)^(1/3), rounded
/// to a multiple of 128 (64 below 1,024). Then L = (P − 2·V·h) / (params per layer), at least 1.
/// The resulting count is that shape's exact count, close to (not equal to) P.
pub fn shape_from_params(params: f64, spec: &mut ModelSpec) {
    let t = &mut spec.transformer;
    let raw_h = (128.0 * params / 12.0).cbrt();
    let step = if raw_h < 1024.0 { 64.0 } else { 128.0 };
    let h = ((raw_h / step).round() * step).clamp(64.0, 65_536.0);
    let f = ((8.0 * h / 3.0 / 256.0).ceil() * 256.0).max(256.0);
    let vocab = 32_000.0;
    let per_layer = 4.0 * h * h + 3.0 * h * f + 2.0 * h;
    let layers = ((params - 2.0 * vocab * h) / per_layer)
        .round()
        .clamp(1.0, 1024.0);
    let head_dim = if h >= 1024.0 { 128.0 } else { 64.0 };
    let heads = (h / head_dim).max(1.0);
    t.arch = ArchKind::Decoder;
    t.layers = layers as u32;
    t.hidden = h as u32;
    t.heads = heads as u32;
    t.kv_heads = heads as u32;
    t.head_dim = 0;
    t.ffn = f as u32;
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = vocab as u32;
    t.tied_embeddings = false;
    t.positions = PositionKind::Rotary;
    t.token_types = 0;
    t.bias = false;
    t.norm = NormKind::RmsNorm;
    t.mlm_head = false;
    t.pooler = false;
    t.gelu_tanh = false;
    t.fused_qkv = false;
    t.softmax_fp32 = true;
}

/// Clamps a dimension to [1, max], diagnosing when it changes.
fn dim(v: u32, max: u32, diagnostics: &mut Diagnostics) -> u32 {
    if v == 0 || v > max {
        diagnostics.insert(Diagnostic::InputClamped);
    }
    v.clamp(1, max)
}

fn transformer(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    let t = &spec.transformer;
    let layers = dim(t.layers, 10_000, diagnostics);
    let hidden = dim(t.hidden, 1 << 20, diagnostics);
    let heads = dim(t.heads, 65_536, diagnostics);
    let kv_heads = dim(t.kv_heads, heads, diagnostics);
    let head_dim = dim(
        if t.head_dim > 0 {
            t.head_dim
        } else {
            (hidden / heads).max(1)
        },
        1 << 20,
        diagnostics,
    );
    let moe = moe::resolve(&spec.moe, t.ffn, diagnostics);
    let ffn = dim(moe.ffn, 1 << 24, diagnostics);
    let vocab = dim(t.vocab, 1 << 24, diagnostics);
    let (l, h, a, k, d, f, v) = (
        f64::from(layers),
        f64::from(hidden),
        f64::from(heads),
        f64::from(kv_heads),
        f64::from(head_dim),
        f64::from(ffn),
        f64::from(vocab),
    );
    let bias = if t.bias { 1.0 } else { 0.0 };
    let norm_p = match t.norm {
        NormKind::LayerNorm => 2.0 * h,
        NormKind::RmsNorm => h,
    };
    let norm_tensors = match t.norm {
        NormKind::LayerNorm => 2.0,
        NormKind::RmsNorm => 1.0,
    };
    // Attention: q (h × a·d), k and v (h × k·d), output (a·d × h), biases on each when `bias`.
    let attn_w = h * a * d + 2.0 * h * k * d + a * d * h;
    let attn_b = bias * (a * d + 2.0 * k * d + h);
    let (one_w, one_b, mlp_mats) = match t.ffn_kind {
        FfnKind::Gelu => (2.0 * h * f, bias * (f + h), 2.0),
        FfnKind::SwiGlu => (3.0 * h * f, bias * (2.0 * f + h), 3.0),
    };
    // A mixture of experts stores every expert (routed and shared) and a router (h × E, no bias).
    let copies = moe.stored_mlps();
    let router = h * f64::from(moe.experts);
    let (mlp_w, mlp_b) = (copies * one_w + router, copies * one_b);
    let per_layer = attn_w + attn_b + mlp_w + mlp_b + 2.0 * norm_p;
    let qkv_tensors = if t.fused_qkv { 2.0 } else { 4.0 };
    let layer_tensors = (qkv_tensors + copies * mlp_mats) * (1.0 + bias)
        + 2.0 * norm_tensors
        + f64::from(moe.experts > 0);
    let inactive = (copies - moe.active_mlps()) * (one_w + one_b);

    let positions = match t.positions {
        PositionKind::Learned => f64::from(t.max_positions) * h,
        PositionKind::Rotary => 0.0,
    };
    let embeddings = v * h + positions + f64::from(t.token_types) * h;
    let (head, head_w, head_b, head_tensors) = head_params(t.arch, t, h, v, norm_p, norm_tensors);
    let total = embeddings + l * per_layer + head;
    let lm_matrix = if t.arch == ArchKind::Decoder || t.mlm_head {
        v * h
    } else {
        0.0
    };
    let largest = (v * h).max(h * f).max(h * a * d);
    let emb_tensors =
        1.0 + f64::from(t.positions == PositionKind::Learned) + f64::from(t.token_types > 0);
    ResolvedModel {
        family: ModelFamily::Transformer,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn,
        ffn_kind: t.ffn_kind,
        vocab,
        params: ParamCounts {
            total,
            embeddings,
            per_layer,
            head,
            trainable: total,
            active: total - l * inactive,
        },
        arch: t.arch,
        norm: t.norm,
        positions: t.positions,
        tied_embeddings: t.tied_embeddings,
        gelu_tanh: t.gelu_tanh && t.ffn_kind == FfnKind::Gelu,
        fused_qkv: t.fused_qkv,
        softmax_fp32: t.softmax_fp32,
        mlm_head: t.arch == ArchKind::Encoder && t.mlm_head,
        matmul_weights: l * (attn_w + mlp_w) + head_w + lm_matrix,
        matmul_biases: l * (attn_b + mlp_b) + head_b,
        largest_tensor: largest,
        param_tensors: l * layer_tensors + emb_tensors + head_tensors,
        act_bytes_per_sample_fp32: 0.0,
        moe: MoeShape {
            routed_params_per_layer: f64::from(moe.experts) * (one_w + one_b),
            ..moe
        },
    }
}

/// Parameters outside the layers and embedding tables: (total, matmul weights, matmul biases,
/// tensors). Decoder: final norm + untied LM head (V × h, no bias). Encoder (post-LN BERT):
/// embedding norm + MLM transform (dense h×h + bias, norm, decoder bias V, decoder V×h if untied)
/// + pooler (dense h×h + bias).
fn head_params(
    arch: ArchKind,
    t: &crate::scenario::TransformerDims,
    h: f64,
    v: f64,
    norm_p: f64,
    norm_tensors: f64,
) -> (f64, f64, f64, f64) {
    let untied = if t.tied_embeddings { 0.0 } else { v * h };
    match arch {
        ArchKind::Decoder => (
            norm_p + untied,
            0.0,
            0.0,
            norm_tensors + f64::from(!t.tied_embeddings),
        ),
        ArchKind::Encoder => {
            let mut total = norm_p;
            let (mut w, mut b, mut n) = (0.0, 0.0, norm_tensors);
            if t.mlm_head {
                total += h * h + h + norm_p + v + untied;
                w += h * h;
                b += h + v;
                n += 3.0 + norm_tensors + f64::from(!t.tied_embeddings);
            }
            if t.pooler {
                total += h * h + h;
                w += h * h;
                b += h;
                n += 2.0;
            }
            (total, w, b, n)
        }
    }
}
