//! Megatron-Core 0.16.1: its vocab-parallel cross-entropy works in the logits' own storage.
//! Derivation and measurement: docs/frameworks/megatron-core.md
//! (`megatron/core/tensor_parallel/cross_entropy.py`: `calculate_logits_max` line 28 upcasts to
//! FP32, lines 45, 65 and 80 subtract the max, exponentiate and normalise in place, `forward` line
//! 187 saves that softmax, `backward` lines 192–217 turn it into the gradient in place);
//! tests/data/measured/megatron-core-cross-entropy.json, held within 1 % by
//! tests/framework_stack.rs.

use super::super::activations::Sizes;
use super::super::ctx::Ctx;
use super::Loss;

/// Saved: the FP32 softmax, 4·b·s·V/t (the logits themselves when they are FP32). Beside it in
/// forward and in the loss backward: nothing more for FP32 logits; 16-bit logits stay alive beside
/// their FP32 copy (e_c·b·s·V/t). No b·s·V gradient is created: the backward writes into the saved
/// softmax.
pub fn loss(c: &Ctx, z: &Sizes) -> Loss {
    let logits16 = if c.ec < 4.0 { c.ec * z.bsv } else { 0.0 };
    Loss {
        saved: 4.0 * z.bsv,
        forward: logits16,
        backward: logits16,
    }
}
