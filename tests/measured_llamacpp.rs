//! llama.cpp's CPU buffers measured here (tests/data/measured/llamacpp-cpu.json, written by
//! scripts/measure/llamacpp/measure.py: tiny Llama GGUFs loaded by llama-cpp-python 0.3.36's
//! CPU build of llama.cpp@0c1e57098) against the estimator: the model (`CPU_Mapped`) and KV
//! buffers to the printed 0.01 MiB on every record; the compute buffer, with and without flash
//! attention, f16 or q8_0 caches, to the 0.0001 MiB the context prints when it is freed (the
//! replayed `ggml_gallocr` plan, `engines::llamacpp::compute::cpu_plan`). Figures are printed
//! (`cargo test --test measured_llamacpp -- --nocapture`) and listed in docs/engines/llamacpp.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::engines::llamacpp::mib_printed;
use vram_explorer::estimator::estimate;
use vram_explorer::import::from_hf_config;
use vram_explorer::scenario::{
    CacheType, FfnKind, FlashAttn, LlamaCpp, Mode, ModelSpec, Scenario, ServingEngine, WeightFormat,
};
use vram_explorer::tensor::GgufFileType;

const DATA: &str = include_str!("data/measured/llamacpp-cpu.json");
const WIDE: &str = include_str!("data/measured/llamacpp-cpu-8b-shape.json");
const VARIANTS: &str = include_str!("data/measured/llamacpp-cpu-variants.json");
const MOE: &str = include_str!("data/measured/llamacpp-cpu-moe.json");
const LAYER_KINDS: &str = include_str!("data/measured/llamacpp-cpu-layer-kinds.json");
const SLOTS: &str = include_str!("data/measured/llamacpp-cpu-slots.json");
const MLA: &str = include_str!("data/measured/llamacpp-cpu-mla.json");
const MAMBA2: &str = include_str!("data/measured/llamacpp-cpu-mamba2.json");

fn scenario(r: &Value) -> Scenario {
    let m = &r["model"];
    let e = &r["engine"];
    let u = |v: &Value| v.as_u64().unwrap() as u32;
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = u(&m["n_layer"]);
    t.hidden = u(&m["n_embd"]);
    t.heads = u(&m["n_head"]);
    t.kv_heads = m["n_head_kv"].as_u64().map_or(t.heads, |k| k as u32);
    t.head_dim = 0;
    // A record without an FFN (Mamba-2) takes its model from its config anyway.
    t.ffn = m["n_ff"].as_u64().map_or(t.ffn, |f| f as u32);
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = u(&m["n_vocab"]);
    t.tied_embeddings = false;
    let f = GgufFileType::ALL
        .into_iter()
        .find(|f| f.name() == r["file_type"].as_str().unwrap())
        .unwrap();
    s.quantization.weights = WeightFormat::GgufFile(f);
    let l = LlamaCpp {
        n_ctx: u(&e["c"]),
        n_batch: u(&e["b"]),
        n_ubatch: u(&e["ub"]),
        n_gpu_layers: 0,
        cache_type_k: CacheType::parse(e["ctk"].as_str().unwrap()).unwrap(),
        cache_type_v: CacheType::parse(e["ctv"].as_str().unwrap()).unwrap(),
        flash_attn: if e["fa"].as_bool().unwrap() {
            FlashAttn::On
        } else {
            FlashAttn::Off
        },
        cpu_only: true,
        swa_full: e["swa_full"].as_bool().unwrap_or(false),
        n_parallel: e["np"].as_u64().map_or(1, |n| n as u32),
        kv_unified: e["kv_unified"].as_bool().unwrap_or(false),
        ..LlamaCpp::default()
    };
    s.inference.engine = Some(ServingEngine::LlamaCpp(l));
    s
}

