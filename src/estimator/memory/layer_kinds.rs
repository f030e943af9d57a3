//! Saved activations of a model whose layers differ (`model.pattern`): each layer kind's saved
//! tensors, averaged over the layers by their counts, so everything written per layer (stages,
//! checkpointing, the per-layer breakdown) keeps working. A uniform model takes the one-layer rules
//! of `activations.rs` unchanged.
//!
//! With `implementation.block_kernels: TorchReference` (Hugging Face profile) every kind takes the
//! **measured** Transformers torch-path rules of `blocks/` instead. The rules below are the default
//! (`Fused`): what GPU jobs run.
//!
//! Per kind:
//! - softmax attention (any window: Hugging Face eager and SDPA attend with a mask over the full
//!   sequence, so a window does not shrink what is saved) and dense or MoE MLPs: the rules of
//!   `activations.rs` on the kind's own heads, head size and FFN width;
//! - multi-head latent attention: the same rules on the decompressed heads (queries and keys
//!   heads × (nope + rope), values heads × v; Hugging Face `DeepseekV3Attention`, transformers 5.25)
//!   plus the two latent RMSNorms (q_lora and kv_lora wide) whose outputs `q_b_proj` and `kv_b_proj`
//!   save — **derived, not yet measured** (docs/blocks-measured.md holds the CPU measurement);
//! - Mamba-2 and Mamba as their fused CUDA kernels save them (state-spaces/mamba 2.2.4,
//!   `mamba_ssm/ops/triton/ssd_combined.py` `MambaSplitConv1dScanCombinedFn.forward` saves the
//!   in-projection output `zxbcdt`, the pre-norm output `out_x` and the norm's `rstd`;
//!   `mamba_ssm/ops/selective_scan_interface.py` `MambaInnerFn` with `checkpoint_lvl = 1` saves `xz`,
//!   `x_dbl`, the scan's output and its FP32 chunk intermediates) — derived from source, not measured;
//!   Transformers' CPU `torch_forward` saves more (docs/blocks-measured.md);
//! - gated DeltaNet as flash-linear-attention's `chunk_gated_delta_rule` saves it (fla 0.3,
//!   `fla/ops/gated_delta_rule/chunk.py`: q, k, v, g, β and the FP32 chunk matrix A, 64 per token
//!   per head) plus the projections' inputs and the gated norm — derived from source, not measured.

use super::activations::{self as act, LayerActs, Sizes};
use super::blocks;
use super::ctx::{Ctx, ceil};
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlaShape, MlpShape};
use crate::scenario::MambaVersion;

