//! FLOPs and weight counts of a forward pass, from the transformer's dimensions.
//!
//! Convention: 2 FLOPs per multiply-accumulate (the tensor-core peak convention). Per token and layer,
//! a forward pass executes (Kaplan et al. 2020 Table 1; Korthikanti et al. 2022 App. A):
//! - projections 2·h·(q + 2·kv + q) where q = heads·d_head and kv = kv_heads·d_head
//!   (= 8h² for multi-head attention),
//! - MLP 2·m·h·f with m = 2 matrices (GELU) or 3 (SwiGLU) (= 16h² for f = 4h, GELU),
//! - attention scores and weighted values 4·ctx·q (= 4sh, the full-s count PaLM App. B and
//!   Korthikanti use even for causal masks),
//!
//! and the LM head 2·h·V per token. Training = 3 × forward (backward ≈ 2 × forward, Kaplan §2.1), so
//! model FLOPs per iteration = 72BLsh²(1 + s/6h + V/12hL) for GPT-3-shaped models (Korthikanti Eq. 7).

use super::score_kernel::{self, ScoreKernel};
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape};
use crate::scenario::{ArchKind, ModelFamily, ModelSpec};

/// Forward FLOPs of one token through one transformer layer attending over `ctx` positions.
pub fn layer_flops_per_token(m: &ResolvedModel, ctx: f64) -> f64 {
    let (proj, mlp) = layer_matmul_weights(m);
    2.0 * (proj + mlp) + attention_flops_per_token(m, ctx)
}

/// Forward FLOPs a prompt's token executes through one layer in a prefill of `ctx` tokens: the
/// projections and MLP, and the attention core as `kernel` runs it ([`executed_attention_flops`]).
/// The model-FLOP count (MFU) keeps [`layer_flops_per_token`].
pub fn prefill_layer_flops_per_token(m: &ResolvedModel, ctx: f64, kernel: ScoreKernel) -> f64 {
    let (proj, mlp) = layer_matmul_weights(m);
    let causal = m.arch == ArchKind::Decoder;
    2.0 * (proj + mlp) + executed_attention_flops(m, ctx, kernel, causal)
}

/// The attention-core part of [`layer_flops_per_token`]: QKᵀ and AV, 4·ctx·heads·d_head.
/// Selective recomputation recomputes this core (Korthikanti §4.1); App. A Eq. 8 charges it 3×.
pub fn attention_flops_per_token(m: &ResolvedModel, ctx: f64) -> f64 {
    if per_kind(m) {
        let l = f64::from(m.layers.max(1));
        return m.blocks.sum(|k| mixer_core_flops(k, ctx)) / l;
    }
    4.0 * ctx.max(0.0) * m.heads as f64 * m.head_dim as f64
}

/// The attention-core FLOPs per token and layer, averaged over the layers, that `kernel` executes
/// (`score_kernel`: every key materialised, the causal triangle skipped, or every masked block
/// skipped): [`attention_flops_per_token`]'s 4 · keys · heads · d_head (MLA 2 · keys · heads ·
/// (nope + rope + v)) at the keys the kernel scores. A scan (Mamba, gated DeltaNet) has no masked
/// blocks: its FLOPs as counted.
pub fn executed_attention_flops(
    m: &ResolvedModel,
    ctx: f64,
    kernel: ScoreKernel,
    causal: bool,
) -> f64 {
    let (attention, scans) = executed_attention_flops_split(m, ctx, kernel, causal);
    attention + scans
}

/// [`executed_attention_flops`] split into the attention layers' part (softmax and latent
/// attention: what context parallelism's ring hides its K/V transfers behind) and the scans'.
pub fn executed_attention_flops_split(
    m: &ResolvedModel,
    ctx: f64,
    kernel: ScoreKernel,
    causal: bool,
) -> (f64, f64) {
    let keys =
        |window: f64, chunked: bool| score_kernel::keys(kernel, ctx, window, chunked, causal);
    if !per_kind(m) {
        return (
            4.0 * keys(0.0, false) * m.heads as f64 * m.head_dim as f64,
            0.0,
        );
    }
    let l = f64::from(m.layers.max(1));
    let attention = m.blocks.sum(|k| {
        if k.has_attention() {
            mixer_flops_at(k, keys)
        } else {
            0.0
        }
    });
    let scans = m.blocks.sum(|k| {
        if k.has_attention() {
            0.0
        } else {
            mixer_core_flops(k, ctx)
        }
    });
    (attention / l, scans / l)
}