/// The compute buffer as the context's destructor prints it, to 0.0001 MiB
/// (`~llama_context: CPU compute buffer size is 13.0098 MiB, …`).
fn compute_to_four_places(r: &Value) -> f64 {
    r["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find_map(|l| {
            let rest = l.split("CPU compute buffer size is").nth(1)?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap()
}

#[test]
fn cpu_buffers_match_the_measurements() {
    let v: Value = serde_json::from_str(DATA).unwrap();
    let mut failures = Vec::new();
    let (mut loaded, mut fa_records) = (0, 0);
    println!(
        "{:<48} {:>14} {:>14} {:>20}",
        "record", "model", "KV", "compute (MiB, 4 places)"
    );
    for r in v["records"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        if !r["loaded"].as_bool().unwrap() {
            println!("{id:<48} skipped: did not load (invalid file, see the script)");
            continue;
        }
        loaded += 1;
        let b = estimate(&scenario(r)).llamacpp.unwrap();
        let m = &r["buffers_mib"];
        let got = |k: &str| m[k].as_f64().unwrap();
        let (model, kv) = (mib_printed(b.host_model), mib_printed(b.host_kv));
        let compute = b.host_compute as f64 / 1_048_576.0;
        let measured = compute_to_four_places(r);
        fa_records += usize::from(r["engine"]["fa"].as_bool().unwrap());
        println!(
            "{id:<48} {:>6.2}/{model:>6.2} {:>6.2}/{kv:>6.2} {measured:>9.4}/{compute:>9.4}",
            got("CPU_Mapped model"),
            got("CPU KV"),
        );
        if (model - got("CPU_Mapped model")).abs() > 0.005 {
            failures.push(format!(
                "{id}: model {model} vs {}",
                got("CPU_Mapped model")
            ));
        }
        if (kv - got("CPU KV")).abs() > 0.005 {
            failures.push(format!("{id}: KV {kv} vs {}", got("CPU KV")));
        }
        // The replayed planner (compute.rs `cpu_plan`) gives the planner's own byte count: it
        // must round to the printed four places, with and without flash attention.
        if (compute - measured).abs() > 0.000_05 {
            failures.push(format!("{id}: compute {compute:.4} vs {measured:.4}"));
        }
        if (mib_printed(b.host_compute) - got("CPU compute")).abs() > 0.005 {
            failures.push(format!("{id}: printed compute differs"));
        }
    }
    println!("{loaded} loads, {fa_records} with flash attention: every buffer checked");
    assert_eq!((loaded, fa_records), (64, 41), "records");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// At a real model's width (Llama-3.1-8B's dimensions, 2 layers, Q8_0; written and loaded by
/// scripts/measure/llamacpp/measure_8b_shape.py): model, KV and compute buffers as printed, the
/// compute buffer also to the four decimals printed when the context is freed — the output-bound,
/// attention-bound (2 GiB of scores at 32K cells) and FFN-bound cases, ubatch 512–2048, f16 and
/// q8_0 caches.
#[test]
fn cpu_buffers_at_llama_3_8b_width_match_the_measurements() {
    let v: Value = serde_json::from_str(WIDE).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 8);
    for r in records {
        let id = r["id"].as_str().unwrap();
        let b = estimate(&scenario(r)).llamacpp.unwrap();
        let m = &r["buffers_mib"];
        let got = |k: &str| m[k].as_f64().unwrap();
        let compute = b.host_compute as f64 / 1_048_576.0;
        println!(
            "{id:<48} compute {:>10.4} / {compute:>10.4} MiB",
            r["compute_mib_4"].as_f64().unwrap()
        );
        assert!(
            (mib_printed(b.host_model) - got("CPU_Mapped model")).abs() < 0.005,
            "{id}"
        );
        assert!(
            (mib_printed(b.host_kv) - got("CPU KV")).abs() < 0.005,
            "{id}"
        );
        assert!(
            (mib_printed(b.host_compute) - got("CPU compute")).abs() < 0.005,
            "{id}"
        );
        assert!(
            (compute - r["compute_mib_4"].as_f64().unwrap()).abs() < 0.000_05,
            "{id}"
        );
    }
}

/// Layer variants (scripts/measure/llamacpp/measure_variants.py): a `qwen2` file with Q/K/V biases,
/// a `llama` file with biases on every projection and the same without — each bias add runs in
/// place, so the three print the same buffer — and a `qwen3` file (per-head Q/K norms, imported
/// from Qwen3-8B's config at the measured shape): the estimate matches all sixteen loads to
/// 0.0001 MiB.
#[test]
fn layer_variants_match_the_measurements() {
    let v: Value = serde_json::from_str(VARIANTS).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 16);
    for r in records {
        let id = r["id"].as_str().unwrap();
        let mut s = scenario(r);
        s.model.transformer.bias = r["biases"].as_str() != Some("none");
        if r["qk_norm"].as_bool().unwrap() {
            let mut cfg = at_shape(
                include_str!("data/hf/qwen3-8b.json"),
                r,
                &[("intermediate_size", "n_ff")],
            );
            cfg["head_dim"] = 64.into();
            let imp = from_hf_config(&cfg.to_string(), &ModelSpec::default()).unwrap();
            s.model = imp.model;
        }
        let compute = estimate(&s).llamacpp.unwrap().host_compute as f64 / 1_048_576.0;
        let measured = r["compute_mib_4"].as_f64().unwrap();
        assert!(
            (compute - measured).abs() < 0.000_05,
            "{id}: {compute:.4} vs {measured:.4}"
        );
    }
}

