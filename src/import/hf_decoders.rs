//! Dense decoders of a `config.json` (defaults and key names from the Transformers 5.25
//! configuration classes; modules as counted in `estimator::model::blocks`): LLaMA, Mistral,
//! Qwen2 / Qwen2.5-VL's text model, Qwen3, Phi-3, Gemma 2, Gemma 3's text model.

use super::hf_config::{Built, Reader};
use super::hf_families::{
    Base, Class, attention, base, check_layers, dense, gated_act, layer, sliding_layers,
};
use crate::scenario::{Attention, Mixer};

/// `LlamaConfig` defaults (Llama-2-7B's shape).
pub(super) const LLAMA: Class = Class {
    hidden: 4096,
    heads: 32,
    kv_heads: 0,
    head_dim: 0,
    ffn: 11008,
    vocab: 32000,
    layers: 32,
    tied: false,
};

/// A decoder whose layers are attention (global or sliding) + a dense gated MLP with `norms` norms.
fn uniform(
    out: &mut Built,
    b: &Base,
    sliding: &[bool],
    window: u32,
    proto: &Attention,
    norms: u32,
) {
    out.layers = sliding
        .iter()
        .map(|s| {
            let a = Attention {
                window: if *s { window } else { 0 },
                ..proto.clone()
            };
            layer(Mixer::Attention(a), dense(b.ffn, proto.out_bias), norms)
        })
        .collect();
}

/// LLaMA (`LlamaConfig`): `attention_bias` on q, k, v and o, `mlp_bias` on the MLP.
pub(super) fn llama(r: &mut Reader, out: &mut Built) {
    let b = base(r, &LLAMA, out);
    gated_act(r, "hidden_act", out);
    let bias = r.flag("attention_bias", false);
    let mlp_bias = r.flag("mlp_bias", false);
    if !check_layers(r, b.layers) {
        return;
    }
    let a = Attention {
        qkv_bias: bias,
        out_bias: bias,
        ..attention(&b)
    };
    let all_global = vec![false; b.layers as usize];
    uniform(out, &b, &all_global, 0, &a, 0);
    if mlp_bias != bias {
        for l in &mut out.layers {
            l.mlp = dense(b.ffn, mlp_bias);
        }
    }
}

/// Mistral (`MistralConfig`: GQA 8, `sliding_window` 4096 on every layer when set).
pub(super) fn mistral(r: &mut Reader, out: &mut Built) {
    let class = Class {
        kv_heads: 8,
        ffn: 14336,
        ..LLAMA
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let window = r.zero_or("sliding_window", 4096);
    if !check_layers(r, b.layers) {
        return;
    }
    let every = vec![window > 0; b.layers as usize];
    uniform(out, &b, &every, window, &attention(&b), 0);
}

/// Qwen2 / Qwen2.5-VL text / Qwen3: q, k, v biases (Qwen2) or per-head q/k norms (Qwen3); a sliding
/// window on layers ≥ `max_window_layers` when `use_sliding_window` (`Qwen2Config.layer_types`).
pub(super) fn qwen(r: &mut Reader, out: &mut Built, model_type: &str) {
    let qwen3 = model_type == "qwen3";
    let class = match model_type {
        "qwen3" => Class {
            vocab: 151_936,
            ffn: 22016,
            head_dim: 128,
            ..LLAMA
        },
        "qwen2_5_vl_text" | "qwen2_5_vl" => Class {
            vocab: 152_064,
            hidden: 8192,
            ffn: 29568,
            layers: 80,
            heads: 64,
            kv_heads: 8,
            ..LLAMA
        },
        _ => Class {
            vocab: 151_936,
            ffn: 22016,
            ..LLAMA
        },
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let Some((sliding, window, a)) = qwen_attention(r, &b, qwen3) else {
        return;
    };
    uniform(out, &b, &sliding, window, &a, 0);
    for l in &mut out.layers {
        l.mlp = dense(b.ffn, false);
    }
}

/// Phi-3 (`Phi3Config`): fused `qkv_proj` and `gate_up_proj`, no biases (the same counts as
/// separate matrices); `sliding_window` on every layer when set.
pub(super) fn phi3(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 3072,
        ffn: 8192,
        vocab: 32064,
        ..LLAMA
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    if r.flag("attention_bias", false) {
        r.problems
            .push("`attention_bias` = true is not understood for phi3".to_owned());
    }
    let window = r.zero_or("sliding_window", 0);
    if !check_layers(r, b.layers) {
        return;
    }
    let every = vec![window > 0; b.layers as usize];
    uniform(out, &b, &every, window, &attention(&b), 0);
}

/// Gemma 2 and Gemma 3's text model (`Gemma2Config`, `Gemma3TextConfig`): four norms per layer,
/// GELU-tanh gated MLP, tied embeddings; local (sliding) layers every other layer (Gemma 2) or all
/// but every `sliding_window_pattern`-th (Gemma 3), unless `layer_types` lists them; Gemma 3 adds
/// per-head q/k norms.
pub(super) fn gemma(r: &mut Reader, out: &mut Built, gemma3: bool) {
    let class = Class {
        hidden: 2304,
        heads: 8,
        kv_heads: 4,
        head_dim: 256,
        ffn: 9216,
        vocab: if gemma3 { 262_208 } else { 256_000 },
        layers: 26,
        tied: true,
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_activation", out);
    r.skip(&["hidden_act"]);
    let bias = r.flag("attention_bias", false);
    let window = r.zero_or("sliding_window", 4096);
    r.skip(&["sliding_window_size"]);
    let every = if gemma3 {
        r.or("sliding_window_pattern", 6)
    } else {
        2
    };
    if !check_layers(r, b.layers) {
        return;
    }
    let sliding = sliding_layers(r, b.layers, |i| (i + 1) % every != 0);
    let a = Attention {
        qkv_bias: bias,
        out_bias: bias,
        qk_norm: gemma3,
        ..attention(&b)
    };
    uniform(out, &b, &sliding, window, &a, 4);
    for l in &mut out.layers {
        l.mlp = dense(b.ffn, false);
    }
}

/// The attention of Qwen2/Qwen3 layers, dense or MoE (`Qwen2Attention`, `Qwen3Attention`): q/k/v
/// biases (Qwen2 always, Qwen3 with `attention_bias`), Qwen3's q/k norms, and which layers use the
/// sliding window (`use_sliding_window`, `sliding_window`, from `max_window_layers` on). `None` when
/// the layer count is refused (`check_layers` says why).
pub(super) fn qwen_attention(
    r: &mut Reader,
    b: &Base,
    qwen3: bool,
) -> Option<(Vec<bool>, u32, Attention)> {
    let bias = if qwen3 {
        r.flag("attention_bias", false)
    } else {
        true
    };
    let use_window = r.flag("use_sliding_window", false);
    let window = r.zero_or("sliding_window", 4096);
    let from = r.zero_or("max_window_layers", 28);
    if !check_layers(r, b.layers) {
        return None;
    }
    let sliding = sliding_layers(r, b.layers, |i| use_window && window > 0 && i >= from);
    let a = Attention {
        qkv_bias: bias,
        out_bias: qwen3 && bias,
        qk_norm: qwen3,
        ..attention(b)
    };
    Some((sliding, window, a))
}
