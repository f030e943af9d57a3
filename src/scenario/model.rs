//! What model a scenario describes: a transformer (by parameter count or by dimensions), a CNN or a
//! recommender.

use serde::{Deserialize, Serialize};

use super::{CnnSpec, MoeSpec, PatternPart, Tower};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelFamily {
    #[default]
    Transformer,
    /// A convolutional network (ResNet-50 class), seed article §2.
    Cnn,
    /// An embedding-heavy recommender (tables rows × dim plus a dense MLP), seed article §3.2.
    Recommender,
}

/// Whether a transformer is described by its parameter count alone or by its dimensions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShapeSource {
    /// Derive a plausible shape from `ModelSpec::params` (see `estimator::model::shape_from_params`).
    ParamCount,
    /// Use `ModelSpec::transformer` as given.
    #[default]
    Dimensions,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSpec {
    pub family: ModelFamily,
    pub shape: ShapeSource,
    /// Total parameters, used when `shape = ParamCount`. Valid: 1e5 ..= 1e13.
    pub params: f64,
    pub transformer: TransformerDims,
    pub cnn: CnnSpec,
    pub recommender: RecommenderSpec,
    /// Mixture-of-experts MLPs (transformers only); `moe.experts = 0` is dense.
    pub moe: MoeSpec,
    /// The layers as blocks, run-length encoded (`scenario::blocks`); empty = every layer as
    /// `transformer` and `moe` describe it. Used with `shape = Dimensions`.
    pub pattern: Vec<PatternPart>,
    /// Stacks beside the language model: a vision tower, the encoder of an encoder-decoder model
    /// (`scenario::towers`). Counted with a layer pattern only.
    pub towers: Vec<Tower>,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            family: ModelFamily::Transformer,
            shape: ShapeSource::Dimensions,
            params: 8.0e9,
            transformer: TransformerDims::default(),
            cnn: CnnSpec::default(),
            recommender: RecommenderSpec::default(),
            moe: MoeSpec::default(),
            pattern: Vec::new(),
            towers: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FfnKind {
    /// Two matrices h→f→h with GELU (GPT-2, BERT; f = 4h usually).
    Gelu,
    /// Gated: three matrices (gate, up, down) with SiLU (LLaMA).
    #[default]
    SwiGlu,
    /// Two matrices with squared ReLU (So et al. 2021 "Primer"; Nemotron-H `relu2`).
    SquaredRelu,
}

impl FfnKind {
    /// Weight matrices of one MLP: gate, up and down for SwiGLU; up and down otherwise.
    pub const fn matrices(self) -> f64 {
        match self {
            FfnKind::SwiGlu => 3.0,
            FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PositionKind {
    /// A learned table of `max_positions` × hidden (GPT-2, BERT).
    Learned,
    /// Rotary (RoPE): no parameters.
    #[default]
    Rotary,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NormKind {
    /// Weight and bias per norm.
    LayerNorm,
    /// Weight only.
    #[default]
    RmsNorm,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ArchKind {
    /// Causal LM with an LM head (GPT-2, LLaMA).
    #[default]
    Decoder,
    /// Bidirectional encoder (BERT) with an MLM head and/or pooler.
    Encoder,
}

/// Transformer dimensions. Defaults are Llama-3-8B (config.json of meta-llama/Meta-Llama-3-8B).
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is a documented field users set by name"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransformerDims {
    pub arch: ArchKind,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    /// Key/value heads: = heads for MHA, 1 for MQA, in between for GQA.
    pub kv_heads: u32,
    /// Per-head dimension; 0 means hidden / heads.
    pub head_dim: u32,
    pub ffn: u32,
    pub ffn_kind: FfnKind,
    pub vocab: u32,
    pub tied_embeddings: bool,
    pub positions: PositionKind,
    /// Rows of the learned position table (only with `positions = Learned`).
    pub max_positions: u32,
    /// Token-type (segment) embeddings rows, BERT: 2.
    pub token_types: u32,
    /// Biases on the attention and MLP projections (GPT-2, BERT: yes; LLaMA: no).
    pub bias: bool,
    pub norm: NormKind,
    /// Encoder only: the MLM transform head (dense h×h + norm + output bias).
    pub mlm_head: bool,
    /// Encoder only: the pooler (dense h×h).
    pub pooler: bool,
    /// GELU MLPs only: the tanh approximation written as separate ops (Hugging Face
    /// `NewGELUActivation`, GPT-2's `gelu_new`). Under the Hugging Face profile it saves four f-wide
    /// tensors for backward instead of one (docs/model.md). Default false (exact, fused GELU).
    pub gelu_tanh: bool,
    /// Q, K and V come from one fused projection (GPT-2 `c_attn`); false = three separate linears
    /// (BERT, LLaMA). Changes only how many autocast copies of the norm output are saved.
    pub fused_qkv: bool,
    /// Eager attention computes the softmax in FP32 whatever the activation type (Hugging Face
    /// LLaMA: `softmax(..., dtype=torch.float32)`); false = in the activation type (GPT-2, BERT).
    pub softmax_fp32: bool,
}

impl Default for TransformerDims {
    fn default() -> Self {
        TransformerDims {
            arch: ArchKind::Decoder,
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: 0,
            ffn: 14336,
            ffn_kind: FfnKind::SwiGlu,
            vocab: 128_256,
            tied_embeddings: false,
            positions: PositionKind::Rotary,
            max_positions: 8192,
            token_types: 0,
            bias: false,
            norm: NormKind::RmsNorm,
            mlm_head: false,
            pooler: false,
            gelu_tanh: false,
            fused_qkv: false,
            softmax_fp32: true,
        }
    }
}

impl TransformerDims {
    /// Per-head dimension with the 0 = hidden/heads convention applied.
    pub fn head_dim(&self) -> u32 {
        if self.head_dim > 0 {
            self.head_dim
        } else {
            self.hidden / self.heads.max(1)
        }
    }
}

/// An embedding-heavy recommender: `tables` tables of `rows` × `dim`, plus a dense MLP.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecommenderSpec {
    pub tables: u32,
    pub rows_per_table: f64,
    pub dim: u32,
    /// Parameters of the dense (MLP) part.
    pub dense_params: f64,
    /// Embedding lookups per sample, over all tables.
    pub lookups_per_sample: u32,
}

impl Default for RecommenderSpec {
    fn default() -> Self {
        RecommenderSpec {
            tables: 26,
            rows_per_table: 10e6,
            dim: 128,
            dense_params: 5e6,
            lookups_per_sample: 26,
        }
    }
}
