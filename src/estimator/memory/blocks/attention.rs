//! Softmax attention and multi-head latent attention under the Transformers torch paths
//! (docs/blocks-measured.md "Attention", "Sliding-window attention", "Multi-head latent attention";
//! `models/{llama,mistral,qwen3,gemma3,gpt_oss,qwen3_next,deepseek_v3}/modeling_*.py`,
//! transformers 5.24.0). Measured on CPU.

use super::{Dims, Flavour};
use crate::estimator::memory::activations::LayerActs;
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlaShape};

/// SDPA attention (`ScaledDotProductFlashAttentionForCpu`), per token: the normed input the q/k/v
/// projections share (h), q and the output (nh·hd each), k and v (nkv·hd each, GQA inside the
/// kernel), log-sum-exp (nh, FP32). Past the window (s > w) SDPA needs an explicit mask: K and V
/// are expanded to nh heads (`repeat_kv`) and the b×1×s×s float mask is kept. qk-norm (Qwen3,
/// Gemma 3): 2·nh·hd + nh and 2·nkv·hd + nkv. Qwen3-Next's output gate: the gated q projection's
/// output, the sigmoid and the gated output (4·nh·hd more). gpt-oss (eager, sinks): q, K^T and V at
/// nh heads, the softmax over s + 1 columns (nh·b·s² + nh·t), one int64 per head (the row max
/// index), the o_proj input.
pub fn attention(c: &Ctx, d: &Dims, k: &LayerKind, fl: Flavour, a: &mut LayerActs) {
    let MixerShape::Attention {
        heads,
        kv_heads,
        head_dim,
        window,
        qk_norm,
        sinks,
        output_gate,
        ..
    } = k.mixer
    else {
        return;
    };
    let (e, t, nh, hd) = (c.ec, d.t, heads, head_dim);
    let bss = d.b * d.s * d.s * c.cp;
    // The normalised input, read by the q, k and v projections.
    let input = super::read_by(c, 3.0) * d.h;
    if sinks {
        // Under autocast the softmax over [scores | sink] runs in FP32 (the sink column is an FP32
        // parameter: `cat` promotes), and `probs[..., :-1].to(value.dtype)` saves a 16-bit copy
        // for the product with V (`eager_attention_forward`, models/gpt_oss/modeling_gpt_oss.py).
        a.attention += t * (input + e * 4.0 * nh * hd + 4.0 * nh + 8.0 * nh);
        a.scores += bss * nh * super::fp32_op(c);
        if c.amp {
            a.scores += bss * nh * e;
        }
        return;
    }
    if fl.t5 {
        t5_self_attention(c, d, nh, hd, a);
        return;
    }
    let masked = window > 0.0 && d.s > window;
    let kv = if masked { nh } else { kv_heads };
    let mut per_tok = input + e * (2.0 * nh * hd + 2.0 * kv * hd) + 4.0 * nh;
    if qk_norm {
        // q_norm / k_norm over a 16-bit projection output: under autocast the FP32 upcast x, 1/rms
        // and the normalised product — FP32 for `x.float() · (1 + weight)` (Gemma 3, Qwen3-Next),
        // `x.to(input_dtype)` 16-bit for `weight · x.to(input_dtype)` (Qwen3): the norms'
        // `forward` in models/{gemma3,qwen3_next,qwen3_moe}/modeling_*.py.
        let normed = match (c.amp, fl.gemma || fl.qwen3_next) {
            (false, _) => 2.0 * e,
            (true, true) => 8.0,
            (true, false) => 4.0 + e,
        };
        per_tok += normed * (nh * hd + kv_heads * hd) + 4.0 * (nh + kv_heads);
    }
    if output_gate {
        per_tok += e * 4.0 * nh * hd;
    }
    a.attention += t * per_tok;
    if qk_norm && (fl.gemma || fl.qwen3_next) {
        a.attention += 4.0 * 2.0 * hd; // `1 + weight` of q_norm and k_norm
    }
    if masked {
        a.scores += bss * e;
    }
}

