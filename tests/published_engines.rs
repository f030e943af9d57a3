//! KV-cache capacity against published vLLM startup logs (issue 15's bar: within 2 % of the log),
//! the part that does not need an engine profile yet: given the KV memory the log prints, the
//! estimator's KV bytes per token per GPU (layers × 2 × KV heads ÷ TP × head_dim × element) must
//! give the token count vLLM printed. vLLM pages the cache in blocks of `block_size` tokens and
//! keeps whole blocks: tokens = ⌊available ÷ (bytes per token × block)⌋ × block
//! (docs/engines/vllm.md, vllm/v1/core/kv_cache_utils.py at 0.34.0; the V0 rule is the same
//! floor). Records: tests/data/published/vllm-logs.json (the uniform full-attention ones that print
//! their KV memory; hybrid and MLA pages need the engine profile). And llama.cpp's "KV buffer
//! size" lines (tests/data/published/llamacpp-logs.json): a device holding L layers of an f16
//! cache of `n_ctx` cells prints L × n_ctx × the per-layer K+V bytes in MiB
//! (docs/engines/llamacpp.md §4, llama-kv-cache.cpp at llama.cpp 0c1e57098).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::estimate;
use vram_explorer::scenario::{Dtype, Mode, Scenario};

const VLLM: &str = include_str!("data/published/vllm-logs.json");
const LLAMACPP: &str = include_str!("data/published/llamacpp-logs.json");

/// The KV memory the log printed, GiB, under the key names of the V0 and V1 log lines.
fn available_gib(r: &Value) -> Option<f64> {
    let a = &r["also_reported"];
    [
        "available_kv_cache_gib",
        "kv_cache_size_gib",
        "kv_cache_gib",
    ]
    .iter()
    .find_map(|k| a[*k].as_f64())
}

/// An inference scenario with the record's attention shape (query heads do not change the cache;
/// four per KV head are assumed), its tensor parallelism and a 16-bit cache.
fn scenario_for(r: &Value) -> Option<Scenario> {
    let m = &r["config"]["model"];
    let e = &r["config"]["engine"];
    if !m["attention"].as_str()?.starts_with("full") {
        return None;
    }
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = m["layers"].as_u64()? as u32;
    t.kv_heads = m["kv_heads"].as_u64()? as u32;
    t.head_dim = m["head_dim"].as_u64()? as u32;
    t.heads = t.kv_heads * 4;
    t.hidden = t.heads * t.head_dim;
    s.parallel.tp = e["tensor_parallel_size"].as_u64()? as u32;
    if !e["kv_cache_dtype"].as_str()?.starts_with("auto") {
        return None;
    }
    s.precision.kv_cache = Dtype::Bf16;
    Some(s)
}

#[test]
fn kv_tokens_from_the_printed_kv_memory_within_two_percent() {
    let doc: Value = serde_json::from_str(VLLM).unwrap();
    let mut checked = 0;
    println!(
        "{:<48} {:>12} {:>12} {:>8}",
        "record", "log tokens", "estimate", "error"
    );
    for r in doc["records"].as_array().unwrap() {
        let (Some(gib), Some(s)) = (available_gib(r), scenario_for(r)) else {
            continue;
        };
        let block = r["config"]["engine"]["block_size"].as_f64().unwrap_or(16.0);
        let per_token = estimate(&s).performance.throughput.kv_bytes_per_token.get();
        let blocks = (gib * 1024f64.powi(3) / (per_token * block)).floor();
        let tokens = blocks * block;
        let logged = r["value"].as_f64().unwrap();
        let err = tokens / logged - 1.0;
        println!(
            "{:<48} {:>12.0} {:>12.0} {:>+7.2}%",
            r["id"].as_str().unwrap(),
            logged,
            tokens,
            err * 100.0
        );
        assert!(err.abs() <= 0.02, "{}: {:+.2} %", r["id"], err * 100.0);
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} records checked");
}

/// Layers on the device a llama.cpp KV record prints: "…: 12 layers" / "8 of 32 layers", else all.
fn layers_on_device(r: &Value) -> u32 {
    let stat = r["statistic"].as_str().unwrap();
    let all = r["config"]["model"]["n_layer"].as_u64().unwrap() as u32;
    stat.split(": ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(all)
}

#[test]
fn llamacpp_f16_kv_buffers_to_the_mib() {
    let doc: Value = serde_json::from_str(LLAMACPP).unwrap();
    let mut checked = 0;
    for r in doc["records"].as_array().unwrap() {
        let stat = r["statistic"].as_str().unwrap();
        let e = &r["config"]["engine"];
        if !stat.contains("KV buffer") || e["ctk"] != "f16" || e["ctv"] != "f16" {
            continue;
        }
        let m = &r["config"]["model"];
        let (embd, heads) = (m["n_embd"].as_u64().unwrap(), m["n_head"].as_u64().unwrap());
        let head_dim = (embd / heads) as u32;
        let mut s = Scenario {
            mode: Mode::Inference,
            ..Scenario::default()
        };
        let t = &mut s.model.transformer;
        t.layers = layers_on_device(r);
        t.hidden = embd as u32;
        t.heads = heads as u32;
        t.head_dim = head_dim;
        t.kv_heads = m["n_embd_kv"].as_u64().unwrap() as u32 / head_dim;
        s.precision.kv_cache = Dtype::Fp16;
        let per_token = estimate(&s).performance.throughput.kv_bytes_per_token.get();
        let n_ctx = e["c"].as_f64().unwrap();
        let mib = per_token * n_ctx / 1_048_576.0;
        let printed = r["value"].as_f64().unwrap();
        println!(
            "{:<52} printed {printed:>8.2} MiB, estimate {mib:>8.2}",
            r["id"].as_str().unwrap()
        );
        assert!(
            (mib - printed).abs() < 0.005,
            "{}: {mib} vs {printed}",
            r["id"]
        );
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} records checked");
}
