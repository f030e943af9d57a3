//! Published memory figures (shared/reference/formulas-hardware-sources.md §1.1, §1.2, §1.4, §5):
//! ZeRO Figure 1 and Table 1, Korthikanti Table 2 per-layer activations (Megatron profile), KV cache
//! per token, and the Hugging Face BERT-large V100 table where the scenario can express it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::estimator::memory::activations::{layer, score_mask, sizes};
use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::estimator::memory::inference::kv_bytes_per_token;
use vram_explorer::estimator::memory::states::zero_model_states;
use vram_explorer::estimator::{Diagnostics, estimate, model};
use vram_explorer::scenario::{
    ArchKind, AttentionKernel, Checkpointing, Dtype, FfnKind, Mode, NormKind, OptimizerKind,
    PositionKind, PrecisionMode, Profile, Scenario, ZeroStage,
};
use vram_explorer::units::GIB;

/// ZeRO model states in GB (10^9) for Ψ parameters, K = 12 (2 + 2 + 12 bytes/param).
fn zero_gb(psi: f64, stage: ZeroStage, nd: f64) -> f64 {
    let (w, m, g, o) = zero_model_states(psi, 2.0, 4.0, 2.0, 8.0, stage, nd);
    (w + m + g + o) / 1e9
}

#[test]
fn zero_figure_1() {
    // Ψ = 7.5B, N_d = 64: 120 GB → 31.4 → 16.6 → 1.88 GB (ZeRO Figure 1).
    let psi = 7.5e9;
    assert_eq!(zero_gb(psi, ZeroStage::None, 64.0), 120.0);
    assert!((zero_gb(psi, ZeroStage::Stage1, 64.0) - 31.4).abs() < 0.05);
    assert!((zero_gb(psi, ZeroStage::Stage2, 64.0) - 16.6).abs() < 0.05);
    assert!((zero_gb(psi, ZeroStage::Stage3, 64.0) - 1.88).abs() < 0.005);
}

#[test]
fn zero_table_1() {
    // (N_d, [7.5B os, os+g, os+g+p, 128B ..., 1T ...]) as printed; the paper truncates some cells,
    // so the tolerance is one unit of the last printed digit.
    let rows: [(f64, [f64; 9]); 6] = [
        (
            1.0,
            [
                120.0, 120.0, 120.0, 2048.0, 2048.0, 2048.0, 16000.0, 16000.0, 16000.0,
            ],
        ),
        (
            4.0,
            [
                52.5, 41.3, 30.0, 896.0, 704.0, 512.0, 7000.0, 5500.0, 4000.0,
            ],
        ),
        (
            16.0,
            [35.6, 21.6, 7.5, 608.0, 368.0, 128.0, 4750.0, 2875.0, 1000.0],
        ),
        (
            64.0,
            [31.4, 16.6, 1.88, 536.0, 284.0, 32.0, 4187.0, 2218.0, 250.0],
        ),
        (
            256.0,
            [30.4, 15.4, 0.47, 518.0, 263.0, 8.0, 4046.0, 2054.0, 62.5],
        ),
        (
            1024.0,
            [30.1, 15.1, 0.12, 513.0, 257.0, 2.0, 4011.0, 2013.0, 15.6],
        ),
    ];
    let models = [7.5e9, 128e9, 1e12];
    let stages = [ZeroStage::Stage1, ZeroStage::Stage2, ZeroStage::Stage3];
    for (nd, cells) in rows {
        for (i, printed) in cells.iter().enumerate() {
            let got = zero_gb(models[i / 3], stages[i % 3], nd);
            let digit = last_digit_unit(*printed);
            assert!(
                (got - printed).abs() <= digit * 1.0001,
                "N_d {nd} cell {i}: {got} vs {printed}"
            );
        }
    }
}

/// One unit in the last printed digit (1 for integers, 0.1 for one decimal…).
fn last_digit_unit(x: f64) -> f64 {
    for (unit, scale) in [(0.01, 100.0), (0.1, 10.0)] {
        if (x * scale).fract().abs() < 1e-9 && (x * scale / 10.0).fract().abs() > 1e-9 {
            return unit;
        }
    }
    1.0
}