/// Sizes (field-wise largest over the kinds, for transients) and the average layer's saved bytes.
pub fn average_layer(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> (Sizes, LayerActs) {
    if blocks::applies(c, m) {
        return torch_average(c, m, b, s);
    }
    if m.blocks.is_flat() {
        let z = act::sizes(c, m, b, s);
        return (z, act::layer(c, m, &z));
    }
    average(c, m, b, s, |view, k, z| kind_layer(c, view, k, z, b, s))
}

/// The Transformers torch reference paths (`blocks`), measured: the average layer, with the rotary
/// tables beyond the one `activations::first_stage_extra` counts spread over the layers.
fn torch_average(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> (Sizes, LayerActs) {
    let l = f64::from(m.layers.max(1));
    let fl = blocks::Flavour::of(m);
    let (sizes, mut sum) = average(c, m, b, s, |view, k, z| {
        // A recurrent mixer keeps its fused kernel's rule unless the torch paths are selected.
        if blocks::recurrent(k) && !blocks::torch_paths(c) {
            return kind_layer(c, view, k, z, b, s);
        }
        // Dropout masks (the records run without dropout): the Hugging Face rules of
        // `activations.rs`, the b·a·s² one only for softmax attention, one residual dropout per
        // sub-layer.
        let whole = act::layer(c, view, z);
        let score = if k.has_attention() {
            act::score_mask(c, z)
        } else {
            0.0
        };
        let own = LayerActs {
            masks: whole.masks - act::score_mask(c, z) + score,
            ..whole
        };
        LayerActs {
            masks: sublayers(c, view, z, k, own, score).masks,
            ..blocks::layer(c, m, k, fl, b, s)
        }
    });
    // The correction is negative when the flat table is wider than the kinds' (MLA's rope, no
    // rotary at all); the average layer never goes below zero.
    sum.attention =
        (sum.attention + blocks::rope_correction(c, m, fl, s) * c.saved_scale() / l).max(0.0);
    (sizes, sum)
}

/// Shares of the layers with softmax or latent attention (the Q, K, V and O projections LoRA
/// targets) and with an MLP: (1, 1) for a transformer, (4/52, 24/52) for Nemotron-H 8B. LoRA's
/// changes to a layer's saved tensors apply to the layers that have the projections.
pub fn attention_and_mlp_shares(m: &ResolvedModel) -> (f64, f64) {
    if m.blocks.is_flat() {
        return (1.0, 1.0);
    }
    let l = f64::from(m.layers.max(1));
    let attention = m.blocks.sum(|k| f64::from(u8::from(k.has_attention())));
    let mlp = m.blocks.sum(|k| f64::from(u8::from(k.has_mlp())));
    (attention / l, mlp / l)
}

/// Whether the model's first layer has a pre-norm (a mixer or an MLP) and whether it has softmax or
/// latent attention (what the first stage's LoRA corrections take off layer 0's count: its first
/// pre-norm, its Q, K, V adapters' masks). A model without kinds is a transformer.
pub fn first_layer_norm_and_attention(m: &ResolvedModel) -> (bool, bool) {
    match m.blocks.first_kind() {
        Some(k) => (k.sublayers() > 0.0, k.has_attention()),
        None => (true, true),
    }
}

/// The pre-norms of the average layer as the rules count them: one per sub-layer (mixer, MLP), 2
/// for a transformer. A frozen norm weight (LoRA) drops what each saved for its weight.
pub fn sublayers_per_layer(m: &ResolvedModel) -> f64 {
    let l = f64::from(m.layers.max(1));
    if m.blocks.kinds().is_empty() {
        return 2.0;
    }
    m.blocks.sum(LayerKind::sublayers) / l
}

/// What a layer of kind `k` keeps of the whole layer's rule `a` (attention + MLP, two pre-norms,
/// two residual dropouts): its own sub-layers' tensors, residual dropouts and pre-norms, each norm
/// with the linears that read its output (Nemotron-H's attention-only, MLP-only and Mamba layers;
/// Mamba-1 layers; a Mamba or DeltaNet mixer's in-projections instead of Q, K and V).
/// `score_mask`: the b·a·s² dropout mask still in `a.masks` (the mixer's own).
fn sublayers(
    c: &Ctx,
    view: &ResolvedModel,
    z: &Sizes,
    k: &LayerKind,
    a: LayerActs,
    score_mask: f64,
) -> LayerActs {
    let (mixer, mlp) = (k.has_mixer(), k.has_mlp());
    let norm = |on: bool, consumers: f64| {
        if on {
            act::pre_norm(c, view, z, consumers)
        } else {
            0.0
        }
    };
    let norm = norm(mixer, mixer_norm_consumers(view, k)) + norm(mlp, act::norm_consumers(view).1);
    // The rules count two residual dropouts, one per sub-layer.
    let residual = (a.masks - score_mask) / 2.0;
    match (mixer, mlp) {
        (true, true) => LayerActs { norm, ..a },
        (true, false) => LayerActs {
            mlp: 0.0,
            norm,
            masks: a.masks - residual,
            ..a
        },
        (false, true) => LayerActs {
            attention: 0.0,
            scores: 0.0,
            mlp: a.mlp,
            norm,
            masks: residual,
        },
        (false, false) => LayerActs::default(),
    }
}

/// Linears that read the mixer's pre-norm output: Q, K and V (or one fused QKV); latent
/// attention's two down projections (`q_a_proj` or `q_proj`, `kv_a_proj_with_mqa`); Mamba's
/// `in_proj`; gated DeltaNet's `in_proj_qkvz` and `in_proj_ba` (Transformers 5.24
/// `modeling_deepseek_v3.py`, `modeling_mamba2.py`, `modeling_qwen3_next.py`).
fn mixer_norm_consumers(view: &ResolvedModel, k: &LayerKind) -> f64 {
    match k.mixer {
        MixerShape::Attention { .. } => act::norm_consumers(view).0,
        MixerShape::Mla(_) | MixerShape::DeltaNet { .. } => 2.0,
        MixerShape::Mamba { .. } => 1.0,
        MixerShape::Empty => 0.0,
    }
}

/// The average layer of the kinds, each layer's bytes from `one(view, kind, sizes)`, weighted by the
/// kinds' counts. Sizes are the field-wise largest over the kinds (for transients), except the score
/// terms (b·a·s and b·a·s²), averaged like the saved bytes so that what selective recomputation
/// drops (`score_mask` of these sizes) is the average layer's; recurrent mixers have none.
fn average(
    c: &Ctx,
    m: &ResolvedModel,
    b: f64,
    s: f64,
    one: impl Fn(&ResolvedModel, &LayerKind, &Sizes) -> LayerActs,
) -> (Sizes, LayerActs) {
    let l = f64::from(m.layers.max(1));
    let mut sizes = no_kind_sizes(c, m, b, s);
    let (mut bas, mut bas2) = (0.0, 0.0);
    let mut sum = LayerActs::default();
    for k in m.blocks.kinds() {
        let view = kind_view(m, k);
        let z = act::sizes(c, &view, b, s);
        sizes = widest(&sizes, &own_sizes(k, &z));
        let layer = one(&view, k, &z);
        let w = f64::from(k.count) / l;
        if k.has_attention() {
            bas += w * z.bas;
            bas2 += w * z.bas2;
        }
        sum.attention += w * layer.attention;
        sum.scores += w * layer.scores;
        sum.mlp += w * layer.mlp;
        sum.norm += w * layer.norm;
        sum.masks += w * layer.masks;
    }
    sizes.bas = bas;
    sizes.bas2 = bas2;
    (sizes, sum)
}

/// The sizes a layer's transients take: the flat model's, or for layers of several kinds the
/// field-wise largest over them, each kind's attention and MLP widths only where it has them
/// (`inference`'s prefill and decode; [`average_layer`]'s sizes are the same, with the score
/// terms averaged).
pub fn widest_sizes(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> Sizes {
    if m.blocks.is_flat() {
        return act::sizes(c, m, b, s);
    }
    m.blocks
        .kinds()
        .iter()
        .fold(no_kind_sizes(c, m, b, s), |sizes, k| {
            widest(
                &sizes,
                &own_sizes(k, &act::sizes(c, &kind_view(m, k), b, s)),
            )
        })
}

/// The model's sizes without the attention and MLP widths, which come from the kinds that have
/// them (a model of Mamba layers has none; the flat dimensions are only defaults for a pattern's
/// attention and MLP layers).
fn no_kind_sizes(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> Sizes {
    Sizes {
        bsq: 0.0,
        bsk: 0.0,
        bsf: 0.0,
        bas: 0.0,
        bas2: 0.0,
        ..act::sizes(c, m, b, s)
    }
}

/// Kind `k`'s sizes `z` with the attention widths only if it attends and the MLP's only if it has
/// one.
fn own_sizes(k: &LayerKind, z: &Sizes) -> Sizes {
    let attention = k.has_attention();
    let on = |yes: bool, x: f64| if yes { x } else { 0.0 };
    Sizes {
        bsq: on(attention, z.bsq),
        bsk: on(attention, z.bsk),
        bas: on(attention, z.bas),
        bas2: on(attention, z.bas2),
        bsf: on(k.has_mlp(), z.bsf),
        ..*z
    }
}

/// The model as one layer of kind `k` sees it: its heads, head size, FFN width and MLP kind.
pub fn kind_view(m: &ResolvedModel, k: &LayerKind) -> ResolvedModel {
    let mut v = *m;
    match k.mixer {
        MixerShape::Attention {
            heads,
            kv_heads,
            head_dim,
            ..
        } => {
            v.heads = heads as u32;
            v.kv_heads = kv_heads as u32;
            v.head_dim = head_dim as u32;
        }
        MixerShape::Mla(mla) => {
            v.heads = mla.heads as u32;
            v.kv_heads = mla.heads as u32;
            v.head_dim = mla.qk_head_dim() as u32;
        }
        MixerShape::Empty | MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => {}
    }
    match k.mlp {
        MlpShape::Dense { ffn, kind } => {
            v.ffn = ffn as u32;
            v.ffn_kind = kind;
            v.moe.experts = 0;
            v.moe.shared = 0;
        }
        MlpShape::Moe => v.ffn = v.moe.ffn,
        MlpShape::None => {
            v.ffn = 0;
            v.moe.experts = 0;
            v.moe.shared = 0;
        }
    }
    v
}

fn widest(a: &Sizes, z: &Sizes) -> Sizes {
    Sizes {
        bsh: a.bsh.max(z.bsh),
        bs: a.bs.max(z.bs),
        bsq: a.bsq.max(z.bsq),
        bsk: a.bsk.max(z.bsk),
        bsf: a.bsf.max(z.bsf),
        bas: a.bas.max(z.bas),
        bas2: a.bas2.max(z.bas2),
        bsv: a.bsv.max(z.bsv),
        tr: a.tr,
        lin_tr: a.lin_tr,
    }
}

fn kind_layer(
    c: &Ctx,
    view: &ResolvedModel,
    k: &LayerKind,
    z: &Sizes,
    b: f64,
    s: f64,
) -> LayerActs {
    let whole = |view: &ResolvedModel| {
        sublayers(c, view, z, k, act::layer(c, view, z), act::score_mask(c, z))
    };
    match k.mixer {
        MixerShape::Attention { .. } | MixerShape::Empty => whole(view),
        MixerShape::Mla(MlaShape {
            heads,
            q_lora,
            kv_lora,
            nope,
            rope,
            v,
            ..
        }) => {
            let mut a = whole(view);
            // The rules above count V and the output (n + r) wide like Q and K. The values are a view
            // of the kv_b output, heads × (nope + v) (that storage stays alive), and the attention
            // output is heads × v: correct both.
            let bs = b * s;
            let per_rank = ceil(heads / c.tp);
            let e = c.attention_bytes();
            let k = c.saved_scale();
            a.attention += e * bs * per_rank * ((v - rope) + (v - nope - rope)) * k;
            a.attention = a.attention.max(0.0);
            a.norm += latent_norm(c, bs, q_lora) + latent_norm(c, bs, kv_lora);
            a
        }
        MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => recurrent_mixer(c, view, k, b, s),
    }
}

/// A Hugging Face RMSNorm on a `w`-wide latent (as `activations::hf_norm`: FP32 input copy, rsqrt,
/// normalised and output tensors) whose output one linear saves.
fn latent_norm(c: &Ctx, bs: f64, w: f64) -> f64 {
    if w <= 0.0 {
        return 0.0;
    }
    let out = if c.amp { c.ec } else { c.er };
    ((4.0 + c.er) * bs * w + 4.0 * bs + out * bs * w) * c.saved_scale()
}

/// A state-space or linear-attention mixer's saved bytes (its fused kernel's, see the module note),
/// the layer's pre-norm and its MLP by the attention rules.
fn recurrent_mixer(c: &Ctx, view: &ResolvedModel, k: &LayerKind, b: f64, s: f64) -> LayerActs {
    let (t, bs) = (c.tp, b * s);
    let e = c.ec;
    let mixer = match k.mixer {
        MixerShape::Mamba {
            inner,
            heads,
            conv_channels,
            d_state,
            version,
            ..
        } => match version {
            MambaVersion::Mamba2 => {
                // zxbcdt (2·inner + 2·g·N + heads), out_x (inner), rstd (FP32, one per token),
                // and out_proj's input (inner).
                let zxbcdt = 2.0 * inner + (conv_channels - inner) + heads;
                e * bs * (zxbcdt + 2.0 * inner) / t + 4.0 * bs
            }
            MambaVersion::Mamba1 => {
                // xz (2·inner), x_dbl (dt_rank + 2N, ≈ 2N here), the scan output and out_proj input
                // (inner each), FP32 chunk intermediates (inner × 2N per 2,048-token chunk).
                let chunks = (bs / 2048.0).max(1.0);
                e * bs * (4.0 * inner + 2.0 * d_state) / t
                    + 4.0 * chunks * inner * 2.0 * d_state / t
            }
        },
        MixerShape::DeltaNet {
            key_dim,
            value_dim,
            value_heads,
            ..
        } => {
            // Projection outputs (q, k, v, z, β, g), the convolved q, k, v, q/k/v/g/β kept by the
            // chunk kernel, the gated norm's input and gate, out_proj's input; A: 64 FP32 per token
            // per head.
            let w = (2.0 * key_dim + 2.0 * value_dim + 2.0 * value_heads)
                + (2.0 * key_dim + value_dim)
                + 3.0 * value_dim;
            e * bs * w / t + 4.0 * bs * value_heads * 64.0 / t
        }
        _ => 0.0,
    };
    let z = act::sizes(c, view, b, s);
    let full = act::layer(c, view, &z);
    // The in-projection's input, the pre-norm's output: the Hugging Face rules count it with the
    // norm (`activations::pre_norm`), Megatron's with the mixer (its QKV input).
    let in_proj_input = if c.profile == crate::scenario::Profile::Megatron {
        e * z.bsh / z.tr
    } else {
        0.0
    };
    let layer = LayerActs {
        attention: (mixer + in_proj_input) * c.saved_scale(),
        scores: 0.0,
        mlp: full.mlp,
        norm: full.norm,
        // No attention scores, so no b·a·s² dropout mask.
        masks: full.masks - act::score_mask(c, &z),
    };
    sublayers(c, view, &z, k, layer, 0.0)
}
