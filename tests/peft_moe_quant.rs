//! LoRA/QLoRA, mixture-of-experts and quantized weights: published figures and invariants.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::path::PathBuf;

use vram_explorer::estimator::solver::{Solved, quant_fit};
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::import::from_hf_config;
use vram_explorer::scenario::{
    Checkpointing, GpuChoice, LoraTargets, Mode, ModelSpec, MoeSpec, OptimizerKind, PeftMethod,
    PrecisionMode, Scenario, TransformerDims, WeightFormat,
};

fn config(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", path.display()))
}

fn mixtral() -> ModelSpec {
    ModelSpec {
        transformer: TransformerDims {
            vocab: 32_000,
            max_positions: 32_768,
            ..TransformerDims::default()
        },
        moe: MoeSpec::mixtral(),
        ..ModelSpec::default()
    }
}

#[test]
fn mixtral_total_and_active_parameters() {
    let s = Scenario {
        model: mixtral(),
        ..Scenario::default()
    };
    let p = estimate(&s).model.params;
    // Mixtral-8x7B: 46.7B total, 12.9B active (Jiang et al. 2024 "Mixtral of Experts" §2: "47B" /
    // "13B"; model card 46.7B / 12.9B). Exact [D]: 2·V·h + L·(2h² + 2·h·kv·d + 8·3·h·f + 8h + 2h) + h.
    assert_eq!(p.total, 46_702_792_704.0);
    // Active: the 6 experts a token skips in each layer are left out: total − 32·6·3·h·f.
    assert_eq!(p.active, 12_879_925_248.0);
    assert_eq!((p.total / 1e8).round() / 10.0, 46.7);
    assert_eq!((p.active / 1e8).round() / 10.0, 12.9);
}

#[test]
fn mixtral_config_json_imports() {
    let imported = from_hf_config(&config("mixtral-8x7b.json"), &ModelSpec::default()).unwrap();
    assert_eq!(imported.model.moe.experts, 8);
    assert_eq!(imported.model.moe.top_k, 2);
    let s = Scenario {
        model: imported.model,
        ..Scenario::default()
    };
    let e = estimate(&s);
    assert_eq!(e.model.params.total, 46_702_792_704.0);
    assert_eq!(e.model.params.active, 12_879_925_248.0);
    assert!(e.memory.peak.get(Component::Weights).as_gib() > 86.0);
}

fn llama2_7b() -> ModelSpec {
    ModelSpec {
        transformer: TransformerDims {
            kv_heads: 32,
            ffn: 11_008,
            vocab: 32_000,
            max_positions: 4096,
            ..TransformerDims::default()
        },
        ..ModelSpec::default()
    }
}

fn training(model: ModelSpec) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        model,
        ..Scenario::default()
    };
    s.workload.seq_len = 512;
    s
}

#[test]
fn lora_r8_on_q_and_v_of_llama2_7b_trains_4_194_304_parameters() {
    // Hu et al. 2021 / PEFT `print_trainable_parameters()` on Llama-2-7B with r = 8, q_proj and v_proj:
    // "trainable params: 4,194,304 || all params: 6,742,609,920" (the total adds the adapters).
    let mut s = training(llama2_7b());
    s.peft.method = PeftMethod::Lora;
    let e = estimate(&s);
    assert_eq!(e.memory.params.trainable, 4_194_304.0);
    assert_eq!(e.model.params.total + 4_194_304.0, 6_742_609_920.0);
}

/// LLaMA-65B (Touvron et al. 2023 Table 2: h = 8192, 64 heads, 80 layers; config ffn 22,016).
fn llama_65b() -> ModelSpec {
    ModelSpec {
        transformer: TransformerDims {
            layers: 80,
            hidden: 8192,
            heads: 64,
            kv_heads: 64,
            ffn: 22_016,
            vocab: 32_000,
            max_positions: 2048,
            ..TransformerDims::default()
        },
        ..ModelSpec::default()
    }
}