/// A Korthikanti Table 3 model as a Megatron-profile scenario: GeLU 4h, MHA, 16-bit activations,
/// 1-byte dropout masks, materialised attention, s = 2048, b = 1.
fn megatron(heads: u32, hidden: u32, tp: u32, sp: bool) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) =
        (8, hidden, heads, heads, 4 * hidden, 51200);
    (t.ffn_kind, t.norm, t.positions, t.bias, t.arch) = (
        FfnKind::Gelu,
        NormKind::LayerNorm,
        PositionKind::Learned,
        true,
        ArchKind::Decoder,
    );
    s.implementation.profile = Profile::Megatron;
    s.precision.mode = PrecisionMode::MasterWeights;
    s.precision.compute = Dtype::Bf16;
    s.strategies.attention = AttentionKernel::Materialized;
    s.workload.dropout = true;
    s.workload.micro_batch = 1;
    s.workload.seq_len = 2048;
    s.parallel.tp = tp;
    s.parallel.sequence_parallel = sp;
    s
}

/// Per-layer activation GiB: (no recompute, selective).
fn korthikanti_layer(s: &Scenario) -> (f64, f64) {
    let mut d = Diagnostics::default();
    let m = model::resolve(&s.model, &mut d);
    let c = Ctx::new(s, &m, &mut d);
    let z = sizes(&c, &m, c.b, c.s);
    let l = layer(&c, &m, &z);
    (l.total() / GIB, l.without_scores(score_mask(&c, &z)) / GIB)
}

#[test]
fn korthikanti_table_2_per_layer() {
    // §1.2 derived table [D]: (a, h) → no-par, TP, TP+SP, TP+sel, TP+SP+sel, full; t = 8.
    let rows: [(u32, u32, [f64; 6]); 4] = [
        (64, 6144, [1.6484, 0.3086, 0.2061, 0.1523, 0.0498, 0.0234]),
        (96, 12288, [2.6719, 0.5391, 0.3340, 0.3047, 0.0996, 0.0469]),
        (128, 20480, [3.8281, 0.8203, 0.4785, 0.5078, 0.1660, 0.0781]),
        (160, 25600, [4.7852, 1.0254, 0.5981, 0.6348, 0.2075, 0.0977]),
    ];
    for (a, h, want) in rows {
        let (nopar, _) = korthikanti_layer(&megatron(a, h, 1, false));
        let (tp, tp_sel) = korthikanti_layer(&megatron(a, h, 8, false));
        let (tp_sp, tp_sp_sel) = korthikanti_layer(&megatron(a, h, 8, true));
        // Full recomputation keeps the layer input, 2sbh.
        let full = 2.0 * 2048.0 * f64::from(h) / GIB;
        let got = [nopar, tp, tp_sp, tp_sel, tp_sp_sel, full];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-4, "a={a} h={h}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn kv_cache_per_token() {
    // vLLM §3: OPT-13B, 2 × 5120 × 40 × 2 = 819,200 B/token; 1.6 GB per 2048-token request.
    assert_eq!(kv_bytes_per_token(40.0, 40.0, 128.0, 2.0), 819_200.0);
    assert!((kv_bytes_per_token(40.0, 40.0, 128.0, 2.0) * 2048.0 / 1e9 - 1.68).abs() < 0.01);
    // Llama-2-70B, GQA 8 KV heads: 327,680 B/token.
    assert_eq!(kv_bytes_per_token(80.0, 8.0, 128.0, 2.0), 327_680.0);
    // kipply 52B (d_model 8192 = 64 × 128, 64 layers): 2,097,152 B/token.
    assert_eq!(kv_bytes_per_token(64.0, 64.0, 128.0, 2.0), 2_097_152.0);
}

#[test]
fn kv_cache_through_estimate() {
    // Llama-2-70B, batch 1, 4096 tokens in BF16 → 1.25 GiB (§1.4 [D]).
    let mut s = Scenario::default();
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (80, 8192, 64, 8, 28672, 32000);
    s.inference.prompt_tokens = 4095;
    s.inference.generated_tokens = 1;
    let e = estimate(&s);
    let kv = e
        .memory
        .phases
        .get(vram_explorer::estimator::Phase::Decode)
        .map(|b| b.get(kv_component()));
    assert_eq!(kv.map(|b| b.as_gib()), Some(1.25));
}

fn kv_component() -> vram_explorer::estimator::Component {
    vram_explorer::estimator::Component::KvCache
}

/// BERT-large-uncased sequence classification (335M), seq 512, V100-16GB, fp32 eager, dropout on.
fn bert_large(batch: u32, ga: u32, gc: bool, amp: bool, opt: OptimizerKind) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (
        t.layers,
        t.hidden,
        t.heads,
        t.kv_heads,
        t.ffn,
        t.vocab,
        t.max_positions,
        t.token_types,
    ) = (24, 1024, 16, 16, 4096, 30522, 512, 2);
    (
        t.ffn_kind,
        t.norm,
        t.positions,
        t.bias,
        t.arch,
        t.pooler,
        t.mlm_head,
        t.tied_embeddings,
        t.softmax_fp32,
    ) = (
        FfnKind::Gelu,
        NormKind::LayerNorm,
        PositionKind::Learned,
        true,
        ArchKind::Encoder,
        true,
        false,
        true,
        false,
    );
    s.workload.micro_batch = batch;
    s.workload.grad_accum_steps = ga;
    s.workload.seq_len = 512;
    s.workload.dropout = true;
    s.strategies.attention = AttentionKernel::Materialized;
    s.strategies.checkpointing = if gc {
        Checkpointing::Full
    } else {
        Checkpointing::None
    };
    s.precision.compute = if amp { Dtype::Fp16 } else { Dtype::Fp32 };
    s.precision.mode = if amp {
        PrecisionMode::Amp
    } else {
        PrecisionMode::Uniform
    };
    s.optimizer.kind = opt;
    // 2022 stack: HF Trainer's AdamW stepped parameter by parameter (no foreach temporaries).
    s.optimizer.foreach = false;
    // The measured context on that machine: 1343 MB "CUDA context only" row. A 2022 stack loads
    // its kernel modules eagerly, so that figure already holds them.
    s.overheads.cuda_context_mib = 1343.0;
    s.overheads.cuda_kernels_mib = 0.0;
    s
}

