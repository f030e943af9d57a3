//! Published numbers for the bandwidth/time side (sources in docs/bandwidth.md and
//! ../shared/reference/formulas-hardware-sources.md §1.5, §1.6, §5), and property tests.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use proptest::prelude::*;
use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::comm::{
    allgather_bus_factor, allreduce_bus_factor, bubble_fraction, one_bit_ratio,
};
use vram_explorer::estimator::performance::cost::megatron_training_time_s;
use vram_explorer::estimator::performance::roofline::ridge_point;
use vram_explorer::estimator::performance::{Bound, Performance};
use vram_explorer::hardware::{GpuId, capacity, gpu, usable};
use vram_explorer::scenario::*;

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs()
}

/// A GELU/LayerNorm decoder (GPT-3 / Anthropic-52B style) given by its dimensions.
fn gpt_dims(layers: u32, hidden: u32, heads: u32, vocab: u32) -> ModelSpec {
    ModelSpec {
        transformer: TransformerDims {
            layers,
            hidden,
            heads,
            kv_heads: heads,
            head_dim: 0,
            ffn: 4 * hidden,
            ffn_kind: FfnKind::Gelu,
            vocab,
            positions: PositionKind::Learned,
            max_positions: 2048,
            bias: true,
            norm: NormKind::LayerNorm,
            ..TransformerDims::default()
        },
        ..ModelSpec::default()
    }
}

fn custom_gpu(tflops_16: f64, bandwidth_gb_s: f64) -> GpuChoice {
    GpuChoice::Custom(CustomGpu {
        tflops_16,
        bandwidth_gb_s,
        memory_gb: 1000.0,
        ..CustomGpu::default()
    })
}

/// kipply's 52B (64 layers, d_model 8192) decoding one token on kipply's A100 (312 TFLOP/s, 1.5 TB/s).
fn kipply_52b(batch: u32) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        model: gpt_dims(64, 8192, 64, 1000),
        gpu: custom_gpu(312.0, 1500.0),
        ..Scenario::default()
    };
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.workload.micro_batch = batch;
    s.inference.prompt_tokens = 1;
    s.inference.generated_tokens = 1;
    s.timing.compute_efficiency = 1.0;
    s.timing.memory_efficiency = 1.0;
    s
}

#[test]
fn kipply_flops_to_bytes_is_208() {
    assert_eq!(ridge_point(312e12, 1.5e12), 208.0);
    let p = estimate(&kipply_52b(1)).performance;
    assert!(close(p.decode.unwrap().ridge, 208.0, 1e-12));
}

#[test]
fn kipply_52b_forward_is_69_ms_memory_bound() {
    // 2 bytes × 12 · 64 · 8192² weights ÷ 1.5e12 B/s = 68.7 ms (kipply; reference §5 item 6).
    let p = estimate(&kipply_52b(1)).performance;
    let d = p.decode.unwrap();
    assert_eq!(d.bound, Bound::Memory);
    assert!(close(d.memory_time_s, 0.0687, 0.01), "{}", d.memory_time_s);
    // "it'll take the same amount of time to compute for up to 208 tokens"
    let below = estimate(&kipply_52b(200)).performance.decode.unwrap();
    let above = estimate(&kipply_52b(216)).performance.decode.unwrap();
    assert_eq!(below.bound, Bound::Memory);
    assert_eq!(above.bound, Bound::Compute);
}

#[test]
fn ridge_points_of_the_catalog() {
    // 312 / 2.039 ≈ 153 and 989.4 / 3.35 ≈ 295 FLOP/B (reference §1.5, [D]).
    let a100 = gpu(GpuId::A100Sxm80).ridge(Dtype::Bf16).unwrap();
    let h100 = gpu(GpuId::H100Sxm).ridge(Dtype::Bf16).unwrap();
    assert!((a100 - 153.0).abs() < 0.5, "{a100}");
    assert!((h100 - 295.0).abs() < 0.5, "{h100}");
}

