//! llama.cpp's FFN tensor overrides (`--cpu-moe`, `--n-cpu-moe`, `--n-cpu-ffn`, `-ot …=CPU`) and
//! op offload (llama.cpp@0c1e57098 `common/arg.cpp`, `common/common.h`, `ggml-backend.cpp`;
//! docs/engines/llamacpp.md §3 and §5), and a published split of a mixture-of-experts model's
//! layers (tests/data/published/llamacpp-moe-logs.json).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::engines::llamacpp::{Buffers, mib_printed};
use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::import::from_hf_config;
use vram_explorer::scenario::engine_args_llamacpp::{apply, parse};
use vram_explorer::scenario::{
    GpuChoice, LlamaCpp, Mode, ModelSpec, Scenario, ServingEngine, WeightFormat,
};
use vram_explorer::tensor::GgufFileType;

const MOE_LOGS: &str = include_str!("data/published/llamacpp-moe-logs.json");

/// Qwen3-30B-A3B (48 layers, 128 experts of 768, 8 per token) in Q4_K_M on an RTX 4090.
fn qwen3_moe() -> Scenario {
    let imp = from_hf_config(
        include_str!("data/hf/qwen3-30b-a3b.json"),
        &ModelSpec::default(),
    )
    .unwrap();
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    s.model = imp.model;
    s.quantization.weights = WeightFormat::GgufFile(GgufFileType::Q4KM);
    s.gpu = GpuChoice::Catalog(GpuId::Rtx4090);
    s
}

fn buffers(sc: &Scenario, cmd: &str) -> Buffers {
    let (s, _) = apply(sc, cmd).unwrap();
    estimate(&s).llamacpp.unwrap()
}

const BASE: &str = "llama-server -m Qwen3-30B-A3B-Q4_K_M.gguf -c 4096 -np 1 -fit off";

#[test]
fn the_flags_and_the_patterns_that_do_the_same_are_read() {
    let d = LlamaCpp::default();
    let p = parse("llama-server --cpu-moe", &d).unwrap();
    assert!(p.settings.cpu_moe && p.not_modelled.is_empty());
    let p = parse("llama-server -ncmoe 20 -ncffn 4 --no-op-offload", &d).unwrap();
    assert_eq!((p.settings.n_cpu_moe, p.settings.n_cpu_ffn), (20, 4));
    assert!(!p.settings.op_offload);
    assert!(parse("llama-server", &d).unwrap().settings.op_offload);
    // -ot: the common spellings of "all experts", "the first 20 layers' experts", and one that
    // moves attention too (not modelled, and said so).
    assert!(
        parse("llama-server -ot exps=CPU", &d)
            .unwrap()
            .settings
            .cpu_moe
    );
    let p = parse(r"llama-server -ot blk\.(1?[0-9])\.ffn_.*_exps\.=CPU", &d).unwrap();
    assert_eq!(p.settings.n_cpu_moe, 20);
    assert!(!p.settings.other_overrides);
    let p = parse(r"llama-server -ot blk\.0\.attn_q=CPU,exps=CPU", &d).unwrap();
    assert!(p.settings.cpu_moe);
    assert_eq!(p.not_modelled, vec![r"-ot blk\.0\.attn_q=CPU".to_owned()]);
    assert!(p.settings.other_overrides);
    assert!(parse("llama-server -ncmoe -1", &d).is_err());
    // Repeated, the overrides add up (the widest wins); a pattern that also moves fused attention
    // is not an FFN override: not followed, said so, and it stops -fit's layer steps.
    let p = parse("llama-server -ncmoe 20 -ncmoe 10", &d).unwrap();
    assert_eq!(p.settings.n_cpu_moe, 20);
    let p = parse(r"llama-server -ot attn_qkv|exps=CPU", &d).unwrap();
    assert!(!p.settings.cpu_moe && p.settings.other_overrides);
    assert!(p.settings.has_overrides());
}