#[test]
fn hf_bert_large_v100_table() {
    // (run, nvidia-smi MiB) from HF `model_memory_anatomy.md` / `perf_train_gpu_one` (§5 item 9).
    // nvidia-smi shows the caching allocator's reserved memory, not live tensors; the estimator adds
    // the default 5 % reserve only. The batch-1 runs (small activations) agree within 5 %; the
    // batch-4 runs read 15–20 % higher than our tensor peak + context + 5 %, which is what reserved-
    // but-free segments cost a deep eager backward (ZeRO §3.2 reports > 30 % in extreme cases).
    // Tolerance: 5 % for batch 1, 20 % for batch 4 (docs/model.md §8).
    let cases = [
        (
            "bs4 fp32 AdamW",
            bert_large(4, 1, false, false, OptimizerKind::AdamW),
            14949.0,
        ),
        (
            "bs1 GA4",
            bert_large(1, 4, false, false, OptimizerKind::AdamW),
            8681.0,
        ),
        (
            "bs1 GA4 GC",
            bert_large(1, 4, true, false, OptimizerKind::AdamW),
            6775.0,
        ),
        (
            "bs4 fp16 AMP",
            bert_large(4, 1, false, true, OptimizerKind::AdamW),
            13939.0,
        ),
        (
            "bs1 GA4 GC fp16",
            bert_large(1, 4, true, true, OptimizerKind::AdamW),
            7275.0,
        ),
        (
            "bs4 Adafactor",
            bert_large(4, 1, false, false, OptimizerKind::Adafactor),
            12295.0,
        ),
        (
            "bs4 8-bit Adam",
            bert_large(4, 1, false, false, OptimizerKind::Adam8bit),
            13085.0,
        ),
    ];
    println!(
        "{:<18} {:>10} {:>10} {:>8}",
        "run", "est MiB", "HF MiB", "error"
    );
    let mut worst: f64 = 0.0;
    for (name, s, want) in cases {
        let e = estimate(&s);
        let got = e.memory.gpu_total.as_mib();
        let err = (got - want) / want;
        println!("{name:<18} {got:>10.0} {want:>10.0} {:>7.1}%", err * 100.0);
        let tol = if s.workload.micro_batch == 1 {
            0.05
        } else {
            0.20
        };
        assert!(err.abs() < tol, "{name}: {:.1}%", err * 100.0);
        worst = worst.max(err.abs());
    }
    println!("worst {:.1}%", worst * 100.0);
}