#[test]
fn nf4_bits_per_parameter_with_and_without_double_quantization() {
    // Dettmers et al. 2023 §3: block 64 with FP32 constants: 32/64 = 0.5 bits per parameter; double
    // quantization (8-bit constants, blocks of 256): 8/64 + 32/(64·256) = 0.127 bits.
    let nf4 = |dq| WeightFormat::Nf4.bits_per_weight(128, 4096, dq).unwrap();
    assert_eq!(nf4(false), 4.5);
    assert!((nf4(true) - 4.127).abs() < 5e-4);
    assert_eq!(nf4(true), 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0));
}

#[test]
fn qlora_fine_tunes_a_65b_model_within_48_gb_and_full_16_bit_needs_over_780_gb() {
    // QLoRA abstract: "reduces the average memory requirements of finetuning a 65B parameter model
    // from >780GB of GPU memory to <48GB" (LoRA on all linear layers, r = 64, paged AdamW, gradient
    // checkpointing, micro-batch 1).
    let mut s = training(llama_65b());
    s.precision.mode = PrecisionMode::Uniform;
    s.strategies.checkpointing = Checkpointing::Full;
    s.peft.method = PeftMethod::Qlora;
    s.peft.rank = 64;
    s.peft.targets = LoraTargets::ALL_LINEAR;
    s.peft.paged_optimizer = true;
    let q = estimate(&s);
    assert!(
        q.memory.gpu_total.get() < 48e9,
        "{}",
        q.memory.gpu_total.as_gib()
    );
    let mut full = s.clone();
    full.peft.method = PeftMethod::Full;
    full.precision.mode = PrecisionMode::MasterWeights;
    let f = estimate(&full);
    assert!(
        f.memory.gpu_total.get() > 780e9,
        "{}",
        f.memory.gpu_total.as_gib()
    );
}

#[test]
fn frozen_base_has_no_gradients_or_optimizer_state_beyond_the_adapters() {
    let mut s = training(ModelSpec::default());
    s.precision.mode = PrecisionMode::Uniform;
    s.peft.method = PeftMethod::Lora;
    let e = estimate(&s);
    let adapters = e.memory.params.trainable;
    let phase = e
        .memory
        .phases
        .get(vram_explorer::estimator::Phase::OptimizerStep)
        .unwrap();
    // FP32 adapters: 4-byte gradients, two 4-byte Adam moments (+ step counters).
    assert!((phase.get(Component::Gradients).get() - 4.0 * adapters).abs() < 1.0);
    let opt = phase.get(Component::OptimizerStates).get();
    assert!(opt >= 8.0 * adapters && opt < 8.0 * adapters + 1e4, "{opt}");
    // LoRA's saved activations: below full fine-tuning's (frozen linears drop their inputs).
    let mut full = s.clone();
    full.peft.method = PeftMethod::Full;
    let fwd = |e: &vram_explorer::estimator::Estimate| {
        e.memory
            .phases
            .get(vram_explorer::estimator::Phase::Forward)
            .unwrap()
            .get(Component::Activations)
            .get()
    };
    assert!(fwd(&e) < fwd(&estimate(&full)));
}

#[test]
fn lora_never_needs_more_memory_than_full_fine_tuning() {
    for (layers, hidden, heads, rank, mode) in [
        (2, 256, 4, 8, PrecisionMode::Amp),
        (12, 768, 12, 64, PrecisionMode::Uniform),
        (32, 4096, 32, 8, PrecisionMode::MasterWeights),
        (4, 512, 8, 256, PrecisionMode::Amp),
    ] {
        for targets in [LoraTargets::default(), LoraTargets::ALL_LINEAR] {
            for method in [PeftMethod::Lora, PeftMethod::Qlora] {
                let mut s = training(ModelSpec::default());
                s.model.transformer.layers = layers;
                s.model.transformer.hidden = hidden;
                s.model.transformer.heads = heads;
                s.model.transformer.kv_heads = heads;
                s.model.transformer.ffn = hidden * 3;
                s.precision.mode = mode;
                s.peft = vram_explorer::scenario::Peft {
                    method,
                    rank,
                    targets,
                    ..Default::default()
                };
                let lora = estimate(&s).memory.gpu_total;
                s.peft.method = PeftMethod::Full;
                let full = estimate(&s).memory.gpu_total;
                assert!(lora <= full, "{layers} {hidden} {rank} {mode:?} {method:?}");
            }
        }
    }
}

