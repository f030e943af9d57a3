//! DeepSpeed ZeRO-3's gathered parameters at world size > 1 (`deepspeed::stage3_gathered`,
//! docs/frameworks/deepspeed.md "Stage 3 at world size > 1"): what `stage3_max_reuse_distance`
//! keeps gathered from forward to backward, on the shapes users plan with. The tiny model's
//! records are in tests/framework_stack.rs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::Diagnostics;
use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::estimator::memory::frameworks::deepspeed::stage3_gathered;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Scenario, Sharding};

/// The 70B ZeRO-3 preset under DeepSpeed, with `edit` applied: its gathered bytes per GPU.
fn gathered(edit: impl Fn(&mut Scenario)) -> f64 {
    let mut s = bundled_scenario("llama3-70b-zero3-8xh100").unwrap();
    s.implementation.sharding = Sharding::DeepSpeed;
    edit(&mut s);
    let m =
        vram_explorer::estimator::model::derive(&s.model, &[], &[], &mut Diagnostics::default());
    let c = Ctx::new(&s, &m, &mut Diagnostics::default());
    stage3_gathered(&c, &m)
}

/// Llama-3-70B at the defaults: the head (128,256 × 8,192 = 1.05e9 elements) is all that stays
/// gathered (the modules in front of it have more than 5e8 elements behind them); the backward of
/// a block gathers its largest matrix and the next (5e7-element bucket: one whole matrix), 2 ×
/// 8,192 × 28,672, less than the head. BF16: 2 B each.
#[test]
fn a_70b_model_keeps_only_its_head_gathered() {
    let head = 128_256.0 * 8_192.0 * 2.0;
    assert_eq!(gathered(|_| {}), head);
    // Distance 0: each module is released after use; the block window remains.
    let window = 2.0 * 8_192.0 * 28_672.0 * 2.0;
    assert_eq!(
        gathered(|s| s.implementation.deepspeed.stage3_max_reuse_distance = 0.0),
        window
    );
    // No prefetch: one matrix.
    assert_eq!(
        gathered(|s| {
            let d = &mut s.implementation.deepspeed;
            d.stage3_max_reuse_distance = 0.0;
            d.stage3_prefetch_bucket_size = 0.0;
        }),
        window / 2.0
    );
}

/// A distance that reaches past the head into the blocks keeps the last blocks' matrices too, and
/// a larger distance never keeps less; at world size 1 nothing is gathered beside the partition.
#[test]
fn a_longer_reuse_distance_never_keeps_less() {
    let mut last = 0.0;
    for d in [0.0, 1e9, 2.2e9, 4e9, 1e10, 1e12] {
        let g = gathered(|s| s.implementation.deepspeed.stage3_max_reuse_distance = d);
        assert!(g >= last, "{d}: {g} < {last}");
        last = g;
    }
    // 1e12 keeps the whole model: every block's matrices, the head and the embedding.
    let whole = gathered(|s| s.implementation.deepspeed.stage3_max_reuse_distance = 1e12);
    assert!(whole > 130e9 && whole < 142e9, "{whole}");
    assert_eq!(gathered(|s| s.parallel.dp = 1), 0.0);
}

/// Structured pruning shrinks the block's matrices, not their order: the window at distance 0
/// shrinks with them (it fell back to one block-sized tensor before, doubling it).
#[test]
fn pruning_shrinks_the_block_window_in_proportion() {
    let at = |prune: f64| {
        gathered(|s| {
            s.strategies.prune_fraction = prune;
            s.implementation.deepspeed.stage3_max_reuse_distance = 0.0;
        })
    };
    let (full, pruned) = (at(0.0), at(0.2));
    assert!(pruned < full, "{pruned} vs {full}");
    assert!(pruned > 0.7 * full, "{pruned} vs {full}");
}

/// DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3: the estimate says so.
#[test]
fn zero_3_with_pipeline_stages_is_flagged() {
    use vram_explorer::estimator::{Diagnostic, estimate};
    use vram_explorer::scenario::ZeroStage;
    let mut s = bundled_scenario("llama3-70b-zero3-8xh100").unwrap();
    s.implementation.sharding = Sharding::DeepSpeed;
    s.parallel.pp = 2;
    s.parallel.dp = 4;
    let flagged = |s: &Scenario| {
        estimate(s)
            .diagnostics
            .contains(Diagnostic::DeepSpeedZeroWithPipeline)
    };
    assert!(flagged(&s));
    s.strategies.zero = ZeroStage::Stage1;
    assert!(!flagged(&s));
    s.strategies.zero = ZeroStage::Stage3;
    s.parallel.pp = 1;
    assert!(!flagged(&s));
}