fn llama2_7b(mode: Mode) -> Scenario {
    let mut s = Scenario {
        mode,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 32, 11008, 32000);
    s
}

fn print_estimate(label: &str, s: &Scenario) -> f64 {
    let e = estimate(s);
    let m = &e.memory;
    print!("{label:<44}");
    for (c, b) in m.peak.iter() {
        if b.get() > 0.0 {
            print!(" {}={:.2}", c.key(), b.as_gib());
        }
    }
    println!(
        " | phase {:?} tensor {:.2} GiB total {:.2} GiB",
        m.peak_phase.map(|p| p.key()),
        m.tensor_peak.as_gib(),
        m.gpu_total.as_gib()
    );
    m.tensor_peak.as_gib()
}

/// The two cross-tool cases of shared/reference/peers.md §12 (numbers quoted in docs/model.md §9).
#[test]
fn peers_cross_tool_cases() {
    // T: Llama-2-7B full fine-tune, Adam, bf16 mixed, b = 1, s = 2048, one GPU, no recompute.
    let mut t = llama2_7b(Mode::Training);
    t.workload.seq_len = 2048;
    t.optimizer.kind = OptimizerKind::Adam;
    t.precision.mode = PrecisionMode::Amp;
    t.precision.compute = Dtype::Bf16;
    let hf_flash = print_estimate("T HF autocast bf16, SDPA flash", &t);
    t.strategies.attention = AttentionKernel::Materialized;
    let hf_eager = print_estimate("T HF autocast bf16, eager attention", &t);
    t.strategies.attention = AttentionKernel::Flash;
    t.implementation.profile = Profile::Megatron;
    t.precision.mode = PrecisionMode::MasterWeights;
    t.optimizer.foreach = false; // Megatron steps with a fused Adam kernel
    let mg = print_estimate("T Megatron 2+4+12 (FP32 main_grad), flash", &t);
    t.strategies.attention = AttentionKernel::Materialized;
    t.workload.dropout = true;
    print_estimate("T Megatron 2+4+12 (FP32 main_grad), no flash, dropout", &t);
    assert!(hf_flash < hf_eager && mg < hf_flash);
    // I: inference bf16, b = 8, prompt 2048 + 256 generated, A100-80GB, last-position logits.
    let mut i = llama2_7b(Mode::Inference);
    i.precision.mode = PrecisionMode::Uniform;
    i.precision.compute = Dtype::Bf16;
    i.precision.kv_cache = Dtype::Bf16;
    i.workload.micro_batch = 8;
    i.inference.prompt_tokens = 2048;
    i.inference.generated_tokens = 256;
    i.gpu = vram_explorer::scenario::GpuChoice::Catalog(vram_explorer::hardware::GpuId::A100Sxm80);
    let inf = print_estimate("I HF bf16 b8 2048+256, flash", &i);
    // KV at the last step: 8 × 2304 × 524,288 B = 9 GiB (= 9,216 MiB, the closed form).
    let kv = estimate(&i)
        .memory
        .phases
        .get(vram_explorer::estimator::Phase::Decode)
        .map(|b| b.get(kv_component()).as_gib());
    assert_eq!(kv, Some(9.0));
    assert!(inf > 21.0 && inf < 23.0);
}
