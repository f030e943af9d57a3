//! The casts an FP8 training recipe adds around its scaled matmuls: each linear's input, weight
//! and output gradient scaled by its absolute maximum and cast to FP8, in row-major and
//! column-major layouts (the backward's two GEMMs read the transposes).
//!
//! Bytes per cast element, from torchao's float8 roofline (pytorch/ao at
//! eab345c2268a7506355d506ebfc27b5d28e5e7d0, the commit of torchtitan's December 2024 H100
//! benchmarks, `torchao/float8/roofline_utils.py` `get_tensor_memory_traffic_bytes` and
//! `get_float8_mem_sympy`, dynamic tensorwise scaling under torch.compile): an activation or
//! output gradient's max-abs reduction is fused into the op that produced it, the cast reads it
//! once and writes the FP8 result twice (2 + 2 × 1 B at BF16); a weight is reduced by a kernel of
//! its own before the cast (2 + 2 + 2 × 1); the weight and the input cast in the forward are kept
//! for the backward (nothing recast there). Transformer Engine's recipes do the same work in
//! their own fused kernels (`cast_transpose`), so the same bytes are charged to every training
//! recipe whose GEMMs run at an FP8 rate. Not counted: the recast of a recomputed forward under
//! activation checkpointing (the roofline does not model it either), TE's cast of each weight
//! once per step rather than per micro-batch, and a mixture of experts' inactive experts.

use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// Cast kernels of one layer, for the per-kernel bandwidth efficiency: an input, an output
/// gradient and a weight cast for each of the four linears as Megatron-Core fuses them (QKV, out,
/// MLP-up, MLP-down).
pub const KERNELS: f64 = 12.0;

/// Bytes one activation or gradient element costs to cast: read at `element_bytes`, write FP8
/// twice.
fn activation_bytes(element_bytes: f64) -> f64 {
    element_bytes + 2.0
}

/// Bytes one weight element costs: the max-abs read, the cast's read, two FP8 writes.
fn weight_bytes(element_bytes: f64) -> f64 {
    2.0 * element_bytes + 2.0
}

/// One layer's casts, forward and backward, for `tokens` tokens on one GPU, in bytes: the
/// linears' inputs (QKV and MLP-up read the hidden state, replicated on every tensor-parallel
/// rank unless sequence parallel (`replicated_div`); out and MLP-down their shard), their output
/// gradients in the backward (out and MLP-down the full hidden state again), and the layer's
/// weight shard once per micro-batch. `ffn` is the active FFN width.
pub fn layer_bytes(
    m: &ResolvedModel,
    tokens: f64,
    tp: f64,
    replicated_div: f64,
    ffn: f64,
    element_bytes: f64,
) -> f64 {
    let h = f64::from(m.hidden);
    let q = f64::from(m.heads) * f64::from(m.head_dim);
    let kv = f64::from(m.kv_heads) * f64::from(m.head_dim);
    let up = if m.ffn_kind == FfnKind::SwiGlu {
        2.0
    } else {
        1.0
    };
    let inputs = 2.0 * h / replicated_div + (q + ffn) / tp;
    let gradients = 2.0 * h / replicated_div + (q + 2.0 * kv + up * ffn) / tp;
    let weights = (h * (q + 2.0 * kv) + q * h + (up + 1.0) * h * ffn) / tp;
    tokens * (inputs + gradients) * activation_bytes(element_bytes)
        + weights * weight_bytes(element_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bf16_cast_moves_four_bytes_an_activation_and_six_a_weight() {
        assert_eq!(activation_bytes(2.0), 4.0);
        assert_eq!(weight_bytes(2.0), 6.0);
    }
}
