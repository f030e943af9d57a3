//! A Stable-Diffusion-style UNet (diffusers `UNet2DConditionModel`, the SD 1.5 `unet/config.json`
//! structure) walked block by block for memory: what autograd saves in a training step, what a
//! `no_grad` denoising step holds at its peak, and the backward's peak. Every rule below is the
//! diffusers 0.42.1 module source (`resnet.py` `ResnetBlock2D`, `transformers/transformer_2d.py`,
//! `attention.py` `BasicTransformerBlock` / `GEGLU`, `attention_processor.py` `AttnProcessor2_0`,
//! `unets/unet_2d_blocks.py`, `unets/unet_2d_condition.py`) on torch 2.15, **measured** on CPU with
//! a tiny random-init model of the same structure (tests/data/measured/unet-cpu-steps.json,
//! `scripts/measure/unet_run.py`; the rules match its `saved_by_module` within 0.01 %).
//!
//! Per sample, n positions at a level, element counts (× the activation type's bytes unless FP32
//! is named):
//! - `ResnetBlock2D(ci → co)`: GroupNorm inputs (ci, co) and their mean/rstd (2 · 32 FP32 each),
//!   both SiLU inputs and both conv inputs (2ci + 2co), the `time_emb_proj` input (its SiLU output,
//!   temb wide). The 1×1 shortcut reads the block input, already saved by `norm1`; dropout p = 0
//!   is the identity (no mask).
//! - `Transformer2DModel(c)`: GroupNorm input and stats, `proj_in` input (c), the reshaped copy that
//!   enters the block (c, LayerNorm 1's input), three LayerNorms (c + 2 FP32 each), self-attention
//!   through SDPA (q/k/v input, q, k, v and the output that `to_out` reads as a view: 5c, and the
//!   log-sum-exp, heads FP32), cross-attention (q input, q, output: 3c, log-sum-exp; K and V over
//!   the text: 2 · text · c per sample), GEGLU (input c, the 8c projection, the GELU output 4c, the
//!   product 4c: 17c), `proj_out` input (c): **31c + 3 · 2 + 2 · heads FP32** per position.
//! - down-sampling conv input (c at the level), up-sampling conv input (c at the new level: nearest
//!   interpolation saves nothing), `conv_in` input (4), `conv_norm_out` / SiLU / `conv_out` (3 · c₀),
//!   the time MLP (c₀ + 3 · temb), the MSE's prediction and target (2 · 4), the text states
//!   (text · cross, once).

use super::resnet_walk::Live;

/// The shape of a UNet: the four levels' widths, the time-embedding width (4 × the first), the
/// text encoder's width and tokens, attention heads, GroupNorm groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unet {
    pub widths: [f64; 4],
    pub cross: f64,
    pub text_tokens: f64,
    pub heads: f64,
    pub groups: f64,
}

/// Stable Diffusion 1.5 (runwayml/stable-diffusion-v1-5 `unet/config.json`; 77 CLIP tokens of 768).
pub const SD15: Unet = Unet {
    widths: [320.0, 640.0, 1280.0, 1280.0],
    cross: 768.0,
    text_tokens: 77.0,
    heads: 8.0,
    groups: 32.0,
};

impl Unet {
    fn temb(&self) -> f64 {
        4.0 * self.widths[0]
    }
}

/// One block of the walk: (FP32-equivalent saved bytes per sample at `act` bytes, parameters,
/// the level's positions and its widest feature map in elements).
#[derive(Clone, Copy, Debug, Default)]
struct Step {
    saved: f64,
    params: f64,
    map: f64,
    /// A `Transformer2DModel` (its width c; 0 otherwise).
    attention_width: f64,
    /// Multiply-accumulates per sample, parameter tensors, the largest tensor.
    macs: f64,
    tensors: f64,
    largest: f64,
}

