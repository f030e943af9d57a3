//! A transformer whose layers are a pattern of blocks (`model.pattern`): the layer kinds
//! ([`super::blocks`]) summed into the model's counts.

use super::blocks::{self, Blocks, Defaults, MixerShape, MlpShape};
use super::{MoeShape, ResolvedModel, head_params, moe};
use crate::estimator::resolve::layer_run;
use crate::estimator::{Diagnostic, Diagnostics, ParamCounts};
use crate::scenario::{ArchKind, FfnKind, ModelFamily, ModelSpec, PatternPart, PositionKind};

/// Most layers a pattern may describe (`model.transformer.layers`' bound).
const MAX_LAYERS: u32 = 10_000;

/// The counts of a patterned transformer; `spec`'s numbers are in range, `pattern`'s are clamped
/// here (reported as `InputClamped`).
pub(super) fn transformer(
    spec: &ModelSpec,
    pattern: &[PatternPart],
    towers: &[crate::scenario::Tower],
    d: &mut Diagnostics,
) -> ResolvedModel {
    let t = &spec.transformer;
    let shape = moe::shape(&spec.moe, t.ffn);
    let defaults = Defaults::of(t);
    let mut blocks = Blocks::default();
    let mut layers = 0u32;
    let mut cross = super::tower_shape::CrossShape::default();
    for part in pattern {
        let repeat = crate::estimator::resolve::pattern_repeat(part.repeat, d);
        let mut order = super::layer_order::PartOrder::new(repeat);
        for run in &part.layers {
            let run = layer_run(run, d);
            let kind = blocks::layer_kind(&run, &spec.moe, &shape, &defaults);
            let want = run.count.saturating_mul(repeat);
            let count = want.min(MAX_LAYERS - layers);
            if count < want {
                d.insert(Diagnostic::InputClamped);
            }
            layers += count;
            if let crate::scenario::Mixer::Attention(a) = &run.mixer
                && a.cross_attention
                && let MixerShape::Attention {
                    heads,
                    kv_heads,
                    head_dim,
                    ..
                } = kind.mixer
            {
                cross = super::tower_shape::CrossShape {
                    layers: cross.layers + f64::from(count),
                    heads,
                    kv_heads,
                    head_dim,
                };
            }
            let i = blocks.add(kind, count);
            // A clamped run keeps its per-copy share (only the order facts are approximate then).
            order.run(&mut blocks.order, i, count / repeat.max(1));
        }
        order.end(&mut blocks.order);
    }
    if blocks.overflowed {
        d.insert(Diagnostic::TooManyLayerKinds);
    }
    if layers == 0 {
        // A pattern of no layers: one layer of the default kind, so every quotient stays finite.
        d.insert(Diagnostic::InputClamped);
        let run = crate::scenario::LayerRun::default();
        blocks.push(blocks::layer_kind(&run, &spec.moe, &shape, &defaults), 1);
    }
    let towers = super::tower_shape::shapes(towers, cross, d);
    from_blocks(spec, blocks, shape, towers)
}

