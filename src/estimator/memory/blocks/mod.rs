//! What Hugging Face Transformers' **torch reference paths** save for backward, per layer kind
//! (`implementation.block_kernels: TorchReference`): **measured**, op by op, on CPU with
//! transformers 5.24.0 / torch 2.15 (docs/blocks-measured.md; the same rules in Python:
//! scripts/measure/blocks_rules.py, exact against every FP32 record of
//! tests/data/measured/blocks-*-cpu-steps.json; the estimator is held to the records' phase peaks in
//! tests/measured_blocks.rs). The fused GPU kernels' rules (**derived** from source, not measured)
//! stay in `layer_kinds.rs`.
//!
//! Element sizes: the rules were measured in FP32, where every term is 4 B. Elsewhere the tensors a
//! linear or a kernel produces count in the activation type (`ec`), norm inputs in the residual type
//! (`er`), statistics, log-sum-exp and router probabilities in FP32, indices as int64. Under
//! autocast (`c.amp`) each term takes the type the source gives it — 16-bit casts per consuming
//! matmul, FP32 norms, softmax, experts and RoPE outputs, the cached weight casts and which of them
//! exist at a peak (docs/blocks-measured.md "AMP-bf16 rules"; every AMP record held at 1 %). No
//! tensor parallelism: the torch paths are single-device Transformers modules.

mod attention;
pub mod backward;
pub mod decode;
mod mixers;
mod moe;
pub mod prefill;

use super::activations::LayerActs;
use super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlpShape};
use crate::scenario::{MambaVersion, PositionKind};

/// Whether these rules apply, under the Hugging Face profile: always when the torch reference paths
/// are selected; by default (`Fused`) too, for the saved activations of a model with multi-head
/// latent attention or a mixture of experts — Transformers code that runs the same on a GPU (the
/// MLA projections, `grouped_mm` experts, the router, SDPA attention with its window mask) — on one
/// GPU (the rules are single-device modules) with SDPA attention (`AttentionKernel::Flash`), and
/// no attention sinks (gpt-oss on a GPU runs a kernel-hub flash attention with sinks, not the eager
/// path measured here). Then Mamba-2 and gated DeltaNet mixers keep their fused-kernel rules, MLA's
/// attention is SDPA's memory-efficient kernel (log-sum-exp, not the math path's probabilities),
/// and prefill / decode keep the flat rules (`torch_paths`). Reasons: docs/blocks-measured.md
/// "Which rules are the default". These are Transformers' modules: not under LitGPT or torchtune,
/// which run Hugging Face's kernels (`c.profile`) in modules of their own (`c.framework.profile`).
pub fn applies(c: &Ctx, m: &ResolvedModel) -> bool {
    if c.framework.profile != crate::scenario::Profile::HuggingFace || m.blocks.kinds().is_empty() {
        return false;
    }
    let kinds = m.blocks.kinds();
    c.torch_blocks
        || (c.attention == crate::scenario::AttentionKernel::Flash
            && c.tp <= 1.0
            && c.pp <= 1.0
            && kinds
                .iter()
                .any(|k| k.mlp == MlpShape::Moe || matches!(k.mixer, MixerShape::Mla(_)))
            && !kinds
                .iter()
                .any(|k| matches!(k.mixer, MixerShape::Attention { sinks: true, .. })))
}

/// Whether the torch reference paths themselves are selected (CPU): Mamba-2 and gated DeltaNet take
/// their torch rules, MLA SDPA's math path, and prefill / decode the measured per-kind rules.
pub fn torch_paths(c: &Ctx) -> bool {
    c.torch_blocks
}

