//! The serving-engine section in the window with llama.cpp: its fields, a pasted command line
//! applied by the section's one Parse button, and the predicted load-log lines.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::{FlashAttn, ServingEngine};

fn harness() -> Harness<'static, ExplorerApp> {
    harness_with("llama31-8b-q4km-llamacpp-12gb")
}

fn harness_with(preset: &str) -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    *app.scenario_mut() = vram_explorer::presets::bundled_scenario(preset).expect("bundled preset");
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 2400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

/// Types `cmd` into the engine section's paste box and presses Parse command.
fn paste_command(h: &mut Harness<'_, ExplorerApp>, cmd: &str) {
    h.get_by_label("Paste a serving command").focus();
    h.run();
    h.input_mut().events.push(egui::Event::Text(cmd.to_owned()));
    h.run();
    click(h, "Parse command");
}

/// Clicks the widget labelled `label` and lets the window settle (the estimate is redrawn).
fn click(h: &mut Harness<'_, ExplorerApp>, label: &str) {
    h.get_by_label(label).click();
    h.run();
    h.run();
}

fn llama(h: &Harness<'_, ExplorerApp>) -> vram_explorer::scenario::LlamaCpp {
    match h.state().scenario().inference.engine {
        Some(ServingEngine::LlamaCpp(l)) => l,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_engine_section_shows_the_fields_and_the_predicted_log() {
    let h = harness();
    assert!(h.get_all_by_label("-ngl, gpu-layers").next().is_some());
    assert!(h.get_all_by_label("-c, ctx-size").next().is_some());
    h.get_by_label_contains("CUDA0 model buffer size =  3506.93 MiB");
    h.get_by_label_contains("CPU KV buffer size =  1792.00 MiB");
}

#[test]
fn a_pasted_command_line_fills_the_fields() {
    let mut h = harness();
    paste_command(
        &mut h,
        "llama-server -m x-Q8_0.gguf -c 8192 -ngl 10 -fa off --port 8080",
    );
    let l = llama(&h);
    assert_eq!(
        (l.n_ctx, l.n_gpu_layers, l.flash_attn),
        (8192, 10, FlashAttn::Off)
    );
    h.get_by_label_contains("Ignored (no effect on memory): --port 8080");
    // No -np: llama-server's auto, 4 slots sharing one unified cache, and the window says so.
    assert_eq!((l.n_parallel, l.kv_unified), (4, true));
    h.get_by_label_contains("-np auto: 4 slots sharing one unified cache");
    // An unknown flag is named and nothing changes.
    paste_command(&mut h, " --frobnicate");
    h.get_by_label_contains("--frobnicate");
    assert_eq!(llama(&h).n_ctx, 8192);
}

/// The `--swa-full` switch on the Gemma 3 preset: the windowed layers' cache grows from 1,536
/// cells to the full 32,768 and the predicted log says so.
#[test]
fn the_swa_full_switch_grows_the_windowed_cache() {
    let mut h = harness_with("gemma3-27b-q4km-llamacpp-24gb");
    h.get_by_label_contains("creating     SWA KV cache, size = 1536 cells");
    click(&mut h, "--swa-full");
    assert!(llama(&h).swa_full);
    h.get_by_label_contains("using full-size SWA cache");
    h.get_by_label_contains("creating     SWA KV cache, size = 32768 cells");
}

/// The `-kvu` switch on Gemma 3 with four slots: one stream per slot keeps 4 × 1,536 windowed
/// cells, a unified cache one stream of pad256(1024 × 4 + 512) = 4,608.
#[test]
fn the_kv_unified_switch_sizes_the_windowed_cache_for_all_slots() {
    let mut h = harness_with("gemma3-27b-q4km-llamacpp-24gb");
    paste_command(
        &mut h,
        "llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -np 4 -ngl 99",
    );
    assert_eq!((llama(&h).n_parallel, llama(&h).kv_unified), (4, false));
    h.get_by_label_contains("(  1536 cells,  52 layers,  4/4 seqs)");
    click(&mut h, "-kvu, kv-unified");
    assert!(llama(&h).kv_unified);
    h.get_by_label_contains("(  4608 cells,  52 layers,  4/1 seqs)");
}

/// A CPU build in the window: the headline says so and gives the host memory its buffers take,
/// not a per-GPU peak against a GPU the run does not use; the memory chart is the host's buffers
/// under llama.cpp's names and the sweep says why it has nothing to sweep; unticking `-dev none`
/// brings the GPU verdict and the per-GPU chart back.
#[test]
fn a_cpu_build_reads_as_one_in_the_headline() {
    let mut h = harness_with("llama31-8b-q4km-llamacpp-cpu");
    h.get_by_label("CPU ONLY");
    h.get_by_label("Host memory: 5.84 GiB in llama.cpp's buffers");
    h.get_by_label("No GPU used (llama.cpp -dev none)");
    assert!(h.query_by_label_contains("Peak per GPU").is_none());
    h.get_by_label("Host memory by component (GiB): llama.cpp CPU build");
    h.get_by_label("CPU_Mapped model: 4.58 GiB");
    h.get_by_label("CPU KV: 1.00 GiB");
    h.get_by_label("Host memory: 5.84 GiB");
    h.get_by_label_contains("there is no per-GPU memory to sweep");
    assert!(
        h.query_by_label_contains("Per-GPU memory by component")
            .is_none()
    );
    click(&mut h, "-dev none (CPU only)");
    assert!(!llama(&h).cpu_only);
    h.get_by_label("FITS");
    h.get_by_label_contains("Peak per GPU");
    h.get_by_label_contains("Per-GPU memory by component");
    assert!(h.query_by_label_contains("llama.cpp CPU build").is_none());
}

/// The expert-offload controls on a mixture-of-experts model: the preset's `-ncmoe 28` is in the
/// predicted log, and `-cmoe` moves every layer's experts to the host (CUDA0's model buffer falls
/// to the attention, norms, routers and output layer). A dense model shows `-ncffn` instead.
#[test]
fn the_expert_offload_switch_moves_every_layers_experts_to_the_host() {
    let mut h = harness_with("qwen3-30b-a3b-q4km-llamacpp-12gb");
    assert_eq!(llama(&h).n_cpu_moe, 28);
    h.get_by_label_contains("CUDA0 model buffer size =  7808.92 MiB");
    h.get_by_label("FFN weights of GPU layers in host memory: 9715.50 MiB.");
    assert!(h.query_by_label("-ncffn, n-cpu-ffn").is_none());
    click(&mut h, "-cmoe, cpu-moe");
    assert!(llama(&h).cpu_moe);
    h.get_by_label_contains("CUDA0 model buffer size =   784.42 MiB");
    assert!(h.query_by_label("-ncmoe, n-cpu-moe").is_none());
    let h = harness();
    assert!(h.query_by_label("-cmoe, cpu-moe").is_none());
    assert!(h.get_all_by_label("-ncffn, n-cpu-ffn").next().is_some());
}

/// The build settings: with every layer on the GPU, the pre-mid-2025 graph switch turns the
/// current graph's compute buffers into the ones a late-2024 build printed for Llama-3.1-8B
/// (the published Ollama log: CUDA0 560.00, CUDA_Host 24.01 MiB).
#[test]
fn the_legacy_graph_switch_gives_the_older_builds_compute_buffers() {
    let mut h = harness();
    assert!(h.get_all_by_label("GGML_SCHED_MAX_COPIES").next().is_some());
    paste_command(
        &mut h,
        "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -np 4 -kvu -ngl 99 -fa off",
    );
    h.get_by_label_contains("CUDA0 compute buffer size =   564.01 MiB");
    h.get_by_label_contains("CUDA_Host compute buffer size =    36.01 MiB");
    click(&mut h, "Pre-mid-2025 graph");
    assert!(llama(&h).legacy_graph);
    h.get_by_label_contains("CUDA0 compute buffer size =   560.00 MiB");
    h.get_by_label_contains("CUDA_Host compute buffer size =    24.01 MiB");
}

/// The build's `-ngl` placement: `-ngl 32` of Llama-3.1-8B's 32 layers keeps layer 0 on the host
/// and puts the output on the GPU today (op offload runs layer 0 on CUDA0 too, on copies of its
/// matrices and of its K and V cache: 585.00 MiB); a build before late 2025 put all 32 repeating
/// layers on the GPU and kept the output on the host, whose 512-token logits op offload then runs
/// on CUDA0 on a copy of the Q6_K output matrix (the scheduler replay: 8 + 411 + 250.5 MiB).
#[test]
fn the_legacy_placement_switch_moves_the_output_layer_to_the_host() {
    let mut h = harness();
    paste_command(
        &mut h,
        "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -ngl 32 -fa off",
    );
    h.get_by_label_contains("CUDA0 model buffer size =  4270.99 MiB");
    h.get_by_label_contains("CUDA0 compute buffer size =   585.00 MiB");
    click(&mut h, "Pre-late-2025 -ngl");
    assert!(llama(&h).legacy_placement);
    h.get_by_label_contains("CUDA0 model buffer size =  3992.50 MiB");
    h.get_by_label_contains("CUDA0 compute buffer size =   669.48 MiB");
}

/// "Which quantization fits?" under llama.cpp lists GGUF file types, the scenario's first, and
/// names the formats llama.cpp does not load; on a CPU build its columns are the host's buffers.
#[test]
fn the_quantization_table_lists_gguf_file_types() {
    let mut h = harness();
    click(&mut h, "Which quantization fits?");
    assert!(h.query_by_label("GGUF Q4_K_M").is_some());
    assert!(h.query_by_label("GGUF Q8_0").is_some());
    assert!(
        h.query_by_label("Not applicable under llama.cpp:")
            .is_some()
    );
    assert!(h.query_by_label("As the precision").is_none());
    let mut h = harness_with("llama31-8b-q4km-llamacpp-cpu");
    click(&mut h, "Which quantization fits?");
    assert!(h.query_by_label("Host total").is_some());
    assert!(h.query_by_label("Fits").is_none());
}
