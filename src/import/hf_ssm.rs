//! State-space and linear-attention models of a `config.json` (Transformers 5.25 configuration
//! classes): Mamba (`MambaConfig`), Mamba-2 (`Mamba2Config`), Jamba (`JambaConfig`: attention every
//! `attn_layer_period` layers at `attn_layer_offset`, experts every `expert_layer_period` at
//! `expert_layer_offset`), Nemotron-H (`hybrid_override_pattern`: `M` Mamba-2, `*` attention, `-`
//! MLP, one norm per layer). Qwen3-Next's gated DeltaNet hybrid is in `hf_qwen3_next`.

use serde_json::Value;

use super::hf_config::{Built, Reader, echo_json};
use super::hf_decoders::LLAMA;
use super::hf_families::{
    Class, MAX_LAYERS, attention, base, check_layers, dense, gated_act, layer,
};
use crate::presets::text::echo;
use crate::scenario::{
    Attention, DenseMlp, FfnKind, Mamba, MambaVersion, Mixer, Mlp, MoeSpec, PositionKind,
};

/// Mamba-1's Δ rank: an integer, or "auto" = ⌈hidden / 16⌉ (`MambaConfig.time_step_rank`).
fn dt_rank(r: &mut Reader, key: &'static str, hidden: u32) -> u32 {
    match r.get(key) {
        None => hidden.div_ceil(16),
        Some(Value::String(s)) if s == "auto" => hidden.div_ceil(16),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or_else(|| {
                r.problems.push(format!(
                    "`{key}` = {} is neither \"auto\" nor a positive integer",
                    echo_json(v)
                ));
                1
            }),
    }
}

/// A recurrent model has no attention heads: the reference dimensions say one head over the width.
fn no_heads(out: &mut Built) {
    out.t.heads = 1;
    out.t.kv_heads = 1;
    out.t.head_dim = 0;
}

/// Mamba (`MambaForCausalLM`): every layer a norm and a Mamba-1 mixer, tied embeddings.
pub(super) fn mamba(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 768,
        heads: 1,
        kv_heads: 1,
        head_dim: 0,
        ffn: 1536,
        vocab: 50280,
        layers: 32,
        tied: true,
    };
    let b = base(r, &class, out);
    no_heads(out);
    let expand = r.or("expand", 2);
    let inner = expand.saturating_mul(b.hidden);
    out.t.ffn = inner;
    if r.has("intermediate_size") && b.ffn != inner {
        r.problems.push(format!(
            "`intermediate_size` = {} is not `expand` × `hidden_size` = {inner}",
            b.ffn
        ));
    }
    let m = Mamba {
        version: MambaVersion::Mamba1,
        d_state: r.or("state_size", 16),
        d_conv: r.or("conv_kernel", 4),
        expand,
        dt_rank: dt_rank(r, "time_step_rank", b.hidden),
        conv_bias: r.flag("use_conv_bias", true),
        bias: r.flag("use_bias", false),
        inner_norms: false,
        gated_norm: false,
        ..Mamba::default()
    };
    r.skip(&[
        "d_inner",
        "d_model",
        "n_layer",
        "ssm_cfg",
        "rms_norm",
        "hidden_act",
    ]);
    if check_layers(r, b.layers) {
        out.layers = (0..b.layers)
            .map(|_| layer(Mixer::Mamba(m.clone()), Mlp::None, 1))
            .collect();
    }
}

/// Reads a Mamba-2 mixer; `heads` × `head_dim` must be `expand` × hidden (the mixer's inner width).
fn mamba2_mixer(r: &mut Reader, hidden: u32, keys: [&'static str; 4]) -> Mamba {
    let [heads_key, head_dim_key, state_key, bias_key] = keys;
    let expand = r.or("expand", 2);
    let heads = r.or(heads_key, 128);
    let head_dim = r.or(head_dim_key, 64);
    if u64::from(heads) * u64::from(head_dim) != u64::from(expand) * u64::from(hidden) {
        r.problems.push(format!(
            "`{heads_key}` × `{head_dim_key}` = {} is not `expand` × `hidden_size` = {}",
            u64::from(heads) * u64::from(head_dim),
            u64::from(expand) * u64::from(hidden)
        ));
    }
    Mamba {
        version: MambaVersion::Mamba2,
        d_state: r.or(state_key, 128),
        d_conv: r.or("conv_kernel", 4),
        expand,
        n_groups: r.or("n_groups", 8),
        head_dim,
        dt_rank: 0,
        conv_bias: r.flag("use_conv_bias", true),
        bias: r.flag(bias_key, false),
        inner_norms: false,
        gated_norm: true,
        // `Mamba2Config.chunk_size` default (transformers 5.24); the torch path pads to whole chunks.
        chunk_size: r.or("chunk_size", 256),
    }
}

/// Mamba-2 (`Mamba2ForCausalLM`): every layer a norm and a Mamba-2 mixer.
pub(super) fn mamba2(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 4096,
        heads: 1,
        kv_heads: 1,
        head_dim: 0,
        ffn: 8192,
        vocab: 32768,
        layers: 64,
        tied: false,
    };
    let b = base(r, &class, out);
    no_heads(out);
    let m = mamba2_mixer(
        r,
        b.hidden,
        ["num_heads", "head_dim", "state_size", "use_bias"],
    );
    out.t.ffn = m.expand.saturating_mul(b.hidden);
    r.skip(&[
        "time_step_rank",
        "rms_norm",
        "hidden_act",
        "chunk_size",
        "norm_before_gate",
    ]);
    if check_layers(r, b.layers) {
        out.layers = (0..b.layers)
            .map(|_| layer(Mixer::Mamba(m.clone()), Mlp::None, 1))
            .collect();
    }
}

