//! A transformer as a sequence of blocks (issue 14; docs/design-blocks.md): each layer is a token
//! mixer (attention of some kind, or a state-space / linear-attention mixer) followed by an MLP
//! (dense or a mixture of experts), and the layers are written run-length encoded, so a pattern such
//! as Gemma 3's "5 local : 1 global" or Llama 4's "every other layer MoE" is a few lines.
//!
//! `model.pattern` empty (every file written before this existed) means "every layer as
//! `model.transformer` and `model.moe` describe it": the flat model, unchanged. A non-empty pattern
//! defines the layers; `transformer.layers` is then ignored and the layer count is the pattern's.
//! Dimensions written 0 are taken from `model.transformer` (heads, KV heads, head dim, FFN width).

use serde::{Deserialize, Serialize};

use super::FfnKind;

/// A part of the layer pattern: `layers` in order, the whole list repeated `repeat` times.
/// DeepSeek-V3: one part, `[3 × (MLA, dense), 58 × (MLA, MoE)]`; Gemma 3 27B (62 layers):
/// `10 × [5 × local, 1 × global]` then `1 × [2 × local]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PatternPart {
    /// Times the list repeats (≥ 1).
    pub repeat: u32,
    pub layers: Vec<LayerRun>,
}

impl Default for PatternPart {
    fn default() -> Self {
        PatternPart {
            repeat: 1,
            layers: Vec::new(),
        }
    }
}

/// `count` consecutive identical layers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LayerRun {
    pub count: u32,
    pub mixer: Mixer,
    pub mlp: Mlp,
    /// Norms per layer; 0 = the usual pre-norms (2 with an MLP, 1 without). Gemma 2/3 have 4
    /// (`input`, `post_attention`, `pre_feedforward`, `post_feedforward` layernorms).
    pub norms: u32,
}

impl Default for LayerRun {
    fn default() -> Self {
        LayerRun {
            count: 1,
            mixer: Mixer::default(),
            mlp: Mlp::default(),
            norms: 0,
        }
    }
}

/// What mixes information across tokens in a layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Mixer {
    /// Softmax attention over cached keys and values: MHA, GQA, MQA, sliding-window or chunked local.
    Attention(Attention),
    /// Multi-head latent attention (DeepSeek-V2 §2.1, arXiv:2405.04434): keys and values are
    /// up-projected from a compressed latent, with a decoupled RoPE key shared by all heads.
    Mla(Mla),
    /// A selective state-space mixer (Mamba, Gu & Dao 2023; Mamba-2, Dao & Gu 2024): a fixed-size
    /// convolution and SSM state per sequence instead of a KV cache.
    Mamba(Mamba),
    /// Gated DeltaNet linear attention (Yang et al. 2024, arXiv:2412.06464; Qwen3-Next): a
    /// key-dim × value-dim recurrent state per head per sequence.
    GatedDeltaNet(GatedDeltaNet),
    /// No token mixer: the layer is its MLP alone (Nemotron-H's `-` layers).
    None,
}

impl Default for Mixer {
    fn default() -> Self {
        Mixer::Attention(Attention::default())
    }
}

/// Softmax self-attention. 0 = the value in `model.transformer`.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is a documented field users set by name"
)]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Attention {
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    /// Sliding window in tokens (Mistral 7B §2; Gemma 2/3 local layers; gpt-oss): each token sees at
    /// most this many keys and the cache holds at most this many; 0 = global attention.
    pub window: u32,
    /// Chunked local attention (Llama 4's `attention_chunk_size`): tokens see only their own chunk;
    /// 0 = none.
    pub chunk: u32,
    /// Biases on the q, k and v projections (Qwen2, gpt-oss).
    pub qkv_bias: bool,
    /// Bias on the output projection (gpt-oss).
    pub out_bias: bool,
    /// Per-head RMSNorm of queries and keys (Qwen3 `q_norm`/`k_norm`, Gemma 3): 2 × head_dim weights.
    pub qk_norm: bool,
    /// A learned sink logit per head (gpt-oss `sinks`; Xiao et al. 2023 "attention sinks").
    pub sinks: bool,
    /// A sigmoid output gate computed by the query projection (Qwen3-Next `attn_output_gate`): the
    /// q projection is twice as wide.
    pub output_gate: bool,
    /// No bias on the k projection although `qkv_bias` (Whisper's `k_proj`).
    pub no_k_bias: bool,
    /// A second attention over the encoder's output (encoder-decoder decoders: T5 `EncDecAttention`,
    /// Whisper `encoder_attn`): its own q, k, v, output and norm, the same shapes and biases.
    pub cross_attention: bool,
    /// T5's relative position bias: a buckets × heads table (in the first layer only); 0 = none.
    pub relative_buckets: u32,
}

/// Multi-head latent attention (DeepSeek-V2 §2.1.2–2.1.3; Hugging Face `DeepseekV3Attention`,
/// transformers 5.25). Queries: h → `q_lora_rank` (normed) → heads × (nope + rope), or directly when
/// `q_lora_rank` = 0 (DeepSeek-V2-Lite). Keys and values: h → `kv_lora_rank` + rope (normed latent
/// plus the shared RoPE key) → heads × (nope + v).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mla {
    /// 0 = `transformer.heads`.
    pub heads: u32,
    pub q_lora_rank: u32,
    pub kv_lora_rank: u32,
    pub qk_nope_head_dim: u32,
    pub qk_rope_head_dim: u32,
    pub v_head_dim: u32,
    /// What the KV cache stores: the latent and the RoPE key (DeepSeek-V2 §2.1.2; vLLM and SGLang's
    /// MLA backends; Hugging Face Transformers ≥ 5.24, measured: tests/data/hf/params.json), or the
    /// decompressed per-head keys and values (Transformers 4.x `DynamicCache`).
    pub cache: MlaCache,
}