/// Under autocast, the elements of the weights autocast casts to 16 bit and caches until the end of
/// the forward (`LayerKind::autocast_w`: not the routed experts, which `grouped_mm` runs in the
/// parameters' FP32; Mamba / DeltaNet's `conv1d` weight too), given `cast_elems`, the stage's
/// matrix weights the flat rule casts. The cache lives from a weight's first use to the exit of the
/// outermost autocast region (`torch/amp/autocast_mode.py` `__exit__` → `clear_autocast_cache`),
/// in training and under no_grad alike: the parameters still require grad and are leaves, which
/// is all `cached_cast` asks (`aten/src/ATen/autocast_mode.cpp`, torch 2.15; measured: the
/// records' `autocast_param_casts` at the prefill and decode peaks).
pub fn autocast_elems(m: &ResolvedModel, cast_elems: f64) -> f64 {
    (cast_elems - not_autocast_elems(m)).max(0.0)
        + super::towers::encoder_cast_elems(m)
        + super::towers::vision_cast_elems(m)
}

/// The layers' matrix weights autocast does not cast (the routed experts, `conv1d` weights).
pub fn not_autocast_elems(m: &ResolvedModel) -> f64 {
    m.blocks
        .kinds()
        .iter()
        .map(|k| f64::from(k.count) * (k.matmul_w - k.autocast_w))
        .sum()
}

/// Bytes per element of an activation in the residual type (FP32 under autocast: the norms' output)
/// that `n` autocast matmuls read: under autocast each casts it and saves its own 16-bit copy
/// (autocast caches the casts of leaf weights only: `cached_cast`, `aten/src/ATen/autocast_mode.cpp`,
/// torch 2.15); otherwise the one tensor is shared. Measured: Qwen3-MoE's q, k and v projections
/// each save a [t, h] BF16 input (docs/blocks-measured.md "AMP-bf16").
pub fn read_by(c: &Ctx, n: f64) -> f64 {
    if c.amp { n * c.ec } else { c.er }
}

/// Element bytes of what autocast runs in FP32 (softmax, `log_softmax`, and ops promoted by an FP32
/// operand): 4 under autocast, else the activation type.
pub fn fp32_op(c: &Ctx) -> f64 {
    if c.amp { 4.0 } else { c.ec }
}

/// Mean bytes per cached element of a kind on the torch paths. Under autocast the cache holds what
/// the layer computed, not the cache type: softmax attention's key is RoPE's FP32 output (the
/// rotary tables follow the FP32 hidden states and `q·cos` promotes) while V is the 16-bit v_proj
/// output, so (4 + 2) / 2; MLA's latent (`kv_a_layernorm`: FP32 `weight ·` a 16-bit x promotes)
/// and its roped key are FP32. Measured: the AMP records' `kv_cache` at the prefill peak is 0.75 ×
/// (RoPE attention) and 1.0 × (MLA) the FP32 record's; Mamba-2 and T5 (no RoPE) 0.5 ×.
pub fn kv_elem_bytes(c: &Ctx, m: &ResolvedModel, k: &LayerKind) -> f64 {
    if !c.amp || !torch_paths(c) {
        return c.e_kv;
    }
    match k.mixer {
        MixerShape::Attention { .. } if roped(m) => (4.0 + c.e_kv) / 2.0,
        MixerShape::Mla(_) => 4.0,
        _ => c.e_kv,
    }
}

/// Whether the attention layers rotate their keys (RoPE): rotary positions, and not T5's decoder
/// (relative position bias; the scenario writes its positions as `Rotary`, "no table").
fn roped(m: &ResolvedModel) -> bool {
    m.positions == PositionKind::Rotary && !t5(m)
}

/// Whether the decoder layers are T5's (a T5 encoder beside them).
pub fn t5(m: &ResolvedModel) -> bool {
    m.towers.has_encoder()
        && m.towers.encoder.class == crate::estimator::model::tower_shape::EncoderClass::T5
}

/// The cache bytes beyond `ResolvedModel::cache_bytes` (which counts every element at `e_kv`) for
/// `seqs` sequences of `len` tokens: the FP32 elements `kv_elem_bytes` finds under autocast.
pub fn cache_extra(c: &Ctx, m: &ResolvedModel, layers: f64, seqs: f64, len: f64) -> f64 {
    let total = f64::from(m.layers.max(1));
    m.blocks
        .kinds()
        .iter()
        .map(|k| {
            let n = layers * f64::from(k.count) / total;
            let extra = kv_elem_bytes(c, m, k) - c.e_kv;
            n * k.kv_per_token_rank(c.tp) * extra * seqs * k.cached_tokens(len)
        })
        .sum()
}

