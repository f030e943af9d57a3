//! llama.cpp's settings (named as its flags) for an inference scenario served by it, and the
//! load-log lines the estimate predicts (the engine choice and the command-line paste box are
//! `controls::engine`'s).

use egui::{RichText, Ui};

use crate::estimator::Estimate;
use crate::scenario::{CacheType, FlashAttn, LlamaCpp, Scenario, ServingEngine, WeightFormat};
use crate::tensor::GgufFileType;
use crate::ui::widgets::{Choice, choice, int_slider, opt, real_slider, toggle};

const FLASH: [Choice<FlashAttn>; 3] = [
    opt(
        FlashAttn::Auto,
        "auto",
        "On where supported (every CUDA GPU and the CPU).",
    ),
    opt(
        FlashAttn::On,
        "on",
        "No KQ score matrix in the compute buffer.",
    ),
    opt(
        FlashAttn::Off,
        "off",
        "Scores of n_ctx × n_ubatch × heads in the compute buffer; a quantized V cache turns it back on.",
    ),
];

/// llama.cpp's part of the engine section (drawn when llama.cpp is the engine).
pub fn ui(ui: &mut Ui, s: &mut Scenario, est: &Estimate) {
    let layers = s.model.transformer.layers;
    let moe = est.llamacpp.as_ref().is_some_and(|b| b.experts.1 > 0) || s.model.moe.experts > 1;
    let weights = &mut s.quantization.weights;
    let Some(ServingEngine::LlamaCpp(l)) = &mut s.inference.engine else {
        return;
    };
    file_type_ui(ui, weights);
    settings_ui(ui, l, layers);
    ffn_overrides_ui(ui, l, layers, moe);
    if let Some(b) = &est.llamacpp {
        if let Some(f) = b.fit.filter(|f| f.reduced() || f.ngl.is_some()) {
            let layers = f
                .ngl
                .map_or_else(String::new, |n| format!(", {n} layers on the GPU"));
            ui.label(format!(
                "-fit: context {} cells (from {}){layers}, to fit the GPU.",
                f.to, f.from
            ))
            .on_hover_text("llama-server's -fit with -c or -ngl unset: the context, then the layers, that leave --fit-target MiB of the GPU's free memory (assumed: its usable memory less the CUDA context).");
        }
        if b.host_ffn > 0 {
            ui.label(format!(
                "FFN weights of GPU layers in host memory: {:.2} MiB.",
                crate::estimator::engines::llamacpp::mib_printed(b.host_ffn)
            ))
            .on_hover_text("--cpu-moe, --n-cpu-moe, --n-cpu-ffn or -fit keep them there: decode reads a token's share from host memory, a prompt's micro-batch copies them to the GPU. With mmap, llama.cpp's CPU_Mapped line is the file's span from the first to the last host tensor, larger than this where GPU tensors lie between.");
        }
        ui.label(RichText::new("The load log should print:").strong());
        for line in crate::report::llamacpp::log_lines(b).lines() {
            ui.label(RichText::new(line).monospace().small());
        }
    }
}

fn file_type_ui(ui: &mut Ui, weights: &mut WeightFormat) {
    let mut f = match *weights {
        WeightFormat::GgufFile(f) => f,
        WeightFormat::GgufQ8_0 => GgufFileType::Q8_0,
        _ => GgufFileType::F16,
    };
    let before = f;
    egui::ComboBox::from_label("GGUF file type")
        .selected_text(f.name())
        .show_ui(ui, |ui| {
            for t in GgufFileType::ALL {
                ui.selectable_value(&mut f, t, t.name());
            }
        })
        .response
        .on_hover_text("llama-quantize's file type: each tensor in the type its role and layer get (Q4_K_M: attn_v and ffn_down of half the layers and the output in Q6_K).");
    if f != before || !matches!(weights, WeightFormat::GgufFile(_)) {
        *weights = WeightFormat::GgufFile(f);
    }
}

fn settings_ui(ui: &mut Ui, l: &mut LlamaCpp, layers: u32) {
    int_slider(
        ui,
        &mut l.n_ctx,
        0..=1_048_576,
        true,
        "-c, ctx-size",
        "tokens",
        "Context cells of the whole cache (all -np slots), padded to 256; 0 = the model's training context (Max positions), which -fit lowers to fit one GPU.",
    );
    int_slider(
        ui,
        &mut l.n_parallel,
        1..=256,
        true,
        "-np, parallel",
        "slots",
        "Server slots sharing the -c cells (llama-server's default -np auto: 4 slots, unified).",
    );
    toggle(
        ui,
        &mut l.kv_unified,
        "-kvu, kv-unified",
        "One cache of -c cells that every slot may fill (llama-server's -np auto turns it on), instead of a stream of -c / -np cells per slot: the windowed layers' cache holds every slot's window.",
    );
    int_slider(
        ui,
        &mut l.n_batch,
        1..=65_536,
        true,
        "-b, batch-size",
        "tokens",
        "Logical batch; n_ubatch ≤ n_batch ≤ n_ctx.",
    );
    int_slider(
        ui,
        &mut l.n_ubatch,
        1..=65_536,
        true,
        "-ub, ubatch-size",
        "tokens",
        "Tokens per graph: the compute buffer grows with it.",
    );
    placement_ui(ui, l, layers);
}