#[test]
fn more_experts_never_less_memory_and_active_params_do_not_grow() {
    for mode in [Mode::Training, Mode::Inference] {
        let mut prev = (0.0, 0.0);
        for experts in [1, 2, 4, 8, 16, 64] {
            let mut s = Scenario {
                mode,
                model: mixtral(),
                ..Scenario::default()
            };
            s.model.transformer.layers = 4;
            s.model.moe.experts = experts;
            s.model.moe.ep = 2;
            let e = estimate(&s);
            let total = e.memory.gpu_total.get();
            assert!(total >= prev.0, "{experts} {mode:?}");
            // Active parameters change only by the router (4 layers × h × E) once top-2 is possible.
            let active = e.model.params.active - 4.0 * 4096.0 * f64::from(experts);
            if experts > 2 {
                assert_eq!(active, prev.1);
            }
            prev = (total, active);
        }
    }
}

#[test]
fn expert_parallelism_splits_the_experts_only() {
    let mut s = Scenario {
        model: mixtral(),
        ..Scenario::default()
    };
    s.parallel.dp = 2;
    let w = |s: &Scenario| estimate(s).memory.peak.get(Component::Weights).get();
    let one = w(&s);
    s.model.moe.ep = 2;
    let two = w(&s);
    // Half of the routed experts' weights leave each GPU: 32 layers · 4 experts · 3·h·f · 2 bytes.
    let experts = 32.0 * 4.0 * 3.0 * 4096.0 * 14336.0 * 2.0;
    assert!((one - two - experts).abs() < 1.0, "{}", one - two);
    assert!(estimate(&s).performance.communication.ep_time_s > 0.0);
}

#[test]
fn fewer_bits_per_weight_never_more_weight_memory() {
    let mut s = Scenario::default();
    s.parallel.tp = 1;
    let mut rows: Vec<(f64, f64)> = quant_fit(&s)
        .iter()
        .map(|q| (q.bits_per_weight.unwrap_or(16.0), q.weights.get()))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in rows.windows(2) {
        assert!(pair[0].1 <= pair[1].1, "{pair:?}");
    }
    // INT4 GPTQ of the 6.98 B layer-matrix weights of Llama-3-8B at 4 + 20/128 bits, embeddings and
    // head (2 · 128,256 · 4096) and norms in BF16.
    let int4 = quant_fit(&s)[2];
    assert_eq!(int4.format, WeightFormat::Int4Group);
    let m = estimate(&s).model;
    let mats = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0 + 3.0 * 4096.0 * 14336.0);
    let rest = m.params.total - mats;
    let expect = mats * (4.0 + 20.0 / 128.0) / 8.0 + rest * 2.0;
    assert!((int4.weights.get() - expect).abs() < 1.0);
}

