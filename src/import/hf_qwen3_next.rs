//! Qwen3-Next of a `config.json` (Transformers 5.25 `Qwen3NextConfig`): `layer_types`, or every
//! `full_attention_interval`-th layer full attention and the others gated DeltaNet; experts with one
//! gated shared expert on every layer not in `mlp_only_layers`.

use super::hf_config::{Built, Reader};
use super::hf_families::{
    Class, MAX_LAYERS, attention, base, check_layers, dense, gated_act, layer,
};
use crate::presets::text::echo;
use crate::scenario::{Attention, GatedDeltaNet, Mixer, Mlp, MoeSpec};

/// Qwen3-Next (`Qwen3NextForCausalLM`): gated full attention (q/k norms, output gate) or gated
/// DeltaNet per layer; experts with one gated shared expert.
pub(super) fn qwen3_next(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 2048,
        heads: 16,
        kv_heads: 2,
        head_dim: 256,
        ffn: 5632,
        vocab: 151_936,
        layers: 48,
        tied: false,
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let bias = r.flag("attention_bias", false);
    let delta = GatedDeltaNet {
        key_heads: r.or("linear_num_key_heads", 16),
        value_heads: r.or("linear_num_value_heads", 32),
        key_head_dim: r.or("linear_key_head_dim", 128),
        value_head_dim: r.or("linear_value_head_dim", 128),
        conv_kernel: r.or("linear_conv_kernel_dim", 4),
    };
    let experts = r.zero_or("num_experts", 512);
    out.moe = MoeSpec {
        experts,
        top_k: r.or("num_experts_per_tok", 10),
        expert_ffn: r.or("moe_intermediate_size", 512),
        shared_experts: 1,
        shared_expert_ffn: r.or("shared_expert_intermediate_size", 512),
        shared_expert_gate: true,
        ..MoeSpec::default()
    };
    let step = r.or("decoder_sparse_step", 1);
    let dense_layers = r.integers("mlp_only_layers", MAX_LAYERS);
    let interval = r.or("full_attention_interval", 4);
    r.skip(&["use_sliding_window", "sliding_window", "max_window_layers"]);
    if !check_layers(r, b.layers) {
        return;
    }
    let linear = linear_layers(r, b.layers, interval);
    let a = Attention {
        qkv_bias: bias,
        out_bias: bias,
        qk_norm: true,
        output_gate: true,
        ..attention(&b)
    };
    out.layers = linear
        .iter()
        .zip(0u32..)
        .map(|(lin, i)| {
            let mixer = if *lin {
                Mixer::GatedDeltaNet(delta.clone())
            } else {
                Mixer::Attention(a.clone())
            };
            let moe = !dense_layers.contains(&i) && experts > 0 && (i + 1) % step == 0;
            layer(mixer, if moe { Mlp::Moe } else { dense(b.ffn, false) }, 2)
        })
        .collect();
}

/// Qwen3-Next's linear-attention layers: `layer_types` ("linear_attention" / "full_attention"), else
/// all but every `interval`-th (`Qwen3NextConfig.layer_types`).
fn linear_layers(r: &mut Reader, layers: u32, interval: u32) -> Vec<bool> {
    let linear: Vec<bool> = match r.strings("layer_types", MAX_LAYERS) {
        Some(types) => types
            .iter()
            .map(|t| match *t {
                "linear_attention" => true,
                "full_attention" => false,
                other => {
                    r.problems.push(format!(
                        "`layer_types` entry \"{}\" is not understood for qwen3_next",
                        echo(other)
                    ));
                    false
                }
            })
            .collect(),
        None => (0..layers).map(|i| (i + 1) % interval != 0).collect(),
    };
    if linear.len() != layers as usize {
        r.problems.push(format!(
            "`layer_types` lists {} layers, `num_hidden_layers` is {}",
            linear.len(),
            layers
        ));
    }
    linear
}