impl Default for Mla {
    /// DeepSeek-V3's attention (config.json of deepseek-ai/DeepSeek-V3).
    fn default() -> Self {
        Mla {
            heads: 0,
            q_lora_rank: 1536,
            kv_lora_rank: 512,
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
            cache: MlaCache::Latent,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MlaCache {
    /// kv_lora_rank + qk_rope_head_dim elements per token per layer.
    #[default]
    Latent,
    /// heads × (nope + rope) key and heads × v value elements per token per layer.
    Decompressed,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MambaVersion {
    /// Mamba (Gu & Dao 2023): per-channel state, `x_proj` and `dt_proj` (HF `MambaMixer`).
    Mamba1,
    /// Mamba-2 (Dao & Gu 2024): per-head scalar decay, grouped B and C (HF `Mamba2Mixer`).
    #[default]
    Mamba2,
}

/// A Mamba mixer. Inner width = `expand` × hidden.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is a documented field users set by name"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Mamba {
    pub version: MambaVersion,
    pub d_state: u32,
    pub d_conv: u32,
    pub expand: u32,
    /// Mamba-2: groups of B and C (`n_groups`).
    pub n_groups: u32,
    /// Mamba-2: head width (`head_dim`); heads = inner width ÷ head_dim.
    pub head_dim: u32,
    /// Mamba-1: rank of the Δ projection; 0 = ⌈hidden / 16⌉ (`time_step_rank = "auto"`).
    pub dt_rank: u32,
    /// Bias on the convolution (`use_conv_bias`, default true).
    pub conv_bias: bool,
    /// Biases on the in and out projections (`use_bias`).
    pub bias: bool,
    /// Jamba: RMSNorms on Δ, B and C (`dt_layernorm`, `b_layernorm`, `c_layernorm`).
    pub inner_norms: bool,
    /// Mamba-2: the gated RMSNorm before the out projection (`norm`; true in HF `Mamba2Mixer`).
    pub gated_norm: bool,
    /// Mamba-2: chunk length of the SSD scan (`chunk_size`; 256 in HF `Mamba2Config`). Changes only
    /// what the torch reference path saves (it pads the sequence to whole chunks).
    pub chunk_size: u32,
}

impl Default for Mamba {
    /// Mamba-2 defaults of Hugging Face `Mamba2Config` (d_state 128, d_conv 4, expand 2, 8 groups,
    /// head_dim 64).
    fn default() -> Self {
        Mamba {
            version: MambaVersion::Mamba2,
            d_state: 128,
            d_conv: 4,
            expand: 2,
            n_groups: 8,
            head_dim: 64,
            dt_rank: 0,
            conv_bias: true,
            bias: false,
            inner_norms: false,
            gated_norm: true,
            chunk_size: 256,
        }
    }
}

/// Gated DeltaNet (Hugging Face `Qwen3NextGatedDeltaNet`, transformers 5.25): q, k over `key_heads`
/// of `key_head_dim`, v and the output gate over `value_heads` of `value_head_dim`, a causal
/// convolution of `conv_kernel` over q, k and v.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatedDeltaNet {
    pub key_heads: u32,
    pub value_heads: u32,
    pub key_head_dim: u32,
    pub value_head_dim: u32,
    pub conv_kernel: u32,
}

impl Default for GatedDeltaNet {
    /// Qwen3-Next-80B-A3B (`linear_num_key_heads` 16, `linear_num_value_heads` 32, head dims 128,
    /// `linear_conv_kernel_dim` 4).
    fn default() -> Self {
        GatedDeltaNet {
            key_heads: 16,
            value_heads: 32,
            key_head_dim: 128,
            value_head_dim: 128,
            conv_kernel: 4,
        }
    }
}

/// The MLP of a layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Mlp {
    Dense(DenseMlp),
    /// A mixture of experts as `model.moe` describes it.
    Moe,
    /// No MLP (Mamba-1 blocks; Nemotron-H's mixer-only layers).
    None,
}

impl Default for Mlp {
    fn default() -> Self {
        Mlp::Dense(DenseMlp::default())
    }
}

/// A dense MLP. `ffn` 0 = `transformer.ffn`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DenseMlp {
    pub ffn: u32,
    /// `None` = `transformer.ffn_kind`.
    pub kind: Option<FfnKind>,
    pub bias: bool,
}

/// Layers a pattern describes (Σ repeat × Σ count), saturating.
pub fn pattern_layers(pattern: &[PatternPart]) -> u64 {
    pattern.iter().fold(0u64, |acc, part| {
        let per: u64 = part
            .layers
            .iter()
            .fold(0u64, |a, r| a.saturating_add(u64::from(r.count)));
        acc.saturating_add(per.saturating_mul(u64::from(part.repeat)))
    })
}
