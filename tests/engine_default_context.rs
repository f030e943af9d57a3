//! `vllm serve` without `--max-model-len` takes the model's whole context (vllm 0.34
//! `config/model.py` `_get_and_verify_max_len`), and refuses to start when its KV cache cannot
//! hold one request of it (`v1/core/kv_cache_planning.py` `check_enough_kv_cache_memory`, after
//! taking off the block pool's null block), naming "the estimated maximum model length". The
//! scenario's `max_model_len` 0 sizes the engine to the request; the estimate says when the real
//! default would not start, and a pasted command line without the flag takes the model's context.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Diagnostic, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{GpuChoice, Scenario, ServingEngine, Vllm, VllmVersion, engine_args};

/// Llama-3.1-8B (131,072-token context) on vLLM 0.34, sized to its 8,192-token request.
fn llama_sized_to_request(gpu: GpuId) -> Scenario {
    let mut s = bundled_scenario("llama3.1-8b-vllm-h100-8k").expect("bundled preset");
    s.gpu = GpuChoice::Catalog(gpu);
    s.inference.concurrent_requests = 1;
    let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine else {
        panic!("the preset is served by vLLM")
    };
    v.max_model_len = 0;
    s
}

#[test]
fn a_24_gb_card_fits_the_request_but_not_the_default_context() {
    let s = llama_sized_to_request(GpuId::Rtx4090);
    let e = estimate(&s);
    let f = e.engine.expect("vLLM figures");
    // Sized to the request it starts: 624 blocks of 64 tokens, 4.88x an 8,192-token request.
    assert!(e.memory.fits && !f.too_small);
    assert_eq!(f.blocks, 624.0);
    assert_eq!(f.max_model_len, 8192.0);
    // Without the flag: 131,072 tokens need 2,048 blocks. The longest length that fits is what
    // the 623 usable blocks (the null block off) hold: 623 × 64.
    assert_eq!(f.model_context, 131_072.0);
    assert!(f.model_context_refused);
    assert_eq!(f.longest_len, 623.0 * 64.0);
    assert!(
        e.diagnostics
            .contains(Diagnostic::EngineDefaultContextRefused)
    );
    // The report says it with vLLM's number.
    let line = vram_explorer::report::engine::default_context_line(&f).expect("a line");
    assert!(line.contains("131,072 tokens"), "{line}");
    assert!(
        line.contains("the estimated maximum model length is 39872"),
        "{line}"
    );
}

#[test]
fn an_h100_holds_the_default_context_and_says_nothing() {
    let s = llama_sized_to_request(GpuId::H100Sxm);
    let e = estimate(&s);
    let f = e.engine.expect("vLLM figures");
    assert_eq!(f.model_context, 131_072.0);
    assert!(!f.model_context_refused);
    assert_eq!(f.longest_len, 0.0);
    assert!(
        !e.diagnostics
            .contains(Diagnostic::EngineDefaultContextRefused)
    );
}

#[test]
fn a_set_max_model_len_or_v0_rules_do_not_ask() {
    // The preset's own --max-model-len 8192: vLLM never looks at the model's context.
    let mut s = llama_sized_to_request(GpuId::Rtx4090);
    let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine else {
        panic!()
    };
    v.max_model_len = 8192;
    let f = estimate(&s).engine.expect("vLLM figures");
    assert_eq!(f.model_context, 0.0);
    assert!(!f.model_context_refused);
    // V0 rules: the profiled batch follows max_model_len, so the check is not made there.
    let mut s = llama_sized_to_request(GpuId::Rtx4090);
    s.inference.engine = Some(ServingEngine::Vllm(Vllm {
        version: VllmVersion::V0,
        ..Vllm::default()
    }));
    let f = estimate(&s).engine.expect("vLLM figures");
    assert_eq!(f.model_context, 0.0);
}