#[test]
fn quant_fit_answers_which_format_fits_and_at_what_context() {
    // Llama-2-70B (h 8192, 80 layers, GQA 8, ffn 28,672) on a 24 GB RTX 4090.
    let mut s = Scenario::default();
    s.model.transformer = TransformerDims {
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        ffn: 28_672,
        vocab: 32_000,
        ..TransformerDims::default()
    };
    s.gpu = GpuChoice::Catalog(GpuId::Rtx4090);
    let rows = quant_fit(&s);
    assert!(
        rows.iter()
            .all(|r| !r.fits && r.max_context == Solved::NoneFits)
    );
    // On an 80 GB H100 every 4-bit format fits, with a context that shrinks as bits grow.
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    let rows = quant_fit(&s);
    let ctx = |f: WeightFormat| {
        rows.iter()
            .find(|r| r.format == f)
            .and_then(|r| r.max_context.value())
            .unwrap_or(0)
    };
    assert!(ctx(WeightFormat::Mxfp4) > ctx(WeightFormat::GgufQ4K));
    assert!(ctx(WeightFormat::GgufQ4K) > ctx(WeightFormat::GgufQ8_0));
    assert_eq!(ctx(WeightFormat::AsPrecision), 0);
    assert_eq!(rows[5].native, Some(true));
    assert_eq!(rows[6].native, Some(false));
    let _ = OptimizerKind::AdamW;
}

#[test]
fn presets_answer_their_questions() {
    use vram_explorer::presets::bundled_scenario;
    let e = |id: &str| estimate(&bundled_scenario(id).unwrap_or_else(|| panic!("{id}")));
    // QLoRA of a 70B model on one 48 GB GPU fits; LoRA of Llama-3-8B fits a 24 GB RTX 4090.
    assert!(e("llama2-70b-qlora-l40s").memory.fits);
    assert!(e("llama3-8b-lora-rtx4090").memory.fits);
    // Mixtral-8x7B over 2 × 80 GB with EP 2: fits, and the all-to-alls cost time.
    let mix = e("mixtral-8x7b-inference-2xh100");
    assert!(mix.memory.fits && mix.performance.communication.ep_time_s > 0.0);
    // A 4-bit 70B model does not fit one 24 GB card in any format, and fits two with TP 2.
    let mut s = bundled_scenario("llama2-70b-4bit-rtx4090").unwrap();
    assert!(quant_fit(&s).iter().all(|r| !r.fits));
    s.parallel.tp = 2;
    assert!(estimate(&s).memory.fits);
}

#[test]
fn a_batch_one_decode_of_mixtral_reads_the_active_experts_and_lora_skips_weight_gradients() {
    let mut s = Scenario {
        model: mixtral(),
        ..Scenario::default()
    };
    s.workload.micro_batch = 1;
    s.inference.prompt_tokens = 1;
    s.inference.generated_tokens = 1;
    let e = estimate(&s);
    let read = e.performance.decode.unwrap().bytes.get();
    // BF16: the active matrices (top-2 of 8 experts, the LM head) are read, not all 46.7 B: the active
    // parameters less the embedding table (looked up, not read whole) and the norms.
    let active = e.model.params.active - 32_000.0 * 4096.0;
    assert!(
        read > 2.0 * active * 0.999 && read < 2.0 * active * 1.01,
        "{read}"
    );
    // LoRA without recomputation: 3 × forward − the frozen weight gradients (≈ 2 × forward).
    let mut t = training(ModelSpec::default());
    let full = estimate(&t).performance.model_flops;
    t.peft.method = PeftMethod::Lora;
    let lora = estimate(&t).performance.model_flops;
    let ratio = lora / full;
    assert!(ratio > 0.66 && ratio < 0.72, "{ratio}");
}