/// The routed experts leave the GPU's model buffer for the host's, layer by layer; attention,
/// norms, the router and the output layer stay; the KV cache does not move.
#[test]
fn experts_move_to_the_host_and_nothing_else_does() {
    let sc = qwen3_moe();
    let all = buffers(&sc, &format!("{BASE} -ngl 99"));
    let cpu = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe"));
    let n48 = buffers(&sc, &format!("{BASE} -ngl 99 --n-cpu-moe 48"));
    let n20 = buffers(&sc, &format!("{BASE} -ngl 99 --n-cpu-moe 20"));
    assert_eq!(cpu.dev[0].model, n48.dev[0].model);
    assert_eq!(cpu.host_model, n48.host_model);
    assert_eq!(cpu.dev[0].experts, 0);
    assert_eq!(cpu.host_experts, cpu.host_ffn);
    // Printed: 17524.43 MiB all on the GPU; 784.42 with every expert on the host.
    assert_eq!(mib_printed(all.dev[0].model), 17_524.43);
    assert_eq!(mib_printed(cpu.dev[0].model), 784.42);
    // Each moved tensor keeps its bytes up to the buffers' alignment (128 B on CUDA, 32 on the
    // host: at most 96 B each, 3 tensors a layer).
    let gpu_freed = all.dev[0].model - cpu.dev[0].model;
    let host_gained = cpu.host_model - all.host_model;
    assert!(gpu_freed >= host_gained && gpu_freed - host_gained <= 48 * 3 * 96);
    assert!(all.host_model < n20.host_model && n20.host_model < cpu.host_model);
    assert!(all.dev[0].model > n20.dev[0].model && n20.dev[0].model > cpu.dev[0].model);
    assert_eq!(
        (all.dev[0].kv, all.layers_on_gpu),
        (cpu.dev[0].kv, cpu.layers_on_gpu)
    );
    // A dense model has no experts to move: --cpu-moe changes nothing there.
    let dense = vram_explorer::presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -ngl 99 -np 1";
    let a = buffers(&dense, cmd);
    let m = buffers(&dense, &format!("{cmd} --cpu-moe"));
    assert_eq!(
        (a.dev, a.host_model, a.host_compute),
        (m.dev, m.host_model, m.host_compute)
    );
    // --n-cpu-ffn moves a dense model's FFN matrices: gate, up (Q4_K) and down (Q6_K in this
    // layer of Q4_K_M) of layer 0, 14336 × 4096 each.
    let f = buffers(&dense, &format!("{cmd} --n-cpu-ffn 1"));
    let q4k = 14_336 * 4096 / 256 * 144;
    let q6k = 14_336 * 4096 / 256 * 210;
    assert_eq!(f.host_ffn, 2 * q4k + q6k);
    assert_eq!(a.dev[0].model - f.dev[0].model, 2 * q4k + q6k);
}

/// Op offload: a prompt's ubatch multiplies host weights on CUDA0, each weight copied into its
/// compute buffer, so CUDA0 holds the FFN peak with the largest expert tensor; without op offload
/// (or below 32 tokens) the host runs the experts and holds that FFN peak instead.
#[test]
fn op_offload_copies_the_largest_host_matrix_into_the_gpu_buffer() {
    let mut sc = qwen3_moe();
    // A small vocabulary, so the output layer's logits do not hide the FFN peak.
    sc.model.transformer.vocab = 32_000;
    let all = buffers(&sc, &format!("{BASE} -ngl 99"));
    let cpu = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe"));
    // ffn_down_exps in Q6_K (Q4_K_M's use_more_bits layers): 128 × 2048 rows of 768 / 256 × 210 B,
    // as a CUDA tensor: one 256-column Q6_K chunk of row padding (768 % 512 ≠ 0), 128 B aligned.
    let down = (128 * 2048 * 768 / 256 * 210 + 210_u64).div_ceil(128) * 128;
    assert_eq!(cpu.host_copy, down);
    // The FFN peak of 512 tokens: gate, up and product of 8 experts' 768 with the residual.
    let ffn = (3 * 8 * 768 + 2048) * 512 * 4;
    assert_eq!(cpu.dev[0].compute, (ffn + down).max(all.dev[0].compute));
    assert!(cpu.dev[0].compute > all.dev[0].compute);
    assert_eq!(cpu.host_compute, all.host_compute);
    let off = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe --no-op-offload"));
    // Its own layers' peak in the closed form (host weights: no scheduler replay): the logits and
    // final norm of 512 tokens over the 32,000-token vocabulary.
    assert_eq!(off.dev[0].compute, 512 * (32_000 + 2048) * 4);
    assert_eq!(off.host_compute, all.host_compute + ffn);
    let small = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe -ub 16 -b 16"));
    let small_all = buffers(&sc, &format!("{BASE} -ngl 99 -ub 16 -b 16"));
    // Below 32 tokens no product moves: CUDA0 keeps its own (closed-form) output peak.
    assert_eq!(small.dev[0].compute, 16 * (32_000 + 2048) * 4);
    let ffn16 = (3 * 8 * 768 + 2048) * 16 * 4;
    assert_eq!(small.host_compute, small_all.host_compute + ffn16);
}

