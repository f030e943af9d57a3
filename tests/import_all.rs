//! Issue 14 item 3: every `config.json` under tests/data/hf imports, and the estimate's parameter
//! counts equal `sum(p.numel())` of the Transformers class (tests/data/hf/params.json, transformers
//! 5.25.0 on the meta device), total and active.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

use std::path::PathBuf;

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::import::{ImportedConfig, from_hf_config};
use vram_explorer::scenario::{ModelSpec, Scenario};

fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", path.display()))
}

fn import(name: &str) -> ImportedConfig {
    from_hf_config(&data(name), &ModelSpec::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn scenario(imported: &ImportedConfig) -> Scenario {
    let mut s = Scenario::default();
    imported.apply(&mut s);
    s
}

fn records() -> Vec<Value> {
    let v: Value = serde_json::from_str(&data("params.json")).unwrap();
    v["records"].as_array().unwrap().clone()
}

#[test]
fn every_fixture_imports_with_the_exact_parameter_counts() {
    let mut wrong = Vec::new();
    for r in records() {
        let file = r["file"].as_str().unwrap();
        let imported = match from_hf_config(&data(file), &ModelSpec::default()) {
            Ok(i) => i,
            Err(e) => {
                wrong.push(format!("{file}: {e}"));
                continue;
            }
        };
        let e = estimate(&scenario(&imported));
        let total = r["total_params"].as_f64().unwrap();
        if e.model.params.total != total {
            wrong.push(format!(
                "{file}: total {} vs {total} ({:+})",
                e.model.params.total,
                e.model.params.total - total
            ));
        }
        let active = r["active_params"].as_f64();
        if let Some(active) = active.filter(|a| (e.model.params.active - a).abs() > 0.5) {
            wrong.push(format!(
                "{file}: active {} vs {active} ({:+})",
                e.model.params.active,
                e.model.params.active - active
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// (layers, kv elements per token, window or 0, state per sequence) of each layer kind.
fn kinds(name: &str) -> Vec<(u32, f64, f64, f64)> {
    kinds_of(&data(name))
}

/// Layers whose (kv per token, window, state) is the given one.
fn layers_with(kinds: &[(u32, f64, f64, f64)], kv: f64, window: f64, state: f64) -> u32 {
    kinds
        .iter()
        .filter(|k| k.1 == kv && k.2 == window && k.3 == state)
        .map(|k| k.0)
        .sum()
}

#[test]
fn kv_cache_and_state_per_layer_kind_match_params_json() {
    let mut checked = 0;
    for r in records() {
        let file = r["file"].as_str().unwrap();
        let Some(entries) = r["kv_per_token_per_layer"].as_object() else {
            continue;
        };
        let k = kinds(file);
        for (name, v) in entries {
            // The expanded MLA cache is the other cache choice; cross-attention is per encoder
            // position; MLP-only layers hold nothing.
            if name.contains("expanded") || name.contains("cross") || name == "mlp" {
                continue;
            }
            let Some(layers) = v["layers"].as_u64() else {
                continue;
            };
            let per_token = v["per_token"].as_f64().unwrap();
            let window = v["window_tokens"].as_f64().unwrap_or(0.0);
            let state = [
                "conv_state_per_sequence",
                "ssm_state_per_sequence",
                "recurrent_state_per_sequence",
            ]
            .iter()
            .filter_map(|s| v[*s].as_f64())
            .sum::<f64>();
            assert_eq!(
                u64::from(layers_with(&k, per_token, window, state)),
                layers,
                "{file} {name}: {k:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 35, "{checked}");
}

fn scenario_of(name: &str) -> vram_explorer::estimator::Estimate {
    estimate(&scenario(&import(name)))
}

#[test]
fn patterns_have_the_published_shapes() {
    use vram_explorer::estimator::model::blocks::{MixerShape, MlpShape};
    let count = |name: &str, f: &dyn Fn(&MixerShape, &MlpShape) -> bool| -> u32 {
        scenario_of(name)
            .model
            .blocks
            .kinds()
            .iter()
            .filter(|k| f(&k.mixer, &k.mlp))
            .map(|k| k.count)
            .sum()
    };
    let mla = |m: &MixerShape| matches!(m, MixerShape::Mla(_));
    let moe = |m: &MlpShape| *m == MlpShape::Moe;
    let dense = |m: &MlpShape| matches!(m, MlpShape::Dense { .. });
    let attention = |m: &MixerShape| matches!(m, MixerShape::Attention { .. });
    let mamba = |m: &MixerShape| matches!(m, MixerShape::Mamba { .. });
    // DeepSeek-V3: 3 dense + 58 MoE layers, all MLA.
    assert_eq!(count("deepseek-v3.json", &|a, b| mla(a) && dense(b)), 3);
    assert_eq!(count("deepseek-v3.json", &|a, b| mla(a) && moe(b)), 58);
    // Gemma 3 27B: 10 × [5 local, 1 global] + [2 local] = 52 local + 10 global.
    let g = import("gemma-3-27b-it.json").model.pattern;
    assert_eq!(
        (g.len(), g[0].repeat, g[0].layers.len()),
        (2, 10, 2),
        "{g:?}"
    );
    assert_eq!(
        (
            g[0].layers[0].count,
            g[0].layers[1].count,
            g[1].layers[0].count
        ),
        (5, 1, 2)
    );
    let local =
        |m: &MixerShape| matches!(m, MixerShape::Attention { window, .. } if *window == 1024.0);
    assert_eq!(count("gemma-3-27b-it.json", &|a, _| local(a)), 52);
    assert_eq!(
        count("gemma-3-27b-it.json", &|a, _| attention(a) && !local(a)),
        10
    );
    // Jamba 1.5 Mini: 4 attention + 28 Mamba, 16 MoE layers.
    assert_eq!(count("ai21-jamba-1.5-mini.json", &|a, _| attention(a)), 4);
    assert_eq!(count("ai21-jamba-1.5-mini.json", &|a, _| mamba(a)), 28);
    assert_eq!(count("ai21-jamba-1.5-mini.json", &|_, b| moe(b)), 16);
    // Nemotron-H 8B: 4 attention, 24 Mamba-2, 24 MLP-only layers, each one block.
    let n = "nemotron-h-8b-base-8k.json";
    assert_eq!(count(n, &|a, b| attention(a) && *b == MlpShape::None), 4);
    assert_eq!(count(n, &|a, b| mamba(a) && *b == MlpShape::None), 24);
    assert_eq!(count(n, &|a, b| *a == MixerShape::Empty && dense(b)), 24);
    // Qwen3-Next: every 4th layer full attention, the others gated DeltaNet; all MoE.
    let q = "qwen3-next-80b-a3b-thinking.json";
    assert_eq!(
        count(q, &|a, _| matches!(a, MixerShape::DeltaNet { .. })),
        36
    );
    assert_eq!(count(q, &|a, b| attention(a) && moe(b)), 12);
    // gpt-oss: alternating sliding (128) and full.
    assert_eq!(
        count(
            "gpt-oss-120b.json",
            &|a, _| matches!(a, MixerShape::Attention { window, .. } if *window == 128.0)
        ),
        18
    );
}

#[test]
fn mtp_vision_dtype_and_quantization_are_reported() {
    use vram_explorer::scenario::{Dtype, WeightFormat};
    let ds = import("deepseek-v3.json");
    assert_eq!((ds.mtp_layers, ds.vision), (1, false));
    assert_eq!(ds.quantization.as_ref().unwrap().weights, WeightFormat::Fp8);
    assert_eq!(ds.dtype, Some(Dtype::Bf16));
    let oss = import("gpt-oss-120b.json");
    assert_eq!(
        oss.quantization.as_ref().unwrap().weights,
        WeightFormat::Mxfp4
    );
    assert!(import("llava-1.5-7b-hf.json").vision);
    assert!(import("gemma-3-27b-it.json").vision);
    assert!(import("qwen2.5-vl-7b-instruct.json").vision);
    assert_eq!(import("whisper-large-v3.json").dtype, Some(Dtype::Fp16));
    // GPTQ / AWQ / bitsandbytes map to the scenario's formats; others are a note.
    let with_quant = |q: &str| {
        let mut v: Value = serde_json::from_str(&data("llama-2-7b.json")).unwrap();
        v["quantization_config"] = serde_json::from_str(q).unwrap();
        from_hf_config(&v.to_string(), &ModelSpec::default()).unwrap()
    };
    let gptq = with_quant(r#"{"quant_method": "gptq", "bits": 4, "group_size": 64}"#);
    let q = gptq.quantization.unwrap();
    assert_eq!((q.weights, q.group_size), (WeightFormat::Int4Group, 64));
    let nf4 = with_quant(
        r#"{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4"}"#,
    );
    assert_eq!(nf4.quantization.unwrap().weights, WeightFormat::Nf4);
    // The loader's settings reach the scenario: double quantization, data type, compute dtype
    // (BitsAndBytesConfig's defaults where the file leaves them out: fp4, off, float32).
    use vram_explorer::scenario::{Bnb4bitType, Scenario};
    let qlora = with_quant(
        r#"{"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
            "bnb_4bit_use_double_quant": true, "bnb_4bit_compute_dtype": "bfloat16"}"#,
    );
    let mut s = Scenario::default();
    s.peft.double_quant = false;
    qlora.apply(&mut s);
    let b = &s.implementation.hf.bitsandbytes;
    assert_eq!(
        (s.peft.double_quant, b.quant_type, b.compute_dtype),
        (true, Bnb4bitType::Nf4, Dtype::Bf16)
    );
    let fp4 = with_quant(r#"{"quant_method": "bitsandbytes", "load_in_4bit": true}"#);
    assert_eq!(
        fp4.quantization.as_ref().unwrap().weights,
        WeightFormat::Nf4
    );
    let mut s = Scenario::default();
    fp4.apply(&mut s);
    let b = &s.implementation.hf.bitsandbytes;
    assert_eq!(
        (s.peft.double_quant, b.quant_type, b.compute_dtype),
        (false, Bnb4bitType::Fp4, Dtype::Fp32)
    );
    let int8 = with_quant(r#"{"quant_method": "bitsandbytes", "load_in_8bit": true}"#);
    assert_eq!(
        int8.quantization.unwrap().weights,
        WeightFormat::Int8PerChannel
    );
    let hqq = with_quant(r#"{"quant_method": "hqq", "bits": 3}"#);
    assert!(hqq.quantization.is_none());
    assert!(
        hqq.notes.iter().any(|n| n.contains("hqq")),
        "{:?}",
        hqq.notes
    );
}

#[test]
fn unsupported_keys_and_values_are_named() {
    let err = |edit: &dyn Fn(&mut Value), file: &str| {
        let mut v: Value = serde_json::from_str(&data(file)).unwrap();
        edit(&mut v);
        from_hf_config(&v.to_string(), &ModelSpec::default())
            .unwrap_err()
            .message
    };
    let m = err(&|v| v["num_experts"] = 8.into(), "llama-2-7b.json");
    assert!(m.contains("`num_experts`"), "{m}");
    let m = err(&|v| v["q_lora_rank"] = 8.into(), "qwen3-8b.json");
    assert!(m.contains("`q_lora_rank`"), "{m}");
    let m = err(
        &|v| v["vision_config"]["vision_use_head"] = true.into(),
        "gemma-3-27b-it.json",
    );
    assert!(m.contains("vision_config: `vision_use_head`"), "{m}");
    let m = err(
        &|v| {
            v["hybrid_override_pattern"] =
                "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-ME".into()
        },
        "nemotron-h-8b-base-8k.json",
    );
    assert!(m.contains("block 'E'"), "{m}");
    let m = err(
        &|v| v["layer_types"][3] = "chunked_attention".into(),
        "gpt-oss-120b.json",
    );
    assert!(m.contains("\"chunked_attention\""), "{m}");
    let m = err(
        &|v| v["layer_types"] = serde_json::json!(["full_attention"]),
        "gpt-oss-120b.json",
    );
    assert!(m.contains("lists 1 layers"), "{m}");
    let m = err(
        &|v| v["text_config"]["hidden_act"] = "relu".into(),
        "llava-1.5-7b-hf.json",
    );
    assert!(m.contains("text_config: `hidden_act`"), "{m}");
    let m = err(&|v| v["model_type"] = "falcon".into(), "llama-2-7b.json");
    assert!(
        m.contains("\"falcon\" is not understood") && m.contains("nemotron_h"),
        "{m}"
    );
    let m = err(&|v| v["feed_forward_proj"] = "swish".into(), "t5-base.json");
    assert!(m.contains("`feed_forward_proj`"), "{m}");
    let m = err(&|v| v["expand"] = 3.into(), "nemotron-h-8b-base-8k.json");
    assert!(m.contains("`mamba_num_heads` × `mamba_head_dim`"), "{m}");
    // A key no family reads is listed, not dropped.
    let mut v: Value = serde_json::from_str(&data("mistral-7b-v0.1.json")).unwrap();
    v["frobnication_depth"] = 3.into();
    let ok = from_hf_config(&v.to_string(), &ModelSpec::default()).unwrap();
    assert!(
        ok.notes.iter().any(|n| n.contains("frobnication_depth")),
        "{:?}",
        ok.notes
    );
}

#[test]
fn nested_configs_take_their_class_defaults() {
    // LLaVA's text_config names only the vocabulary: the rest is LlamaConfig's defaults (7B).
    let t = import("llava-1.5-7b-hf.json").model.transformer;
    assert_eq!(
        (t.hidden, t.ffn, t.layers, t.heads, t.vocab),
        (4096, 11008, 32, 32, 32064)
    );
    // Gemma 3's text_config omits the vocabulary: Gemma3TextConfig's 262,208.
    assert_eq!(
        import("gemma-3-27b-it.json").model.transformer.vocab,
        262_208
    );
}

/// llama4, llama4_text, mamba2 and qwen2_5_vl_text: their fixtures are on the `measure` branch, not
/// here yet (the test above covers them once params.json lists them). Until then: configs from the
/// Transformers 5.25 class defaults (`{"model_type": …}` alone, as the importer reads them) against
/// the counts the `measure` branch recorded for the same shapes (Llama4TextConfig() is Scout's text
/// model; Mamba2Config() is its own fixture there), and qwen2_5_vl_text derived from the Qwen2.5-VL
/// fixture here.
#[test]
fn types_without_a_fixture_here_count_exactly_from_class_defaults() {
    let total = |json: &str| {
        let i = from_hf_config(json, &ModelSpec::default()).unwrap_or_else(|e| panic!("{e}"));
        let p = estimate(&scenario(&i)).model.params;
        (p.total, p.active)
    };
    // measure @ 5c71ca9: llama-4-scout-17b-16e-instruct-text.json, mamba2-transformers-5.25-default.json.
    assert_eq!(
        total(r#"{"model_type": "llama4_text"}"#),
        (107_769_861_120.0, 17_172_894_720.0)
    );
    assert_eq!(total(r#"{"model_type": "mamba2"}"#).0, 7_285_403_648.0);
    // Scout with its vision tower (measure: llama-4-scout-17b-16e-instruct.json, vision 871,932,416).
    let scout = r#"{"model_type": "llama4", "text_config": {"model_type": "llama4_text"},
        "vision_config": {"hidden_size": 1408, "image_size": 336, "intermediate_size": 5632,
        "num_attention_heads": 16, "num_hidden_layers": 34, "patch_size": 14,
        "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096,
        "vision_output_dim": 4096, "multi_modal_projector_bias": false}}"#;
    assert_eq!(total(scout), (108_641_793_536.0, 18_044_827_136.0));
    // qwen2_5_vl_text = Qwen2_5_VLTextModel (no LM head): Qwen2.5-VL-7B's text part.
    let mut v: Value = serde_json::from_str(&data("qwen2.5-vl-7b-instruct.json")).unwrap();
    let o = v.as_object_mut().unwrap();
    o.retain(|k, _| !k.contains("vision") && !k.contains("token_id"));
    o.insert("model_type".into(), "qwen2_5_vl_text".into());
    assert_eq!(total(&v.to_string()).0, 7_070_619_136.0);
    // Llama 4's layers: chunked attention on the RoPE layers, every 4th layer NoPE and global.
    let k = kinds_of(r#"{"model_type": "llama4_text"}"#);
    assert_eq!(layers_with(&k, 2048.0, 8192.0, 0.0), 36);
    assert_eq!(layers_with(&k, 2048.0, 0.0, 0.0), 12);
}

fn kinds_of(json: &str) -> Vec<(u32, f64, f64, f64)> {
    let i = from_hf_config(json, &ModelSpec::default()).unwrap();
    let e = estimate(&scenario(&i));
    e.model
        .blocks
        .kinds()
        .iter()
        .map(|k| {
            let cached = k.cached_tokens(1e12);
            let window = if cached < 1e12 { cached } else { 0.0 };
            (k.count, k.kv_per_token(), window, k.state_per_sequence())
        })
        .collect()
}
