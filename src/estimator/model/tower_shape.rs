//! The stacks beside the language model as the memory and FLOP models read them
//! (`scenario::towers`, resolved: numbers clamped like the parameter counts of `super::towers`):
//! fixed-size, `Copy`, no allocation. The encoder of an encoder-decoder model and the vision tower
//! keep the dimensions their activations and FLOPs need; the decoder's cross-attention layers
//! (counted from the layer pattern) keep what their keys and values need.

use crate::estimator::Diagnostics;
use crate::scenario::validate::{FieldRange, field};
use crate::scenario::{EncoderInput, EncoderStack, FfnKind, NormKind, Tower, VisionTower};

const DIMS: &FieldRange = field("model.towers.dims");
const COUNT: &FieldRange = field("model.towers.count");

/// Which Transformers implementation an encoder's activation rules follow (docs/blocks-measured.md,
/// "Encoder-decoder"): they differ by class, not by dimension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EncoderClass {
    /// `T5Stack`: explicit matmul + softmax self-attention (the additive relative-position bias),
    /// SDPA cross-attention, ReLU (or gated) feed-forward, RMS norms, the token embedding shared.
    #[default]
    T5,
    /// `WhisperEncoder`: two width-3 convolutions (the second of stride 2) over log-mel frames, SDPA
    /// attention, GELU MLP, LayerNorm.
    Whisper,
    /// A vision tower's blocks with a fused qkv projection and rotary positions
    /// (`Qwen2_5_VLVisionBlock`): SDPA per attention window over the roped q and k and the qkv
    /// output's v, the windows' outputs concatenated.
    RotaryVision,
}

/// The encoder of an encoder-decoder model (`layers` = 0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EncoderShape {
    pub class: EncoderClass,
    pub layers: f64,
    pub hidden: f64,
    pub heads: f64,
    pub head_dim: f64,
    pub ffn: f64,
    /// Gated feed-forward (T5 `gated-gelu`, `DenseGatedActDense`).
    pub gated: bool,
    pub norm: NormKind,
    /// Positions it reads per sample (tokens, or frames after the stem).
    pub len: f64,
    /// Log-mel channels of Whisper's input (0: token input).
    pub mel_bins: f64,
}

/// A vision tower over image patches (`layers` = 0: none), with its projector.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VisionShape {
    pub layers: f64,
    pub hidden: f64,
    pub heads: f64,
    pub ffn: f64,
    pub gated: bool,
    pub norm: NormKind,
    /// Patch tokens per image the layers run over (+ the class token).
    pub patches: f64,
    /// Input elements per image (channels × frames × pixels).
    pub pixels: f64,
    /// Elements of one patch (channels × frames × patch²): the patch embedding's input width.
    pub patch_elems: f64,
    /// Rotary positions and a fused qkv (Qwen2.5-VL), not a learned position table (CLIP, SigLIP).
    pub rotary: bool,
    /// Tokens per image handed to the language model (patches ÷ merge).
    pub tokens: f64,
    /// Projector input width (hidden × merge), middle width (0: one linear), output width.
    pub proj_in: f64,
    pub proj_mid: f64,
    pub proj_out: f64,
    /// Images per sequence (0: the tower's weights only).
    pub images: f64,
}

/// The decoder layers that attend to the encoder (`cross_attention` in the layer pattern).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CrossShape {
    pub layers: f64,
    pub heads: f64,
    pub kv_heads: f64,
    pub head_dim: f64,
}

/// Everything beside the language model.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Towers {
    /// Parameters of all towers (`super::towers::params`).
    pub params: f64,
    /// Of those, frozen ones: Whisper's encoder position table (`WhisperEncoder.__init__`:
    /// `self.embed_positions.requires_grad_(False)`, sinusoidal; transformers 5.24.0): no gradient,
    /// no optimizer state.
    pub frozen: f64,
    pub encoder: EncoderShape,
    pub vision: VisionShape,
    pub cross: CrossShape,
}

