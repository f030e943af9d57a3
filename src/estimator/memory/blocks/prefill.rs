//! The prefill peak under Hugging Face Transformers' torch paths (no_grad forward of the prompt;
//! `implementation.block_kernels: TorchReference`), per layer kind. **Measured** op by op on CPU
//! (transformers 5.24.0, torch 2.15; `scripts/measure/prefill_probe.py` lists every storage live at
//! the peak of a record's prefill, docs/blocks-measured.md "Prefill"): the peak lies inside the
//! last layer of one kind, in its MLP / mixture (attention and MLA models), its chunked scan
//! (Mamba-2 `Mamba2Mixer.torch_forward`, gated DeltaNet `torch_chunk_gated_delta_rule`), or at the
//! LM head. What is live there:
//! - for the whole forward: the embedding output (`inputs_embeds`, h per token), the position ids
//!   (int64 per position, models with attention), the rotary cos/sin tables ([1, s, rot] FP32 each,
//!   one pair per rotary embedding) and the attention masks (`masking_utils`: SDPA past a window
//!   one [1, 1, s, s] bool; eager attention one [b, 1, s, s] float per layer type);
//! - the layer's input (the previous layer's output, held by the model's loop; none for layer 0),
//!   its normalised input, and for a layer with attention and an MLP the post-attention residual;
//! - the kind's working set (below) — gpt-oss's eager attention also keeps its probabilities
//!   (`attn_weights`, bound to `_` in the decoder layer) through the MLP;
//! - the caches of the layers before it (and its own KV; a recurrent mixer's own conv state but not
//!   yet its final state); the cache of a sliding layer is still the whole prefill K/V (s tokens).

use super::Flavour;
use crate::estimator::memory::ctx::{Ctx, ceil};
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlaShape, MlpShape, conv_weights};
use crate::scenario::{FfnKind, MambaVersion, PositionKind};

/// Gated DeltaNet's chunk (`torch_chunk_gated_delta_rule(chunk_size=64)` as Qwen3-Next calls it).
const DELTA_CHUNK: f64 = 64.0;

/// The prefill's largest short-lived set beyond the weights, the inputs and the cache the estimate
/// counts (`ResolvedModel::cache_bytes`, window-capped) for a static batch of `b` prompts of `c.s`
/// tokens. `last`: this stage ends with the LM head.
pub fn transient(c: &Ctx, m: &ResolvedModel, b: f64, last: bool) -> f64 {
    let s = c.s;
    let t = b * s;
    let h = f64::from(m.hidden);
    let fl = Flavour::of(m);
    let kinds = m.blocks.kinds();
    let attention = kinds
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Attention { .. } | MixerShape::Mla(_)));
    let persist = c.er * t * h
        + if attention { 8.0 * s } else { 0.0 }
        + masks(c, m, b)
        + rope_bytes(m, fl, s)
        + crate::estimator::memory::towers::t5_prefill_bias(c, m, s);
    let extra_all: f64 = kinds
        .iter()
        .map(|k| f64::from(k.count) * sliding_extra(c, m, k, b))
        .sum();
    let head = if last {
        let positions = if c.all_logits { t } else { b };
        // The final norm's output; under autocast also the LM head's 16-bit cast of it. T5 with a
        // tied head scales the output by d_model^-0.5 first: both are live (measured: the T5 AMP
        // record's prefill peak at the head's `mm`; models/t5/modeling_t5.py, transformers 5.24.0).
        let outputs = if fl.t5 && m.tied_embeddings { 2.0 } else { 1.0 };
        outputs * c.er * t * h + head_input_cast(c, t * h) + c.ec * positions * f64::from(m.vocab)
    } else {
        0.0
    };
    // A peak inside a layer has every layer's autocast casts but not the LM head's.
    let head_cast = super::head_cast(c, m);
    let mut best = head + extra_all;
    for (i, k) in kinds.iter().enumerate() {
        if k.count == 0 {
            continue;
        }
        // Caches of the layers after this kind's last layer are not built yet.
        let mut later = 0.0;
        for (j, kj) in kinds.iter().enumerate() {
            let n = f64::from(m.blocks.order.after(i, j));
            later += n * (layer_cache(c, m, kj, b) + sliding_extra(c, m, kj, b));
        }
        let layer_in = if m.blocks.order.last(i) == 0 {
            0.0
        } else {
            c.er * t * h
        };
        let own = own_state_missing(c, k, b);
        let here =
            persist + layer_in + working_set(c, m, k, fl, b) - own - later + extra_all - head_cast;
        best = best.max(here);
    }
    if fl.t5 {
        best = best.max(t5_cross(c, m, b) + extra_all - head_cast);
    }
    best.max(0.0)
}

