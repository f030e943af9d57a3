//! What a sharded step holds gathered beside its shards, on the 70B ZeRO-3 preset's shapes:
//! DeepSpeed ZeRO-3 at world size > 1 (`deepspeed::stage3_gathered`, docs/frameworks/deepspeed.md
//! "Stage 3 at world size > 1"; the tiny model's records are in tests/framework_stack.rs) and an
//! FSDP unit over a quantized LoRA base (`fsdp::unit_bytes`, docs/frameworks/fsdp.md "A quantized
//! base"), which gathers its block matrices as stored.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::Diagnostics;
use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::estimator::memory::frameworks::deepspeed::stage3_gathered;
use vram_explorer::estimator::memory::frameworks::fsdp::unit_bytes;
use vram_explorer::estimator::model::ResolvedModel;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{PeftMethod, Scenario, Sharding, ZeroStage};

/// The 70B ZeRO-3 preset under `sharding`, with `edit` applied: `f` of its context and model.
fn on_70b(
    sharding: Sharding,
    edit: impl Fn(&mut Scenario),
    f: fn(&Ctx, &ResolvedModel) -> f64,
) -> f64 {
    let mut s = bundled_scenario("llama3-70b-zero3-8xh100").unwrap();
    s.implementation.sharding = sharding;
    s.strategies.zero = ZeroStage::Stage3;
    edit(&mut s);
    let m =
        vram_explorer::estimator::model::derive(&s.model, &[], &[], &mut Diagnostics::default());
    let c = Ctx::new(&s, &m, &mut Diagnostics::default());
    f(&c, &m)
}

/// DeepSpeed stage 3's gathered bytes per GPU.
fn gathered(edit: impl Fn(&mut Scenario)) -> f64 {
    on_70b(Sharding::DeepSpeed, edit, stage3_gathered)
}

/// One FSDP2 unit's unsharded bytes.
fn unit(edit: impl Fn(&mut Scenario)) -> f64 {
    on_70b(Sharding::Fsdp2, edit, unit_bytes)
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

/// Llama-3-70B's block: 8,192 × (2 · 8,192 + 2 · 1,024) attention + 3 · 8,192 · 28,672 MLP =
/// 855,638,016 matrix elements and two 8,192-element norms. LoRA over BF16 gathers all of it in
/// BF16; QLoRA gathers the matrices at NF4's bits (4 + the block scales) and the norms in BF16.
#[test]
fn a_qlora_unit_is_gathered_as_stored() {
    let matrices = 855_638_016.0;
    let norms = 2.0 * 8_192.0;
    let lora = unit(|s| s.peft.method = PeftMethod::Lora);
    assert_eq!(lora, (matrices + norms) * 2.0);
    let qlora = unit(|s| s.peft.method = PeftMethod::Qlora);
    let bits = (qlora - norms * 2.0) * 8.0 / matrices;
    // NF4 with double quantization: 4 bits + an 8-bit scale per 64 weights + FP32 per 256 scales.
    assert!((bits - 4.127).abs() < 0.01, "{bits}");
    assert!(qlora < 0.27 * lora);
}

/// The probe behind the rule (tests/data/measured/fsdp-nf4-unshard-probe.json,
/// scripts/measure/probe_fsdp_nf4.py; torch 2.15, torchao 0.10.0, CPU, gloo, world size 2):
/// `fully_shard` then `unshard()` of a frozen `to_nf4` weight gives an `NF4Tensor` of its packed
/// data, block scales and scale factors, at the bits the estimator's NF4 rule charges (within 1 %),
/// a quarter of BF16.
#[test]
fn fsdp2_unshards_an_nf4_weight_as_nf4() {
    use vram_explorer::scenario::WeightFormat;
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("data/measured/fsdp-nf4-unshard-probe.json")).unwrap();
    assert_eq!(doc["framework"]["settings"]["world_size"].as_u64(), Some(2));
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["unsharded_is_nf4"].as_bool(), Some(true));
        let elements = r["elements"].as_f64().unwrap();
        let d_in = r["d_in"].as_u64().unwrap() as u32;
        let bits = WeightFormat::Nf4.bits_per_weight(64, d_in, true).unwrap();
        let measured = r["unsharded_bytes"].as_f64().unwrap();
        let err = elements * bits / 8.0 / measured - 1.0;
        assert!(err.abs() < 0.01, "{r}: {:+.2} %", err * 100.0);
        assert!(measured < 0.27 * r["bf16_bytes"].as_f64().unwrap());
        assert_eq!(r["shard_bytes"].as_f64().unwrap() * 2.0, measured);
    }
}