impl Towers {
    /// Whether an encoder runs before the decoder.
    pub fn has_encoder(&self) -> bool {
        self.encoder.layers > 0.0
    }
    /// Whether a vision tower is present (its weights count).
    pub fn has_vision(&self) -> bool {
        self.vision.layers > 0.0
    }
    /// Whether a vision tower encodes images (activations and FLOPs count).
    pub fn sees_images(&self) -> bool {
        self.has_vision() && self.vision.images > 0.0
    }
}

fn dim(x: u32, d: &mut Diagnostics) -> f64 {
    f64::from(DIMS.clamp_u32(x, d).max(1))
}

/// The shapes of `towers` (the first encoder and the first vision tower; a second of either is
/// counted in the parameters only).
pub fn shapes(towers: &[Tower], cross: CrossShape, d: &mut Diagnostics) -> Towers {
    let mut out = Towers {
        params: super::towers::params(towers, d),
        cross,
        ..Towers::default()
    };
    for t in towers {
        match t {
            Tower::Encoder(e) if !out.has_encoder() => {
                out.encoder = encoder(e, d);
                if let EncoderInput::AudioConv { positions, .. } = e.input {
                    out.frozen += f64::from(DIMS.clamp_u32(positions, d)) * out.encoder.hidden;
                }
            }
            Tower::Vision(v) if !out.has_vision() => out.vision = vision(v, d),
            _ => {}
        }
    }
    out
}

fn encoder(e: &EncoderStack, d: &mut Diagnostics) -> EncoderShape {
    let (h, heads) = (dim(e.hidden, d), dim(e.heads, d));
    let head_dim = if e.head_dim > 0 {
        dim(e.head_dim, d)
    } else {
        (h / heads).floor().max(1.0)
    };
    let (class, mel_bins, own_len) = match &e.input {
        // T5's `n_positions` (512): the length it was trained at; relative positions allow more.
        EncoderInput::SharedEmbedding => (EncoderClass::T5, 0.0, 512.0),
        EncoderInput::AudioConv {
            mel_bins,
            positions,
        } => (EncoderClass::Whisper, dim(*mel_bins, d), dim(*positions, d)),
    };
    EncoderShape {
        class,
        layers: f64::from(COUNT.clamp_u32(e.layers, d)),
        hidden: h,
        heads,
        head_dim,
        ffn: dim(e.ffn, d),
        gated: e.ffn_kind == FfnKind::SwiGlu,
        norm: e.norm,
        len: if e.input_len > 0 {
            dim(e.input_len, d)
        } else {
            own_len
        },
        mel_bins,
    }
}

fn vision(v: &VisionTower, d: &mut Diagnostics) -> VisionShape {
    let h = dim(v.hidden, d);
    let (image, patch) = (dim(v.image_size, d), dim(v.patch_size, d));
    let (channels, frames) = (dim(v.channels, d), dim(v.temporal_patch, d));
    let grid = (image / patch).floor().max(1.0);
    let patches = grid * grid;
    let merge = dim(v.projector.merge, d);
    VisionShape {
        layers: f64::from(COUNT.clamp_u32(v.layers, d)),
        hidden: h,
        heads: dim(v.heads, d),
        ffn: dim(v.ffn, d),
        gated: v.ffn_kind == FfnKind::SwiGlu,
        norm: v.norm,
        patches: patches + f64::from(v.class_token),
        pixels: channels * frames * image * image,
        patch_elems: channels * frames * patch * patch,
        rotary: !v.learned_positions,
        tokens: (patches / merge).floor().max(1.0),
        proj_in: h * merge,
        proj_mid: f64::from(DIMS.clamp_u32(v.projector.hidden, d)),
        proj_out: dim(v.projector.out, d),
        images: f64::from(COUNT.clamp_u32(v.images, d)),
    }
}