/// T5's prefill peak inside the last decoder block's cross-attention, as its K and V enter the
/// cache (`torch.cat`, `DynamicLayer.update`; models/t5/modeling_t5.py, transformers 5.24.0): the
/// embedding output, the position biases (`towers::t5_prefill_bias`), the block's input, the
/// post-self-attention residual and its normed input (h each per token), the cross q (nh·hd per
/// token) and the k and v projections of the encoder's output (nkv·hd per encoder position each,
/// still referenced by their views in the cache); under autocast the 16-bit input casts of q, k and
/// v too (derived). The whole cache counts apart. Measured: exactly the T5 FP32 records' prefill
/// peaks (`prefill_probe.py t5-d256_b2_s128_fp32`).
fn t5_cross(c: &Ctx, m: &ResolvedModel, b: f64) -> f64 {
    let (x, e) = (&m.towers.cross, &m.towers.encoder);
    let (t, h) = (b * c.s, f64::from(m.hidden));
    let enc = b * e.len;
    let casts = head_input_cast(c, t * h) + 2.0 * head_input_cast(c, enc * e.hidden);
    4.0 * c.er * t * h
        + crate::estimator::memory::towers::t5_prefill_bias(c, m, c.s)
        + casts
        + c.ec * (t * x.heads * x.head_dim + 2.0 * enc * x.kv_heads * x.head_dim)
}

/// Under autocast, the 16-bit copy of an FP32 activation of `elems` elements a matmul casts.
fn head_input_cast(c: &Ctx, elems: f64) -> f64 {
    if c.amp { c.ec * elems } else { 0.0 }
}

/// One layer's cache as the estimate counts it (window-capped KV of s tokens, recurrent state).
fn layer_cache(c: &Ctx, m: &ResolvedModel, k: &LayerKind, b: f64) -> f64 {
    k.kv_per_token_rank(1.0) * super::kv_elem_bytes(c, m, k) * b * k.cached_tokens(c.s)
        + k.state_per_sequence_rank(1.0) * c.ec * b
}

/// A sliding layer's prefill K/V beyond its window (`DynamicSlidingWindowLayer` keeps a view of
/// the whole prefill storage until the first decode step; measured).
fn sliding_extra(c: &Ctx, m: &ResolvedModel, k: &LayerKind, b: f64) -> f64 {
    match k.mixer {
        MixerShape::Attention {
            kv_heads,
            head_dim,
            window,
            ..
        } if window > 0.0 && c.s > window => {
            2.0 * kv_heads * head_dim * super::kv_elem_bytes(c, m, k) * b * (c.s - window)
        }
        _ => 0.0,
    }
}

/// A recurrent mixer's final state, not yet in the cache while its scan runs (its conv state is).
fn own_state_missing(c: &Ctx, k: &LayerKind, b: f64) -> f64 {
    match k.mixer {
        MixerShape::Mamba {
            inner,
            d_state,
            version: MambaVersion::Mamba2,
            ..
        } => c.ec * b * inner * d_state,
        MixerShape::DeltaNet {
            value_heads,
            key_head_dim,
            value_head_dim,
            ..
        } => c.ec * b * value_heads * key_head_dim * value_head_dim,
        _ => 0.0,
    }
}

/// The masks `masking_utils` builds once per forward: SDPA layers past their window need an explicit
/// [1, 1, s, s] bool mask (full layers run `is_causal`); eager attention (gpt-oss) materialises a
/// [b, 1, s, s] float mask per layer type (full, sliding), in the embeddings' type (FP32 under
/// autocast; measured).
fn masks(c: &Ctx, m: &ResolvedModel, b: f64) -> f64 {
    let s = c.s;
    let (mut sdpa_window, mut eager_full, mut eager_window) = (false, false, false);
    for k in m.blocks.kinds() {
        if let MixerShape::Attention { window, sinks, .. } = k.mixer {
            if sinks {
                eager_full |= window <= 0.0;
                eager_window |= window > 0.0;
            } else {
                sdpa_window |= window > 0.0 && s > window;
            }
        }
    }
    let eager = f64::from(u8::from(eager_full)) + f64::from(u8::from(eager_window));
    f64::from(u8::from(sdpa_window)) * s * s + eager * c.er * b * s * s
}