/// Under autocast, the bytes of the LM head's 16-bit weight copy (counted with the casts), which
/// is made only when the head runs: a prefill or decode peak inside a layer has every layer's
/// casts but not the head's (measured: `autocast_param_casts` at the records' prefill peaks in the
/// last layer lack exactly the head's matrix). 0 without autocast.
pub fn head_cast(c: &Ctx, m: &ResolvedModel) -> f64 {
    if !c.amp {
        return 0.0;
    }
    let in_layers: f64 = m
        .blocks
        .kinds()
        .iter()
        .map(|k| f64::from(k.count) * k.autocast_w)
        .sum();
    let towers = super::towers::encoder_cast_elems(m) + super::towers::vision_cast_elems(m);
    c.ec * (autocast_elems(m, m.matmul_weights) - in_layers - towers).max(0.0)
}

/// Whether a kind's mixer is recurrent (Mamba, gated DeltaNet).
pub fn recurrent(k: &LayerKind) -> bool {
    matches!(
        k.mixer,
        MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. }
    )
}

/// Which Transformers classes a pattern's features identify, for the few rules that differ by
/// class rather than by block kind (docs/blocks-measured.md per class).
#[derive(Clone, Copy, Debug, Default)]
pub struct Flavour {
    /// Gemma 3 (4 norms per layer, `Gemma3RMSNorm` computes `1 + weight` per call).
    pub gemma: bool,
    /// Qwen3-Next (gated DeltaNet or a gated full attention; `1 + weight` norms, a sigmoid-gated
    /// shared expert, partial rotary 0.25).
    pub qwen3_next: bool,
    /// gpt-oss (attention sinks: eager attention, clamped SwiGLU experts with biases, softmax over
    /// the top-k logits only).
    pub gpt_oss: bool,
    /// DeepSeek-V3 (MLA: sigmoid group-limited router).
    pub deepseek: bool,
    /// T5's decoder (`T5Stack` beside a T5 encoder): the relative position bias sends SDPA down its
    /// math path, the feed-forward is `T5DenseActDense` / `T5DenseGatedActDense`, no rotary table.
    pub t5: bool,
}

impl Flavour {
    pub fn of(m: &ResolvedModel) -> Flavour {
        let mut f = Flavour {
            t5: t5(m),
            ..Flavour::default()
        };
        for k in m.blocks.kinds() {
            f.gemma |= k.norms >= 4.0;
            match k.mixer {
                MixerShape::DeltaNet { .. } => f.qwen3_next = true,
                MixerShape::Attention {
                    output_gate, sinks, ..
                } => {
                    f.qwen3_next |= output_gate;
                    f.gpt_oss |= sinks;
                }
                MixerShape::Mla(_) => f.deepseek = true,
                _ => {}
            }
        }
        f
    }
}

/// Per-token and per-sequence sizes the rules read.
#[derive(Clone, Copy, Debug)]
pub struct Dims {
    pub b: f64,
    pub s: f64,
    /// Tokens, b·s.
    pub t: f64,
    pub h: f64,
}