/// Where layers and the cache go, and the host's bandwidth.
fn placement_ui(ui: &mut Ui, l: &mut LlamaCpp, layers: u32) {
    let mut all = l.n_gpu_layers < 0;
    toggle(
        ui,
        &mut all,
        "-ngl all",
        "Every repeating layer and the output layer on the GPUs.",
    );
    if all {
        l.n_gpu_layers = -1;
    } else {
        let mut ngl = l.n_gpu_layers.max(0).unsigned_abs();
        int_slider(
            ui,
            &mut ngl,
            0..=layers.saturating_add(1),
            false,
            "-ngl, gpu-layers",
            "layers",
            "Layers on the GPUs, the output layer first, then the last blocks; the rest run on the CPU.",
        );
        l.n_gpu_layers = i32::try_from(ngl).unwrap_or(i32::MAX);
    }
    cache_type_ui(ui, &mut l.cache_type_k, "-ctk, cache-type-k");
    cache_type_ui(ui, &mut l.cache_type_v, "-ctv, cache-type-v");
    choice(
        ui,
        &mut l.flash_attn,
        &FLASH,
        "-fa, flash-attn",
        "Flash attention.",
    );
    toggle(
        ui,
        &mut l.no_kv_offload,
        "-nkvo, no-kv-offload",
        "The whole KV cache in host memory.",
    );
    toggle(
        ui,
        &mut l.fit,
        "-fit",
        "With -c 0 (unset) on one GPU: lower the context from the training context to leave --fit-target MiB free (llama-server's and llama-cli's default: on).",
    );
    toggle(
        ui,
        &mut l.swa_full,
        "--swa-full",
        "Sliding-window layers cache all -c cells, not window + ubatch (llama-server: off; the C API and llama-cpp-python: on).",
    );
    toggle(
        ui,
        &mut l.mmap,
        "mmap (--no-mmap unset)",
        "CPU weights are a mapped view of the file (CPU_Mapped).",
    );
    toggle(
        ui,
        &mut l.cpu_only,
        "-dev none (CPU only)",
        "No GPU backend: every buffer on the host.",
    );
    real_slider(
        ui,
        &mut l.host_memory_gb_s,
        1.0..=1000.0,
        "Host memory",
        "GB/s",
        "Not a flag: the host's memory bandwidth, which bounds the CPU layers at decode.",
    );
    real_slider(
        ui,
        &mut l.host_tflops,
        0.1..=100.0,
        "Host compute",
        "TFLOP/s",
        "Not a flag: the CPU's prompt-processing rate, which bounds a CPU-only prefill (2.4 = a 16-core Ryzen 9 7950X running Llama-3.1-8B Q4_0 at 170 tokens/s).",
    );
    build_ui(ui, l);
}

/// What the llama.cpp build itself decides: the scheduler's copies and the graph's era.
fn build_ui(ui: &mut Ui, l: &mut LlamaCpp) {
    int_slider(
        ui,
        &mut l.sched_max_copies,
        1..=4,
        false,
        "GGML_SCHED_MAX_COPIES",
        "copies",
        "Not a flag: the build's copies of every graph input with pipeline parallelism (several GPUs holding every layer; default 4, printed 'pipeline parallelism enabled (n_copies=4)'). 1 = a build without it.",
    );
    toggle(
        ui,
        &mut l.legacy_graph,
        "Pre-mid-2025 graph",
        "Not a flag: the compute graph of builds before the KV cache was written with ggml_set_rows (no K/V row-index inputs, one embeddings input), for checking the load logs of that era. Changes the compute buffers only.",
    );
    toggle(
        ui,
        &mut l.legacy_placement,
        "Pre-late-2025 -ngl",
        "Not a flag: builds before late 2025 put -ngl N on the last N repeating layers and the output layer on a GPU only when N exceeds them; later builds count the output layer among the N (one repeating layer fewer, the output on a GPU). Those builds had no -fit, and offloaded nothing without -ngl.",
    );
}

/// The tensor overrides that keep FFN weights of GPU layers in host memory, and op offload.
fn ffn_overrides_ui(ui: &mut Ui, l: &mut LlamaCpp, layers: u32, moe: bool) {
    if moe {
        toggle(
            ui,
            &mut l.cpu_moe,
            "-cmoe, cpu-moe",
            "Every layer's routed experts (ffn_*_exps) stay in host memory; attention, router and shared experts follow -ngl. Decode reads a token's experts from host memory.",
        );
        if !l.cpu_moe {
            int_slider(
                ui,
                &mut l.n_cpu_moe,
                0..=layers,
                false,
                "-ncmoe, n-cpu-moe",
                "layers",
                "The routed experts of the first N layers stay in host memory.",
            );
        }
    } else {
        int_slider(
            ui,
            &mut l.n_cpu_ffn,
            0..=layers,
            false,
            "-ncffn, n-cpu-ffn",
            "layers",
            "The FFN matrices of the first N layers stay in host memory (dense models).",
        );
    }
    toggle(
        ui,
        &mut l.op_offload,
        "--op-offload",
        "A prompt's ubatch of ≥ 32 tokens multiplies host weights on the first GPU, copying each into its compute buffer over the host link (llama.cpp's default: on).",
    );
}

fn cache_type_ui(ui: &mut Ui, t: &mut CacheType, label: &str) {
    egui::ComboBox::from_label(label)
        .selected_text(t.name())
        .show_ui(ui, |ui| {
            for c in CacheType::ALL {
                ui.selectable_value(t, c, c.name());
            }
        })
        .response
        .on_hover_text("The KV cache's element type (a quantized V cache needs flash attention).");
}