/// The rotary tables ([1, s, rot] cos and sin, FP32) the forward keeps: one pair per rotary
/// embedding (Gemma 3: local and global), rot as `super::rope_correction` reads it.
fn rope_bytes(m: &ResolvedModel, fl: Flavour, s: f64) -> f64 {
    if m.positions != PositionKind::Rotary {
        return 0.0;
    }
    let (tables, rot) = super::rope_tables(m, fl);
    tables * 2.0 * s * rot * 4.0
}

/// The kind's working set at its peak, with its normalised input (and the post-attention residual
/// when it has attention and an MLP).
fn working_set(c: &Ctx, m: &ResolvedModel, k: &LayerKind, fl: Flavour, b: f64) -> f64 {
    let (s, t) = (c.s, b * c.s);
    let h = f64::from(m.hidden);
    let e = c.ec;
    let normed = c.er * t * h;
    match k.mixer {
        MixerShape::Mamba {
            version: MambaVersion::Mamba2,
            ..
        } => normed + mamba2(c, k, b) - casts_after_peak(c, m, k, false),
        MixerShape::DeltaNet { .. } => {
            normed + delta_net(c, k, b) - casts_after_peak(c, m, k, false)
        }
        _ => {
            // gpt-oss binds the attention probabilities to `_`: under autocast their 16-bit cast
            // for the product with V (s columns, the sink dropped); else the softmax (s + 1).
            let probs = match k.mixer {
                MixerShape::Attention {
                    heads, sinks: true, ..
                } if c.amp => e * b * heads * s * s,
                MixerShape::Attention {
                    heads, sinks: true, ..
                } => e * b * heads * s * (s + 1.0),
                _ => 0.0,
            };
            let residual = if matches!(k.mixer, MixerShape::Empty) {
                0.0
            } else {
                c.er * t * h
            };
            let mlp = match k.mlp {
                MlpShape::None => 0.0,
                MlpShape::Dense { ffn, kind } => {
                    let live = match kind {
                        // T5's `gelu_new` over wi_0's output: x, 0.5·x, x³ and 0.044715·x³ live
                        // together (measured: the t5-gated FP32 records' prefill peak).
                        FfnKind::SwiGlu if fl.t5 => 4.0,
                        FfnKind::SwiGlu => 3.0,
                        FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
                    };
                    e * t * live * ffn
                }
                MlpShape::Moe => mixture(c, m, fl, t, shared_casts(c, m, k)),
            };
            let mlp_set = residual + probs + mlp - casts_after_peak(c, m, k, false);
            let mla_set = mla_attention(c, k, b) - casts_after_peak(c, m, k, true);
            normed + mlp_set.max(mla_set)
        }
    }
}

/// `DeepseekV3Attention` under SDPA's math path (q/k head dim ≠ v head dim), at the scores + mask
/// `add`: per token the q projection's output and the kv_a output (nh·dq, r + dr), the roped key
/// part expanded to the heads (nh·dr), the query and the key with the roped part (`cat`,
/// `new_empty`: nh·dq each), the kv_b output (nh·(nope + v)), the scaled query (nh·dq); per b·s²
/// the scores and scores + mask (2·nh); the s × s float causal mask the math path builds.
fn mla_attention(c: &Ctx, k: &LayerKind, b: f64) -> f64 {
    let MixerShape::Mla(mla) = k.mixer else {
        return 0.0;
    };
    let MlaShape {
        heads: nh,
        kv_lora,
        nope,
        rope,
        v,
        ..
    } = mla;
    let dq = mla.qk_head_dim();
    let s = c.s;
    let (e, x) = (c.ec, super::fp32_op(c));
    // Under autocast the projections (q, kv_a, kv_b) and the key buffer (`new_empty` like k_pass)
    // are 16-bit; the roped parts, the query `cat`, the scaled query, the scores, the mask are FP32
    // (RoPE's FP32 tables promote); SDPA casts the query to 16 bits and its math path on CPU
    // upcasts q, k and v to FP32 (`_scaled_dot_product_attention_math`), 2·nh·dq + nh·v more
    // (measured op by op: `prefill_probe.py deepseek_v3-qlora96_b2_s128_amp`).
    let sixteen = nh * (dq + nope + v + dq) + kv_lora + rope;
    let wide = nh * (rope + dq + dq);
    let per_tok = if c.amp {
        e * (sixteen + nh * dq) + x * (wide + 2.0 * nh * dq + nh * v)
    } else {
        e * (sixteen + wide)
    };
    b * s * per_tok + x * (2.0 * nh * b * s * s + s * s)
}

