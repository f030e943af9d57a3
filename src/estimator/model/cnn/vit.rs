//! Vision transformers from their reference definitions: torchvision ViT-B/16 and ViT-L/16, and
//! DiT-XL/2. Parameters and MACs are exact; the saved activations are derived op by op from the
//! modules' source (docs/cnn.md §3), not yet measured.

use super::resnet_walk::Live;
use crate::scenario::CnnNetwork;

/// One vision transformer: patch side, blocks, width, heads, MLP width, input channels and side
/// divisor (the VAE latent is the image ÷ 8 for DiT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VitTable {
    pub patch: f64,
    pub layers: f64,
    pub width: f64,
    pub heads: f64,
    pub mlp: f64,
    pub in_channels: f64,
    pub latent_divisor: f64,
    /// DiT: adaLN-Zero conditioning (timestep MLP, class table, 6·width modulation per block).
    pub dit: bool,
}

/// torchvision `vision_transformer.py` v0.29.2: `vit_b_16` (12 layers, 768, 12 heads, MLP 3,072) and
/// `vit_l_16` (24, 1,024, 16, 4,096). DiT-XL/2: facebookresearch/DiT `models.py` `DiT_XL_2` (depth
/// 28, hidden 1,152, patch 2, 16 heads, mlp_ratio 4, in_channels 4, learn_sigma).
pub fn table(n: CnnNetwork) -> Option<VitTable> {
    let vit = |layers, width, heads, mlp| VitTable {
        patch: 16.0,
        layers,
        width,
        heads,
        mlp,
        in_channels: 3.0,
        latent_divisor: 1.0,
        dit: false,
    };
    match n {
        CnnNetwork::VitB16 => Some(vit(12.0, 768.0, 12.0, 3072.0)),
        CnnNetwork::VitL16 => Some(vit(24.0, 1024.0, 16.0, 4096.0)),
        CnnNetwork::DitXl2 => Some(VitTable {
            patch: 2.0,
            layers: 28.0,
            width: 1152.0,
            heads: 16.0,
            mlp: 4608.0,
            in_channels: 4.0,
            latent_divisor: 8.0,
            dit: true,
        }),
        _ => None,
    }
}

/// Classes of the ImageNet head (ViT) and of DiT's class table (plus one "null" class for
/// classifier-free guidance: `LabelEmbedder` `use_cfg_embedding`).
const CLASSES: f64 = 1000.0;
/// DiT's sinusoidal timestep features (`TimestepEmbedder.frequency_embedding_size`).
const T_FREQ: f64 = 256.0;

impl VitTable {
    /// Patches per image at side `res` (pixels): (side ÷ divisor ÷ patch)².
    pub fn patches(&self, res: f64) -> f64 {
        (res / self.latent_divisor / self.patch)
            .floor()
            .max(1.0)
            .powi(2)
    }

    /// Tokens: the patches, plus ViT's class token.
    pub fn tokens(&self, res: f64) -> f64 {
        self.patches(res) + if self.dit { 0.0 } else { 1.0 }
    }

    /// One block's parameters. ViT `EncoderBlock`: two LayerNorms (weight + bias), `in_proj`
    /// 3d² + 3d, `out_proj` d² + d, MLP 2·d·f + f + d. DiT `DiTBlock`: LayerNorms without affine,
    /// timm `Attention` (qkv with bias, proj), timm `Mlp`, `adaLN_modulation` Linear(d, 6d).
    pub fn block_params(&self) -> f64 {
        let (d, f) = (self.width, self.mlp);
        let attn = 4.0 * d * d + 4.0 * d;
        let mlp = 2.0 * d * f + f + d;
        if self.dit {
            attn + mlp + 6.0 * d * d + 6.0 * d
        } else {
            attn + mlp + 4.0 * d
        }
    }

    /// Every parameter (`sum(p.numel())`). ViT: `conv_proj` (c·d·p² + d), class token d, position
    /// embedding tokens·d (sized by the resolution: torchvision builds it from `image_size`), the
    /// blocks, the final LayerNorm 2d and the head d·1,000 + 1,000. DiT: `x_embedder` conv, timestep
    /// MLP (256·d + d + d² + d), class table 1,001·d, the fixed sin-cos `pos_embed` (a
    /// `requires_grad=False` Parameter, counted by `numel` but not trained), the blocks, and the
    /// final layer (Linear(d, p²·2c) + adaLN Linear(d, 2d)).
    pub fn params(&self, res: f64) -> f64 {
        let (d, p, c) = (self.width, self.patch, self.in_channels);
        let embed = c * d * p * p + d;
        let blocks = self.layers * self.block_params();
        if self.dit {
            let t = T_FREQ * d + d + d * d + d;
            let y = (CLASSES + 1.0) * d;
            let out = p * p * 2.0 * c;
            let last = d * out + out + 2.0 * d * d + 2.0 * d;
            embed + t + y + self.frozen(res) + blocks + last
        } else {
            embed + d + self.tokens(res) * d + blocks + 2.0 * d + d * CLASSES + CLASSES
        }
    }

    /// Parameters that take no gradient: DiT's fixed `pos_embed`.
    pub fn frozen(&self, res: f64) -> f64 {
        if self.dit {
            self.patches(res) * self.width
        } else {
            0.0
        }
    }

    /// Parameter tensors (weights and biases; DiT's `pos_embed` included).
    pub fn tensors(&self) -> f64 {
        if self.dit {
            2.0 + 4.0 + 1.0 + 1.0 + self.layers * 10.0 + 4.0
        } else {
            2.0 + 2.0 + self.layers * 12.0 + 2.0 + 2.0
        }
    }

