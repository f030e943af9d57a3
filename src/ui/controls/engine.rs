//! The serving engine of an inference scenario: which engine, its settings as the engine spells
//! them (llama.cpp's in `controls::llamacpp`), and one box to paste a `vllm serve …` / `python -m
//! sglang.launch_server …` / `llama-server …` line into.

use egui::Ui;

use crate::estimator::Estimate;
use crate::scenario::{
    KvCacheDtype, LlamaCpp, Scenario, ServingEngine, Sglang, SglangVersion, Vllm, VllmVersion,
};
use crate::ui::widgets::{Choice, choice, int_slider, opt, percent_slider, toggle};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Profile,
    HfGenerate,
    Preallocated,
    Vllm,
    Sglang,
    LlamaCpp,
    /// Another engine (added elsewhere): shown, not switchable to from here.
    Other,
}

const KINDS: [Choice<Kind>; 6] = [
    opt(
        Kind::Profile,
        "Training profile's",
        "The engine the training profile's code base serves with (Hugging Face → generate, Megatron → preallocated).",
    ),
    opt(
        Kind::HfGenerate,
        "Hugging Face generate",
        "Eager PyTorch with a growing DynamicCache.",
    ),
    opt(
        Kind::Preallocated,
        "Preallocated cache",
        "One cache of the full length, written in place (Megatron, StaticCache).",
    ),
    opt(
        Kind::Vllm,
        "vLLM",
        "A paged KV pool sized at startup: gpu_memory_utilization × the GPU minus weights, the profiling run's activations and CUDA graphs.",
    ),
    opt(
        Kind::Sglang,
        "SGLang",
        "A token pool sized at startup: mem_fraction_static of the free memory before the weights, minus the weights.",
    ),
    opt(
        Kind::LlamaCpp,
        "llama.cpp",
        "llama-server / llama-cli / llama-cpp-python / Ollama's llama runner: GGUF weights placed by -ngl, KV per device, a reserved compute buffer.",
    ),
];

fn kind(e: Option<ServingEngine>) -> Kind {
    match e {
        None => Kind::Profile,
        Some(ServingEngine::HfGenerate) => Kind::HfGenerate,
        Some(ServingEngine::Preallocated) => Kind::Preallocated,
        Some(ServingEngine::Vllm(_)) => Kind::Vllm,
        Some(ServingEngine::Sglang(_)) => Kind::Sglang,
        Some(ServingEngine::LlamaCpp(_)) => Kind::LlamaCpp,
        #[allow(unreachable_patterns, reason = "other lanes add engines to the enum")]
        Some(_) => Kind::Other,
    }
}

const KV_DTYPES: [Choice<KvCacheDtype>; 6] = [
    opt(KvCacheDtype::Auto, "auto", "The model's type."),
    opt(KvCacheDtype::Bfloat16, "bfloat16", "2 bytes per element."),
    opt(KvCacheDtype::Float16, "float16", "2 bytes per element."),
    opt(
        KvCacheDtype::Fp8,
        "fp8",
        "1 byte per element (e4m3 on CUDA).",
    ),
    opt(KvCacheDtype::Fp8E4m3, "fp8_e4m3", "1 byte per element."),
    opt(KvCacheDtype::Fp8E5m2, "fp8_e5m2", "1 byte per element."),
];

/// The engine section (inference scenarios only).
pub fn ui(ui: &mut Ui, s: &mut Scenario, est: &Estimate) {
    let mut k = kind(s.inference.engine);
    if k != Kind::Other
        && choice(
            ui,
            &mut k,
            &KINDS,
            "Serving engine",
            "What serves the requests: how the KV cache is reserved and grows.",
        )
        .changed()
    {
        s.inference.engine = match k {
            Kind::Profile | Kind::Other => None,
            Kind::HfGenerate => Some(ServingEngine::HfGenerate),
            Kind::Preallocated => Some(ServingEngine::Preallocated),
            Kind::Vllm => Some(ServingEngine::Vllm(Vllm::default())),
            Kind::Sglang => Some(ServingEngine::Sglang(Sglang::default())),
            Kind::LlamaCpp => Some(ServingEngine::LlamaCpp(LlamaCpp::default())),
        };
    }
    match &mut s.inference.engine {
        Some(ServingEngine::Vllm(v)) => vllm_ui(ui, v),
        Some(ServingEngine::Sglang(g)) => sglang_ui(ui, g),
        Some(ServingEngine::LlamaCpp(_)) => super::llamacpp::ui(ui, s, est),
        _ => {}
    }
    super::engine_paste::ui(ui, s);
}

/// A fraction that is the engine's default when `None`: a checkbox "default" and a slider.
fn optional_fraction(ui: &mut Ui, value: &mut Option<f64>, default: f64, label: &str, hover: &str) {
    let mut set = value.is_some();
    if toggle(
        ui,
        &mut set,
        &format!("Set {label}"),
        "Off: the release's default (shown in the engine's figures).",
    )
    .changed()
    {
        *value = set.then_some(default);
    }
    if let Some(x) = value {
        percent_slider(ui, x, 0.05..=1.0, label, hover);
    }
}