/// Mixture-of-experts layers (scripts/measure/llamacpp/measure_moe.py): `qwen3moe` files
/// (Qwen3-30B-A3B's layer, imported from its config at the measured shape) and `llama` files with
/// 1, 2 or 4 of 4–8 experts used (Mixtral's layer), tiny and at the two models' widths (where the
/// experts' outputs, `n_embd × top-k × T` F32, set the peak with flash attention), four settings
/// each: model, KV and compute buffers as measured, the compute buffer to 0.0001 MiB.
#[test]
fn moe_layers_match_the_measurements() {
    let v: Value = serde_json::from_str(MOE).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 24);
    let mut failures = Vec::new();
    for r in records {
        let id = r["id"].as_str().unwrap();
        let m = &r["model"];
        let mut s = scenario(r);
        if r["qk_norm"].as_bool().unwrap() {
            let cfg = at_shape(
                include_str!("data/hf/qwen3-30b-a3b.json"),
                r,
                &[
                    ("head_dim", "head_dim"),
                    ("moe_intermediate_size", "n_ff"),
                    ("num_experts", "n_expert"),
                    ("num_experts_per_tok", "n_expert_used"),
                ],
            );
            s.model = from_hf_config(&cfg.to_string(), &ModelSpec::default())
                .unwrap()
                .model;
        } else {
            let moe = &mut s.model.moe;
            moe.experts = m["n_expert"].as_u64().unwrap() as u32;
            moe.top_k = m["n_expert_used"].as_u64().unwrap() as u32;
        }
        let b = estimate(&s).llamacpp.unwrap();
        let p = &r["printed_mib"];
        let got = |k: &str| p[k].as_f64().unwrap();
        let compute = b.host_compute as f64 / 1_048_576.0;
        let measured = r["compute_mib_4"].as_f64().unwrap();
        println!(
            "{id:<48} model {:>6.2}/{:>6.2} KV {:>5.2}/{:>5.2} compute {measured:>8.4}/{compute:>8.4}",
            got("CPU_Mapped model"),
            mib_printed(b.host_model),
            got("CPU KV"),
            mib_printed(b.host_kv),
        );
        if (mib_printed(b.host_model) - got("CPU_Mapped model")).abs() > 0.005
            || (mib_printed(b.host_kv) - got("CPU KV")).abs() > 0.005
            || (compute - measured).abs() > 0.000_05
        {
            failures.push(id);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Models whose layers differ (scripts/measure/llamacpp/measure_layer_kinds.py), each imported from
/// its Hugging Face config at the measured shape: Gemma 3 (five sliding-window layers of every six:
/// a second cache of `GGML_PAD(min(n_ctx, window + n_ubatch), 256)` cells) and DeepSeek-V3's layers
/// (latent attention: K only, `kv_lora + rope` per cell; a dense first layer, then routed and shared
/// experts) and Mamba-2 (no KV cache; a recurrent state of R and S rows per sequence), Qwen2 (Q/K/V
/// biases) and Qwen2-MoE (a gated shared expert wider than the routed ones; tiny and at
/// Qwen1.5-MoE-A2.7B's and Qwen2-57B-A14B's widths), Gemma 3 again with `--swa-full`. The model
/// buffer and every printed KV / RS line match.
#[test]
fn layer_kinds_match_the_measurements() {
    let v: Value = serde_json::from_str(LAYER_KINDS).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 36);
    check_layer_kinds(records);
}

/// Several sequences (`-np 2` and `4`), with one unified cache (llama-server's `-np` auto) and
/// with a stream per sequence, on the Qwen2, Gemma 3 and Mamba-2 files above: the windowed cache's
/// cells, the recurrent rows, the size lines (`4/1 seqs`), and the replayed compute buffer.
#[test]
fn several_sequences_match_the_measurements() {
    let v: Value = serde_json::from_str(SLOTS).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 48);
    check_layer_kinds(records);
}