#[test]
fn hybrid_shard_is_zero_3_within_a_node() {
    use vram_explorer::scenario::ZeroStage;
    let mut s = training(ModelSpec::default());
    s.strategies.zero = ZeroStage::Stage3;
    s.parallel.dp = 8;
    let node = estimate(&s).memory;
    s.parallel.dp = 64;
    let full = estimate(&s).memory;
    s.strategies.hybrid_shard = true;
    let hybrid = estimate(&s).memory;
    // 64 GPUs in 8 nodes: HYBRID_SHARD holds what FULL_SHARD over one node of 8 holds, and joins
    // two NCCL communicators (the node's shard group and the replica group of 8) instead of one.
    assert_eq!(hybrid.reserved_peak(), node.reserved_peak());
    assert!(full.reserved_peak() < hybrid.reserved_peak());
    let nccl = |m: &vram_explorer::estimator::MemoryEstimate| {
        m.peak
            .get(vram_explorer::estimator::Component::NcclBuffers)
            .get()
    };
    let one = s.overheads.nccl_mib_per_communicator * 1_048_576.0;
    assert_eq!(nccl(&node), one);
    assert_eq!(nccl(&hybrid), 2.0 * one);
    assert_eq!(ZeroStage::Stage3.fsdp_name(), Some("FULL_SHARD"));
    assert_eq!(ZeroStage::Stage2.fsdp_name(), Some("SHARD_GRAD_OP"));
    assert_eq!(ZeroStage::None.fsdp_name(), Some("NO_SHARD"));
    assert_eq!(ZeroStage::Stage1.fsdp_name(), None);
}

#[test]
fn zero_shards_stored_experts_over_the_expert_data_parallel_group() {
    // DeepSpeed-MoE: with EP 2 each GPU stores half of the routed experts, and their optimizer states
    // are sharded over DP/ep ranks instead of DP, so per GPU the ZeRO-1 optimizer states do not change
    // with EP (Ψ_e/ep ÷ DP/ep = Ψ_e/DP), while the unsharded weights do shrink.
    let mut s = training(mixtral());
    s.parallel.dp = 8;
    s.strategies.zero = vram_explorer::scenario::ZeroStage::Stage1;
    let part = |s: &Scenario, c: Component| {
        estimate(s)
            .memory
            .phases
            .peak()
            .map(|(_, b)| b.get(c).get())
    };
    let states_one = part(&s, Component::OptimizerStates).expect("phases");
    let weights_one = part(&s, Component::Weights).expect("phases");
    s.model.moe.ep = 2;
    let states_two = part(&s, Component::OptimizerStates).expect("phases");
    let weights_two = part(&s, Component::Weights).expect("phases");
    // Equal up to Adam's 4-byte step counter per stored parameter tensor (fewer expert tensors with EP).
    assert!(
        (states_one - states_two).abs() <= 1e-6 * states_one,
        "{states_one} vs {states_two}"
    );
    assert!(weights_two < weights_one);
}

#[test]
fn expert_parallel_degrees_that_do_not_fit_the_layout_are_diagnosed() {
    use vram_explorer::estimator::Diagnostic;
    let mut s = training(mixtral());
    s.parallel.dp = 2;
    s.model.moe.ep = 2;
    let d = estimate(&s).diagnostics;
    assert!(!d.contains(Diagnostic::ExpertParallelExceedsDp));
    assert!(!d.contains(Diagnostic::ExpertParallelDoesNotDivideExperts));
    s.model.moe.ep = 3;
    let d = estimate(&s).diagnostics;
    assert!(d.contains(Diagnostic::ExpertParallelExceedsDp));
    assert!(d.contains(Diagnostic::ExpertParallelDoesNotDivideExperts));
    // EP 4 within DP 6 but not dividing it: no whole expert-data-parallel group.
    s.parallel.dp = 6;
    s.model.moe.ep = 4;
    let d = estimate(&s).diagnostics;
    assert!(d.contains(Diagnostic::ExpertParallelExceedsDp));
    assert!(!d.contains(Diagnostic::ExpertParallelDoesNotDivideExperts));
    s.model.moe.ep = 2;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::ExpertParallelExceedsDp)
    );
    // Hybrid sharding shards ZeRO within a node; EP still comes out of all DP ranks: EP 8 over
    // DP 16 on nodes of 4 is a whole layout.
    (s.parallel.dp, s.parallel.gpus_per_node, s.model.moe.ep) = (16, 4, 8);
    s.strategies.zero = vram_explorer::scenario::ZeroStage::Stage3;
    s.strategies.hybrid_shard = true;
    let d = estimate(&s).diagnostics;
    assert!(!d.contains(Diagnostic::ExpertParallelExceedsDp));
}