fn resnet(u: &Unet, ci: f64, co: f64, n: f64, act: f64) -> Step {
    let stats = 2.0 * 2.0 * u.groups * 4.0;
    Step {
        saved: act * (3.0 * ci * n + 3.0 * co * n + u.temb()) + stats,
        params: super::unet::resnet_block_with(ci, co, u.temb()),
        map: ci.max(co) * n,
        attention_width: 0.0,
        macs: (ci * co * 9.0 + co * co * 9.0 + if ci == co { 0.0 } else { ci * co }) * n
            + u.temb() * co,
        tensors: if ci == co { 10.0 } else { 12.0 },
        largest: ci.max(co) * co * 9.0,
    }
}

fn transformer(u: &Unet, c: f64, n: f64, act: f64) -> Step {
    let fp32 = 4.0 * (2.0 * 2.0 * u.groups + 3.0 * 2.0 * n + 2.0 * u.heads * n);
    Step {
        saved: act * (31.0 * c * n + 2.0 * u.text_tokens * c) + fp32,
        params: super::unet::transformer_with(c, u.cross),
        map: 8.0 * c * n,
        attention_width: c,
        // proj_in, proj_out, q/k/v/out of self-attention, q/out of the cross-attention, GEGLU
        // (c → 8c, 4c → c): 20c² per position; K and V over the text; QKᵀ and AV.
        macs: 20.0 * c * c * n
            + 2.0 * u.text_tokens * u.cross * c
            + 2.0 * n * n * c
            + 2.0 * n * u.text_tokens * c,
        tensors: 26.0,
        largest: 8.0 * c * c,
    }
}

/// A 3×3 convolution ci → co reading `n_in` positions (it saves its input).
fn conv(ci: f64, co: f64, n_in: f64, act: f64) -> Step {
    Step {
        saved: act * ci * n_in,
        params: ci * co * 9.0 + co,
        map: ci.max(co) * n_in,
        attention_width: 0.0,
        macs: ci * co * 9.0 * n_in,
        tensors: 2.0,
        largest: ci * co * 9.0,
    }
}

/// Calls `visit` on every block in forward order, with the skip feature maps (elements) held
/// at that point of a `no_grad` forward, per sample. `side`: the latent's side.
fn walk(u: &Unet, side: f64, act: f64, mut visit: impl FnMut(Step, f64)) {
    let w = u.widths;
    let mut n = side * side;
    let mut skips = [0.0f64; 12];
    let mut held = 0usize;
    let push = |skips: &mut [f64; 12], held: &mut usize, x: f64| {
        if let Some(s) = skips.get_mut(*held) {
            *s = x;
            *held += 1;
        }
    };
    let sum = |skips: &[f64; 12], held: usize| skips.iter().take(held).sum::<f64>();
    visit(conv(4.0, w[0], n, act), 0.0);
    push(&mut skips, &mut held, w[0] * n);
    let mut c = w[0];
    for (i, &o) in w.iter().enumerate() {
        for _ in 0..2 {
            visit(resnet(u, c, o, n, act), sum(&skips, held));
            c = o;
            if i < 3 {
                visit(transformer(u, o, n, act), sum(&skips, held));
            }
            push(&mut skips, &mut held, o * n);
        }
        if i < 3 {
            visit(conv(o, o, n, act), sum(&skips, held));
            n /= 4.0;
            push(&mut skips, &mut held, o * n);
        }
    }
    visit(resnet(u, c, c, n, act), sum(&skips, held));
    visit(transformer(u, c, n, act), sum(&skips, held));
    visit(resnet(u, c, c, n, act), sum(&skips, held));
    let mut prev = c;
    for i in 0..4 {
        let out = w[3 - i];
        // `res_samples` keeps the level's three skips alive until the up block returns, and the
        // caller keeps the block's input (`sample`).
        let level = sum(&skips, held) + prev * n;
        for j in 0..3 {
            held = held.saturating_sub(1);
            let skip = skips.get(held).copied().unwrap_or(0.0) / n.max(1.0);
            let ci = if j == 0 { prev } else { out } + skip;
            visit(resnet(u, ci, out, n, act), level);
            if i > 0 {
                visit(transformer(u, out, n, act), level);
            }
        }
        prev = out;
        if i < 3 {
            n *= 4.0;
            visit(conv(out, out, n, act), level);
        }
    }
}

