//! The Stable Diffusion 1.5 UNet's parameters, block by block (parameters only so far: its saved
//! activations and working set are not modelled yet, so it is not a selectable network).
//!
//! Source: the runwayml/stable-diffusion-v1-5 `unet/config.json` (block_out_channels [320, 640,
//! 1280, 1280], layers_per_block 2, cross_attention_dim 768, attention_head_dim 8, norm_num_groups
//! 32, three `CrossAttnDownBlock2D` + `DownBlock2D`, `UNetMidBlock2DCrossAttn`, `UpBlock2D` + three
//! `CrossAttnUpBlock2D`, `use_linear_projection` false) read against diffusers
//! `models/unets/unet_2d_condition.py`, `unet_2d_blocks.py`, `resnet.py` (`ResnetBlock2D`),
//! `transformers/transformer_2d.py` and `attention.py` (`BasicTransformerBlock`, GEGLU).

/// Time-embedding width (4 × 320: `TimestepEmbedding(320, 1280)`).
const TEMB: f64 = 1280.0;
/// Text-encoder width the cross-attention keys and values project from (CLIP ViT-L/14).
const CROSS: f64 = 768.0;

/// `ResnetBlock2D(c_in → c_out)`: GroupNorm(c_in), 3×3 conv, `time_emb_proj` Linear(1280, c_out),
/// GroupNorm(c_out), 3×3 conv, and a 1×1 `conv_shortcut` when the widths differ (all with bias).
pub fn resnet_block(ci: f64, co: f64) -> f64 {
    resnet_block_with(ci, co, TEMB)
}

/// [`resnet_block`] with a time embedding `temb` wide.
pub fn resnet_block_with(ci: f64, co: f64, temb: f64) -> f64 {
    let shortcut = if ci == co { 0.0 } else { ci * co + co };
    2.0 * ci + ci * co * 9.0 + co + temb * co + co + 2.0 * co + co * co * 9.0 + co + shortcut
}

/// `Transformer2DModel` of width c, one `BasicTransformerBlock`: GroupNorm, 1×1 `proj_in` and
/// `proj_out` convs; LayerNorms ×3; self-attention (Q, K, V without bias, out with bias);
/// cross-attention (Q from c, K and V from 768, out with bias); GEGLU feed-forward (Linear(c, 8c)
/// with bias, Linear(4c, c) with bias).
pub fn transformer(c: f64) -> f64 {
    transformer_with(c, CROSS)
}

/// [`transformer`] with text states `cross` wide.
pub fn transformer_with(c: f64, cross: f64) -> f64 {
    let self_attn = 4.0 * c * c + c;
    let cross_attn = 2.0 * c * c + 2.0 * cross * c + c;
    let ff = c * 8.0 * c + 8.0 * c + 4.0 * c * c + c;
    let block = 3.0 * 2.0 * c + self_attn + cross_attn + ff;
    2.0 * c + 2.0 * (c * c + c) + block
}

fn conv3(c: f64) -> f64 {
    c * c * 9.0 + c
}

/// Every parameter of the SD 1.5 UNet (`sum(p.numel())` = 859,520,964): `conv_in`, the time MLP,
/// the down path (two ResNet blocks per level, transformers on the first three, a stride-2 conv
/// after all but the last), the mid block (ResNet, transformer, ResNet), the up path (three ResNet
/// blocks per level taking the skip connections, transformers on the last three, an upsampling
/// conv after all but the last), `conv_norm_out` and `conv_out`.
pub fn sd15_params() -> f64 {
    let w = [320.0, 640.0, 1280.0, 1280.0];
    let mut p = 4.0 * 320.0 * 9.0 + 320.0 + 320.0 * TEMB + TEMB + TEMB * TEMB + TEMB;
    let mut c = w[0];
    for (i, &o) in w.iter().enumerate() {
        p += resnet_block(c, o) + resnet_block(o, o);
        if i < 3 {
            p += 2.0 * transformer(o) + conv3(o);
        }
        c = o;
    }
    p += 2.0 * resnet_block(1280.0, 1280.0) + transformer(1280.0);
    let mut prev = 1280.0;
    for i in 0..4 {
        let out = w[3 - i];
        let skip_in = w[(3 - i).saturating_sub(1)];
        for j in 0..3 {
            let skip = if j == 2 { skip_in } else { out };
            let res_in = if j == 0 { prev } else { out };
            p += resnet_block(res_in + skip, out);
        }
        if i > 0 {
            p += 3.0 * transformer(out);
        }
        if i < 3 {
            p += conv3(out);
        }
        prev = out;
    }
    p + 2.0 * 320.0 + 320.0 * 4.0 * 9.0 + 4.0
}
