//! The llama.cpp engine's rules through the estimator (docs/engines/llamacpp.md): tensor types of a
//! file type, `-ngl` placement (output first, token_embd on the CPU), `-nkvo`, cache types and
//! flash attention, partial offload in time, pasted command lines, files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::engines::llamacpp::tensor_types::{Model, Role, tensor_type};
use vram_explorer::estimator::engines::llamacpp::{Buffers, mib_printed};
use vram_explorer::estimator::estimate;
use vram_explorer::presets;
use vram_explorer::scenario::engine_args_llamacpp::{apply, parse};
use vram_explorer::scenario::{
    CacheType, FlashAttn, LlamaCpp, Mode, Scenario, ServingEngine, WeightFormat,
};
use vram_explorer::tensor::{GgufFileType, GgufType};

/// Llama-3.1-8B (config.json of meta-llama/Llama-3.1-8B-Instruct) served by llama.cpp.
fn llama8b(f: GgufFileType, l: LlamaCpp) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 8, 14336, 128256);
    s.quantization.weights = WeightFormat::GgufFile(f);
    s.inference.engine = Some(ServingEngine::LlamaCpp(l));
    s
}

fn buffers(s: &Scenario) -> Buffers {
    estimate(s).llamacpp.expect("llama.cpp buffers")
}

#[test]
fn q4_k_m_types_match_the_printed_tensor_counts() {
    // llama_model_loader prints "type q4_K: 193 tensors, type q6_K: 33 tensors" for this file.
    let m = Model {
        n_layer: 32,
        n_expert: 0,
        n_gqa: 4,
        is_70b: false,
        tied_embeddings: false,
    };
    let mut q6 = 0;
    let mut q4 = 0;
    for i in 0..32 {
        for role in [
            Role::AttnQ,
            Role::AttnK,
            Role::AttnV,
            Role::AttnOutput,
            Role::FfnGate,
            Role::FfnUp,
            Role::FfnDown,
        ] {
            match tensor_type(GgufFileType::Q4KM, role, i, 4096, &m) {
                GgufType::Q6K => q6 += 1,
                GgufType::Q4K => q4 += 1,
                t => panic!("{t:?}"),
            }
        }
    }
    let out = tensor_type(GgufFileType::Q4KM, Role::Output, 0, 4096, &m);
    let embd = tensor_type(GgufFileType::Q4KM, Role::TokenEmbd, 0, 4096, &m);
    assert_eq!(out, GgufType::Q6K);
    assert_eq!(embd, GgufType::Q4K);
    assert_eq!((q4 + 1, q6 + 1), (193, 33));
    // Q8_0 keeps Q8_0 everywhere; a 896-wide row (Qwen2.5-0.5B) demotes Q4_K to Q5_0.
    assert_eq!(
        tensor_type(GgufFileType::Q8_0, Role::Output, 0, 4096, &m),
        GgufType::Q8_0
    );
    assert_eq!(
        tensor_type(GgufFileType::Q4KM, Role::AttnQ, 5, 896, &m),
        GgufType::Q5_0
    );
}

#[test]
fn ngl_offloads_the_output_layer_first_and_keeps_token_embd_on_the_cpu() {
    let all = buffers(&llama8b(GgufFileType::Q4KM, LlamaCpp::default()));
    assert_eq!(mib_printed(all.dev[0].model), 4403.49);
    assert_eq!(mib_printed(all.host_model), 281.81);
    let one = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_gpu_layers: 1,
            ..LlamaCpp::default()
        },
    ));
    assert!(one.output_on_gpu);
    assert_eq!(one.layers_on_gpu, 0);
    assert_eq!(one.dev[0].kv, 0, "the output layer has no KV");
    let none = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_gpu_layers: 0,
            ..LlamaCpp::default()
        },
    ));
    assert_eq!(none.dev[0].model, 0);
    // Everything on the host: the CPU buffer holds the whole file (less CUDA padding, none here).
    assert_eq!(none.host_model, all.host_model + all.dev[0].model);
    let n32 = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_gpu_layers: 32,
            ..LlamaCpp::default()
        },
    ));
    assert_eq!((n32.layers_on_gpu, n32.output_on_gpu), (31, true));
    assert_eq!(
        n32.host_kv * 31,
        n32.dev[0].kv,
        "block 0's KV is on the host"
    );
}

