//! One transformer layer's parameters, counted the way `sum(p.numel())` counts them (docs/model.md §2).

use super::MoeShape;
use crate::scenario::{FfnKind, NormKind, TransformerDims};

/// One transformer layer's parameter counts.
pub(super) struct LayerCounts {
    pub norm_p: f64,
    pub norm_tensors: f64,
    pub attn_w: f64,
    pub attn_b: f64,
    pub mlp_w: f64,
    pub mlp_b: f64,
    /// Weights and biases of one MLP (one expert of a mixture).
    pub one_w: f64,
    pub one_b: f64,
    pub per_layer: f64,
    pub layer_tensors: f64,
    /// Parameters of the experts a token does not run through.
    pub inactive: f64,
}

/// Counts one layer from `[h, a, k, d, f]` (hidden, heads, KV heads, head dim, FFN or expert width).
pub(super) fn layer_counts(
    t: &TransformerDims,
    moe: &MoeShape,
    dims: [f64; 5],
    bias: f64,
) -> LayerCounts {
    let [h, a, k, d, f] = dims;
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
        FfnKind::Gelu | FfnKind::SquaredRelu => (2.0 * h * f, bias * (f + h), 2.0),
        FfnKind::SwiGlu => (3.0 * h * f, bias * (2.0 * f + h), 3.0),
    };
    // A mixture of experts stores every expert (routed and shared) and a router (h × E, no bias).
    let copies = moe.stored_mlps();
    let router = h * f64::from(moe.experts);
    let (mlp_w, mlp_b) = (copies * one_w + router, copies * one_b);
    let qkv_tensors = if t.fused_qkv { 2.0 } else { 4.0 };
    LayerCounts {
        norm_p,
        norm_tensors,
        attn_w,
        attn_b,
        mlp_w,
        mlp_b,
        one_w,
        one_b,
        per_layer: attn_w + attn_b + mlp_w + mlp_b + 2.0 * norm_p,
        layer_tensors: (qkv_tensors + copies * mlp_mats) * (1.0 + bias)
            + 2.0 * norm_tensors
            + f64::from(moe.experts > 0),
        inactive: (copies - moe.active_mlps()) * (one_w + one_b),
    }
}
