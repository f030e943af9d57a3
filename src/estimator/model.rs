//! Transformer dimensions ↔ parameter counts, and the other model families (memory work owns this).
//!
//! Counts are exact for the Hugging Face implementations of GPT-2 (`GPT2LMHeadModel`), BERT
//! (`BertForMaskedLM`, `BertModel`) and LLaMA (`LlamaForCausalLM`): every weight, bias and norm
//! parameter is counted the way `sum(p.numel() for p in model.parameters())` counts it (tied tensors
//! once). Checked against `tests/data/measured` and the published totals (tests/measured.rs).

pub mod blocks;
mod cache;
pub use cache::CacheShape;
pub mod cnn;
mod cross_cache;
mod families;
mod layer;
pub mod layer_order;
pub mod lora;
pub mod moe;
mod patterned;
pub mod tower_shape;
pub mod towers;

use self::blocks::{Blocks, LayerKind, MixerShape, MlpShape};
use self::families::{cnn, recommender};
use self::layer::layer_counts;
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
    /// The layer kinds with their counts (one kind for a uniform transformer; none for other
    /// families). The scalar dimensions above are those of the first attention kind.
    pub blocks: Blocks,
    /// CNN section with a layer-table network: which one, at what side (`cnn` module).
    pub cnn: cnn::CnnShape,
    /// The encoder / vision tower beside the layers and the decoder's cross-attention layers
    /// (`tower_shape`; none for a flat model).
    pub towers: tower_shape::Towers,
}

impl ResolvedModel {
    /// Widths of the attention's query and key/value projections (heads × head dim, KV heads ×
    /// head dim), before tensor parallelism.
    pub fn attention_widths(&self) -> (f64, f64) {
        let d = f64::from(self.head_dim);
        (f64::from(self.heads) * d, f64::from(self.kv_heads) * d)
    }

    /// The key/value width one of `tp` tensor-parallel ranks holds: its K/V heads, replicated when
    /// tensor parallelism exceeds them (⌈kv_heads / tp⌉ × head dim, the KV cache's rule in
    /// `model::cache`).
    pub fn kv_width_rank(&self, tp: f64) -> f64 {
        crate::estimator::num::ceil(f64::from(self.kv_heads) / tp.max(1.0))
            * f64::from(self.head_dim)
    }

    /// Parameters per layer (the mean over the layer kinds) that every tensor-parallel rank holds
    /// whole (`LayerKind::replicated`); 0 without layers.
    pub fn replicated_per_layer(&self) -> f64 {
        self.per_layer_mean(|k| k.replicated)
    }

    /// Of those, the matrix weights (`LayerKind::replicated_w`: MLA's down projections, a router).
    pub fn replicated_matmul_per_layer(&self) -> f64 {
        self.per_layer_mean(|k| k.replicated_w)
    }

    /// The K/V width a tensor-parallel rank holds beyond kv / tp, per layer (the mean over the
    /// layer kinds): ⌈kv_heads / tp⌉ − kv_heads / tp heads of each softmax attention kind, 0 where
    /// tp divides them (the KV cache's rule; vLLM's `QKVParallelLinear` replicates the heads).
    /// Latent attention's K/V come from the latent (no heads to replicate).
    pub fn kv_replicated_width(&self, tp: f64) -> f64 {
        if tp <= 1.0 {
            return 0.0;
        }
        // At tp = 1 a kind holds its whole K/V width (a whole number of heads).
        self.per_layer_mean(|k| k.mixer.kv_width_rank(tp) - k.mixer.kv_width_rank(1.0) / tp)
    }

    /// Matrix elements one of `tp` tensor-parallel ranks holds over the whole model beyond an even
    /// split: (1 − 1/tp) of the replicated matrices and the K/V heads beyond kv / tp, every layer.
    pub fn replicated_matrices_beyond_split(&self, tp: f64) -> f64 {
        f64::from(self.layers) * self.replicated_matrices_beyond_split_per_layer(tp)
    }

    /// [`Self::replicated_matrices_beyond_split`] per layer (the mean over the layer kinds).
    pub fn replicated_matrices_beyond_split_per_layer(&self, tp: f64) -> f64 {
        if tp <= 1.0 {
            return 0.0;
        }
        self.replicated_matmul_per_layer() * (1.0 - 1.0 / tp)
            + 2.0 * f64::from(self.hidden) * self.kv_replicated_width(tp)
    }

    fn per_layer_mean(&self, f: impl Fn(&blocks::LayerKind) -> f64) -> f64 {
        let layers = f64::from(self.blocks.layers());
        if layers > 0.0 {
            self.blocks.sum(f) / layers
        } else {
            0.0
        }
    }
}

/// Largest parameter count of a derived table (a recommender's tables × rows × dim); larger products
/// are capped (and diagnosed). The same bound as `model.params` in `validate::RANGES`.
pub const MAX_PARAMS: f64 = 1e13;

/// Resolves a model section as written: its numbers are first moved into their ranges
/// (`estimator::resolve::model_spec`), then the model is derived ([`derive`]).
pub fn resolve(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    derive(
        &super::resolve::model_spec(spec, diagnostics),
        &spec.pattern,
        &spec.towers,
        diagnostics,
    )
}

