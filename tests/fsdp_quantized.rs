//! FSDP over a quantized LoRA base (docs/frameworks/fsdp.md "A quantized base"): a unit gathers
//! its block matrices as stored (torchao `NF4Tensor.fsdp_pre_all_gather`; bitsandbytes'
//! `quant_storage` flat parameters), the norms in the unsharded type.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::Diagnostics;
use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::estimator::memory::frameworks::fsdp::unit_bytes;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{PeftMethod, Scenario, Sharding, ZeroStage};

fn unit(edit: impl Fn(&mut Scenario)) -> f64 {
    let mut s = bundled_scenario("llama3-70b-zero3-8xh100").unwrap();
    s.implementation.sharding = Sharding::Fsdp2;
    s.strategies.zero = ZeroStage::Stage3;
    edit(&mut s);
    let m =
        vram_explorer::estimator::model::derive(&s.model, &[], &[], &mut Diagnostics::default());
    let c = Ctx::new(&s, &m, &mut Diagnostics::default());
    unit_bytes(&c, &m)
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