#[test]
fn kv_cache_types_flash_attention_and_no_kv_offload() {
    let q8 = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_ctx: 8192,
            cache_type_k: CacheType::Q8_0,
            cache_type_v: CacheType::Q8_0,
            flash_attn: FlashAttn::Off,
            ..LlamaCpp::default()
        },
    ));
    assert_eq!(mib_printed(q8.dev[0].kv), 544.00);
    assert!(
        q8.flash_attn,
        "a quantized V cache turns flash attention on"
    );
    let nkvo = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_ctx: 8192,
            no_kv_offload: true,
            ..LlamaCpp::default()
        },
    ));
    assert_eq!((nkvo.dev[0].kv, mib_printed(nkvo.host_kv)), (0, 1024.00));
    // -c 5000 is padded to 5120 cells.
    let c = buffers(&llama8b(
        GgufFileType::Q4KM,
        LlamaCpp {
            n_ctx: 5000,
            ..LlamaCpp::default()
        },
    ));
    assert_eq!(c.n_ctx, 5120);
}

#[test]
fn host_layers_slow_decode_and_the_memory_follows_the_largest_gpu() {
    let tpot = |ngl: i32| {
        let e = estimate(&llama8b(
            GgufFileType::Q4KM,
            LlamaCpp {
                n_gpu_layers: ngl,
                ..LlamaCpp::default()
            },
        ));
        e.performance.throughput.tpot_s
    };
    let (all, half, none) = (tpot(-1), tpot(16), tpot(0));
    assert!(all < half && half < none, "{all} {half} {none}");
    let s = llama8b(GgufFileType::Q4KM, LlamaCpp::default());
    let e = estimate(&s);
    let b = e.llamacpp.unwrap();
    let w = e
        .memory
        .peak
        .get(vram_explorer::estimator::Component::Weights);
    assert_eq!(w.get(), b.dev[0].model as f64);
}

#[test]
fn a_pasted_command_line_fills_the_fields() {
    let base = LlamaCpp::default();
    let p = parse(
        "./build/bin/llama-server -m models/Qwen2.5-7B-Instruct-Q5_K_M.gguf \\\n  -c 16384 -b 1024 -ub 256 -ngl 99 -ts 3,1 -ctk q8_0 -ctv q8_0 -fa -np 2 -nkvo --no-mmap --host 0.0.0.0 --jinja",
        &base,
    )
    .unwrap();
    let s = p.settings;
    assert_eq!(
        (s.n_ctx, s.n_batch, s.n_ubatch, s.n_gpu_layers, s.n_parallel),
        (16384, 1024, 256, 99, 2)
    );
    assert_eq!(&s.tensor_split[..3], &[3.0, 1.0, 0.0]);
    assert_eq!(
        (s.cache_type_k, s.cache_type_v),
        (CacheType::Q8_0, CacheType::Q8_0)
    );
    assert_eq!(s.flash_attn, FlashAttn::On, "a bare -fa is on");
    assert!(s.no_kv_offload && !s.mmap);
    assert_eq!(p.file_type, Some(GgufFileType::Q5KM));
    assert_eq!(p.ignored, vec!["--host 0.0.0.0", "--jinja"]);
    // The layer split is the one the placement models; a row split or none is said not to be.
    let layer = parse("llama-server -sm layer -mg 1", &base).unwrap();
    assert_eq!(
        (layer.ignored, layer.not_modelled.len()),
        (vec!["-sm layer".to_owned(), "-mg 1".to_owned()], 0)
    );
    let row = parse("llama-server --split-mode row", &base).unwrap();
    assert_eq!(row.not_modelled, vec!["--split-mode row"]);
    let cli = parse("llama-cli -m x.gguf -fa off -ngl auto", &base).unwrap();
    assert_eq!(cli.settings.flash_attn, FlashAttn::Off);
    assert_eq!(cli.settings.n_gpu_layers, -1);
    let err = parse("llama-server -c 4096 --frobnicate --bogus 2", &base).unwrap_err();
    assert!(
        err.contains("--frobnicate") && err.contains("--bogus"),
        "{err}"
    );
    assert!(parse("vllm serve x", &base).unwrap_err().contains("vllm"));
    assert!(
        parse("llama-server -c lots", &base)
            .unwrap_err()
            .contains("lots")
    );
    let err = parse("llama-server -ctk q3", &base).unwrap_err();
    assert!(err.contains("q8_0"), "{err}");
    // Applied to a scenario: inference, the engine and the file type.
    let sc = presets::bundled_scenario("llama3-8b-full-finetune-h100").unwrap();
    let (out, _) = apply(&sc, "llama-server -m llama-Q8_0.gguf -c 4096").unwrap();
    assert_eq!(out.mode, Mode::Inference);
    assert_eq!(
        out.quantization.weights,
        WeightFormat::GgufFile(GgufFileType::Q8_0)
    );
    assert_eq!(estimate(&out).llamacpp.unwrap().n_ctx, 4096);
}