    /// The largest single tensor: the MLP weight (d·f), DiT's adaLN weight (6d²) when larger, or the
    /// ViT head (d·1,000).
    pub fn largest(&self) -> f64 {
        let d = self.width;
        let m = (d * self.mlp).max(3.0 * d * d).max(d * CLASSES);
        if self.dit { m.max(6.0 * d * d) } else { m }
    }

    /// Forward MACs per image: patch embedding, per block 4·n·d² (Q, K, V, O) + 2·n²·d (QKᵀ and
    /// attention × V) + 2·n·d·f (MLP) (+ 6d² per image for DiT's modulation), and the head.
    pub fn macs(&self, res: f64) -> f64 {
        let (d, f, n) = (self.width, self.mlp, self.tokens(res));
        let embed = self.patches(res) * self.in_channels * self.patch * self.patch * d;
        let block = 4.0 * n * d * d + 2.0 * n * n * d + 2.0 * n * d * f;
        let cond = if self.dit { 6.0 * d * d } else { 0.0 };
        embed + self.layers * (block + cond) + d * CLASSES
    }

    /// Feature-map elements one token saves per block (docs/cnn.md §3). ViT: LN1 input and
    /// output (the `in_proj` input), the fused Q, K, V projection output and SDPA's output (which
    /// `out_proj` saves as its input: the layout makes `.contiguous()` a no-op), LN2 input and
    /// output (`fc1` input), `fc1` output (GELU input) and GELU output (`fc2` input): 8d + 2f.
    /// DiT adds the two `modulate` outputs and the two branch outputs `gate * x` saves: 12d + 2f.
    /// Both measured on CPU to within bytes (tests/data/measured: `vit_b_16`, DiT-S/2).
    pub fn block_elems_per_token(&self) -> f64 {
        let (d, f) = (self.width, self.mlp);
        if self.dit {
            12.0 * d + 2.0 * f
        } else {
            8.0 * d + 2.0 * f
        }
    }

    /// Feature-map elements one image saves for backward: the blocks, then ViT's final LayerNorm
    /// input and output (the head reads the class token as a view of it), or DiT's final layer
    /// (norm input, norm output, `modulate` output: 3d per token; the linear's output and the
    /// unpatchified copy: 2·p²·2c per token) and its conditioning per block (the SiLU input and
    /// output and the 6d `adaLN_modulation` output the gates and shifts are views of, and the two
    /// `1 + scale` tensors: 9d per image and block).
    pub fn saved_elems(&self, res: f64) -> f64 {
        let (d, n) = (self.width, self.tokens(res));
        let blocks = n * self.layers * self.block_elems_per_token();
        if self.dit {
            let out = 2.0 * self.patch * self.patch * 2.0 * self.in_channels;
            blocks + n * (3.0 * d + out) + self.layers * 9.0 * d
        } else {
            blocks + n * 2.0 * d
        }
    }

    /// FP32 bytes saved per image that do not scale with the activation type: LayerNorm mean and
    /// rstd (2 norms × 2 per token and block, 2 per token for the final norm) and the attention
    /// log-sum-exp (one per head per token and block).
    pub fn saved_fp32(&self, res: f64) -> f64 {
        let n = self.tokens(res);
        (n * self.layers * (4.0 + self.heads) + 2.0 * n) * 4.0
    }

    /// One block's saved bytes at batch `b` with feature maps of `act` bytes.
    fn block_saved(&self, res: f64, b: f64, act: f64) -> f64 {
        let n = self.tokens(res);
        b * n * (self.block_elems_per_token() * act + (4.0 + self.heads) * 4.0)
    }

    /// The backward's peak above the model states, walking the blocks in reverse: before a block
    /// runs its saved tensors are all held; after it, its gradients are all allocated and its saved
    /// tensors freed; one f-wide gradient pair (the MLP's) is in flight throughout. `saved` is what
    /// the forward saved, `grad` the bytes of a parameter gradient.
    pub fn backward_peak(&self, res: f64, b: f64, act: f64, grad: f64, saved: f64) -> Live {
        let (d, n) = (self.width, self.tokens(res));
        let transient = 2.0 * b * n * self.mlp * act;
        let (block_s, block_g) = (self.block_saved(res, b, act), self.block_params() * grad);
        let trained = self.params(res) - self.frozen(res);
        let outside = trained - self.layers * self.block_params();
        // The start (everything saved), then after the head and the final norm: their gradients
        // exist, their saved inputs are freed.
        let mut peak = Live {
            saved,
            grads: 0.0,
            transient,
        };
        let mut now = Live {
            saved: self.layers * block_s,
            grads: (d * CLASSES + CLASSES + 2.0 * d).min(outside) * grad,
            transient,
        };
        if now.total() > peak.total() {
            peak = now;
        }
        for _ in 0..self.layers as u32 {
            now.saved -= block_s;
            now.grads += block_g;
            if now.total() > peak.total() {
                peak = now;
            }
        }
        let end = Live {
            saved: 0.0,
            grads: trained * grad,
            transient: 2.0 * b * n * d * act,
        };
        if end.total() > peak.total() {
            end
        } else {
            peak
        }
    }

    /// Largest live set of an inference forward per image, in elements, at the first block's GELU
    /// (measured): ViT 5d + 2f per token (the residual stream's copies the callers' variables
    /// hold, the block's intermediate results and the MLP's two f-wide tensors); DiT 3d + 2f per
    /// token and the running block's 9d of conditioning.
    pub fn inference_elems(&self, res: f64) -> f64 {
        let (d, f, n) = (self.width, self.mlp, self.tokens(res));
        if self.dit {
            n * (3.0 * d + 2.0 * f) + 9.0 * d
        } else {
            n * (5.0 * d + 2.0 * f)
        }
    }
}
