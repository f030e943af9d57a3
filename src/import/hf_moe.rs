//! Mixture-of-experts decoders of a `config.json` (Transformers 5.25 configuration classes):
//! Mixtral, Qwen2-MoE (Qwen1.5-MoE), Qwen3-MoE, gpt-oss, DeepSeek-V2/V3 and Kimi K2 (multi-head
//! latent attention), GLM-4.5 (`glm4_moe`). Which layers hold experts follows each class's decoder
//! layer: `mlp_only_layers` / `decoder_sparse_step` (Qwen), `first_k_dense_replace` /
//! `moe_layer_freq` (DeepSeek, GLM).

use super::hf_config::{Built, Reader};
use super::hf_decoders::LLAMA;
use super::hf_families::{
    Base, Class, MAX_LAYERS, attention, base, check_layers, dense, gated_act, layer, sliding_layers,
};
use crate::scenario::{Attention, Mixer, Mla, Mlp, MoeSpec};

/// Mixtral (`MixtralConfig`): experts of `intermediate_size` on every layer, bias-free router.
pub(super) fn mixtral(r: &mut Reader, out: &mut Built) {
    let class = Class {
        kv_heads: 8,
        ffn: 14336,
        ..LLAMA
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    out.moe = MoeSpec {
        experts: r.or("num_local_experts", 8),
        top_k: r.or("num_experts_per_tok", 2),
        expert_ffn: b.ffn,
        ..MoeSpec::default()
    };
    let window = r.zero_or("sliding_window", 0);
    if !check_layers(r, b.layers) {
        return;
    }
    let a = Attention {
        window,
        ..attention(&b)
    };
    out.layers = (0..b.layers)
        .map(|_| layer(Mixer::Attention(a.clone()), Mlp::Moe, 0))
        .collect();
}

/// Qwen2-MoE and Qwen3-MoE: experts of `moe_intermediate_size` on layers not in `mlp_only_layers`
/// with (i + 1) % `decoder_sparse_step` = 0; Qwen2-MoE adds one shared expert of
/// `shared_expert_intermediate_size` with a sigmoid gate and q/k/v biases, Qwen3-MoE q/k norms.
pub(super) fn qwen_moe(r: &mut Reader, out: &mut Built, qwen3: bool) {
    let class = if qwen3 {
        Class {
            vocab: 151_936,
            hidden: 2048,
            ffn: 6144,
            layers: 24,
            heads: 32,
            kv_heads: 4,
            ..LLAMA
        }
    } else {
        Class {
            vocab: 151_936,
            hidden: 2048,
            ffn: 5632,
            layers: 24,
            heads: 16,
            kv_heads: 16,
            ..LLAMA
        }
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let experts = r.zero_or("num_experts", if qwen3 { 128 } else { 60 });
    out.moe = MoeSpec {
        experts,
        top_k: r.or("num_experts_per_tok", if qwen3 { 8 } else { 4 }),
        expert_ffn: r.or("moe_intermediate_size", if qwen3 { 768 } else { 1408 }),
        ..MoeSpec::default()
    };
    if !qwen3 {
        out.moe.shared_experts = 1;
        out.moe.shared_expert_ffn = r.or("shared_expert_intermediate_size", 5632);
        out.moe.shared_expert_gate = true;
    }
    let step = r.or("decoder_sparse_step", 1);
    let dense_layers = r.integers("mlp_only_layers", MAX_LAYERS);
    let Some((sliding, window, a)) = super::hf_decoders::qwen_attention(r, &b, qwen3) else {
        return;
    };
    out.layers = sliding
        .iter()
        .zip(0u32..)
        .map(|(s, i)| {
            let moe = !dense_layers.contains(&i) && experts > 0 && (i + 1) % step == 0;
            let mlp = if moe { Mlp::Moe } else { dense(b.ffn, false) };
            let a = Attention {
                window: if *s { window } else { 0 },
                ..a.clone()
            };
            layer(Mixer::Attention(a), mlp, 0)
        })
        .collect();
}

/// gpt-oss (`GptOssConfig`): biased q/k/v/o, a sink logit per head, alternating sliding (128) and
/// full layers, experts with biases behind a biased router on every layer.
pub(super) fn gpt_oss(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 2880,
        heads: 64,
        kv_heads: 8,
        head_dim: 64,
        ffn: 2880,
        vocab: 201_088,
        layers: 36,
        tied: false,
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let bias = r.flag("attention_bias", true);
    out.moe = MoeSpec {
        experts: r.or("num_local_experts", 128),
        top_k: r.or("num_experts_per_tok", 4),
        expert_ffn: b.ffn,
        router_bias: true,
        expert_bias: true,
        ..MoeSpec::default()
    };
    r.skip(&["experts_per_token"]);
    let window = r.zero_or("sliding_window", 128);
    if !check_layers(r, b.layers) {
        return;
    }
    let sliding = sliding_layers(r, b.layers, |i| (i + 1) % 2 != 0);
    out.layers = sliding
        .iter()
        .map(|s| {
            let a = Attention {
                window: if *s { window } else { 0 },
                qkv_bias: bias,
                out_bias: bias,
                sinks: true,
                ..attention(&b)
            };
            layer(Mixer::Attention(a), Mlp::Moe, 0)
        })
        .collect();
}

/// DeepSeek-V2 / V3 and Kimi K2 (`DeepseekV2Config`, `DeepseekV3Config`): multi-head latent
/// attention on every layer; `first_k_dense_replace` dense layers of `intermediate_size`, then
/// experts of `moe_intermediate_size` every `moe_layer_freq` layers with `n_shared_experts` shared
/// experts; `num_nextn_predict_layers` MTP layers are not built by Transformers (not counted).
pub(super) fn deepseek(r: &mut Reader, out: &mut Built, v2: bool) {
    let class = if v2 {
        Class {
            vocab: 102_400,
            ffn: 11008,
            layers: 30,
            ..LLAMA
        }
    } else {
        Class {
            hidden: 7168,
            heads: 128,
            kv_heads: 128,
            head_dim: 0,
            ffn: 18432,
            vocab: 129_280,
            layers: 61,
            tied: false,
        }
    };
    let b = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    if r.flag("attention_bias", false) {
        r.problems
            .push("`attention_bias` = true on latent attention is not understood".to_owned());
    }
    // An explicit null `q_lora_rank` (DeepSeek-V2-Lite) is a direct q projection.
    let q_lora_rank = if r.is_null("q_lora_rank") {
        0
    } else {
        r.zero_or("q_lora_rank", 1536)
    };
    let mla = Mla {
        heads: b.heads,
        q_lora_rank,
        kv_lora_rank: r.or("kv_lora_rank", 512),
        qk_nope_head_dim: r.or("qk_nope_head_dim", 128),
        qk_rope_head_dim: r.or("qk_rope_head_dim", 64),
        v_head_dim: r.or("v_head_dim", 128),
        cache: Mla::default().cache,
    };
    let experts = r.zero_or("n_routed_experts", if v2 { 0 } else { 256 });
    // The router as llama.cpp's converter writes it (`expert_weights_norm`, `expert_weights_scale`,
    // `expert_group_count`, `exp_probs_b`); the defaults are the configuration classes'. V3's
    // router always has its `e_score_correction_bias`; V2's only under `noaux_tc`.
    let selection_bias = !v2 || r.text("topk_method") == Some("noaux_tc");
    out.moe = MoeSpec {
        experts,
        top_k: r.or("num_experts_per_tok", if v2 { 6 } else { 8 }),
        shared_experts: r.zero_or("n_shared_experts", if v2 { 0 } else { 1 }),
        expert_ffn: r.or("moe_intermediate_size", if v2 { 1407 } else { 2048 }),
        norm_top_k: r.flag("norm_topk_prob", !v2),
        selection_bias,
        expert_groups: r.zero_or("n_group", if v2 { 0 } else { 8 }),
        groups_used: r.zero_or("topk_group", if v2 { 0 } else { 4 }),
        routed_scale: r.number("routed_scaling_factor", if v2 { 1.0 } else { 2.5 }),
        ..MoeSpec::default()
    };
    let first_dense = r.zero_or("first_k_dense_replace", if v2 { 0 } else { 3 });
    let freq = r.or("moe_layer_freq", 1);
    mtp(r, out);
    if !check_layers(r, b.layers) {
        return;
    }
    out.layers = (0..b.layers)
        .map(|i| {
            let moe = experts > 0 && i >= first_dense && i % freq == 0;
            let mlp = if moe { Mlp::Moe } else { dense(b.ffn, false) };
            layer(Mixer::Mla(mla.clone()), mlp, 0)
        })
        .collect();
}

/// `num_nextn_predict_layers`: noted, not counted.
fn mtp(r: &mut Reader, out: &mut Built) {
    let n = r.zero_or("num_nextn_predict_layers", 0);
    out.mtp_layers = n;
    if n > 0 {
        out.notes.push(format!(
            "{n} multi-token-prediction layer(s) (`num_nextn_predict_layers`) are in the checkpoint \
             but not in the count: Transformers does not build them"
        ));
    }
}

/// GLM-4.5 (`Glm4MoeConfig`): GQA with q/k/v biases (`attention_bias`; no bias on o), optional q/k
/// norms (`use_qk_norm`), `first_k_dense_replace` dense layers, then experts with
/// `n_shared_experts` shared experts.
pub(super) fn glm4_moe(r: &mut Reader, out: &mut Built) {
    let class = Class {
        hidden: 4096,
        heads: 96,
        kv_heads: 8,
        head_dim: 128,
        ffn: 10944,
        vocab: 151_552,
        layers: 46,
        tied: false,
    };
    let b: Base = base(r, &class, out);
    gated_act(r, "hidden_act", out);
    let a = Attention {
        qkv_bias: r.flag("attention_bias", false),
        qk_norm: r.flag("use_qk_norm", false),
        ..attention(&b)
    };
    let experts = r.zero_or("n_routed_experts", 128);
    out.moe = MoeSpec {
        experts,
        top_k: r.or("num_experts_per_tok", 8),
        shared_experts: r.zero_or("n_shared_experts", 1),
        expert_ffn: r.or("moe_intermediate_size", 1408),
        ..MoeSpec::default()
    };
    let first_dense = r.zero_or("first_k_dense_replace", 1);
    mtp(r, out);
    if !check_layers(r, b.layers) {
        return;
    }
    out.layers = (0..b.layers)
        .map(|i| {
            let mlp = if experts > 0 && i >= first_dense {
                Mlp::Moe
            } else {
                dense(b.ffn, false)
            };
            layer(Mixer::Attention(a.clone()), mlp, 0)
        })
        .collect();
}