fn vllm_ui(ui: &mut Ui, v: &mut Vllm) {
    let versions: Vec<Choice<VllmVersion>> = VllmVersion::ALL
        .iter()
        .map(|x| {
            opt(
                *x,
                x.label(),
                "Which release's rules size the cache (docs/engines/vllm.md §6).",
            )
        })
        .collect();
    choice(
        ui,
        &mut v.version,
        &versions,
        "vLLM release",
        "The budget rule, default block size and utilization changed between releases.",
    );
    optional_fraction(
        ui,
        &mut v.gpu_memory_utilization,
        0.9,
        "gpu_memory_utilization",
        "--gpu-memory-utilization: the share of the GPU's total memory this instance may use.",
    );
    int_slider(
        ui,
        &mut v.max_model_len,
        0..=1_048_576,
        true,
        "max_model_len",
        "tokens",
        "--max-model-len; 0 = the scenario's prompt + generated tokens (vLLM itself, without the flag, takes the model's context: max_positions).",
    );
    int_slider(
        ui,
        &mut v.max_num_seqs,
        0..=4096,
        true,
        "max_num_seqs",
        "requests",
        "--max-num-seqs; 0 = the default by GPU (256 or 1,024).",
    );
    int_slider(
        ui,
        &mut v.max_num_batched_tokens,
        0..=131_072,
        true,
        "max_num_batched_tokens",
        "tokens",
        "--max-num-batched-tokens: the profiling run's dummy batch; 0 = the default by GPU.",
    );
    int_slider(
        ui,
        &mut v.block_size,
        0..=256,
        false,
        "block_size",
        "tokens",
        "--block-size; 0 = 16 (≤ 0.33) or 64 (0.34).",
    );
    choice(
        ui,
        &mut v.kv_cache_dtype,
        &KV_DTYPES,
        "kv_cache_dtype",
        "--kv-cache-dtype: bytes per cached element.",
    );
    vllm_switches(ui, v);
}

/// vLLM's switches.
fn vllm_switches(ui: &mut Ui, v: &mut Vllm) {
    toggle(
        ui,
        &mut v.enforce_eager,
        "enforce_eager",
        "--enforce-eager: no CUDA graphs, so nothing is set aside for them.",
    );
    toggle(
        ui,
        &mut v.enable_prefix_caching,
        "enable_prefix_caching",
        "--enable-prefix-caching: hybrid (Mamba) models keep two state pages per request.",
    );
    toggle(
        ui,
        &mut v.mamba_ssm_cache_fp32,
        "mamba_ssm_cache_dtype float32",
        "--mamba-ssm-cache-dtype float32: recurrent state in FP32.",
    );
}

fn sglang_ui(ui: &mut Ui, g: &mut Sglang) {
    let versions: Vec<Choice<SglangVersion>> = SglangVersion::ALL
        .iter()
        .map(|x| {
            opt(
                *x,
                x.label(),
                "Which release's default mem_fraction_static (docs/engines/sglang.md §3).",
            )
        })
        .collect();
    choice(
        ui,
        &mut g.version,
        &versions,
        "SGLang release",
        "The default mem_fraction_static changed between releases.",
    );
    optional_fraction(
        ui,
        &mut g.mem_fraction_static,
        0.85,
        "mem_fraction_static",
        "--mem-fraction-static: the share of the free memory before the weights that weights and the KV pool take.",
    );
    int_slider(
        ui,
        &mut g.max_running_requests,
        0..=4096,
        true,
        "max_running_requests",
        "requests",
        "--max-running-requests; 0 = from the pool and the context length.",
    );
    int_slider(
        ui,
        &mut g.chunked_prefill_size,
        0..=65_536,
        true,
        "chunked_prefill_size",
        "tokens",
        "--chunked-prefill-size; 0 = by GPU size.",
    );
    int_slider(
        ui,
        &mut g.page_size,
        1..=256,
        false,
        "page_size",
        "tokens",
        "--page-size: the pool is rounded down to whole pages.",
    );
    choice(
        ui,
        &mut g.kv_cache_dtype,
        &KV_DTYPES,
        "kv_cache_dtype (SGLang)",
        "--kv-cache-dtype: bytes per cached element.",
    );
    int_slider(
        ui,
        &mut g.context_length,
        0..=1_048_576,
        true,
        "context_length",
        "tokens",
        "--context-length; 0 = the scenario's prompt + generated tokens (SGLang itself, without the flag, takes the model's context: max_positions).",
    );
    toggle(
        ui,
        &mut g.disable_cuda_graph,
        "disable_cuda_graph",
        "--disable-cuda-graph: the default fraction reserves nothing for graphs.",
    );
}
