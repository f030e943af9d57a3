//! The layer pattern's entries moved into their ranges (`validate::RANGES`, `model.pattern.*`).
//! Widths, heads and ranks share one bound (`dims`), windows the token bound, and the few small
//! integers (convolution widths, expansion factors) a small one.

use super::super::Diagnostics;
use crate::scenario::validate::{FieldRange, field};
use crate::scenario::{Attention, DenseMlp, GatedDeltaNet, LayerRun, Mamba, Mixer, Mla, Mlp};

const REPEAT: &FieldRange = field("model.pattern.repeat");
const COUNT: &FieldRange = field("model.pattern.layers.count");
const NORMS: &FieldRange = field("model.pattern.layers.norms");
const DIMS: &FieldRange = field("model.pattern.layers.dims");
const WINDOW: &FieldRange = field("model.pattern.layers.window");
const SMALL: &FieldRange = field("model.pattern.layers.small");

/// A part's repeat count in range.
pub fn pattern_repeat(x: u32, d: &mut Diagnostics) -> u32 {
    REPEAT.clamp_u32(x, d)
}

/// A run with every number in range. Copies only plain values (no allocation).
pub fn layer_run(run: &LayerRun, d: &mut Diagnostics) -> LayerRun {
    let LayerRun {
        count,
        mixer,
        mlp,
        norms,
    } = run;
    let mixer = match mixer {
        Mixer::Attention(a) => Mixer::Attention(attention(a, d)),
        Mixer::Mla(m) => Mixer::Mla(mla(m, d)),
        Mixer::Mamba(m) => Mixer::Mamba(mamba(m, d)),
        Mixer::GatedDeltaNet(g) => Mixer::GatedDeltaNet(delta_net(g, d)),
        Mixer::None => Mixer::None,
    };
    let mlp = match mlp {
        Mlp::Dense(DenseMlp { ffn, kind, bias }) => Mlp::Dense(DenseMlp {
            ffn: DIMS.clamp_u32(*ffn, d),
            kind: *kind,
            bias: *bias,
        }),
        Mlp::Moe => Mlp::Moe,
        Mlp::None => Mlp::None,
    };
    LayerRun {
        count: COUNT.clamp_u32(*count, d),
        mixer,
        mlp,
        norms: NORMS.clamp_u32(*norms, d),
    }
}

fn attention(a: &Attention, d: &mut Diagnostics) -> Attention {
    let mut dim = |x: u32| DIMS.clamp_u32(x, d);
    let Attention {
        heads,
        kv_heads,
        head_dim,
        window,
        chunk,
        qkv_bias,
        out_bias,
        qk_norm,
        sinks,
        output_gate,
        no_k_bias,
        cross_attention,
        relative_buckets,
    } = a;
    let (heads, kv_heads, head_dim) = (dim(*heads), dim(*kv_heads), dim(*head_dim));
    Attention {
        heads,
        kv_heads,
        head_dim,
        window: WINDOW.clamp_u32(*window, d),
        chunk: WINDOW.clamp_u32(*chunk, d),
        qkv_bias: *qkv_bias,
        out_bias: *out_bias,
        qk_norm: *qk_norm,
        sinks: *sinks,
        output_gate: *output_gate,
        no_k_bias: *no_k_bias,
        cross_attention: *cross_attention,
        relative_buckets: DIMS.clamp_u32(*relative_buckets, d),
    }
}

fn mla(m: &Mla, d: &mut Diagnostics) -> Mla {
    let mut dim = |x: u32| DIMS.clamp_u32(x, d);
    let Mla {
        heads,
        q_lora_rank,
        kv_lora_rank,
        qk_nope_head_dim,
        qk_rope_head_dim,
        v_head_dim,
        cache,
    } = m;
    Mla {
        heads: dim(*heads),
        q_lora_rank: dim(*q_lora_rank),
        kv_lora_rank: dim(*kv_lora_rank),
        qk_nope_head_dim: dim(*qk_nope_head_dim),
        qk_rope_head_dim: dim(*qk_rope_head_dim),
        v_head_dim: dim(*v_head_dim),
        cache: *cache,
    }
}

fn mamba(m: &Mamba, d: &mut Diagnostics) -> Mamba {
    let mut dim = |x: u32| DIMS.clamp_u32(x, d);
    let Mamba {
        version,
        d_state,
        d_conv,
        expand,
        n_groups,
        head_dim,
        dt_rank,
        conv_bias,
        bias,
        inner_norms,
        gated_norm,
        chunk_size,
    } = m;
    let (d_state, n_groups, head_dim, dt_rank, chunk_size) = (
        dim(*d_state),
        dim(*n_groups),
        dim(*head_dim),
        dim(*dt_rank),
        dim(*chunk_size),
    );
    Mamba {
        version: *version,
        d_state,
        d_conv: SMALL.clamp_u32(*d_conv, d),
        expand: SMALL.clamp_u32(*expand, d),
        n_groups,
        head_dim,
        dt_rank,
        conv_bias: *conv_bias,
        bias: *bias,
        inner_norms: *inner_norms,
        gated_norm: *gated_norm,
        chunk_size,
    }
}

fn delta_net(g: &GatedDeltaNet, d: &mut Diagnostics) -> GatedDeltaNet {
    let mut dim = |x: u32| DIMS.clamp_u32(x, d);
    let GatedDeltaNet {
        key_heads,
        value_heads,
        key_head_dim,
        value_head_dim,
        conv_kernel,
    } = g;
    let (key_heads, value_heads) = (dim(*key_heads), dim(*value_heads));
    let (key_head_dim, value_head_dim) = (dim(*key_head_dim), dim(*value_head_dim));
    GatedDeltaNet {
        key_heads,
        value_heads,
        key_head_dim,
        value_head_dim,
        conv_kernel: SMALL.clamp_u32(*conv_kernel, d),
    }
}