/// The model of a section whose numbers are in range (`estimator::resolve` clamps them): the shape
/// (derived from the parameter count when asked) and its counts. Adds the shape's diagnostics.
/// `pattern` is the scenario's layer pattern as written (its numbers are clamped here); the
/// resolved `spec` carries none (so that resolving never copies it).
pub fn derive(
    spec: &ModelSpec,
    pattern: &[crate::scenario::PatternPart],
    towers: &[crate::scenario::Tower],
    diagnostics: &mut Diagnostics,
) -> ResolvedModel {
    match spec.family {
        ModelFamily::Transformer => match spec.shape {
            ShapeSource::Dimensions if !pattern.is_empty() => {
                patterned::transformer(spec, pattern, towers, diagnostics)
            }
            ShapeSource::Dimensions => {
                shape_diagnostics(&spec.transformer, diagnostics);
                transformer(spec)
            }
            ShapeSource::ParamCount => {
                diagnostics.insert(Diagnostic::ShapeDerivedFromParams);
                // `ModelSpec` holds no heap data: this clone does not allocate.
                let mut s = spec.clone();
                shape_from_params(spec.params, &mut s);
                transformer(&s)
            }
        },
        ModelFamily::Cnn => cnn::resolve(spec).unwrap_or_else(|| cnn(spec)),
        ModelFamily::Recommender => recommender(spec, diagnostics),
    }
}

/// Heads that do not divide the hidden size (with `head_dim = 0`, head_dim = hidden / heads rounds
/// down: 7 heads of 4096 give 585), and KV heads that do not divide the heads (GQA shares each KV
/// head among an equal group of query heads; Ainslie et al. 2023 §2).
fn shape_diagnostics(t: &crate::scenario::TransformerDims, diagnostics: &mut Diagnostics) {
    let heads = t.heads.max(1);
    if t.head_dim == 0 && !t.hidden.is_multiple_of(heads) {
        diagnostics.insert(Diagnostic::HeadsDoNotDivideHidden);
    }
    if !heads.is_multiple_of(t.kv_heads.max(1)) {
        diagnostics.insert(Diagnostic::KvHeadsDoNotDivideHeads);
    }
}

/// KV heads of a derived shape: 8 (every Llama 3 / 3.1 / 3.2 model from 1B to 405B, config.json
/// `num_key_value_heads = 8`), or the largest divisor of the heads ≤ 8 when 8 does not divide them.
fn derived_kv_heads(heads: u32) -> u32 {
    (1..=8u32)
        .rev()
        .find(|k| heads.is_multiple_of(*k))
        .unwrap_or(1)
}

/// Derives a Llama-style decoder (SwiGLU, RMSNorm, RoPE, untied head, GQA) whose exact count is
/// within a few per cent of P at every size in 10⁵ ..= 10¹³ (docs/model.md §2):
/// - width from the aspect ratio h = 128·L of Llama-2-7B/13B (4096/32, 5120/40) and GPT-3 175B
///   (12288/96): with P ≈ 12·L·h², h = (128·P/12)^⅓, rounded to 32 below 256, to 64 up to 1,024, to
///   512 up to 2,048 and to 1,024 above (so the heads are a multiple of 8);
/// - head dim 128 above h = 2,048 (Llama-3.2-3B, 3-8B, 3-70B, 3.1-405B), 64 from 256 (Llama-3.2-1B:
///   2048 / 32 heads), 32 below; KV heads by [`derived_kv_heads`];
/// - vocabulary 32,000 (Llama-2), or less for small P: at most a quarter of P per embedding table
///   (at least 256, byte-level);
/// - FFN 8h/3 rounded up to 256 (LLaMA `multiple_of`, 32 below h = 768) to pick the depth
///   L = round((P − 2Vh − h) / per-layer), then re-solved so the count lands on P (the rounding of L
///   is absorbed by the FFN width instead of the total).
pub fn shape_from_params(params: f64, spec: &mut ModelSpec) {
    let p = params.clamp(1e5, MAX_PARAMS);
    let raw_h = (128.0 * p / 12.0).cbrt();
    let step = match raw_h {
        x if x < 256.0 => 32.0,
        x if x < 1024.0 => 64.0,
        x if x < 2048.0 => 512.0,
        _ => 1024.0,
    };
    let h = ((raw_h / step).round() * step).clamp(32.0, 1_048_576.0);
    let head_dim = match h {
        x if x > 2048.0 => 128.0,
        x if x >= 256.0 => 64.0,
        _ => 32.0,
    };
    let heads = (h / head_dim).max(1.0);
    let kv = f64::from(derived_kv_heads(heads as u32));
    let vocab = ((p / 4.0 / h / 64.0).floor() * 64.0).clamp(256.0, 32_000.0);
    let multiple = if h >= 768.0 { 256.0 } else { 32.0 };
    let f0 = (8.0 * h / 3.0 / multiple).ceil() * multiple;
    // Attention (q, o: h·h; k, v: h·kv·d) and two RMSNorms per layer; embeddings, head, final norm.
    let attn = 2.0 * h * h + 2.0 * h * kv * head_dim + 2.0 * h;
    let outside = 2.0 * vocab * h + h;
    let layers = ((p - outside) / (attn + 3.0 * h * f0))
        .round()
        .clamp(1.0, 10_000.0);
    let f = ((p - outside - layers * attn) / (3.0 * h * layers))
        .round()
        .clamp(1.0, 4_194_304.0);
    let t = &mut spec.transformer;
    t.arch = ArchKind::Decoder;
    t.layers = layers as u32;
    t.hidden = h as u32;
    t.heads = heads as u32;
    t.kv_heads = kv as u32;
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
    spec.moe = crate::scenario::MoeSpec::default();
}