/// `towers`: the vision tower / encoder stack (`super::tower_shape`), its parameters in the total.
fn from_blocks(
    spec: &ModelSpec,
    blocks: Blocks,
    shape: MoeShape,
    towers: super::tower_shape::Towers,
) -> ResolvedModel {
    let t = &spec.transformer;
    let layers = blocks.layers().max(1);
    let l = f64::from(layers);
    let (h, v) = (f64::from(t.hidden), f64::from(t.vocab));
    let (reference, (ffn, ffn_kind)) = reference_dims(&blocks, t, &shape);
    let norm_p = match t.norm {
        crate::scenario::NormKind::LayerNorm => 2.0 * h,
        crate::scenario::NormKind::RmsNorm => h,
    };
    let norm_tensors = match t.norm {
        crate::scenario::NormKind::LayerNorm => 2.0,
        crate::scenario::NormKind::RmsNorm => 1.0,
    };
    let positions = match t.positions {
        PositionKind::Learned => f64::from(t.max_positions) * h,
        PositionKind::Rotary => 0.0,
    };
    let embeddings = v * h + positions + f64::from(t.token_types) * h;
    let (head, head_w, head_b, head_tensors) = head_params(t.arch, t, h, v, norm_p, norm_tensors);
    let in_layers = blocks.sum(|k| k.params);
    let total = embeddings + in_layers + head + towers.params;
    let lm_matrix = if t.arch == ArchKind::Decoder || t.mlm_head {
        v * h
    } else {
        0.0
    };
    let largest = blocks.kinds().iter().fold(v * h, |a, k| a.max(k.largest));
    // A learned table of 0 positions stands for "no positional encoding" (Jamba, Nemotron-H).
    let learned = t.positions == PositionKind::Learned && t.max_positions > 0;
    let emb_tensors = 1.0 + f64::from(learned) + f64::from(t.token_types > 0);
    ResolvedModel {
        family: ModelFamily::Transformer,
        layers,
        hidden: t.hidden,
        heads: reference.0 as u32,
        kv_heads: reference.1 as u32,
        head_dim: reference.2 as u32,
        ffn: ffn as u32,
        ffn_kind,
        vocab: t.vocab,
        params: ParamCounts {
            total,
            embeddings,
            per_layer: in_layers / l,
            head,
            trainable: total,
            active: total - blocks.sum(|k| k.inactive),
        },
        arch: t.arch,
        norm: t.norm,
        positions: t.positions,
        tied_embeddings: t.tied_embeddings,
        gelu_tanh: t.gelu_tanh && ffn_kind == FfnKind::Gelu,
        fused_qkv: false,
        softmax_fp32: t.softmax_fp32,
        mlm_head: t.arch == ArchKind::Encoder && t.mlm_head,
        matmul_weights: blocks.sum(|k| k.matmul_w) + head_w + lm_matrix,
        matmul_biases: blocks.sum(|k| k.matmul_b) + head_b,
        largest_tensor: largest,
        param_tensors: blocks.sum(|k| k.tensors) + emb_tensors + head_tensors,
        act_bytes_per_sample_fp32: 0.0,
        moe: MoeShape {
            routed_params_per_layer: blocks.sum(|k| k.routed) / l,
            ..shape
        },
        blocks,
        cnn: super::cnn::CnnShape::default(),
        towers,
    }
}

/// The scalar dimensions a patterned model reports (and the rules written for one layer read): those
/// of its first attention-like kind and its first MLP.
fn reference_dims(
    blocks: &Blocks,
    t: &crate::scenario::TransformerDims,
    shape: &MoeShape,
) -> ((f64, f64, f64), (f64, FfnKind)) {
    let reference = blocks
        .kinds()
        .iter()
        .find_map(|k| match k.mixer {
            MixerShape::Attention {
                heads,
                kv_heads,
                head_dim,
                ..
            } => Some((heads, kv_heads, head_dim)),
            MixerShape::Mla(s) => Some((s.heads, s.heads, s.qk_head_dim())),
            _ => None,
        })
        .unwrap_or((
            f64::from(t.heads),
            f64::from(t.kv_heads),
            f64::from(t.head_dim()),
        ));
    let (ffn, ffn_kind) = blocks
        .kinds()
        .iter()
        .find_map(|k| match k.mlp {
            MlpShape::Dense { ffn, kind } => Some((ffn, kind)),
            MlpShape::Moe => Some((f64::from(shape.ffn), t.ffn_kind)),
            MlpShape::None => None,
        })
        .unwrap_or((f64::from(t.ffn), t.ffn_kind));
    (reference, (ffn, ffn_kind))
}

impl ResolvedModel {
    /// Share of the layers whose MLP is the mixture of experts: 1 for a uniform MoE model, the
    /// pattern's share otherwise (DeepSeek-V3: 58 of 61), 0 when dense.
    pub fn moe_layer_share(&self) -> f64 {
        if self.moe.experts == 0 {
            return 0.0;
        }
        let l = f64::from(self.layers.max(1));
        self.blocks
            .sum(|k| if k.mlp == MlpShape::Moe { 1.0 } else { 0.0 })
            / l
    }
}
