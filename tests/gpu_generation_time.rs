//! The step time across GPU generations (docs/time-model.md, "GPU generation"): GPUs of 16-bit
//! peak ≥ 600 TFLOP/s take the Hopper GEMM curve and share, and run no tensor-core kernel slower
//! than the fastest Ampere-class GPU, so the step time never rises with the peak. Before, the
//! class switch at 600 TFLOP/s was a cliff: the reviewer's Llama-3-8B at TP 8 took 0.940 s on a
//! custom GPU of 599 TFLOP/s, 1.329 s at 600 and 1.094 s at the H100's 989.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::presets::from_ron_str;
use vram_explorer::scenario::{AttentionKernel, GpuChoice, Scenario};

/// The step-time reviewer's cliff scenarios (8 December 2026): Llama-3-8B, Megatron profile, TP 8 × DP 8, micro-batch
/// 1 × 4096, 8 accumulation steps, ZeRO-1, on a custom GPU of the H100 SXM's bandwidth and link.
fn cliff(tflops_16: f64) -> Scenario {
    let text = format!(
        r#"(
    version: 2,
    name: "base",
    mode: Training,
    model: (
        transformer: (
            layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn: 14336, vocab: 128256,
        ),
    ),
    workload: ( micro_batch: 1, seq_len: 4096, grad_accum_steps: 8 ),
    precision: ( mode: MasterWeights, compute: Bf16 ),
    optimizer: ( kind: Adam ),
    strategies: ( zero: Stage1 ),
    parallel: ( dp: 8, tp: 8, pp: 1 ),
    gpu: Custom((name: "X", memory_gb: 80.0, bandwidth_gb_s: 3350.0, tflops_16: {tflops_16}, link_gb_s: 450.0)),
    implementation: ( profile: Megatron ),
)"#
    );
    from_ron_str(&text).expect("scenario")
}

fn step(s: &Scenario) -> f64 {
    estimate(s).performance.step.total_s
}

fn with_peak(s: &Scenario, tflops_16: f64) -> Scenario {
    let mut s = s.clone();
    if let GpuChoice::Custom(c) = &mut s.gpu {
        c.tflops_16 = tflops_16;
    }
    s
}

#[test]
fn no_cliff_at_the_class_boundary() {
    let (a, b, h) = (
        step(&cliff(599.0)),
        step(&cliff(600.0)),
        step(&cliff(989.0)),
    );
    println!("599: {a:.4} s, 600: {b:.4} s, 989: {h:.4} s");
    assert!(b <= a && h <= b, "{a} {b} {h}");
}

/// Every peak from 100 to 2,000 TFLOP/s, 1 TFLOP/s apart, on the reviewer's scenario and on a
/// small model whose GEMMs sit on the curves' small end (hidden 512), with materialised and fused
/// attention, an FP8 recipe's GEMMs (FP8 peak twice the 16-bit one) included: never slower.
#[test]
fn step_time_falls_with_the_peak_everywhere() {
    let mut small = cliff(600.0);
    let t = &mut small.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (4, 512, 8, 8, 2048, 32_000);
    small.parallel.tp = 1;
    let mut flash = cliff(600.0);
    flash.strategies.attention = AttentionKernel::Flash;
    let mut fp8 = cliff(600.0);
    fp8.precision.fp8_recipe = vram_explorer::scenario::Fp8Recipe::TeCurrent;
    for base in [cliff(600.0), small, flash, fp8] {
        let mut last = f64::INFINITY;
        for tf in 100..=2000 {
            let mut s = with_peak(&base, f64::from(tf));
            if let GpuChoice::Custom(c) = &mut s.gpu
                && base.precision.fp8_recipe != vram_explorer::scenario::Fp8Recipe::None
            {
                c.tflops_8 = 2.0 * f64::from(tf);
            }
            let t = step(&s);
            assert!(
                t <= last * (1.0 + 1e-12),
                "{tf} TFLOP/s: {t} s after {last} s"
            );
            last = t;
        }
    }
}

/// The catalog's H100 SXM and a custom GPU with its figures take the same class (by the 16-bit
/// peak), and large GEMMs stay on the Hopper curve: the floor does not lift them.
#[test]
fn the_h100_keeps_its_class() {
    let mut catalog = cliff(989.0);
    catalog.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    let e = estimate(&catalog);
    let parts = e.performance.parts.expect("parts model");
    assert!((parts.gemm_share - 0.56).abs() < 1e-12);
    // A custom GPU just below the boundary is no faster than the H100.
    assert!(step(&cliff(599.0)) >= e.performance.step.total_s);
}
