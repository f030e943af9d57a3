//! Llama 4 of a `config.json` (Transformers 5.25 `Llama4TextConfig`, `Llama4Config`): experts on the
//! layers of `moe_layers` (default every `interleave_moe_layer_step`-th), each a routed top-k mixture
//! of `intermediate_size` experts with one shared expert of the same width, dense layers of
//! `intermediate_size_mlp`; chunked local attention (`attention_chunk_size`) on the RoPE layers and
//! global attention on the NoPE ones (`no_rope_layers`, default every 4th layer NoPE); the q/k norm
//! is an L2 norm without weights. `llama4` adds `Llama4VisionModel`, its pixel-shuffle adapter and
//! the projector (`estimator::model::towers`).

use super::hf_config::{Built, Reader};
use super::hf_decoders::LLAMA;
use super::hf_families::{
    Class, MAX_LAYERS, attention, base, check_layers, dense, gated_act, layer,
};
use super::hf_multimodal::{finish_vision, text_model, vision_reader};
use crate::scenario::{Attention, Mixer, Mlp, MoeSpec, Projector, VisionTower};

/// Llama 4's text model (`Llama4ForCausalLM`); Scout's shape by default.
pub(super) fn llama4_text(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 5120,
        heads: 40,
        kv_heads: 8,
        head_dim: 128,
        ffn: 8192,
        vocab: 202_048,
        layers: 48,
        ..LLAMA
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let dense_ffn = r.or("intermediate_size_mlp", 16384);
    out.t.ffn = dense_ffn;
    out.moe = MoeSpec {
        experts: r.or("num_local_experts", 16),
        top_k: r.or("num_experts_per_tok", 1),
        expert_ffn: b.ffn,
        shared_experts: 1,
        shared_expert_ffn: b.ffn,
        ..MoeSpec::default()
    };
    let bias = r.flag("attention_bias", false);
    let chunk = r.zero_or("attention_chunk_size", 8192);
    let step = r.or("interleave_moe_layer_step", 1);
    let nope_every = r.or("no_rope_layer_interval", 4);
    r.skip(&[
        "use_qk_norm",
        "attn_temperature_tuning",
        "attn_scale",
        "floor_scale",
    ]);
    if !check_layers(r, b.layers) {
        return;
    }
    let moe_layers: Vec<u32> = if r.has("moe_layers") {
        r.integers("moe_layers", MAX_LAYERS)
    } else {
        (0..b.layers).filter(|i| (i + 1) % step == 0).collect()
    };
    let rope: Vec<bool> = if r.has("no_rope_layers") {
        let given = r.integers("no_rope_layers", MAX_LAYERS);
        if given.len() != b.layers as usize {
            r.problems.push(format!(
                "`no_rope_layers` lists {} layers, `num_hidden_layers` is {}",
                given.len(),
                b.layers
            ));
        }
        given.iter().map(|x| *x != 0).collect()
    } else {
        (0..b.layers).map(|i| (i + 1) % nope_every != 0).collect()
    };
    out.layers = rope
        .iter()
        .zip(0u32..)
        .map(|(uses_rope, i)| {
            let a = Attention {
                qkv_bias: bias,
                out_bias: bias,
                chunk: if *uses_rope { chunk } else { 0 },
                ..attention(&b)
            };
            let mlp = if moe_layers.contains(&i) {
                Mlp::Moe
            } else {
                dense(dense_ffn, false)
            };
            layer(Mixer::Attention(a), mlp, 2)
        })
        .collect();
}

/// Llama 4 (`Llama4ForConditionalGeneration`): the text model of `text_config` and the vision model.
pub(super) fn llama4(r: &mut Reader, out: &mut Built) {
    let text = r.object("text_config");
    text_model(r, text, "llama4_text", out);
    let mut v = vision_reader(r);
    let hidden = v.or("hidden_size", 768);
    let ffn = v.or("intermediate_size", 5632);
    let ratio = v
        .get("pixel_shuffle_ratio")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.5);
    let merge = if ratio > 0.0 {
        (1.0 / (ratio * ratio)).round() as u32
    } else {
        1
    };
    if u64::from(hidden) * u64::from(merge) != u64::from(ffn) {
        // `Llama4VisionMLP2.fc1` reads `intermediate_size` inputs: the shuffled patches' width.
        v.problems.push(format!(
            "`intermediate_size` {ffn} is not `hidden_size` × 1/`pixel_shuffle_ratio`² = {}",
            u64::from(hidden) * u64::from(merge)
        ));
    }
    let proj_in = v.or("projector_input_dim", 4096);
    let proj_out = v.or("projector_output_dim", 4096);
    let vision_out = v.or("vision_output_dim", 7680);
    if proj_in != proj_out || proj_out != vision_out {
        v.problems.push(format!(
            "projector widths {proj_in} → {proj_out} → {vision_out} differ: not understood"
        ));
    }
    let tower = VisionTower {
        layers: v.or("num_hidden_layers", 34),
        hidden,
        heads: v.or("num_attention_heads", 16),
        ffn,
        image_size: v.or("image_size", 448),
        patch_size: v.or("patch_size", 14),
        channels: v.or("num_channels", 3),
        projector: Projector {
            norm: None,
            merge,
            hidden: proj_in,
            mid_layers: 1,
            out: out.t.hidden,
            bias: v.flag("multi_modal_projector_bias", false),
        },
        ..VisionTower::default()
    };
    v.skip(&[
        "model_type",
        "hidden_act",
        "norm_eps",
        "rope_theta",
        "vision_feature_layer",
        "vision_feature_select_strategy",
        "projector_dropout",
    ]);
    r.skip(&["boi_token_index", "eoi_token_index"]);
    finish_vision(r, &v, tower, out);
}