/// T5's decoder self-attention (`T5Attention`, models/t5/modeling_t5.py, transformers 5.24.0): the
/// relative position bias is an additive float mask, so SDPA takes its math path
/// (`_scaled_dot_product_attention_math`), which on CPU upcasts what autocast cast. Per token: the
/// normed input (one FP32 tensor the q, k and v projections share, or under autocast a 16-bit cast
/// each: 3h), the scaled q, the contiguous Kᵀ and V (3·nh·hd, FP32 under autocast) and the o_proj
/// input (nh·hd, a 16-bit cast of the FP32 output under autocast); per b·s² the probabilities (nh,
/// FP32 under autocast). Measured: the T5 records' `saved_by_module` rows of every decoder
/// `SelfAttention` (786,432 B per layer at b = 2, s = 64, nh·hd = h = 256, FP32 and AMP-bf16 alike);
/// the same rule as the encoder's (`towers::t5_layer_autocast`) with the causal mask counted apart.
fn t5_self_attention(c: &Ctx, d: &Dims, nh: f64, hd: f64, a: &mut LayerActs) {
    let x = super::fp32_op(c);
    a.attention += d.t * (super::read_by(c, 3.0) * d.h + x * 3.0 * nh * hd + c.ec * nh * hd);
    a.scores += d.b * d.s * d.s * nh * x;
}

/// `DeepseekV3Attention`: q/k head dim (nope + rope) ≠ v head dim, so SDPA runs its math path
/// (matmul, softmax, matmul). Per token: normed input (h); with q_lora: `q_a_layernorm` (2·qr + 1)
/// and `q_b_proj`'s input (qr); `kv_a_layernorm`'s input (a view of the kv_a output, r + dr), its
/// x·1/rms (r) and 1/rms (1); `kv_b_proj`'s input (r); q and K^T (nh·(nope + rope) each); V, a view
/// of the kv_b output at b = 1 (nh·(nope + v)) and a copy at b > 1 (nh·v); the o_proj input
/// (nh·v). Per b·s²: the softmax output (nh). `math_path` false (a GPU: SDPA's memory-efficient
/// kernel accepts a value head dim unlike the query's; derived, not measured): no probabilities,
/// the log-sum-exp instead (nh FP32 per token).
pub fn mla(c: &Ctx, d: &Dims, k: &LayerKind, math_path: bool, a: &mut LayerActs) {
    let MixerShape::Mla(s) = k.mixer else {
        return;
    };
    let e = c.ec;
    if c.amp {
        mla_autocast(c, d, &s, math_path, a);
        return;
    }
    let heads = s.heads;
    let v_saved = if d.b <= 1.0 {
        heads * s.kv_b_head_dim()
    } else {
        heads * s.v
    };
    let mut per_tok = e * (d.h + s.kv_latent_width() + 2.0 * s.kv_lora)
        + 4.0
        + e * (2.0 * heads * s.qk_head_dim() + v_saved + heads * s.v);
    if s.q_lora > 0.0 {
        per_tok += e * 3.0 * s.q_lora + 4.0;
    }
    a.attention += d.t * per_tok;
    if math_path {
        a.scores += d.b * d.s * d.s * c.cp * heads * e;
    } else {
        a.attention += d.t * 4.0 * heads;
    }
}

/// `DeepseekV3Attention` under autocast (measured: the AMP records' `saved_by_module`), per token:
/// the normed input cast to 16 bits by each of the two projections reading it (q_a_proj or q_proj,
/// kv_a_proj_with_mqa); each latent norm (`weight · x.to(input_dtype)` over a 16-bit projection
/// output) keeps its FP32 upcast, 1/rms and the 16-bit normalised x, and the next projection a
/// 16-bit cast of its FP32 output (q_b_proj: qr, kv_b_proj: r); q, Kᵀ and V are FP32 — RoPE's FP32
/// tables promote q and the roped key, and SDPA's math path on CPU upcasts what autocast cast to
/// 16 bits (`_scaled_dot_product_attention_math`) — and so are the probabilities (softmax); the
/// o_proj input is a 16-bit cast of the FP32 output. GPU (memory-efficient kernel): the log-sum-exp
/// instead of the probabilities, as without autocast.
fn mla_autocast(c: &Ctx, d: &Dims, s: &MlaShape, math_path: bool, a: &mut LayerActs) {
    let heads = s.heads;
    let (e, x) = (c.ec, super::fp32_op(c));
    // A latent norm over a 16-bit projection output of width w, then the next projection's cast.
    let latent = |w: f64| x * w + e * w + 4.0 + e * w;
    let mut per_tok = super::read_by(c, 2.0) * d.h
        + latent(s.kv_lora)
        + x * heads * (2.0 * s.qk_head_dim() + s.v)
        + e * heads * s.v;
    if s.q_lora > 0.0 {
        per_tok += latent(s.q_lora);
    }
    a.attention += d.t * per_tok;
    if math_path {
        a.scores += d.b * d.s * d.s * c.cp * heads * x;
    } else {
        a.attention += d.t * 4.0 * heads;
    }
}