#[test]
fn llama_cpp_scenarios_round_trip_and_old_files_load() {
    let s = presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    let ron = presets::to_ron_string(&s);
    assert_eq!(presets::from_ron_str(&ron).unwrap(), s);
    assert!(
        ron.contains("LlamaCpp(") && ron.contains("GgufFile(Q4KM)"),
        "{ron}"
    );
    // A file with the engines of before still loads.
    let old = "(version: 1, mode: Inference, inference: (engine: Some(Preallocated)))";
    let o = presets::from_ron_str(old).unwrap();
    assert_eq!(o.inference.engine, Some(ServingEngine::Preallocated));
    assert!(estimate(&o).llamacpp.is_none());
}

#[test]
fn the_cli_takes_a_command_line_and_reports_the_buffers() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
            .args(args)
            .output()
            .expect("the binary runs")
    };
    // `-kvu`: the log's build (late 2024) predates split caches (llama.cpp PR #14363) and had
    // one unified cache; a current llama-server with `-np 4` alone keeps a stream per slot.
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -np 4 -kvu -fa off --port 8080";
    let o = run(&[
        "report",
        "--preset",
        "llama3-8b-full-finetune-h100",
        "--engine-command",
        cmd,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    // The published Ollama log of this model and these settings (tests/data/published).
    for line in [
        "CUDA0 model buffer size =  4403.49 MiB",
        "CPU_Mapped model buffer size =   281.81 MiB",
        "CUDA0 KV buffer size =  1024.00 MiB",
        // The log's build printed 560.00 (its graph: `legacy_graph`, tests/published_llamacpp.rs);
        // the current graph's K/V row indices add one 4 MiB input copy (I64 per V element).
        "CUDA0 compute buffer size =   564.01 MiB",
    ] {
        assert!(out.contains(line), "{line} not in\n{out}");
    }
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ignored (no effect on memory): --port 8080")
    );
    let o = run(&[
        "report",
        "--preset",
        "llama31-8b-q4km-llamacpp-12gb",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let l = &v["llamacpp"];
    assert_eq!(l["file_type"], "Q4_K_M");
    assert_eq!(l["devices"][0]["layers"], 25);
    assert_eq!(l["host"]["model_name"], "CPU_Mapped");
    assert!(l["log_lines"].as_array().unwrap().len() >= 8);
    assert!(l["swa_cache"].is_null() && l["recurrent_state"].is_null());
    let o = run(&[
        "report",
        "--preset",
        "llama3-8b-full-finetune-h100",
        "--engine-command",
        "llama-server --frobnicate",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--frobnicate"));
    // One flag for every engine: `--engine-args` reads the llama.cpp line as `--engine-command`
    // (its older name) does, and the `engine-args` command prints the load log.
    let o = run(&[
        "report",
        "--preset",
        "llama3-8b-full-finetune-h100",
        "--engine-args",
        cmd,
    ]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), out);
    let o = run(&[
        "engine-args",
        cmd,
        "--preset",
        "llama3-8b-full-finetune-h100",
    ]);
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(printed.contains("LlamaCpp("), "{printed}");
    assert!(
        printed.contains("llama.cpp would print")
            && printed.contains("CUDA0 KV buffer size =  1024.00 MiB"),
        "{printed}"
    );
}

/// The JSON report names llama.cpp's sliding-window cache beside the main one.
#[test]
fn the_json_report_has_the_sliding_window_cache() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
        .args([
            "report",
            "--preset",
            "gemma3-27b-q4km-llamacpp-24gb",
            "--json",
        ])
        .output()
        .expect("the binary runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &v["llamacpp"]["swa_cache"];
    assert_eq!(
        (w["cells"].as_u64(), w["layers"].as_u64()),
        (Some(1536), Some(52))
    );
    assert_eq!(v["llamacpp"]["kv_layers"], 10);
    assert!(v["llamacpp"]["recurrent_state"].is_null());
}

#[test]
fn each_layer_offloaded_moves_its_bytes_from_the_host_to_the_gpu() {
    let mut last: Option<Buffers> = None;
    for ngl in 0..=34 {
        let b = buffers(&llama8b(
            GgufFileType::Q5KM,
            LlamaCpp {
                n_gpu_layers: ngl,
                n_ctx: 4096,
                ..LlamaCpp::default()
            },
        ));
        if let Some(p) = last {
            assert!(b.dev[0].model >= p.dev[0].model, "ngl {ngl}");
            assert!(b.host_model <= p.host_model, "ngl {ngl}");
            assert!(
                b.dev[0].kv >= p.dev[0].kv && b.host_kv <= p.host_kv,
                "ngl {ngl}"
            );
            // Q4_K/Q5_K/Q6_K rows of 4096 and 14336 need no CUDA row padding: bytes only move.
            assert_eq!(
                b.dev[0].model + b.host_model,
                p.dev[0].model + p.host_model,
                "ngl {ngl}"
            );
        }
        assert_eq!(
            b.layers_on_gpu + u32::from(b.output_on_gpu),
            (ngl as u32).min(33)
        );
        last = Some(b);
    }
}

/// A CPU build's compute buffer is the replayed plan, kept for the last shape: asking again after
/// another shape gives the first answer, and it grows with the context as the scores do.
#[test]
fn the_cpu_plan_is_the_same_whichever_shape_came_before() {
    let cpu = |n_ctx: u32| {
        let l = LlamaCpp {
            n_ctx,
            cpu_only: true,
            flash_attn: FlashAttn::Off,
            ..LlamaCpp::default()
        };
        buffers(&llama8b(GgufFileType::Q4KM, l)).host_compute
    };
    let (a, b, a2) = (cpu(4096), cpu(8192), cpu(4096));
    assert_eq!(a, a2);
    // 4096 more cells: the scores of 512 tokens × 32 heads (F32) and the F32 mask grow by
    // 4096 × 512 × (32 + 1) × 4 B at the attention peak.
    assert_eq!(b - a, 4096 * 512 * 33 * 4);
}

/// The replayed plan describes llama.cpp's `llama` / `qwen2` / `qwen3` layers (Q/K norms or not);
/// a model with sliding-window layers (Gemma 2) builds another graph, so its CPU compute buffer
/// stays the closed form.
#[test]
fn only_plain_llama_layers_are_replayed() {
    use vram_explorer::estimator::engines::llamacpp::compute::cpu_graph;
    use vram_explorer::estimator::engines::llamacpp::dims::{Dims, LayerGraph};
    use vram_explorer::import::from_hf_config;
    use vram_explorer::scenario::ModelSpec;
    let cpu = LlamaCpp {
        cpu_only: true,
        ..LlamaCpp::default()
    };
    let with = |json: &str| {
        let imp = from_hf_config(json, &ModelSpec::default()).unwrap();
        let mut s = llama8b(GgufFileType::Q8_0, cpu);
        s.model = imp.model;
        estimate(&s)
    };
    let gemma = with(include_str!("data/hf/gemma-2-9b.json"));
    let d = Dims::of(&gemma.model, false);
    assert_eq!(
        d.layers,
        LayerGraph::Other,
        "Gemma 2 alternates sliding-window layers"
    );
    let b = gemma.llamacpp.unwrap();
    let closed = cpu_graph(&d, u64::from(b.n_ubatch), u64::from(b.n_ctx), b.flash_attn);
    assert_eq!(b.host_compute, closed);
    let qwen3 = Dims::of(&with(include_str!("data/hf/qwen3-8b.json")).model, false);
    assert_eq!(qwen3.layers, LayerGraph::LlamaQkNorm);
    let llama = Dims::of(&estimate(&llama8b(GgufFileType::Q8_0, cpu)).model, false);
    assert_eq!(llama.layers, LayerGraph::Llama);
}

/// Gemma 3 27B on a 24 GB card (the preset): the 52 sliding-window layers in a cache of
/// pad256(1024 + 512) cells, the 10 global ones in n_ctx cells; it fits, and with every layer in a
/// full-size cache (the rule before layer kinds) it would not.
#[test]
fn gemma3_keeps_its_windowed_layers_in_a_second_cache() {
    let s = presets::bundled_scenario("gemma3-27b-q4km-llamacpp-24gb").unwrap();
    let e = estimate(&s);
    let b = e.llamacpp.unwrap();
    let per_cell = 16 * 128 * 2 * 2; // K and V, f16
    assert_eq!((b.swa.cells, b.swa.layers, b.kv_layers), (1536, 52, 10));
    assert_eq!(b.dev[0].kv, (10 * 32768 + 52 * 1536) * per_cell);
    assert_eq!(b.swa.dev[0], 52 * 1536 * per_cell);
    assert!(e.memory.fits);
    // One 17,000-token request per slot of a 32,768-cell cache: the count the CLI prints is the
    // engine's (as the window's headline), not what would fit beside it in memory.
    assert_eq!(e.performance.throughput.max_concurrent_requests, 1);
    let full = 62 * 32768 * per_cell;
    assert!(b.dev[0].total() - b.dev[0].kv + full > 24 << 30);
}

/// `--swa-full` (pasted, as llama-server spells it) gives the windowed layers a cache of `-c`
/// cells too: Gemma 3 27B at 32K no longer fits a 24 GB card, and the report prints llama.cpp's
/// warning and both caches at 32,768 cells (measured: tests/measured_llamacpp.rs).
#[test]
fn gemma3_with_swa_full_caches_every_layer_at_full_size() {
    let s = presets::bundled_scenario("gemma3-27b-q4km-llamacpp-24gb").unwrap();
    let cmd = "llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 -ngl 99 --swa-full";
    let (full, p) = apply(&s, cmd).unwrap();
    assert!(p.settings.swa_full && p.not_modelled.is_empty());
    let e = estimate(&full);
    let b = e.llamacpp.unwrap();
    let per_cell = 16 * 128 * 2 * 2;
    assert_eq!((b.swa.cells, b.swa.layers), (32768, 52));
    assert_eq!(b.dev[0].kv, 62 * 32768 * per_cell);
    assert!(!e.memory.fits);
    let lines = vram_explorer::report::llamacpp::log_lines(&b);
    assert!(lines.contains("llama_kv_cache_iswa: using full-size SWA cache"));
    assert!(lines.contains("creating     SWA KV cache, size = 32768 cells"));
    // Without -ngl, llama-server's -fit keeps -c and puts only as many layers on the GPU as fit.
    let cmd = "llama-server -m gemma-3-27b-it-Q4_K_M.gguf -c 32768 --swa-full";
    let e = estimate(&apply(&s, cmd).unwrap().0);
    let b = e.llamacpp.unwrap();
    let ngl = b.fit.and_then(|f| f.ngl).unwrap();
    assert!((1..63).contains(&ngl), "{ngl}");
    assert_eq!(b.layers_on_gpu + u32::from(b.output_on_gpu), ngl as u32);
    assert!(e.memory.fits);
}

/// DeepSeek-V3 (its config.json): latent attention caches `kv_lora + rope` = 576 per cell and
/// layer, K only; the weights count each layer by its kind (3 dense layers, 58 of 256 experts of
/// 2,048), not the dense width for every expert.
#[test]
fn deepseek_v3_caches_its_latent_and_weighs_its_experts_at_their_width() {
    let cfg = include_str!("data/hf/deepseek-v3.json");
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    s.model = vram_explorer::import::from_hf_config(cfg, &s.model)
        .unwrap()
        .model;
    s.quantization.weights = WeightFormat::GgufFile(GgufFileType::Q4KM);
    s.inference.engine = Some(ServingEngine::LlamaCpp(LlamaCpp {
        n_ctx: 32768,
        cpu_only: true,
        ..LlamaCpp::default()
    }));
    let b = buffers(&s);
    assert_eq!(b.k_bytes, 61 * 576 * 2 * 32768);
    assert_eq!(b.v_bytes, 0);
    // 671 B parameters (the MTP layer not loaded) at Q4_K_M's 4.5–5 bits per weight.
    let bits = b.host_model as f64 * 8.0 / 671e9;
    assert!((4.5..5.0).contains(&bits), "{bits} bits per weight");
}

/// A CPU build's prompt is bound by the host's compute, not the scenario's GPU: Llama-3.1-8B
/// Q4_0, 512 prompt tokens on the default host (2.4 TFLOP/s) takes what mainline llama.cpp's
/// `pp512` of 170 tokens/s on a Ryzen 9 7950X gives (ikawrakow/ik_llama.cpp PR #533: the default's
/// calibration point, so this checks the plumbing, the FLOP count and the units); the preset's own
/// GPU build (26 layers on a 12 GB card, the rest uploaded per micro-batch) is several times faster.
#[test]
fn a_cpu_build_prefills_at_the_hosts_rate() {
    let mut s = presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    s.inference.prompt_tokens = 512;
    s.inference.generated_tokens = 128;
    let cmd = "llama-server -m Llama-3.1-8B-Instruct-Q4_0.gguf -c 4096 -dev none";
    let (cpu, _) = apply(&s, cmd).unwrap();
    let e = estimate(&cpu);
    let ttft = e.performance.throughput.ttft_s;
    let measured = 512.0 / 170.0;
    assert!(
        (ttft / measured - 1.0).abs() < 0.02,
        "TTFT {ttft:.2} s vs {measured:.2} s"
    );
    // Decode reads the weights from host memory (64 GB/s by default): ≈ 4.4 GB per token.
    let tpot = e.performance.throughput.tpot_s;
    let b = e.llamacpp.unwrap();
    assert!(tpot >= b.host_model as f64 * 0.9 / 64e9, "{tpot}");
    // The roofline is the host's: its rate and bandwidth, the prompt compute-bound, a token not.
    let p = &e.performance;
    assert!((p.peak.as_tflops() - 2.4).abs() < 1e-9);
    assert!((p.bandwidth.as_gb_per_s() - 64.0).abs() < 1e-9);
    let (pre, dec) = (p.prefill.unwrap(), p.decode.unwrap());
    assert_eq!(
        pre.bound,
        vram_explorer::estimator::performance::Bound::Compute
    );
    assert_eq!(
        dec.bound,
        vram_explorer::estimator::performance::Bound::Memory
    );
    assert!((pre.time_s - ttft).abs() < 1e-9 && (dec.time_s - tpot).abs() < 1e-9);
    let (gpu, _) = apply(
        &s,
        "llama-server -m Llama-3.1-8B-Instruct-Q4_0.gguf -c 4096",
    )
    .unwrap();
    let gpu_ttft = estimate(&gpu).performance.throughput.ttft_s;
    assert!(gpu_ttft * 4.0 < ttft, "{gpu_ttft} vs {ttft}");
}

/// ggml allocates llama.cpp's buffers at their exact sizes (no caching allocator): the reserve is
/// the library workspace whatever `allocator_reserve_fraction` says, while the same model served
/// through PyTorch keeps the fraction.
#[test]
fn llama_cpp_has_no_caching_allocator_share() {
    use vram_explorer::estimator::Component;
    let s = llama8b(GgufFileType::Q4KM, LlamaCpp::default());
    assert!(s.overheads.allocator_reserve_fraction > 0.0);
    let workspace = s.overheads.workspace_mib * 1_048_576.0;
    let m = estimate(&s).memory;
    assert_eq!(m.peak.get(Component::AllocatorReserve).get(), workspace);
    assert_eq!(m.reserved_peak().get(), m.tensor_peak.get() + workspace);
    let mut torch = s.clone();
    torch.inference.engine = None;
    let t = estimate(&torch).memory;
    let share = t.peak.get(Component::AllocatorReserve).get() - workspace;
    assert!(
        (share - 0.05 * t.tensor_peak.get()).abs() < 1.0,
        "{share} vs {}",
        t.tensor_peak.get()
    );
}

/// Only llama.cpp's buffers drop the caching allocator's share: a model llama.cpp's rules do not
/// describe (a CNN) keeps PyTorch's rules, its reserve fraction included.
#[test]
fn a_model_outside_llama_cpp_keeps_the_allocator_share() {
    use vram_explorer::estimator::Component;
    let mut s = presets::bundled_scenario("resnet50-batch32").expect("preset");
    s.mode = Mode::Inference;
    s.overheads.allocator_reserve_fraction = 0.5;
    let plain = estimate(&s)
        .memory
        .peak
        .get(Component::AllocatorReserve)
        .get();
    s.inference.engine = Some(ServingEngine::LlamaCpp(LlamaCpp::default()));
    let e = estimate(&s);
    assert!(e.llamacpp.is_none());
    assert_eq!(e.memory.peak.get(Component::AllocatorReserve).get(), plain);
}
