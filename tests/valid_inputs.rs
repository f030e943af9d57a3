//! Defects found with random valid scenarios (issue 17, item 7), one test each: every input here is
//! inside its documented range, so the estimate must be a sensible, finite answer.

// Each test states the fields it changes from the default, one per line.
#![allow(clippy::field_reassign_with_default)]

use vram_explorer::estimator::{Component, Diagnostic, estimate};
use vram_explorer::scenario::validate;
use vram_explorer::scenario::*;

/// Unstructured pruning at 0.99 under ZeRO-3: the sparse (CSR) weights are a change to this GPU's
/// shard, not to the whole layer, so per-GPU bytes stay positive and the model does not "fit" by
/// going negative.
#[test]
fn unstructured_pruning_with_zero3_stays_positive() {
    for mode in [Mode::Inference, Mode::Training] {
        let mut s = Scenario::default();
        s.mode = mode;
        s.strategies.prune_fraction = 0.99;
        s.strategies.prune_kind = PruneKind::Unstructured;
        s.strategies.zero = ZeroStage::Stage3;
        s.parallel.dp = 8;
        for off in [OffloadTarget::None, OffloadTarget::Cpu] {
            s.strategies.offload_params = off;
            let e = estimate(&s);
            let m = &e.memory;
            assert!(
                m.peak.get(Component::Weights).get() >= 0.0,
                "{mode:?} {off:?}"
            );
            assert!(m.gpu_total.get() > 0.0, "{mode:?} {off:?}");
            assert!(m.offloaded.host.get() >= 0.0, "{mode:?} {off:?}");
        }
    }
}

/// LoRA skips the frozen weights' gradient GEMMs; with structured pruning those GEMMs are pruned
/// too, so the FLOPs saved can never exceed the step's: model FLOPs and MFU stay ≥ 0.
#[test]
fn lora_with_pruning_keeps_mfu_non_negative() {
    let mut s = Scenario::default();
    s.mode = Mode::Training;
    s.peft.method = PeftMethod::Lora;
    s.strategies.prune_kind = PruneKind::Structured;
    for f in [0.0, 0.5, 0.9, 0.99] {
        s.strategies.prune_fraction = f;
        let p = estimate(&s).performance;
        assert!(
            p.model_flops > 0.0,
            "prune {f}: model FLOPs {}",
            p.model_flops
        );
        assert!(p.hardware_flops >= p.model_flops, "prune {f}");
        assert!(
            (0.0..=1.0).contains(&p.throughput.mfu),
            "prune {f}: MFU {}",
            p.throughput.mfu
        );
    }
}

fn finite_performance(e: &vram_explorer::estimator::Estimate) -> bool {
    let text = format!("{:?}", e.performance);
    !text.contains("NaN") && !text.contains("inf")
}

/// A custom GPU with subnormal rates (once "valid", as the ranges were open at 0): the ranges now
/// have floors, the rates are clamped to them and reported, and every figure stays finite.
#[test]
fn tiny_custom_gpu_rates_are_clamped_and_finite() {
    let mut s = Scenario::default();
    s.gpu = GpuChoice::Custom(CustomGpu {
        bandwidth_gb_s: 1e-300,
        tflops_16: 1e-300,
        tflops_32: f64::MIN_POSITIVE,
        tflops_8: 1e-300,
        link_gb_s: 1e-300,
        host_link_gb_s: 1e-300,
        ..CustomGpu::default()
    });
    s.timing.compute_efficiency = 1e-300;
    for mode in [Mode::Inference, Mode::Training] {
        s.mode = mode;
        let e = estimate(&s);
        assert!(finite_performance(&e), "{mode:?}: {:?}", e.performance);
        assert!(e.diagnostics.contains(Diagnostic::InputClamped));
        assert!(
            !validate::validate(&s).is_empty(),
            "outside the documented ranges"
        );
    }
}

/// A recommender whose dense part has almost no parameters: the step still takes time (counts are
/// whole numbers), tokens/s is finite and MFU at most 1.
#[test]
fn recommender_with_tiny_dense_part_is_finite() {
    let mut s = Scenario::default();
    s.mode = Mode::Training;
    s.model.family = ModelFamily::Recommender;
    for dense in [0.0, 1e-300, 0.4, 1.0, 3.0] {
        s.model.recommender.dense_params = dense;
        s.model.recommender.rows_per_table = dense;
        let e = estimate(&s);
        assert!(finite_performance(&e), "{dense}: {:?}", e.performance);
        let t = &e.performance.throughput;
        assert!((0.0..=1.0).contains(&t.mfu), "{dense}: MFU {}", t.mfu);
    }
}