/// A dense model with its output layer on the host (`-ngl 0`: the output layer is the first
/// `-ngl` places): CUDA0 multiplies the output matrix for a prompt, so its buffer holds the
/// logits with that matrix's copy; the host keeps the prompt's inputs only.
#[test]
fn an_output_layer_on_the_host_is_multiplied_on_the_gpu() {
    let dense = vram_explorer::presets::bundled_scenario("llama31-8b-q4km-llamacpp-12gb").unwrap();
    let cmd = "llama-server -m Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 8192 -np 1 -fa on";
    let b = buffers(&dense, &format!("{cmd} -ngl 0"));
    assert!(!b.output_on_gpu && b.layers_on_gpu == 0);
    // logits and final norm of 512 tokens + the Q6_K output matrix 128256 × 4096.
    let output = 512 * (128_256 + 4096) * 4 + 128_256 * 4096 / 256 * 210;
    assert_eq!(b.dev[0].compute, output);
    // The host: the embedding rows, the unused embeddings input, the F16 mask of 8192 cells, the
    // K and V row indices (I64, one per token with flash attention) and the small inputs of 512
    // tokens.
    assert_eq!(
        b.host_compute,
        2 * 4096 * 512 * 4 + 8192 * 512 * 2 + 2 * 512 * 8 + 12 * 512
    );
    let off = buffers(&dense, &format!("{cmd} -ngl 0 --no-op-offload"));
    assert!(off.dev[0].compute < b.dev[0].compute);
    assert!(off.host_compute > b.host_compute);
}

/// Without mmap, host weights beside a GPU are in the GPU backend's pinned host buffer.
#[test]
fn host_weights_without_mmap_print_as_cuda_host() {
    let sc = qwen3_moe();
    let b = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe --no-mmap"));
    let log = vram_explorer::report::llamacpp::log_lines(&b);
    assert!(log.contains("CUDA_Host model buffer size"), "{log}");
    let b = buffers(&sc, &format!("{BASE} -ngl 99 --cpu-moe"));
    assert!(vram_explorer::report::llamacpp::log_lines(&b).contains("CPU_Mapped model buffer"));
}

/// ggml-org/llama.cpp#13729: Qwen3-30B-A3B Q4_K_M with 30 of its 48 repeating layers on the GPU,
/// a May 2025 build: `-ngl 30` under that era's placement (`legacy_placement`: the last 30
/// repeating layers, the output layer on the CPU). The bundled commit's `-ngl 31` puts the same
/// repeating layers on the GPU with the output there too.
#[test]
fn published_moe_split_to_the_printed_mib() {
    let doc: Value = serde_json::from_str(MOE_LOGS).unwrap();
    let mut sc = qwen3_moe();
    sc.inference.engine = Some(ServingEngine::LlamaCpp(LlamaCpp {
        legacy_placement: true,
        ..LlamaCpp::default()
    }));
    let b = buffers(&sc, &format!("{BASE} -ngl 30"));
    assert!(b.dev[0].layers == 30 && !b.output_on_gpu);
    let records = doc["records"].as_array().unwrap();
    assert_eq!(records.len(), 2);
    for r in records {
        let id = r["id"].as_str().unwrap();
        let printed = r["value"].as_f64().unwrap();
        let bytes = if id.ends_with("cuda0-model") {
            b.dev[0].model
        } else {
            b.host_model
        };
        let p = mib_printed(bytes);
        println!("{id:<58} printed {printed:>9.2}  estimate {p:>9.2}");
        assert!((p - printed).abs() <= 0.011, "{id}: {p} vs {printed}");
    }
    // Today's placement: -ngl 31 holds the same repeating layers, and the output layer too.
    let now = buffers(&qwen3_moe(), &format!("{BASE} -ngl 31"));
    assert!(now.dev[0].layers == 30 && now.output_on_gpu);
}

