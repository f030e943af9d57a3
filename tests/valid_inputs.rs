//! Defects found with random valid scenarios (issue 17, item 7), one test each: every input here is
//! inside its documented range, so the estimate must be a sensible, finite answer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
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

/// Parameter-count mode lands within a few per cent of the requested count at every size of its
/// range (it was 84× off at 10⁵: a 32,000-row vocabulary alone is 40× that).
#[test]
fn parameter_count_shapes_land_on_the_requested_count() {
    let mut s = Scenario::default();
    s.model.shape = ShapeSource::ParamCount;
    let mut p = 1e5_f64;
    while p <= 1e13 {
        s.model.params = p;
        let e = estimate(&s);
        let got = e.model.params.total;
        assert!((got - p).abs() / p < 0.03, "{p:e} → {got:e}");
        assert!(!e.diagnostics.contains(Diagnostic::InputClamped), "{p:e}");
        p *= 1.37;
    }
}

/// A derived shape uses grouped-query attention like the Llama 3 family (8 KV heads): at Llama-2-70B's
/// size the KV cache per token is close to the real model's 2 · 80 layers · 8 KV heads · 128
/// (it was 7.8× that with full multi-head attention).
#[test]
fn parameter_count_shapes_use_grouped_query_attention() {
    let mut s = Scenario::default();
    s.model.shape = ShapeSource::ParamCount;
    s.model.params = 68.98e9;
    let m = estimate(&s).model;
    assert!(
        m.kv_heads < m.heads && m.heads.is_multiple_of(m.kv_heads),
        "{m:?}"
    );
    let kv_per_token = 2.0 * f64::from(m.layers * m.kv_heads * m.head_dim);
    let llama2_70b = 2.0 * 80.0 * 8.0 * 128.0;
    assert!(
        (kv_per_token / llama2_70b - 1.0).abs() < 0.1,
        "{kv_per_token}"
    );
}

/// Heads that do not divide the hidden size, and KV heads that do not divide the heads, are named.
#[test]
fn heads_that_do_not_divide_are_diagnosed() {
    let mut s = Scenario::default();
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::HeadsDoNotDivideHidden)
    );
    s.model.transformer.heads = 7;
    s.model.transformer.kv_heads = 7;
    let d = estimate(&s).diagnostics;
    assert!(d.contains(Diagnostic::HeadsDoNotDivideHidden));
    assert!(!d.contains(Diagnostic::KvHeadsDoNotDivideHeads));
    s.model.transformer.heads = 32;
    s.model.transformer.kv_heads = 6;
    let d = estimate(&s).diagnostics;
    assert!(!d.contains(Diagnostic::HeadsDoNotDivideHidden));
    assert!(d.contains(Diagnostic::KvHeadsDoNotDivideHeads));
    // An explicit head_dim says what the model uses: no diagnostic for the width.
    s.model.transformer.heads = 7;
    s.model.transformer.kv_heads = 7;
    s.model.transformer.head_dim = 128;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::HeadsDoNotDivideHidden)
    );
    assert!(!Diagnostic::HeadsDoNotDivideHidden.concerns_layout());
    assert!(!Diagnostic::KvHeadsDoNotDivideHeads.concerns_layout());
}

/// Training every tensor in INT4 (or INT8) is computable but not how training works: diagnosed.
#[test]
fn integer_training_types_are_diagnosed() {
    let mut s = Scenario::default();
    s.mode = Mode::Training;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::IntegerTrainingType)
    );
    for (mode, dtype) in [
        (PrecisionMode::Uniform, Dtype::Int4),
        (PrecisionMode::Amp, Dtype::Int8),
        (PrecisionMode::MasterWeights, Dtype::Int4),
    ] {
        s.precision.mode = mode;
        s.precision.compute = dtype;
        let e = estimate(&s);
        assert!(
            e.diagnostics.contains(Diagnostic::IntegerTrainingType),
            "{mode:?} {dtype:?}"
        );
    }
    // Serving INT4 weights is what the format is for.
    s.mode = Mode::Inference;
    s.precision.mode = PrecisionMode::Custom;
    s.precision.weights = Dtype::Int4;
    s.precision.activations = Dtype::Bf16;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::IntegerTrainingType)
    );
}

/// A scenario that kept the default scenario's name (a file without `name`, a model switched to a
/// parameter count) is shown by what it is, not as "Llama-3-8B inference on one H100".
#[test]
fn a_parameter_count_scenario_is_not_called_llama_3_8b() {
    let mut s = Scenario::default();
    assert_eq!(s.title(), s.name);
    s.model.shape = ShapeSource::ParamCount;
    s.model.params = 7e9;
    s.mode = Mode::Training;
    let t = s.title();
    assert!(!t.contains("Llama"), "{t}");
    assert!(t.contains("7B-parameter") && t.contains("training"), "{t}");
    s.name = "my run".to_owned();
    assert_eq!(s.title(), "my run");
    let from_file: Scenario =
        ron::from_str("(mode: Training, model: (shape: ParamCount, params: 1.3e9))")
            .expect("parses");
    assert!(
        from_file.title().contains("1.3B-parameter"),
        "{}",
        from_file.title()
    );
}