/// Under autocast, the 16-bit weight copies of kind `k`'s modules that run after its prefill peak
/// (not yet made there): after the attention (MLA's math-path scores) the o_proj and the MLP's;
/// after a recurrent mixer's scan its out_proj and the MLP's; inside a dense MLP its down_proj.
/// Measured: DeepSeek's prefill peak (scores + mask in the last layer) lacks exactly its o_proj,
/// router and shared expert casts; Mamba-2's (the scan's `clone`) its out_proj.
fn casts_after_peak(c: &Ctx, m: &ResolvedModel, k: &LayerKind, mla_peak: bool) -> f64 {
    if !c.amp {
        return 0.0;
    }
    let h = f64::from(m.hidden);
    let mlp = (k.autocast_w - k.mixer_w - conv_weights(&k.mixer)).max(0.0);
    let elems = match k.mixer {
        MixerShape::Mla(s) if mla_peak => s.heads * s.v * h + mlp,
        MixerShape::Mamba { inner, .. } => inner * h + mlp,
        MixerShape::DeltaNet { value_dim, .. } => value_dim * h + mlp,
        _ => match k.mlp {
            MlpShape::Dense { ffn, .. } => ffn * h,
            _ => 0.0,
        },
    };
    c.ec * elems
}

/// `grouped_mm_experts_forward` (`integrations/moe.py`) under no_grad, t·k routed rows. Router:
/// logits (E), top-k weights (k) and indices (k int64) per token. Per row: the gathered input (h),
/// the routing weight and its copy (2 FP32), two sort index vectors (int64); E FP32 histogram and
/// E int32 offsets. Then the largest of: (A) after the activation — gate_up output (2fe), act
/// output and product (fe each); gpt-oss's clamped GLU with biases: the gathered bias (2fe), the
/// gate_up output (2fe), two clamps, the GLU, (up + 1) and the product (5fe); (B) at the scatter
/// back — down output, weighted rows, reordered rows (3h) and one more int64; (S) the shared
/// experts after the routed output (h + 3 per shared width per token).
fn mixture(c: &Ctx, m: &ResolvedModel, fl: Flavour, t: f64, shared_casts: f64) -> f64 {
    let e = c.ec;
    // The experts' rows are in the residual type: under autocast the FP32 norm output meets the
    // FP32 expert weights in `torch._grouped_mm` (not on autocast's list); the router's logits and
    // top-k weights are 16-bit, the routing weight's copy takes the rows' type (measured:
    // `prefill_probe.py qwen3_moe-e8k2_b2_s128_amp`).
    let x = c.er;
    let h = f64::from(m.hidden);
    let (experts, k) = (f64::from(m.moe.experts), f64::from(m.moe.top_k));
    let fe = f64::from(m.moe.ffn);
    let rows = t * k;
    let router = t * (e * (experts + k) + 8.0 * k);
    let common = rows * (x * h + e + x + 16.0) + 8.0 * experts;
    let a = if fl.gpt_oss {
        rows * x * 9.0 * fe
    } else {
        rows * x * 4.0 * fe
    };
    let scatter = rows * (x * 3.0 * h + 8.0);
    let shared = f64::from(m.moe.shared);
    let s_set = if shared > 0.0 {
        e * t * (h + 3.0 * shared * fe) - common
    } else {
        0.0
    };
    router + common + (a.max(scatter) - shared_casts).max(s_set)
}

/// Under autocast, the shared experts' 16-bit weight copies, made only when they run after the
/// routed experts (`DeepseekV3MoE.forward`: `experts(...)` then `+ shared_experts(residuals)`):
/// the kind's MLP casts less its router (h × E).
fn shared_casts(c: &Ctx, m: &ResolvedModel, k: &LayerKind) -> f64 {
    if !c.amp || m.moe.shared == 0 {
        return 0.0;
    }
    let h = f64::from(m.hidden);
    let mlp = k.autocast_w - k.mixer_w - conv_weights(&k.mixer);
    c.ec * (mlp - h * f64::from(m.moe.experts)).max(0.0)
}