/// Whether the attention terms are counted layer kind by layer kind (a model whose layers differ, or
/// with windowed or recurrent layers) rather than from the flat dimensions.
fn per_kind(m: &ResolvedModel) -> bool {
    !m.blocks.is_flat() || m.has_bounded_cache()
}

/// Softmax score elements per token and layer, averaged over the layers (heads × keys of each
/// attention layer; scans have none): what a materialised attention's softmax and dropout move.
/// The eager path scores every key and masks (Transformers' `eager_attention_forward` builds the
/// full s × s scores even under a sliding window), so the window does not shrink it.
pub fn softmax_scores_per_token(m: &ResolvedModel, ctx: f64) -> f64 {
    let ctx = ctx.max(0.0);
    if !per_kind(m) {
        return ctx * m.heads as f64;
    }
    let l = f64::from(m.layers.max(1));
    m.blocks.sum(|k| match k.mixer {
        MixerShape::Attention { heads, .. } => ctx * heads,
        MixerShape::Mla(s) => ctx * s.heads,
        _ => 0.0,
    }) / l
}

/// The token-mixing core of one layer kind per token (no projections), averaged by the caller:
/// - attention 4 · min(ctx, window) · heads · d_head (a sliding window bounds the keys; Beltagy et
///   al. 2020 "Longformer" §3.1);
/// - MLA 2 · ctx · heads · (d_nope + d_rope) for QKᵀ plus 2 · ctx · heads · d_v for AV
///   (DeepSeek-V2 §2.1.2, the decompressed training form);
/// - Mamba's selective scan 9 · inner · d_state (Gu & Dao 2023 §3.3.2: the scan costs 9·B·L·D·N
///   FLOPs) and the depthwise convolution 2 · channels · d_conv;
/// - gated DeltaNet's state update and read-out, 4 · heads · d_k · d_v per token (Yang et al. 2024
///   §3, the recurrent form), plus its convolution.
pub fn mixer_core_flops(k: &LayerKind, ctx: f64) -> f64 {
    let ctx = ctx.max(0.0);
    mixer_flops_at(
        k,
        |window, _| {
            if window > 0.0 { ctx.min(window) } else { ctx }
        },
    )
}

/// [`mixer_core_flops`] with the keys an attention layer's query scores given by `keys(window,
/// chunked)` (the model-FLOP convention, or what a kernel executes: `score_kernel::keys`).
fn mixer_flops_at(k: &LayerKind, keys: impl Fn(f64, bool) -> f64) -> f64 {
    match k.mixer {
        MixerShape::Attention {
            heads,
            head_dim,
            window,
            chunked,
            ..
        } => 4.0 * keys(window, chunked) * heads * head_dim,
        MixerShape::Mla(s) => 2.0 * keys(0.0, false) * s.heads * s.kv_per_head(),
        MixerShape::Mamba {
            inner,
            conv_channels,
            d_conv,
            d_state,
            ..
        } => 9.0 * inner * d_state + 2.0 * conv_channels * d_conv,
        MixerShape::DeltaNet {
            key_dim,
            value_dim,
            value_heads,
            key_head_dim,
            value_head_dim,
            conv_kernel,
        } => {
            4.0 * value_heads * key_head_dim * value_head_dim
                + 2.0 * (2.0 * key_dim + value_dim) * conv_kernel
        }
        MixerShape::Empty => 0.0,
    }
}

/// Weights of one layer's matrix multiplies: (attention projections, MLP).
pub fn layer_matmul_weights(m: &ResolvedModel) -> (f64, f64) {
    if !m.blocks.is_flat() {
        let l = f64::from(m.layers.max(1));
        return (
            m.blocks.sum(|k| k.mixer_w) / l,
            m.blocks.sum(|k| k.mlp_active_w) / l,
        );
    }
    let h = m.hidden as f64;
    let (q, kv) = m.attention_widths();
    let mats = m.ffn_kind.matrices();
    // A mixture of experts runs top-k + shared experts per token, plus its router (h × E).
    let experts = m.moe.active_mlps();
    let router = h * m.moe.experts as f64;
    (
        h * (2.0 * q + 2.0 * kv),
        mats * h * m.ffn as f64 * experts + router,
    )
}