/// A datasheet's "80 GB" of HBM is 80 GiB (JEDEC; nvidia-smi shows 81,559 MiB on an H100), and
/// the fit is measured against what the CUDA runtime lets a process allocate: 79.19 GiB on an
/// H100 80GB, 23.58 GiB on an RTX 3090 (the totals vLLM's logs print).
#[test]
fn capacities_are_binary_and_usable_is_what_the_runtime_reports() {
    const GIB: f64 = 1_073_741_824.0;
    assert_eq!(capacity(GpuId::H100Sxm).get(), 80.0 * GIB);
    assert_eq!(capacity(GpuId::TpuV4).get(), 32.0 * GIB);
    assert!((usable(GpuId::H100Sxm).get() / GIB - 79.19).abs() < 1e-9);
    assert!((usable(GpuId::Rtx3090).get() / GIB - 23.58).abs() < 1e-9);
    // Elsewhere on NVIDIA the mean reserve of those two cards; no reserve is known off NVIDIA.
    assert!((usable(GpuId::A100Sxm80).get() / GIB - (80.0 - 0.44)).abs() < 1e-9);
    assert_eq!(usable(GpuId::TpuV4), capacity(GpuId::TpuV4));
    // Metal's default working set on a 192 GB M2 Ultra: 144 GiB.
    assert_eq!(usable(GpuId::AppleM2Ultra).get(), 144.0 * GIB);
    // A scenario's capacity is the usable memory.
    let e = estimate(&Scenario::default());
    assert_eq!(e.memory.capacity, usable(GpuId::H100Sxm));
}

#[test]
fn nccl_bus_factors() {
    assert_eq!(allreduce_bus_factor(8), 1.75);
    assert_eq!(allgather_bus_factor(8), 0.875);
}

#[test]
fn one_bit_adam_overall_ratio() {
    // DeepSpeed 1-bit Adam blog: 16× in the compression stage; 4.92× at 15 % warm-up, 3.37× at 25 %.
    assert!((one_bit_ratio(0.15, 16.0) - 4.92).abs() < 0.005);
    assert!((one_bit_ratio(0.25, 16.0) - 3.37).abs() < 0.005);
    assert_eq!(one_bit_ratio(0.0, 16.0), 16.0);
}

#[test]
fn pipeline_bubble() {
    assert_eq!(bubble_fraction(8, 96, 1), 7.0 / 96.0);
    assert_eq!(bubble_fraction(8, 96, 2), 7.0 / 192.0);
}

fn gpt3_training(micro_batch: u32, checkpointing: Checkpointing) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        model: gpt_dims(96, 12288, 96, 51200),
        gpu: GpuChoice::Catalog(GpuId::A100Sxm80),
        ..Scenario::default()
    };
    s.workload.micro_batch = micro_batch;
    s.workload.seq_len = 2048;
    s.strategies.checkpointing = checkpointing;
    s
}

#[test]
fn korthikanti_model_flops() {
    // Korthikanti et al. 2022 App. A Eq. 7: 72·B·L·s·h²·(1 + s/6h + V/12hL) per iteration.
    let (b, l, s, h, v) = (4.0, 96.0, 2048.0, 12288.0, 51200.0);
    let want = 72.0 * b * l * s * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * h * l));
    let p = estimate(&gpt3_training(4, Checkpointing::None)).performance;
    assert!(
        close(p.model_flops, want, 1e-9),
        "{} vs {want}",
        p.model_flops
    );
    assert!(close(p.hardware_flops, want, 1e-9));
}