/// `Mamba2Mixer.torch_forward` at its peak (the `clone` of the chunk scan's output; exact on both
/// measured shapes). di = nh·hd, cd conv channels, dproj = di + cd + nh, L chunk, sp = ⌈s/L⌉·L.
/// Per token: in_proj output, SiLU(conv), clamped dt, x·dt (dproj + cd + nh + di). Per padded
/// token: padded x, dt, B and C (broadcast to the heads), A·dt cumsum, segment-sum decay, C·Bᵀ and
/// its decayed form (L each per head), the diagonal output, decay_states, B·decay, state_decay_out,
/// C·states, the off-diagonal output, their sum and its clone: 6·di + 4·nh + 3·nh·N + 3·nh·L. Per
/// sequence: the zero initial state (di·N), the inter-chunk decay (nh·(nc+1)²) and the chunk states
/// after the recurrence ((nc+1)·di·N).
fn mamba2(c: &Ctx, k: &LayerKind, b: f64) -> f64 {
    let MixerShape::Mamba {
        inner: di,
        heads: nh,
        conv_channels: cd,
        d_state: n,
        chunk,
        ..
    } = k.mixer
    else {
        return 0.0;
    };
    let l = chunk.max(1.0);
    let nc = ceil(c.s / l);
    let sp = nc * l;
    // Under autocast `mamba2_chunk_scan` upcasts x, B and C (`.float()`), so the elementwise terms
    // and the exps are FP32, while each `einsum` (a `bmm`, on autocast's list) returns 16 bits: the
    // in_proj output, the conv, dt, C·Bᵀ, the diagonal output, C·states, the chunk states and the
    // zero initial state like them (models/mamba2/modeling_mamba2.py `mamba2_chunk_scan`,
    // transformers 5.24.0; measured op by op with `prefill_probe.py mamba2-d256_b2_s128_amp`).
    let (e, x) = (c.ec, super::fp32_op(c));
    let per_tok = e * ((di + cd + nh) + cd + nh) + x * di;
    let per_pad = x * (4.0 * di + 4.0 * nh + 3.0 * nh * n + 2.0 * nh * l) + e * (2.0 * di + nh * l);
    let per_seq = e * di * n + x * nh * (nc + 1.0) * (nc + 1.0) + e * (nc + 1.0) * di * n;
    b * c.s * per_tok + b * sp * per_pad + b * per_seq + 4.0 * nh
}

/// `Qwen3NextGatedDeltaNet` with `torch_chunk_gated_delta_rule` at its peak (inside the scan over
/// chunks; exact on both measured shapes). Kd = nk·dk, Vd = nv·dv, cd = 2Kd + Vd, C = 64. Per
/// token: the qkvz and ba projections (2Kd + 2Vd, 2nv), z, b and a made contiguous (Vd + 2nv), the
/// conv output (cd), β and g (2nv). Per padded token per value head: padded v, β, g (dv + 2), v·β,
/// k·β (dv + dk), the cumulated decay (1), pairwise decay, UT system and intra-chunk attention (3C),
/// decayed k·β (dk), the two triangular solves (dv + dk), the output buffer (dv), the decayed q and
/// k (2dk). Per sequence and value head: the state (dk·dv) and the chunk decays. In the loop, per
/// value head, the largest of the output line (v_new, inter, intra·v_new, their sum: 4·C·dv), the
/// state update (v_new, inter, decayed state, kᵀ made contiguous, kᵀ·v_new:
/// 2·C·dv + 2·dk·dv + dk·C) and, after the last chunk, the output made contiguous while the
/// loop's v_new and inter are still bound (sp·dv + 2·C·dv). One C×C bool mask.
fn delta_net(c: &Ctx, k: &LayerKind, b: f64) -> f64 {
    let MixerShape::DeltaNet {
        key_dim,
        value_dim,
        value_heads: nv,
        key_head_dim: dk,
        value_head_dim: dv,
        ..
    } = k.mixer
    else {
        return 0.0;
    };
    let ch = DELTA_CHUNK;
    let nc = ceil(c.s / ch);
    let sp = nc * ch;
    let cd = 2.0 * key_dim + value_dim;
    let per_tok = 2.0 * key_dim + 3.0 * value_dim + cd + 6.0 * nv;
    let per_pad = 4.0 * dv + 5.0 * dk + 3.0 * ch + 3.0;
    let per_seq = dk * dv + nc;
    let step = (4.0 * ch * dv)
        .max(2.0 * ch * dv + 2.0 * dk * dv + dk * ch)
        .max(sp * dv + 2.0 * ch * dv);
    c.ec * (b * c.s * per_tok + b * nv * (sp * per_pad + per_seq + step)) + ch * ch
}
