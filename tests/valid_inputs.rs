//! Defects found with random valid scenarios (issue 17, item 7), one test each: every input here is
//! inside its documented range, so the estimate must be a sensible, finite answer.

use vram_explorer::estimator::{Component, Diagnostic, estimate};
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
            assert!(m.peak.get(Component::Weights).get() >= 0.0, "{mode:?} {off:?}");
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
        assert!(p.model_flops > 0.0, "prune {f}: model FLOPs {}", p.model_flops);
        assert!(p.hardware_flops >= p.model_flops, "prune {f}");
        assert!((0.0..=1.0).contains(&p.throughput.mfu), "prune {f}: MFU {}", p.throughput.mfu);
    }
}