/// Jamba (`JambaForCausalLM`): attention or Mamba-1 (with Δ/B/C norms) per layer, experts or a
/// dense MLP per layer, two norms each.
pub(super) fn jamba(r: &mut Reader, out: &mut Built) {
    let class = Class {
        kv_heads: 8,
        ffn: 14336,
        vocab: 65536,
        ..LLAMA
    };
    let b = base(r, &class, out);
    no_positions(out);
    gated_act(r, "hidden_act", out);
    let (attn_period, attn_offset) = (
        r.or("attn_layer_period", 8),
        r.zero_or("attn_layer_offset", 4),
    );
    let (moe_period, moe_offset) = (
        r.or("expert_layer_period", 2),
        r.zero_or("expert_layer_offset", 1),
    );
    let experts = r.or("num_experts", 16);
    out.moe = MoeSpec {
        experts,
        top_k: r.or("num_experts_per_tok", 2),
        expert_ffn: b.ffn,
        ..MoeSpec::default()
    };
    let m = Mamba {
        version: MambaVersion::Mamba1,
        d_state: r.or("mamba_d_state", 16),
        d_conv: r.or("mamba_d_conv", 4),
        expand: r.or("mamba_expand", 2),
        dt_rank: dt_rank(r, "mamba_dt_rank", b.hidden),
        conv_bias: r.flag("mamba_conv_bias", true),
        bias: r.flag("mamba_proj_bias", false),
        inner_norms: true,
        gated_norm: false,
        ..Mamba::default()
    };
    r.skip(&["sliding_window"]);
    if !check_layers(r, b.layers) {
        return;
    }
    out.layers = (0..b.layers)
        .map(|i| {
            let mixer = if i % attn_period == attn_offset {
                Mixer::Attention(attention(&b))
            } else {
                Mixer::Mamba(m.clone())
            };
            let mlp = if experts > 1 && i % moe_period == moe_offset {
                Mlp::Moe
            } else {
                dense(b.ffn, false)
            };
            layer(mixer, mlp, 2)
        })
        .collect();
}

/// Jamba and Nemotron-H attend without positional encoding: `JambaAttention` and
/// `NemotronHAttention` get no rotary tables and their models build no `rotary_emb`
/// (transformers 5.24.0 `models/{jamba,nemotron_h}/modeling_*.py`; the CPU records of Nemotron-H
/// keep no cos/sin). The scenario has no "none" position kind: a learned table of 0 positions is
/// parameter-free and adds no rotary terms.
fn no_positions(out: &mut Built) {
    out.t.positions = PositionKind::Learned;
    out.t.max_positions = 0;
}

/// Nemotron-H (`NemotronHForCausalLM`): one block per character of `hybrid_override_pattern`.
pub(super) fn nemotron_h(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        head_dim: 128,
        ffn: 21504,
        vocab: 131_072,
        layers: 52,
        tied: false,
    };
    let mut b = base(r, &class, out);
    no_positions(out);
    b.head_dim = r.or("attention_head_dim", b.head_dim);
    out.t.head_dim = b.head_dim;
    out.t.ffn_kind = FfnKind::SquaredRelu;
    let act = r.text("mlp_hidden_act").unwrap_or("relu2");
    if act != "relu2" {
        r.problems.push(format!(
            "`mlp_hidden_act` = \"{}\" is not understood (relu2 is)",
            echo(act)
        ));
    }
    let bias = r.flag("attention_bias", false);
    let mlp_bias = r.flag("mlp_bias", false);
    let m = mamba2_mixer(
        r,
        b.hidden,
        [
            "mamba_num_heads",
            "mamba_head_dim",
            "ssm_state_size",
            "use_bias",
        ],
    );
    r.skip(&[
        "mamba_proj_bias",
        "mamba_hidden_act",
        "chunk_size",
        "hidden_dropout",
        "mamba_chunk_size",
    ]);
    let pattern = r.text("hybrid_override_pattern").unwrap_or("");
    if pattern.len() != b.layers as usize || pattern.len() > MAX_LAYERS {
        r.problems.push(format!(
            "`hybrid_override_pattern` has {} layers, `num_hidden_layers` is {}",
            pattern.chars().count(),
            b.layers
        ));
        return;
    }
    let a = Attention {
        qkv_bias: bias,
        out_bias: bias,
        ..attention(&b)
    };
    let mlp = Mlp::Dense(DenseMlp {
        ffn: b.ffn,
        kind: Some(FfnKind::SquaredRelu),
        bias: mlp_bias,
    });
    let mut layers = Vec::with_capacity(pattern.len());
    for c in pattern.chars() {
        layers.push(match c {
            'M' => layer(Mixer::Mamba(m.clone()), Mlp::None, 1),
            '*' => layer(Mixer::Attention(a.clone()), Mlp::None, 1),
            '-' => layer(Mixer::None, mlp.clone(), 1),
            other => {
                r.problems.push(format!(
                    "`hybrid_override_pattern` block '{}' is not understood (M, *, - are)",
                    echo(&other.to_string())
                ));
                continue;
            }
        });
    }
    out.layers = layers;
}
