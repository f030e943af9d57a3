//! Pasted serving command lines (issue 15 item 1): `vllm serve …` and `python -m
//! sglang.launch_server …` fill the engine's fields; unknown flags are an error naming them; flags
//! that do not change memory are listed as ignored, and those that do but are not modelled are
//! listed as such. Also through the binary: `engine-args` and `report --engine-args`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::process::Command;

use vram_explorer::estimator::estimate;
use vram_explorer::scenario::engine_args::parse;
use vram_explorer::scenario::{
    Dtype, KvCacheDtype, Scenario, ServingEngine, Sglang, Vllm, VllmVersion,
};

fn vllm(cmd: &str) -> Vllm {
    match parse(cmd).unwrap().engine {
        ServingEngine::Vllm(v) => v,
        other => panic!("{other:?}"),
    }
}

#[test]
fn vllm_serve_fills_the_fields() {
    let a = parse(
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 \\\n  \
         --gpu-memory-utilization=0.85 --max-model-len 32k --max-num-seqs 128 \
         --max-num-batched-tokens 4096 --block-size 32 --kv-cache-dtype fp8 --enforce-eager \
         --enable-prefix-caching --dtype bfloat16 --swap-space 8",
    )
    .unwrap();
    assert_eq!(
        a.model.as_deref(),
        Some("meta-llama/Llama-3.1-70B-Instruct")
    );
    assert_eq!(a.tp, Some(4));
    assert_eq!(a.dtype, Some(Dtype::Bf16));
    let ServingEngine::Vllm(v) = a.engine else {
        panic!()
    };
    assert_eq!(v.gpu_memory_utilization, Some(0.85));
    assert_eq!(v.max_model_len, 32_000, "vLLM reads 32k as 32,000");
    assert_eq!(v.max_num_seqs, 128);
    assert_eq!(v.max_num_batched_tokens, 4096);
    assert_eq!(v.block_size, 32);
    assert_eq!(v.kv_cache_dtype, KvCacheDtype::Fp8);
    assert!(v.enforce_eager && v.enable_prefix_caching);
    assert_eq!(v.swap_space, 8.0);
    assert!(a.ignored.is_empty() && a.not_modelled.is_empty());
    // The module form, underscores and 32K (= 32,768).
    let v = vllm("python -m vllm.entrypoints.openai.api_server --model m --max_model_len 32K");
    assert_eq!(v.max_model_len, 32_768);
}

#[test]
fn sglang_launch_server_fills_the_fields() {
    let a = parse(
        "python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 \
         --mem-fraction-static 0.8 --max-running-requests 64 --chunked-prefill-size 4096 \
         --page-size 16 --kv-cache-dtype fp8_e5m2 --context-length 8192 --max-total-tokens 100000 \
         --cuda-graph-max-bs 32 --disable-cuda-graph --port 30000 --enable-dp-attention",
    )
    .unwrap();
    assert_eq!(a.model.as_deref(), Some("Qwen/Qwen2.5-7B-Instruct"));
    assert_eq!(a.tp, Some(2));
    let ServingEngine::Sglang(s) = a.engine else {
        panic!()
    };
    assert_eq!(s.mem_fraction_static, Some(0.8));
    assert_eq!(s.max_running_requests, 64);
    assert_eq!(s.chunked_prefill_size, 4096);
    assert_eq!(s.page_size, 16);
    assert_eq!(s.kv_cache_dtype, KvCacheDtype::Fp8E5m2);
    assert_eq!(s.context_length, 8192);
    assert_eq!(s.max_total_tokens, 100_000);
    assert_eq!(s.cuda_graph_max_bs, 32);
    assert!(s.disable_cuda_graph);
    assert_eq!(a.ignored, ["--port 30000"]);
    assert_eq!(a.not_modelled, ["--enable-dp-attention"]);
}

