//! The serving-engine section (issue 15): an inference scenario shows it, a pasted `vllm serve …`
//! line fills the engine's settings through the Parse button, unknown flags are reported, and the
//! figures vLLM / SGLang would print appear above the composition chart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::{Mode, ServingEngine, Sglang};

fn harness(mode: Mode) -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    app.scenario_mut().mode = mode;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1800.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn paste(h: &mut Harness<'_, ExplorerApp>, cmd: &str) {
    h.get_by_label("Paste a serving command").focus();
    h.run();
    h.input_mut().events.push(egui::Event::Text(cmd.to_owned()));
    h.run();
    h.get_by_label("Parse command").click();
    h.run();
    h.run();
}

#[test]
fn the_section_is_for_inference_only() {
    let h = harness(Mode::Training);
    assert!(h.query_by_label("Paste a serving command").is_none());
    let h = harness(Mode::Inference);
    assert!(h.query_by_label("Paste a serving command").is_some());
}

#[test]
fn a_pasted_vllm_command_fills_the_settings_and_the_chart_says_what_vllm_prints() {
    let mut h = harness(Mode::Inference);
    assert!(h.query_by_label_contains("would print").is_none());
    paste(
        &mut h,
        "vllm serve meta-llama/Llama-3.1-8B --gpu-memory-utilization 0.8 --max-model-len 8192 --port 8000",
    );
    let Some(ServingEngine::Vllm(v)) = h.state().scenario().inference.engine else {
        panic!("{:?}", h.state().scenario().inference.engine)
    };
    assert_eq!(v.gpu_memory_utilization, Some(0.8));
    assert_eq!(v.max_model_len, 8192);
    h.get_by_label_contains("Ignored (no effect on memory): --port 8000");
    h.get_by_label_contains("vLLM would print: ");
    h.get_by_label_contains("GPU KV cache size: ");
    // The vLLM settings are controls of their own now.
    assert!(h.get_all_by_label("max_model_len").count() >= 1);
}

#[test]
fn unknown_flags_are_reported_and_nothing_changes() {
    let mut h = harness(Mode::Inference);
    let before = h.state().scenario().inference.engine;
    paste(
        &mut h,
        "python -m sglang.launch_server --model-path m --memfraction 0.8",
    );
    assert_eq!(h.state().scenario().inference.engine, before);
    h.get_by_label_contains("Not applied: unknown flag for SGLang: --memfraction");
    let mut h = harness(Mode::Inference);
    paste(&mut h, "python -m sglang.launch_server --model-path m");
    // Without --context-length SGLang takes the model's context.
    let context = h.state().scenario().model.transformer.max_positions;
    assert_eq!(
        h.state().scenario().inference.engine,
        Some(ServingEngine::Sglang(Sglang {
            context_length: context,
            ..Sglang::default()
        }))
    );
    h.get_by_label_contains("--context-length not given: the engine takes the model's context");
    h.get_by_label_contains("SGLang would print: KV Cache is allocated.");
}

#[test]
fn one_section_serves_every_engine_and_its_paste_box_picks_the_engine() {
    // A llama.cpp line pasted into the same box as vLLM's switches the engine and shows
    // llama.cpp's fields and log in the same section; there is no second engine group.
    let mut h = harness(Mode::Inference);
    assert!(h.query_by_label("llama.cpp engine").is_none());
    paste(
        &mut h,
        "llama-server -m Llama-3.1-8B-Q4_K_M.gguf -c 16384 -ngl 99 --port 8080",
    );
    let Some(ServingEngine::LlamaCpp(l)) = h.state().scenario().inference.engine else {
        panic!("{:?}", h.state().scenario().inference.engine)
    };
    assert_eq!(l.n_ctx, 16384);
    h.get_by_label_contains("Ignored (no effect on memory): --port 8080");
    assert!(h.get_all_by_label("-ngl, gpu-layers").next().is_some());
    h.get_by_label_contains("The load log should print:");
    // And back to vLLM through the same box (its text selected and typed over).
    h.get_by_label("Paste a serving command").focus();
    h.run();
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::A);
    h.run();
    paste(&mut h, "vllm serve m --max-model-len 4096");
    assert!(matches!(
        h.state().scenario().inference.engine,
        Some(ServingEngine::Vllm(_))
    ));
    assert!(h.query_by_label("-ngl, gpu-layers").is_none());
}

#[test]
fn the_headline_counts_the_requests_the_kv_cache_holds_under_an_engine() {
    let mut h = harness(Mode::Inference);
    h.get_by_label_contains("Largest batch that fits: ");
    paste(
        &mut h,
        "vllm serve meta-llama/Llama-3.1-8B --max-model-len 8192",
    );
    assert!(
        h.query_by_label_contains("Largest batch that fits: ")
            .is_none()
    );
    // The headline's figure is vLLM's own: the KV cache's tokens over one request.
    let e = vram_explorer::estimator::estimate(h.state().scenario());
    let f = e.engine.expect("vLLM figures");
    let i = &h.state().scenario().inference;
    let n = (f.tokens / f64::from(i.prompt_tokens + i.generated_tokens)).floor() as u64;
    let n = n.min(f.max_requests as u64);
    h.get_by_label_contains(&format!("Requests the KV cache holds at once: {n} "));
}

/// The time per output token says what takes most of the decode steps' time: an MXFP4 120B model at
/// batch 1 is overhead-bound (the fixed per-forward cost of its 36 layers' kernels), vLLM's 8B
/// preset memory-bound (its request as a whole is compute-bound: 32 prompts of 7,680 tokens).
#[test]
fn the_time_per_output_token_names_the_requests_bound() {
    for (id, bound) in [
        ("gpt-oss-120b-inference-h100-mxfp4", "overhead-bound"),
        ("llama3.1-8b-vllm-h100-8k", "memory-bound"),
    ] {
        let mut app = ExplorerApp::default();
        *app.scenario_mut() = vram_explorer::presets::bundled_scenario(id).expect("preset");
        let e = vram_explorer::estimator::estimate(app.scenario());
        assert_eq!(e.performance.throughput.decode_bound.label(), bound, "{id}");
        let mut h = Harness::builder()
            .with_size(egui::vec2(1600.0, 1800.0))
            .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
        h.run();
        let row = h.get_by_label_contains("Per output token: ");
        let n = row.accesskit_node();
        let text = n.label().or_else(|| n.value()).unwrap_or_default();
        assert!(text.ends_with(&format!("({bound})")), "{id}: {text}");
    }
}