/// DeepSeek-2/3 files with the router options llama.cpp reads (expert groups, a scaled and
/// normalised top-k, the selection bias; V2-Lite's softmax and direct Q projection), tiny and at
/// DeepSeek-V2-Lite's width: every buffer line and the replayed compute buffer exact.
#[test]
fn latent_attention_routers_match_the_measurements() {
    let v: Value = serde_json::from_str(MLA).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 18);
    check_layer_kinds(records);
}

/// Mamba-2 files at Mamba2-2.7B's width and with eight groups, where the layer (the projection,
/// the convolution's columns, the scan's output) sets the compute buffer's peak; one and four
/// sequences: every RS line and the replayed compute buffer exact.
#[test]
fn mamba2_layers_match_the_measurements() {
    let v: Value = serde_json::from_str(MAMBA2).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 12);
    check_layer_kinds(records);
}

fn check_layer_kinds(records: &[Value]) {
    for r in records {
        let id = r["id"].as_str().unwrap();
        let mut s = scenario(r);
        let cfg = layer_kinds_config(r);
        s.model = from_hf_config(&cfg.to_string(), &ModelSpec::default())
            .unwrap()
            .model;
        let b = estimate(&s).llamacpp.unwrap();
        let p = &r["printed_mib"];
        let got = |k: &str| p[k].as_f64().unwrap_or(0.0);
        let lines = vram_explorer::report::llamacpp::log_lines(&b);
        let predicted: Vec<String> = lines
            .lines()
            .filter(|l| l.starts_with("llama_kv_cache") || l.starts_with("llama_memory_recurrent"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        let measured: Vec<String> = r["kv_lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                l.as_str()
                    .unwrap()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        println!(
            "{id:<44} model {:>6.2}/{:>6.2} KV {:>5.2}/{:>5.2} compute {:>8.4}/{:>8.4}",
            got("CPU_Mapped model"),
            mib_printed(b.host_model),
            got("CPU KV") + got("CPU RS"),
            mib_printed(b.host_kv),
            r["compute_mib_4"].as_f64().unwrap(),
            b.host_compute as f64 / 1_048_576.0
        );
        assert_eq!(predicted, measured, "{id}");
        // Every architecture measured here is replayed: its compute buffer to 0.0001 MiB.
        let (c, m4) = (
            b.host_compute as f64 / 1_048_576.0,
            r["compute_mib_4"].as_f64().unwrap(),
        );
        let tolerance = 0.000_05;
        assert!(
            (c - m4).abs() < tolerance,
            "{id}: compute {c:.4} vs {m4:.4}"
        );
        assert!(
            (mib_printed(b.host_model) - got("CPU_Mapped model")).abs() < 0.005,
            "{id}: model {} vs {}",
            mib_printed(b.host_model),
            got("CPU_Mapped model")
        );
    }
}

/// The Hugging Face config of a layer-kinds record: Gemma 3 1B's, DeepSeek-V3's, Mamba-2's, Qwen2.5's
/// or Qwen1.5-MoE's at the measured shape (DeepSeek's expert groups and MTP layer off, as the tiny
/// file has them).
fn layer_kinds_config(r: &Value) -> Value {
    let m = &r["model"];
    if r["arch"] == "mamba2" {
        let mut c: Value = serde_json::from_str(include_str!(
            "data/hf/mamba2-transformers-5.25-default.json"
        ))
        .unwrap();
        c["hidden_size"] = m["n_embd"].clone();
        c["num_heads"] = m["n_head"].clone();
        c["head_dim"] = (m["d_inner"].as_u64().unwrap() / m["n_head"].as_u64().unwrap()).into();
        c["expand"] = (m["d_inner"].as_u64().unwrap() / m["n_embd"].as_u64().unwrap()).into();
        c["state_size"] = m["d_state"].clone();
        c["n_groups"] = m["n_group"].clone();
        c["conv_kernel"] = m["d_conv"].clone();
        c["num_hidden_layers"] = m["n_layer"].clone();
        c["vocab_size"] = m["n_vocab"].clone();
        c["time_step_rank"] = m["n_head"].clone();
        return c;
    }
    if r["arch"] == "qwen2" || r["arch"] == "qwen2moe" {
        return qwen2_config(r);
    }
    if r["arch"] == "gemma3" {
        let mut c = at_shape(
            include_str!("data/hf/gemma-3-1b-it.json"),
            r,
            &[
                ("head_dim", "head_dim"),
                ("intermediate_size", "n_ff"),
                ("sliding_window", "sliding_window"),
            ],
        );
        // Gemma ties its head (`at_shape` unties it).
        c["tie_word_embeddings"] = true.into();
        c
    } else {
        deepseek_config(r)
    }
}

/// DeepSeek-V3's config (sigmoid gating: its router's selection bias) or DeepSeek-V2's (softmax, no
/// bias) at an MLA record's shape, with the record's router options where it has them (the first
/// tiny file: groups off, weights normalised, not scaled).
fn deepseek_config(r: &Value) -> Value {
    let m = &r["model"];
    let v2 = m["gating"] == "softmax";
    let base = if v2 {
        include_str!("data/hf/deepseek-v2.json")
    } else {
        include_str!("data/hf/deepseek-v3.json")
    };
    let mut c: Value = serde_json::from_str(base).unwrap();
    for (k, f) in [
        ("hidden_size", "n_embd"),
        ("num_attention_heads", "n_head"),
        ("num_key_value_heads", "n_head"),
        ("q_lora_rank", "q_lora"),
        ("kv_lora_rank", "kv_lora"),
        ("qk_nope_head_dim", "nope"),
        ("qk_rope_head_dim", "rope"),
        ("v_head_dim", "v"),
        ("intermediate_size", "n_ff"),
        ("moe_intermediate_size", "n_ff_exp"),
        ("n_routed_experts", "n_expert"),
        ("num_experts_per_tok", "n_expert_used"),
        ("n_shared_experts", "n_shared"),
        ("first_k_dense_replace", "dense_lead"),
        ("num_hidden_layers", "n_layer"),
        ("vocab_size", "n_vocab"),
    ] {
        c[k] = m[f].clone();
    }
    // DeepSeek-V2-Lite's direct Q projection is a null rank.
    if m["q_lora"] == 0 {
        c["q_lora_rank"] = Value::Null;
    }
    c["n_group"] = m.get("groups").cloned().unwrap_or_else(|| 1.into());
    c["topk_group"] = m.get("groups_used").cloned().unwrap_or_else(|| 1.into());
    c["routed_scaling_factor"] = m.get("scale").cloned().unwrap_or_else(|| 1.0.into());
    c["norm_topk_prob"] = m.get("norm").cloned().unwrap_or_else(|| true.into());
    if v2 {
        c["topk_method"] = "greedy".into();
    }
    c["tie_word_embeddings"] = false.into();
    c["num_nextn_predict_layers"] = 0.into();
    c
}

/// Qwen2.5-7B's config (Q/K/V biases) or Qwen1.5-MoE-A2.7B's (routed experts and a wider gated
/// shared expert) at a record's shape.
fn qwen2_config(r: &Value) -> Value {
    let ffn = ("intermediate_size", "n_ff");
    if r["arch"] != "qwen2moe" {
        return at_shape(include_str!("data/hf/qwen2.5-7b.json"), r, &[ffn]);
    }
    at_shape(
        include_str!("data/hf/qwen1.5-moe-a2.7b.json"),
        r,
        &[
            ffn,
            ("moe_intermediate_size", "n_ff_exp"),
            ("shared_expert_intermediate_size", "n_ff_shexp"),
            ("num_experts", "n_expert"),
            ("num_experts_per_tok", "n_expert_used"),
        ],
    )
}

/// A Hugging Face config (`json`) at a record's measured shape: its width, heads, layers and
/// vocabulary from the record's `model`, the `extra` (config key, record key) pairs too, the head
/// untied (the measured files have `output.weight`).
fn at_shape(json: &str, r: &Value, extra: &[(&str, &str)]) -> Value {
    let m = &r["model"];
    let mut c: Value = serde_json::from_str(json).unwrap();
    let common = [
        ("hidden_size", "n_embd"),
        ("num_attention_heads", "n_head"),
        ("num_key_value_heads", "n_head_kv"),
        ("num_hidden_layers", "n_layer"),
        ("vocab_size", "n_vocab"),
    ];
    for (k, f) in common.iter().chain(extra) {
        c[*k] = m[*f].clone();
    }
    c["tie_word_embeddings"] = false.into();
    c
}
