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