/// The counts of a transformer whose dimensions are in range (`estimator::resolve`).
fn transformer(spec: &ModelSpec) -> ResolvedModel {
    let t = &spec.transformer;
    let (layers, hidden, heads, kv_heads) = (t.layers, t.hidden, t.heads, t.kv_heads);
    // 0 = hidden / heads (at least 1: more heads than hidden units leave a head of width 1).
    let head_dim = if t.head_dim > 0 {
        t.head_dim
    } else {
        (hidden / heads.max(1)).max(1)
    };
    let moe = moe::shape(&spec.moe, t.ffn);
    let (ffn, vocab) = (moe.ffn, t.vocab);
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
    let lc = layer_counts(t, &moe, [h, a, k, d, f], bias);

    let positions = match t.positions {
        PositionKind::Learned => f64::from(t.max_positions) * h,
        PositionKind::Rotary => 0.0,
    };
    let embeddings = v * h + positions + f64::from(t.token_types) * h;
    let (head, head_w, head_b, head_tensors) =
        head_params(t.arch, t, h, v, lc.norm_p, lc.norm_tensors);
    let total = embeddings + l * lc.per_layer + head;
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
            per_layer: lc.per_layer,
            head,
            trainable: total,
            active: total - l * lc.inactive,
        },
        arch: t.arch,
        norm: t.norm,
        positions: t.positions,
        tied_embeddings: t.tied_embeddings,
        gelu_tanh: t.gelu_tanh && t.ffn_kind == FfnKind::Gelu,
        fused_qkv: t.fused_qkv,
        softmax_fp32: t.softmax_fp32,
        mlm_head: t.arch == ArchKind::Encoder && t.mlm_head,
        matmul_weights: l * (lc.attn_w + lc.mlp_w) + head_w + lm_matrix,
        matmul_biases: l * (lc.attn_b + lc.mlp_b) + head_b,
        largest_tensor: largest,
        param_tensors: l * lc.layer_tensors + emb_tensors + head_tensors,
        act_bytes_per_sample_fp32: 0.0,
        moe: MoeShape {
            routed_params_per_layer: f64::from(moe.experts) * (lc.one_w + lc.one_b),
            ..moe
        },
        blocks: Blocks::uniform(uniform_kind([a, k, d, f], t.ffn_kind, &moe, &lc), layers),
        cnn: cnn::CnnShape::default(),
        towers: tower_shape::Towers::default(),
    }
}

/// The one layer kind of a uniform transformer.
fn uniform_kind(
    [heads, kv_heads, head_dim, ffn]: [f64; 4],
    kind: FfnKind,
    moe: &MoeShape,
    lc: &layer::LayerCounts,
) -> LayerKind {
    let router = (lc.mlp_w - moe.stored_mlps() * lc.one_w).max(0.0);
    LayerKind {
        count: 0,
        mixer: MixerShape::Attention {
            heads,
            kv_heads,
            head_dim,
            window: 0.0,
            qk_norm: false,
            sinks: false,
            output_gate: false,
            qkv_bias: false,
            out_bias: false,
            chunked: false,
        },
        norms: 2.0,
        mlp: if moe.experts > 0 {
            MlpShape::Moe
        } else {
            MlpShape::Dense { ffn, kind }
        },
        params: lc.per_layer,
        routed: f64::from(moe.experts) * (lc.one_w + lc.one_b),
        routed_w: f64::from(moe.experts) * lc.one_w,
        inactive: lc.inactive,
        matmul_w: lc.attn_w + lc.mlp_w,
        matmul_b: lc.attn_b + lc.mlp_b,
        autocast_w: lc.attn_w + lc.mlp_w - f64::from(moe.experts) * lc.one_w,
        mixer_w: lc.attn_w,
        mlp_active_w: lc.mlp_w - lc.inactive,
        tensors: lc.layer_tensors,
        largest: 0.0,
        // Two norms and a mixture's router (h × E) are whole on every tensor-parallel rank
        // (`blocks::replicated_params`).
        replicated: 2.0 * lc.norm_p + router,
        replicated_w: router,
    }
}

/// Parameters outside the layers and embedding tables: (total, matmul weights, matmul biases,
/// tensors). Decoder: final norm + untied LM head (V × h, no bias). Encoder (post-LN BERT):
/// embedding norm + MLM transform (dense h×h + bias, norm, decoder bias V, decoder V×h if untied)
/// + pooler (dense h×h + bias).
pub(super) fn head_params(
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