/// Share of one layer's matmul FLOPs ([`layer_matmul_weights`]) that torchtitan's per-op
/// checkpointing recomputes in backward (`memory::per_op`, docs/frameworks/torchtitan.md): the
/// even-numbered matmuls, wk and wo (with a fused QKV, only the output projection) and the MLP's
/// second matrix (w3, or fc2), on each active MLP. The attention core is kept, not recomputed.
pub fn per_op_recomputed_share(m: &ResolvedModel) -> f64 {
    let h = m.hidden as f64;
    let (q, kv) = m.attention_widths();
    let attention = if m.fused_qkv { h * q } else { h * (kv + q) };
    let even = attention + h * m.ffn as f64 * m.moe.active_mlps();
    let (proj, mlp) = layer_matmul_weights(m);
    if proj + mlp > 0.0 {
        (even / (proj + mlp)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// LM-head FLOPs per token whose logits are computed: 2·h·V.
pub fn head_flops_per_token(m: &ResolvedModel) -> f64 {
    2.0 * m.hidden as f64 * m.vocab as f64
}

/// Weights read by the forward's matrix multiplies: all layers plus the LM head (h·V). Embedding
/// lookups read only the rows used and are left out.
pub fn matmul_weights(m: &ResolvedModel) -> f64 {
    let (proj, mlp) = layer_matmul_weights(m);
    m.layers as f64 * (proj + mlp) + m.hidden as f64 * m.vocab as f64
}

/// KV-cache elements per token of one sequence over all layers: 2 · L · kv_heads · d_head
/// (kipply, "Transformer Inference Arithmetic"; GQA/MQA use the KV heads).
pub fn kv_elements_per_token(m: &ResolvedModel) -> f64 {
    if per_kind(m) {
        return m.blocks.sum(|k| k.kv_per_token());
    }
    2.0 * m.layers as f64 * m.kv_heads as f64 * m.head_dim as f64
}

/// Forward FLOPs and weights of one *sample* for the non-transformer families.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleWork {
    /// Forward FLOPs per sample (image or recommender query).
    pub flops: f64,
    /// Parameters read by the forward.
    pub weights: f64,
    /// Bytes gathered from embedding tables per sample, at 4 B per element (recommender).
    pub lookup_elements: f64,
}

/// CNN: 2 × multiply-accumulates per image, scaled by (resolution ÷ reference)² (torchvision counts
/// MACs as "GFLOPS", reference §1.9). Recommender: 2 × dense parameters per sample plus the lookups.
/// `spec` is a resolved model section (`estimator::resolve`: every figure in range).
pub fn sample_work(spec: &ModelSpec) -> SampleWork {
    match spec.family {
        ModelFamily::Cnn => {
            let c = &spec.cnn;
            // A layer-table network: its exact per-layer MACs at the scenario's side
            // (`model::cnn::counts`; docs/cnn.md).
            let res = f64::from(c.resolution.max(1));
            if let Some(n) = crate::estimator::model::cnn::counts(c.network, res) {
                return SampleWork {
                    flops: 2.0 * n.macs,
                    weights: n.params,
                    lookup_elements: 0.0,
                };
            }
            let scale = c.resolution as f64 / c.reference_resolution.max(1) as f64;
            SampleWork {
                flops: 2.0 * c.macs_per_image * scale * scale,
                weights: c.params,
                lookup_elements: 0.0,
            }
        }
        ModelFamily::Recommender => {
            let r = &spec.recommender;
            SampleWork {
                flops: 2.0 * r.dense_params,
                weights: r.dense_params,
                lookup_elements: r.lookups_per_sample as f64 * r.dim as f64,
            }
        }
        ModelFamily::Transformer => SampleWork::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FfnKind;

    fn gpt3() -> ResolvedModel {
        ResolvedModel {
            layers: 96,
            hidden: 12288,
            heads: 96,
            kv_heads: 96,
            head_dim: 128,
            ffn: 4 * 12288,
            ffn_kind: FfnKind::Gelu,
            vocab: 51200,
            ..ResolvedModel::default()
        }
    }

    #[test]
    fn layer_is_24h2_plus_4sh() {
        let m = gpt3();
        let h = 12288.0_f64;
        let s = 2048.0;
        let got = layer_flops_per_token(&m, s);
        assert!((got - (24.0 * h * h + 4.0 * s * h)).abs() < 1.0);
    }
}
