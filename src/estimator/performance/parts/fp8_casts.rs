//! The casts an FP8 training recipe adds around its scaled matmuls: each linear's input, weight
//! and output gradient scaled by its absolute maximum and cast to FP8, in row-major and
//! column-major layouts (the backward's two GEMMs read the transposes).
//!
//! Bytes per cast element and which tensors are cast, from torchao's float8 roofline (pytorch/ao
//! at eab345c2268a7506355d506ebfc27b5d28e5e7d0, the commit of torchtitan's December 2024 H100
//! benchmarks, `torchao/float8/roofline_utils.py` `get_tensor_memory_traffic_bytes` and
//! `get_float8_mem_sympy`, dynamic tensorwise scaling under torch.compile), counted per linear as
//! it does: a linear's input and its output gradient have their max-abs reduction fused into the
//! op that produced them, and the cast reads them once and writes the FP8 result twice (2 + 2 × 1 B
//! at BF16); a weight is reduced by a kernel of its own before the cast (2 + 2 + 2 × 1); the
//! forward's input and weight casts are kept for the backward (nothing recast there). A model
//! with separate q/k/v and gate/up linears (Hugging Face, torchtitan) casts the hidden state once
//! per linear: three times for attention, twice for a SwiGLU MLP; Megatron-Core's fused QKV and
//! MLP-up (Transformer Engine's `LayerNormLinear` / `LayerNormMLP`, its `cast_transpose`) once each.
//! A weight is cast once per micro-batch (torchao's `Float8Linear` recasts it in every forward),
//! except under Megatron-Core's Transformer Engine linears, which cast it once per step: the
//! schedule calls `set_is_first_microbatch()` before a step's first micro-batch
//! (`megatron/core/pipeline_parallel/schedules.py` `forward_step`, NVIDIA/Megatron-LM at
//! 4dabc62385799f8256fb05ccf3dfd4a7218781bd), the TE wrappers pass `is_first_microbatch` to TE's
//! `Linear` / `LayerNormLinear` and clear it after their forward
//! (`megatron/core/extensions/transformer_engine.py` `TELinear.forward`), and TE reuses the FP8
//! weight it cached on the first micro-batch for the others ([`WeightCasts`]).
//! Not counted: the recast of a recomputed forward under activation checkpointing (the roofline
//! does not model it either), and a mixture of experts' inactive experts.

use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// Bytes one activation or gradient element costs to cast: read at `element_bytes`, write FP8
/// twice.
fn activation_bytes(element_bytes: f64) -> f64 {
    element_bytes + 2.0
}

/// Bytes one weight element costs: the max-abs read, the cast's read, two FP8 writes.
fn weight_bytes(element_bytes: f64) -> f64 {
    2.0 * element_bytes + 2.0
}

/// One layer's casts on one GPU, forward and backward: the activations' and gradients' every
/// micro-batch, the weights' as [`WeightCasts`] says.
pub struct LayerCasts {
    /// Inputs and output gradients of one micro-batch, bytes.
    pub activation_bytes: f64,
    /// An input and an output-gradient cast per linear (for the per-kernel bandwidth efficiency).
    pub activation_kernels: f64,
    /// The layer's weight shard, bytes, one cast.
    pub weight_bytes: f64,
    /// A weight cast per linear.
    pub weight_kernels: f64,
}

/// How often a step casts its FP8 weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightCasts {
    /// In every micro-batch's forward (torchao `Float8Linear`).
    EveryMicroBatch,
    /// On the step's first micro-batch, cached for the others (Transformer Engine under
    /// Megatron-Core's `is_first_microbatch`).
    OncePerStep,
}

impl LayerCasts {
    /// Times `micro_batches` micro-batches' casts take at `bandwidth` B/s, seconds.
    pub fn step_time(&self, micro_batches: f64, weights: WeightCasts, bandwidth: f64) -> f64 {
        let weight_casts = match weights {
            WeightCasts::EveryMicroBatch => micro_batches,
            WeightCasts::OncePerStep => 1.0,
        };
        let time = super::elementwise::time_in_kernels;
        micro_batches * time(self.activation_bytes, self.activation_kernels, bandwidth)
            + weight_casts * time(self.weight_bytes, self.weight_kernels, bandwidth)
    }
}

/// One layer's casts for `tokens` tokens on one GPU: the linears' inputs (QKV and MLP-up read the
/// hidden state, replicated on every tensor-parallel rank unless sequence parallel:
/// `replicated_div`; out and MLP-down their shard), their output gradients in the backward (out
/// and MLP-down the hidden state again), and the layer's weight shard once (its
/// matmul weights as the FLOP count takes them, `flops::layer_matmul_weights`: the active experts
/// and the router of a mixture of experts). `ffn` is the active FFN width; `fused_linears` says
/// QKV and gate/up are one linear each.
pub fn layer(
    m: &ResolvedModel,
    tokens: f64,
    tp: f64,
    replicated_div: f64,
    ffn: f64,
    element_bytes: f64,
    fused_linears: bool,
) -> LayerCasts {
    let h = f64::from(m.hidden);
    let (q, _) = m.attention_widths();
    // The rank's K/V width: heads replicated when tensor parallelism exceeds them.
    let kv_rank = m.kv_width_rank(tp);
    let swiglu = m.ffn_kind == FfnKind::SwiGlu;
    let up = if swiglu { 2.0 } else { 1.0 };
    let qkv_linears = if fused_linears || m.fused_qkv {
        1.0
    } else {
        3.0
    };
    let up_linears = if fused_linears { 1.0 } else { up };
    let inputs = (qkv_linears + up_linears) * h / replicated_div + (q + ffn) / tp;
    let gradients = 2.0 * h / replicated_div + (q + up * ffn) / tp + 2.0 * kv_rank;
    let (projections, mlp) = crate::estimator::performance::flops::layer_matmul_weights(m);
    let weights = (projections + mlp) / tp;
    let linears = qkv_linears + 1.0 + up_linears + 1.0;
    LayerCasts {
        activation_bytes: tokens * (inputs + gradients) * activation_bytes(element_bytes),
        activation_kernels: 2.0 * linears,
        weight_bytes: weights * weight_bytes(element_bytes),
        weight_kernels: linears,
    }
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