#[test]
fn unknown_flags_are_named_never_defaulted() {
    let e = parse("vllm serve m --gpu-memory-utilisation 0.9 --frobnicate").unwrap_err();
    assert!(
        e.contains("--gpu-memory-utilisation") && e.contains("--frobnicate"),
        "{e}"
    );
    // SGLang's flags are not vLLM's.
    let e = parse("vllm serve m --mem-fraction-static 0.8").unwrap_err();
    assert!(e.contains("--mem-fraction-static"), "{e}");
    assert!(parse("vllm serve m --max-model-len abc").is_err());
    assert!(parse("vllm serve m --kv-cache-dtype int3").is_err());
    assert!(parse("vllm serve m --max-model-len").is_err());
    assert!(parse("llama-server -m x.gguf").is_err());
    assert!(parse("vllm serve 'm").is_err(), "an unclosed quote");
    // vLLM refuses a utilization outside (0, 1]; so does the reader, naming the flag.
    for u in ["1.5", "0", "-0.2"] {
        let e = parse(&format!("vllm serve m --gpu-memory-utilization {u}")).unwrap_err();
        assert!(e.contains("--gpu-memory-utilization"), "{e}");
    }
    assert!(parse("vllm serve m --gpu-memory-utilization 1").is_ok());
}

#[test]
fn ignored_and_not_modelled_flags_are_listed() {
    let a = parse(
        "vllm serve m --host 0.0.0.0 --port 8000 --trust-remote-code --enable-lora --max-loras 4",
    )
    .unwrap();
    assert_eq!(
        a.ignored,
        ["--host 0.0.0.0", "--port 8000", "--trust-remote-code"]
    );
    assert_eq!(a.not_modelled, ["--enable-lora", "--max-loras 4"]);
}

#[test]
fn apply_sets_engine_layout_and_keeps_the_release() {
    let mut s = Scenario::default();
    s.inference.engine = Some(ServingEngine::Vllm(Vllm {
        version: VllmVersion::V0,
        total_gpu_memory_gib: Some(79.0),
        max_num_seqs: 7,
        ..Vllm::default()
    }));
    parse("vllm serve m -tp 2 --max-model-len 4096")
        .unwrap()
        .apply(&mut s);
    let Some(ServingEngine::Vllm(v)) = s.inference.engine else {
        panic!()
    };
    assert_eq!(v.version, VllmVersion::V0, "not a flag: kept");
    assert_eq!(v.total_gpu_memory_gib, Some(79.0));
    assert_eq!(v.max_num_seqs, 0, "a flag not given takes its default");
    assert_eq!(s.parallel.tp, 2);
    // And the estimate follows: a longer max_model_len lowers the printed concurrency.
    let short = estimate(&s).engine.unwrap();
    parse("vllm serve m -tp 2 --max-model-len 16384")
        .unwrap()
        .apply(&mut s);
    let long = estimate(&s).engine.unwrap();
    assert!(long.max_concurrency < short.max_concurrency);
    // SGLang replaces vLLM; without --context-length it takes the model's context.
    parse("python -m sglang.launch_server --model-path m")
        .unwrap()
        .apply(&mut s);
    assert_eq!(
        s.inference.engine,
        Some(ServingEngine::Sglang(Sglang {
            context_length: s.model.transformer.max_positions,
            ..Sglang::default()
        }))
    );
}

fn bin(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cli_engine_args_and_report_option() {
    let (code, out, err) = bin(&[
        "engine-args",
        "vllm serve m --gpu-memory-utilization 0.9 --max-model-len 8192 --port 1",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("gpu_memory_utilization: Some(0.9)"), "{out}");
    assert!(out.contains("GPU KV cache size: "), "{out}");
    assert!(
        out.contains("ignored (no effect on memory): --port 1"),
        "{out}"
    );
    let (code, _, err) = bin(&["engine-args", "vllm serve m --nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--nope"), "{err}");
    // `report --engine-args` on a preset, as JSON: the engine object.
    let (code, out, err) = bin(&[
        "report",
        "--preset",
        "llama2-7b-rtx4090",
        "--json",
        "--engine-args",
        "python -m sglang.launch_server --model-path m --mem-fraction-static 0.85",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["schema_version"], 2);
    let e = &v["engine"];
    assert_eq!(e["name"], "SGLang");
    assert_eq!(e["fraction"], 0.85);
    assert!(e["kv_cache_tokens"].as_f64().unwrap() > 0.0);
    assert!(
        e["printed"][0]
            .as_str()
            .unwrap()
            .starts_with("KV Cache is allocated.")
    );
    let (code, out, _) = bin(&["report", "--preset", "llama2-7b-rtx4090", "--json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["engine"].is_null(), "no serving engine: null");
}
