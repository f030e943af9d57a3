//! Stacks beside the language model (issue 14): a vision encoder whose image tokens feed the model
//! (ViT / CLIP / SigLIP / Qwen2.5-VL style, with its projector) and the encoder of an
//! encoder-decoder model (T5, Whisper), whose output the decoder's cross-attention reads.
//!
//! Counted exactly (parameters of the Hugging Face modules, transformers 5.25.0; see
//! `estimator::model::towers`). Their weights join the model's weights (and gradients / optimizer
//! states when trained); the encoder's activations, the decoder's cross-attention cache and both
//! towers' FLOPs are modelled (`estimator::memory::towers`, `model::cross_cache`,
//! `performance::towers`); the vision tower's activations follow the encoder's rules (derived).

use serde::{Deserialize, Serialize};

use super::{FfnKind, NormKind};

/// A stack beside the language model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Tower {
    Vision(VisionTower),
    Encoder(EncoderStack),
}

/// A vision transformer over image patches, and the projector into the language model's width.
/// Defaults: CLIP ViT-L/14 at 336 px (LLaVA-1.5's `vision_config`).
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is a documented field users set by name"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VisionTower {
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub ffn: u32,
    /// Two matrices (GELU; CLIP, SigLIP) or three (gated; Qwen2.5-VL's vision MLP).
    pub ffn_kind: FfnKind,
    pub norm: NormKind,
    /// Biases on every projection of the layers.
    pub bias: bool,
    pub image_size: u32,
    pub patch_size: u32,
    pub channels: u32,
    /// Frames per patch (Qwen2.5-VL's `temporal_patch_size` 2: a 3-D patch convolution); 1 = images.
    pub temporal_patch: u32,
    /// A bias on the patch convolution (SigLIP; not CLIP nor Qwen2.5-VL).
    pub patch_bias: bool,
    /// A learned class token (CLIP).
    pub class_token: bool,
    /// A learned position table of (patches + class token) × hidden; false = rotary (Qwen2.5-VL).
    pub learned_positions: bool,
    /// A norm before the layers (CLIP `pre_layrnorm`).
    pub pre_norm: bool,
    /// A norm after the layers (CLIP, SigLIP `post_layernorm`).
    pub post_norm: bool,
    pub projector: Projector,
    /// Images per sequence the tower encodes (0: text only, its weights alone count). Their
    /// tokens (`image_size`² ÷ `patch_size`² ÷ the projector's `merge` each) take places in the
    /// language model's sequence: Transformers expands each image placeholder into that many
    /// positions, so `seq_len` / `prompt_tokens` include them.
    pub images: u32,
}

impl Default for VisionTower {
    fn default() -> Self {
        VisionTower {
            layers: 24,
            hidden: 1024,
            heads: 16,
            ffn: 4096,
            ffn_kind: FfnKind::Gelu,
            norm: NormKind::LayerNorm,
            bias: true,
            image_size: 336,
            patch_size: 14,
            channels: 3,
            temporal_patch: 1,
            patch_bias: false,
            class_token: true,
            learned_positions: true,
            pre_norm: true,
            post_norm: true,
            projector: Projector::default(),
            images: 0,
        }
    }
}

/// The projector from the vision width into the language model's: an optional norm over the vision
/// width, `merge` neighbouring patches concatenated, then one linear layer (`hidden` = 0; Gemma 3) or
/// two with GELU between (`hidden` wide; LLaVA, Qwen2.5-VL's merger), with `mid_layers` more in the
/// middle (Llama 4: pixel-shuffle adapter `fc1`, `fc2`, then `multi_modal_projector`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Projector {
    /// A norm over the vision width first (Gemma 3 `mm_soft_emb_norm`, Qwen2.5-VL `ln_q`: RMSNorm).
    pub norm: Option<NormKind>,
    /// Patches merged into one token (Qwen2.5-VL: `spatial_merge_size`² = 4); 1 = none.
    pub merge: u32,
    /// Width of the middle layer; 0 = a single linear layer.
    pub hidden: u32,
    /// Extra `hidden` × `hidden` layers between the two (Llama 4's vision adapter `fc2`: 1).
    pub mid_layers: u32,
    /// Output width (the language model's hidden size).
    pub out: u32,
    pub bias: bool,
}

impl Default for Projector {
    fn default() -> Self {
        Projector {
            norm: None,
            merge: 1,
            hidden: 4096,
            mid_layers: 0,
            out: 4096,
            bias: true,
        }
    }
}

/// The encoder of an encoder-decoder model. Defaults: T5-base's encoder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncoderStack {
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    /// 0 = hidden ÷ heads (T5's `d_kv`).
    pub head_dim: u32,
    pub ffn: u32,
    pub ffn_kind: FfnKind,
    pub norm: NormKind,
    /// Biases on q, v, the output and the MLP (Whisper: not on k).
    pub bias: bool,
    /// T5's relative position buckets: a buckets × heads table in the first layer; 0 = none.
    pub relative_buckets: u32,
    pub input: EncoderInput,
    /// Positions the encoder reads per sample: tokens (T5) or frames after the convolution stem
    /// (Whisper: 1500 for its 30 s window, `max_source_positions`); 0 = the workload's sequence
    /// length. The decoder's cross-attention keys and values cover these positions.
    pub input_len: u32,
}

impl Default for EncoderStack {
    fn default() -> Self {
        EncoderStack {
            layers: 12,
            hidden: 768,
            heads: 12,
            head_dim: 64,
            ffn: 3072,
            ffn_kind: FfnKind::Gelu,
            norm: NormKind::RmsNorm,
            bias: false,
            relative_buckets: 32,
            input: EncoderInput::SharedEmbedding,
            input_len: 0,
        }
    }
}

/// What the encoder reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum EncoderInput {
    /// The decoder's token embedding (T5's `shared`): no parameters of its own.
    #[default]
    SharedEmbedding,
    /// Whisper: two 1-D convolutions of width 3 over `mel_bins` log-mel channels (with biases), then
    /// a `positions` × hidden position table.
    AudioConv { mel_bins: u32, positions: u32 },
}