/// Bytes saved for backward by `b` samples (everything in the compute type `act`, statistics
/// FP32), the inputs included (latent, text, noise target).
pub fn saved_bytes(u: &Unet, side: f64, b: f64, act: f64) -> f64 {
    let n0 = side * side;
    let mut total = 0.0;
    walk(u, side, act, |s, _| total += s.saved);
    let edges = act * (3.0 * u.widths[0] * n0 + u.widths[0] + 3.0 * u.temb() + 2.0 * 4.0 * n0)
        + 2.0 * 2.0 * u.groups * 4.0;
    b * (total + edges + act * u.text_tokens * u.cross)
}

/// The largest live set of a `no_grad` forward of `b` samples, in bytes: at a transformer's GEGLU
/// (its 8c projection, the GELU output and the product, 16c, beside the transformer's residual,
/// its block input, the current hidden state, the normed input and one more c-wide map: 21c in
/// all), with the skips still held and the up block's input. Measured: the tiny model's peak is
/// the GEGLU product of the top level's first up transformer, 26 · c₀ · n₀ per sample.
pub fn inference_peak(u: &Unet, side: f64, b: f64, act: f64) -> f64 {
    let mut peak = 0.0f64;
    walk(u, side, act, |s, held| {
        if s.attention_width > 0.0 {
            peak = peak.max(held + 21.0 * s.map / 8.0);
        }
    });
    b * act * peak + act * b * u.text_tokens * u.cross
}

/// The training backward's peak above the model states: walking the blocks in reverse, each
/// block's saved tensors are freed and its gradients allocated; the activation gradients of the
/// widest map in flight (two maps) ride on top. `grad`: bytes per parameter gradient.
pub fn backward_peak(u: &Unet, side: f64, b: f64, act: f64, grad: f64) -> Live {
    let saved = saved_bytes(u, side, b, act);
    let mut steps = [Step::default(); 64];
    let mut k = 0usize;
    walk(u, side, act, |s, _| {
        if let Some(slot) = steps.get_mut(k) {
            *slot = s;
            k += 1;
        }
    });
    let mut now = Live {
        saved,
        grads: 0.0,
        transient: 0.0,
    };
    let mut peak = now;
    for s in steps.iter().take(k).rev() {
        now.transient = 2.0 * b * s.map * act;
        if now.total() > peak.total() {
            peak = now;
        }
        now.saved -= b * s.saved;
        now.grads += s.params * grad;
    }
    peak
}

/// Whole-network counts at latent side `side`: (parameters, parameter tensors, largest tensor,
/// multiply-accumulates per sample). Outside the blocks: the time MLP (c₀ → temb → temb),
/// `conv_norm_out` and `conv_out` (c₀ → 4); a stride-2 down-sampling conv's MACs are over the
/// smaller map (counted at the input side here: an upper bound by 4× on those three convs).
pub fn counts(u: &Unet, side: f64) -> (f64, f64, f64, f64) {
    let (c0, t) = (u.widths[0], u.temb());
    let mut acc = (
        c0 * t + t + t * t + t + 2.0 * c0 + c0 * 4.0 * 9.0 + 4.0,
        7.0,
        0.0f64,
        c0 * t + t * t + c0 * 4.0 * 9.0 * side * side,
    );
    walk(u, side, 4.0, |s, _| {
        acc.0 += s.params;
        acc.1 += s.tensors;
        acc.2 = acc.2.max(s.largest);
        acc.3 += s.macs;
    });
    acc
}