#[test]
fn korthikanti_selective_recompute_ratio() {
    // Hardware/model FLOPs with selective recomputation ≈ 1 + s/6h = 1.0278 for GPT-3 (Eq. 8 vs 7;
    // the exact ratio with the vocabulary term is 1.0269).
    let p = estimate(&gpt3_training(1, Checkpointing::Selective)).performance;
    let ratio = p.hardware_flops / p.model_flops;
    assert!((ratio - 1.0278).abs() < 0.002, "{ratio}");
    // Full recomputation adds one forward: 96 vs 72 (Narayanan et al. 2021 Eq. 3) = 4/3 on the layers.
    let full = estimate(&gpt3_training(1, Checkpointing::Full)).performance;
    let ratio = full.hardware_flops / full.model_flops;
    assert!((ratio - 4.0 / 3.0).abs() < 0.01, "{ratio}");
}

#[test]
fn megatron_time_to_train_gpt3() {
    // Narayanan et al. 2021 Eq. 4: 175B, 300B tokens, 1024 A100 at 140 TFLOP/s → ~34 days.
    let days = megatron_training_time_s(300e9, 175e9, 1024.0, 140e12) / 86400.0;
    assert!((days - 34.0).abs() < 0.5, "{days}");
}

#[test]
fn megatron_setup_through_the_estimator() {
    // The same run through the step model: TP 8 × PP 8 × DP 16, global batch 1536, full recompute,
    // as Megatron-LM ran it in 2021 (materialised attention, no DP overlap, 25 GB/s per GPU
    // between nodes). The parts model (docs/time-model.md, calibrated on Narayanan et al. 2021
    // Table 1, whose 145B row reaches 148 TFLOP/s: 34 × 140/148 ≈ 32 days) lands near Eq. 4's
    // 34 days at 140 TFLOP/s (31.4 days on 3 December 2026).
    let mut s = gpt3_training(1, Checkpointing::Full);
    s.strategies.attention = vram_explorer::scenario::AttentionKernel::Materialized;
    s.timing.comm_overlap = 0.0;
    s.timing.internode_gb_s = 25.0;
    s.parallel.tp = 8;
    s.parallel.pp = 8;
    s.parallel.dp = 16;
    s.workload.grad_accum_steps = 96;
    s.strategies.zero = ZeroStage::Stage1;
    s.timing.token_budget = 300e9;
    let p = estimate(&s).performance;
    let days = p.cost.time_s / 86400.0;
    assert!((29.0..40.0).contains(&days), "{days} days");
    assert!(close(
        p.cost.gpu_hours,
        p.cost.time_s * 1024.0 / 3600.0,
        1e-9
    ));
}

#[test]
fn one_bit_compression_shrinks_dp_traffic() {
    let mut s = gpt3_training(1, Checkpointing::Full);
    s.parallel.tp = 8;
    s.parallel.dp = 16;
    s.precision.mode = PrecisionMode::MasterWeights;
    let plain = estimate(&s).performance.communication;
    s.strategies.one_bit_comm = true;
    s.strategies.one_bit_warmup_fraction = 0.15;
    let compressed = estimate(&s).performance.communication;
    assert!((compressed.compression_ratio - 4.92).abs() < 0.005);
    let r = plain.dp_bytes.get() / compressed.dp_bytes.get();
    assert!(close(r, compressed.compression_ratio, 1e-9));
}

#[test]
fn kv_cache_bytes_per_token() {
    // Reference §1.4: Llama-3-8B (32 layers, 8 KV heads, d_head 128) 131,072 B/token in 16 bit [D];
    // OPT-13B (40 layers, 40 heads, d 5120) 819,200 B/token (vLLM §3 [T]).
    let p = estimate(&Scenario::default()).performance;
    assert_eq!(p.throughput.kv_bytes_per_token.get(), 131_072.0);
    let mut opt = Scenario {
        model: gpt_dims(40, 5120, 40, 50272),
        ..Scenario::default()
    };
    opt.precision.kv_cache = Dtype::Fp16;
    let p = estimate(&opt).performance;
    assert_eq!(p.throughput.kv_bytes_per_token.get(), 819_200.0);
    // With TP 8 each GPU holds 1 of Llama-3-8B's 8 KV heads.
    let mut tp = Scenario::default();
    tp.parallel.tp = 8;
    let p = estimate(&tp).performance;
    assert_eq!(p.throughput.kv_bytes_per_token.get(), 131_072.0 / 8.0);
}