/// One layer's saved bytes under the torch reference path.
pub fn layer(c: &Ctx, m: &ResolvedModel, k: &LayerKind, fl: Flavour, b: f64, s: f64) -> LayerActs {
    let d = Dims {
        b,
        s,
        t: b * s,
        h: f64::from(m.hidden),
    };
    // The layer's RMSNorms: input x, 1/rms and x·1/rms (2h + 1 per token; docs/blocks-measured.md
    // "Norms"); the normalised output its consumers save counts with the mixer / MLP.
    let mut a = LayerActs {
        norm: k.norms * d.t * (2.0 * c.er * d.h + 4.0),
        ..LayerActs::default()
    };
    if fl.gemma || fl.qwen3_next {
        // `1 + weight` per call: h per norm, a constant.
        a.norm += 4.0 * k.norms * d.h;
    }
    match k.mixer {
        MixerShape::Attention { .. } => attention::attention(c, &d, k, fl, &mut a),
        MixerShape::Mla(_) => attention::mla(c, &d, k, torch_paths(c), &mut a),
        MixerShape::Mamba { .. } => a.attention += mixers::mamba2(c, &d, k),
        MixerShape::DeltaNet { .. } => a.attention += mixers::delta_net(c, &d, k),
        MixerShape::Empty => {}
    }
    a.mlp = match k.mlp {
        MlpShape::None => 0.0,
        MlpShape::Dense { ffn, kind } if fl.t5 => {
            if kind == crate::scenario::FfnKind::SwiGlu {
                moe::t5_gated(c, &d, ffn)
            } else {
                moe::t5_relu(c, &d, ffn)
            }
        }
        MlpShape::Dense { ffn, kind } => moe::dense(c, &d, ffn, kind),
        MlpShape::Moe => moe::mixture(c, m, &d, fl),
    };
    let z = c.saved_scale();
    a.attention *= z;
    a.scores *= z;
    a.mlp *= z;
    a.norm *= z;
    a
}

/// Rotary cos/sin tables the torch paths keep ([1, s, rot] FP32 each, shared by the layers using
/// that rotary embedding) beyond the one table `activations::first_stage_extra` counts, spread
/// over the layers (measured: attributed to the first layer using each table).
pub fn rope_correction(c: &Ctx, m: &ResolvedModel, fl: Flavour, s: f64) -> f64 {
    let (tables, rot) = rope_tables(m, fl);
    // Nemotron-H's attention has no rotary embedding (the scenario says so by its positions).
    let rotary = f64::from(u8::from(m.positions == PositionKind::Rotary));
    let ours = rotary * tables * 2.0 * s * rot * 4.0;
    let counted = if m.positions == PositionKind::Rotary {
        2.0 * s * f64::from(m.head_dim) * c.er
    } else {
        0.0
    };
    ours - counted
}

/// The rotary embeddings the torch paths build: (tables, rotary width). gpt-oss rotates half the
/// head, Qwen3-Next a quarter, MLA its rope dims; Gemma 3's local and global layers have their own
/// tables (different bases).
pub fn rope_tables(m: &ResolvedModel, fl: Flavour) -> (f64, f64) {
    // T5 adds a relative position bias, no rotary table (the scenario writes `Rotary`, "no table").
    if fl.t5 {
        return (0.0, 0.0);
    }
    let mut rot: f64 = 0.0;
    let (mut local, mut global) = (false, false);
    for k in m.blocks.kinds() {
        match k.mixer {
            MixerShape::Attention {
                head_dim, window, ..
            } => {
                let r = if fl.gpt_oss {
                    head_dim / 2.0
                } else if fl.qwen3_next {
                    (head_dim * 0.25).floor()
                } else {
                    head_dim
                };
                rot = rot.max(r);
                local |= window > 0.0;
                global |= window <= 0.0;
            }
            MixerShape::Mla(mla) => rot = rot.max(mla.rope),
            _ => {}
        }
    }
    // Gemma 3: local and global layers have their own rotary embeddings (different bases).
    let tables = if fl.gemma && local && global {
        2.0
    } else if rot > 0.0 {
        1.0
    } else {
        0.0
    };
    (tables, rot)
}