/// A prompt of at least 32 tokens copies each ubatch's host experts to the GPU, only those its
/// tokens use (1 − (1 − 8/128)^T of them: 87.3 % at 32 tokens, all at 512); a shorter one leaves
/// them to the CPU. The same 512-token prompt in 16 micro-batches of 32 uploads 16 × 87.3 % of
/// the experts, in one of 512 all of them once: the difference is that upload alone.
#[test]
fn a_prompt_uploads_the_experts_it_uses_or_leaves_them_to_the_cpu() {
    let sc = qwen3_moe();
    let at = |prompt: u32, flags: &str| {
        let (mut s, _) = apply(&sc, &format!("{BASE} -ngl 99 --cpu-moe {flags}")).unwrap();
        s.inference.prompt_tokens = prompt;
        let e = estimate(&s);
        (e.performance.throughput.ttft_s, e.llamacpp.unwrap())
    };
    let (t512, b) = at(512, "");
    let (t16x32, _) = at(512, "-ub 32 -b 32");
    let link = 32e9; // one direction of the RTX 4090's PCIe 4.0 x16 (64 GB/s both ways in the catalog)
    let (experts, dense) = (
        b.host_experts as f64,
        (b.host_model - b.host_embd - b.host_experts) as f64,
    );
    let share = 1.0 - (1.0 - 8.0 / 128.0_f64).powi(32);
    let expected = (16.0 * share - 1.0) * experts / link + 15.0 * dense / link;
    let got = t16x32 - t512;
    assert!((got / expected - 1.0).abs() < 0.01, "{got} vs {expected}");
    // Below 32 tokens op offload changes nothing: the CPU computes the host's share either way.
    let (t16, _) = at(16, "");
    let (t16_off, _) = at(16, "--no-op-offload");
    assert!((t16 - t16_off).abs() < 1e-12);
    // At 32 tokens without op offload the CPU reads them at 64 GB/s instead of uploading them.
    let (t32, _) = at(32, "");
    let (t32_off, _) = at(32, "--no-op-offload");
    assert!(t32_off < t32, "{t32_off} vs {t32}");
}

/// The MoE preset says what the estimate gives: CUDA0's model buffer and the experts kept on the
/// host to the printed 0.01 MiB, that it fits, and that 27 layers' experts on the host still fit
/// where 26 do not.
#[test]
fn the_moe_preset_notes_say_what_the_estimate_gives() {
    let id = "qwen3-30b-a3b-q4km-llamacpp-12gb";
    let s = vram_explorer::presets::bundled_scenario(id).unwrap();
    let e = estimate(&s);
    let b = e.llamacpp.unwrap();
    for quoted in [
        "CUDA0 model 7,808.92 MiB",
        "(9,715.50 MiB)",
        "--n-cpu-moe 28",
    ] {
        assert!(s.notes.contains(quoted), "{id}: {quoted}");
    }
    assert_eq!(
        (mib_printed(b.dev[0].model), mib_printed(b.host_ffn)),
        (7_808.92, 9_715.50)
    );
    assert!(e.memory.fits);
    let fits = |n: u32| {
        let mut t = s.clone();
        if let Some(vram_explorer::scenario::ServingEngine::LlamaCpp(l)) = &mut t.inference.engine {
            l.n_cpu_moe = n;
        }
        estimate(&t).memory.fits
    };
    assert!(fits(27) && !fits(26));
}