/// Llama-3-8B full training at batch 8 on one H100: it does not fit in 80 GB.
fn spilling(tier: SecondTier) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.workload.micro_batch = 8;
    s.strategies.second_tier = tier;
    s.strategies.second_tier_gib = 2048.0;
    s
}

#[test]
fn spill_slowdown_comes_from_the_tier_bandwidth() {
    let host = estimate(&spilling(SecondTier::Host));
    let cxl = estimate(&spilling(SecondTier::Cxl));
    let spill = host.memory.offloaded.second_tier.get();
    assert!(spill > 0.0, "the scenario should spill");
    let (h, c) = (host.performance.offload, cxl.performance.offload);
    // Host: the H100's PCIe 5.0 x16, 64 GB/s per direction, pinned. CXL 2.0: 64 GB/s per direction.
    assert_eq!(h.tier_bandwidth.as_gb_per_s(), 64.0);
    assert_eq!(c.tier_bandwidth.as_gb_per_s(), 64.0);
    assert!(close(h.tier_time_s, h.tier_bytes.get() / 64e9, 1e-12));
    assert!(h.tier_slowdown > 1.0);
    // Pageable host memory slows the tier by the pageable fraction.
    let mut pageable = spilling(SecondTier::Host);
    pageable.timing.pinned_host_memory = false;
    let pg = estimate(&pageable).performance.offload;
    assert!(close(
        pg.tier_time_s * pageable.timing.pageable_fraction,
        h.tier_time_s,
        1e-12
    ));
    assert!(pg.tier_slowdown > h.tier_slowdown);
}

#[test]
fn photonic_links_shorten_a_network_bound_step() {
    let mut s = gpt3_training(1, Checkpointing::Selective);
    s.parallel.tp = 8;
    s.parallel.pp = 8;
    s.parallel.dp = 16;
    s.timing.internode_gb_s = 12.5;
    let p = estimate(&s).performance;
    let pr = p.projections;
    assert!(p.communication.dp_internode);
    assert!(pr.photonic_comm_s < p.step.communication_s);
    assert!(pr.photonic_step_s < p.step.total_s);
    assert!(pr.photonic_step_s > 0.0);
}

fn finite_everywhere(p: &Performance) -> bool {
    let text = format!("{p:?}");
    !text.contains("NaN") && !text.contains("inf")
}

fn arb_scenario() -> impl Strategy<Value = Scenario> {
    (
        (any::<bool>(), 1u32..64, 1u32..8192, 1u32..8, 1u32..4),
        (1u32..4, 0u8..4, 0u8..3, any::<bool>(), 0u8..3),
        (1.0f64..5000.0, 1.0f64..2000.0, 1.0f64..200.0),
    )
        .prop_map(
            |((train, mb, seq, dp, tp), (pp, ck, zero, one_bit, tier), (tf, bw, mem))| {
                let mut s = Scenario {
                    mode: if train {
                        Mode::Training
                    } else {
                        Mode::Inference
                    },
                    gpu: GpuChoice::Custom(CustomGpu {
                        tflops_16: tf,
                        bandwidth_gb_s: bw,
                        memory_gb: mem,
                        ..CustomGpu::default()
                    }),
                    ..Scenario::default()
                };
                s.workload.micro_batch = mb;
                s.workload.seq_len = seq;
                s.inference.prompt_tokens = seq;
                s.parallel.dp = dp;
                s.parallel.tp = tp;
                s.parallel.pp = pp;
                s.strategies.checkpointing = [
                    Checkpointing::None,
                    Checkpointing::Selective,
                    Checkpointing::Full,
                    Checkpointing::EveryK,
                ][ck as usize];
                s.strategies.zero =
                    [ZeroStage::None, ZeroStage::Stage1, ZeroStage::Stage3][zero as usize];
                s.strategies.one_bit_comm = one_bit;
                s.strategies.second_tier =
                    [SecondTier::None, SecondTier::Host, SecondTier::Cxl][tier as usize];
                s.strategies.second_tier_gib = 512.0;
                s
            },
        )
}