/// Training forward: Transformers builds its `DynamicCache` in training too (`use_cache` defaults to
/// true) and the model output holds it until the loss is computed, so at the loss (the forward's
/// peak) the cache's storages that no backward-saved tensor shares are live on top of the saved set
/// (measured: forward peak − end of forward = logits + these, docs/blocks-measured.md records).
/// Per layer: K and V (2·nkv·hd per token) where attention saved expanded copies instead (SDPA past
/// the window, eager with sinks); the roped shared key of MLA (rope per token; the latent is the
/// saved norm output); a gated DeltaNet's conv and recurrent states ((2Kd + Vd)·k + nv·dk·dv per
/// sequence). `Mamba2ForCausalLM` returns no cache in training (measured: nothing extra); a hybrid
/// with attention (Nemotron-H) does, with each Mamba-2 layer's conv and SSM states (cd·k + nh·hd·N
/// per sequence; measured: 282,624 B for two layers at b = 1).
pub fn training_cache(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> f64 {
    let e = c.ec;
    let k_bytes = fp32_op(c);
    let hybrid = m
        .blocks
        .kinds()
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Attention { .. }));
    let mut out = 0.0;
    for k in m.blocks.kinds() {
        let n = f64::from(k.count);
        out += n * match k.mixer {
            MixerShape::Attention {
                kv_heads,
                head_dim,
                window,
                sinks,
                ..
            } if sinks || (window > 0.0 && s > window) => {
                b * s * (k_bytes + e) * kv_heads * head_dim
            }
            // Under autocast the cached key is RoPE's FP32 output (the rotary tables follow the
            // FP32 hidden states, `cos.to(x.dtype)`, and `q·cos` promotes) while SDPA saved its own
            // 16-bit cast: the key is not shared (measured: forward peak − end of forward).
            MixerShape::Attention {
                kv_heads, head_dim, ..
            } if c.amp && roped(m) => b * s * 4.0 * kv_heads * head_dim,
            // T5's position bias sends SDPA down its math path, which saves a contiguous Kᵀ (the
            // cached K is shared with no saved tensor; V is) and on CPU under autocast FP32 upcasts
            // of both (the cached 16-bit K and V are shared with none). Measured: the T5 records'
            // forward peak − end of forward, FP32 and AMP.
            MixerShape::Attention {
                kv_heads, head_dim, ..
            } if t5(m) => {
                let copies = if c.amp { 2.0 } else { 1.0 };
                b * s * copies * e * kv_heads * head_dim
            }
            // Under autocast the cached latent is the FP32 norm output, which no saved tensor
            // shares (kv_b_proj saved a 16-bit cast): latent and roped key, FP32.
            MixerShape::Mla(mla) if c.amp => 4.0 * b * s * mla.kv_latent_width(),
            MixerShape::Mla(mla) => e * b * s * mla.rope,
            // The recurrent state of one sequence (`LayerKind::state_per_sequence`).
            MixerShape::Mamba { .. } if hybrid => e * b * k.state_per_sequence(),
            MixerShape::DeltaNet { .. } => e * b * k.state_per_sequence(),
            _ => 0.0,
        };
    }
    // Under autocast the LM head saved a 16-bit cast of the final norm's output, so the FP32 output
    // itself (`outputs.last_hidden_state`, held by `*ForCausalLM.forward` until it returns the loss)
    // is live at the loss too.
    // `T5ForConditionalGeneration` with a tied head scales the decoder's output by d_model^-0.5
    // before the head: the unscaled output (`decoder_outputs`) is live at the loss beside the
    // scaled one the head reads (models/t5/modeling_t5.py, transformers 5.24.0; measured).
    if t5(m) && m.tied_embeddings {
        out += c.er * b * s * f64::from(m.hidden);
    }
    if c.amp {
        out += c.er * b * s * f64::from(m.hidden);
        // `Mamba2ForCausalLM`, `MambaForCausalLM` and `NemotronHForCausalLM` upcast the logits as
        // the head returns them (`self.lm_head(...).float()`): the 16-bit logits the flat rule
        // counts at the loss are already freed (measured: Mamba-2's forward peak − end of forward
        // = FP32 logits + the final norm's output).
        if upcasts_logits(m) {
            out -= c.ec * b * s * f64::from(m.vocab);
        }
    }
    out
}

/// Whether the model's Transformers class upcasts the logits inside its forward (Mamba-2 layers:
/// Mamba2, Nemotron-H; Mamba-1 without attention: Mamba), rather than in the loss.
fn upcasts_logits(m: &ResolvedModel) -> bool {
    let kinds = m.blocks.kinds();
    let mamba = |v: MambaVersion| {
        kinds
            .iter()
            .any(|k| matches!(k.mixer, MixerShape::Mamba { version, .. } if version == v))
    };
    let attention = kinds
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Attention { .. }));
    mamba(MambaVersion::Mamba2) || (mamba(MambaVersion::Mamba1) && !attention)
}