#[test]
fn too_small_names_the_estimated_maximum_model_length() {
    // --max-model-len 131072 on the 4090: vLLM's own ValueError, with the length that fits.
    let mut s = llama_sized_to_request(GpuId::Rtx4090);
    let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine else {
        panic!()
    };
    v.max_model_len = 131_072;
    let e = estimate(&s);
    let f = e.engine.expect("vLLM figures");
    assert!(f.too_small && !e.memory.fits);
    assert_eq!(f.longest_len, 623.0 * 64.0);
    let printed = vram_explorer::report::engine::printed_lines(&f).join("\n");
    assert!(
        printed.contains("ValueError")
            && printed.contains("the estimated maximum model length is 39872."),
        "{printed}"
    );
}

#[test]
fn a_pasted_line_without_the_flag_takes_the_model_context() {
    let base = llama_sized_to_request(GpuId::Rtx4090);
    let (s, notes) = engine_args::apply_command(
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9",
        &base,
    )
    .expect("applies");
    let Some(ServingEngine::Vllm(v)) = s.inference.engine else {
        panic!("vLLM")
    };
    assert_eq!(v.max_model_len, 131_072);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("--max-model-len not given") && n.contains("131072 tokens")),
        "{notes:?}"
    );
    // As vLLM does with that line on a 24 GB card: it would not start.
    let e = estimate(&s);
    assert!(e.engine.expect("figures").too_small);
    assert!(e.diagnostics.contains(Diagnostic::EngineWouldNotStart));

    // The flag given: kept, no note.
    let (s, notes) =
        engine_args::apply_command("vllm serve m --max-model-len 16k", &base).expect("applies");
    let Some(ServingEngine::Vllm(v)) = s.inference.engine else {
        panic!("vLLM")
    };
    assert_eq!(v.max_model_len, 16_000);
    assert!(!notes.iter().any(|n| n.contains("not given")), "{notes:?}");

    // SGLang's --context-length likewise.
    let (s, _) = engine_args::apply_command("python -m sglang.launch_server --model-path m", &base)
        .expect("applies");
    let Some(ServingEngine::Sglang(g)) = s.inference.engine else {
        panic!("SGLang")
    };
    assert_eq!(g.context_length, 131_072);
}

#[test]
fn auto_fit_is_refused_with_a_reason() {
    for v in ["-1", "auto", "AUTO"] {
        let e = engine_args::apply_command(
            &format!("vllm serve m --max-model-len {v}"),
            &Scenario::default(),
        )
        .expect_err("not modelled");
        assert!(
            e.contains("auto-fit") && e.contains("--max-model-len"),
            "{e}"
        );
    }
}

#[test]
fn a_context_above_the_model_is_refused_by_both_engines() {
    // vLLM: --max-model-len 200000 on Llama-3.1-8B (131,072).
    let mut s = llama_sized_to_request(GpuId::H100Sxm);
    for (len, refused) in [(131_072, false), (131_073, true), (200_000, true)] {
        let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine else {
            panic!()
        };
        v.max_model_len = len;
        let d = estimate(&s).diagnostics;
        assert_eq!(
            d.contains(Diagnostic::EngineContextAboveModel),
            refused,
            "{len}"
        );
    }
    // SGLang: --context-length 131072 on the Qwen2.5-7B preset (32,768).
    let mut s = bundled_scenario("qwen2.5-7b-sglang-rtx4090").expect("bundled preset");
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::EngineContextAboveModel)
    );
    let Some(ServingEngine::Sglang(g)) = &mut s.inference.engine else {
        panic!("SGLang")
    };
    g.context_length = 131_072;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::EngineContextAboveModel)
    );
}

#[test]
fn engine_args_names_what_the_engine_refuses() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args([
            "engine-args",
            "vllm serve x --max-model-len 200000",
            "--preset",
            "llama3.1-8b-vllm-h100-8k",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(
            "error: vLLM's max_model_len or SGLang's context_length is above the model's context"
        ) && text.contains("[engine_context_above_model]"),
        "{text}"
    );
}