fn with_bandwidth(s: &Scenario, factor: f64) -> Scenario {
    let mut s = s.clone();
    if let GpuChoice::Custom(c) = &mut s.gpu {
        c.bandwidth_gb_s *= factor;
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn more_bandwidth_never_slows_a_step(s in arb_scenario(), f in 1.0f64..100.0) {
        let slow = estimate(&s).performance;
        let fast = estimate(&with_bandwidth(&s, f)).performance;
        prop_assert!(fast.step.total_s <= slow.step.total_s * (1.0 + 1e-12));
    }

    /// A faster GPU never gives a slower step: more 16-bit tensor peak, everything else equal,
    /// across the Ampere/Hopper class boundary at 600 TFLOP/s too (docs/time-model.md "GPU
    /// generation"; before, a custom GPU of 600 TFLOP/s ran Llama-3-8B at TP 8 in 1.33 s where one
    /// of 599 took 0.94 s).
    #[test]
    fn more_compute_never_slows_a_step(s in arb_scenario(), peak in 200.0f64..1000.0, more in 0.0f64..400.0) {
        let at = |tf: f64| {
            let mut s = s.clone();
            // Training: the parts model, whose GEMM classes switch at 600 TFLOP/s.
            s.mode = Mode::Training;
            if let GpuChoice::Custom(c) = &mut s.gpu {
                c.tflops_16 = tf;
            }
            estimate(&s).performance.step.total_s
        };
        let (slow, fast) = (at(peak), at(peak + more));
        prop_assert!(fast <= slow * (1.0 + 1e-12), "{} TFLOP/s: {} s, {} TFLOP/s: {} s", peak, slow, peak + more, fast);
    }

    #[test]
    fn compute_bound_phases_ignore_bandwidth(s in arb_scenario(), f in 1.0f64..100.0) {
        let base = estimate(&s).performance;
        let more = estimate(&with_bandwidth(&s, f)).performance;
        // The parts model (transformer training) adds its elementwise kernels' memory time to
        // the GEMMs' (docs/time-model.md), so only the roofline phases are bandwidth-free.
        let training = if base.parts.is_some() { (None, None) } else { (base.training, more.training) };
        let pairs = [
            training,
            (base.prefill, more.prefill),
            (base.decode, more.decode),
        ];
        for (a, b) in pairs {
            if let (Some(a), Some(b)) = (a, b)
                && a.bound == Bound::Compute
            {
                prop_assert_eq!(a.time_s, b.time_s);
                prop_assert_eq!(b.bound, Bound::Compute);
            }
        }
    }

    #[test]
    fn no_nan_or_infinity(
        s in arb_scenario(),
        bw in prop_oneof![Just(0.0), Just(f64::NAN), Just(f64::INFINITY), Just(1e300), 0.0f64..1e6],
        tf in prop_oneof![Just(0.0), Just(f64::NAN), Just(-1.0), Just(1e300), 0.0f64..1e6],
        eff in prop_oneof![Just(0.0), Just(f64::NAN), Just(-3.0), Just(7.0), 0.0f64..1.0],
    ) {
        let mut s = s;
        s.gpu = GpuChoice::Custom(CustomGpu { bandwidth_gb_s: bw, tflops_16: tf, ..CustomGpu::default() });
        s.timing.compute_efficiency = eff;
        s.timing.memory_efficiency = eff;
        s.timing.link_efficiency = eff;
        s.timing.comm_overlap = eff;
        s.timing.internode_gb_s = bw;
        s.timing.link_latency_us = tf;
        s.timing.token_budget = tf;
        let p = estimate(&s).performance;
        prop_assert!(finite_everywhere(&p), "{:?}", p);
    }
}
