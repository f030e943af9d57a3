//! The attention core (QKᵀ, softmax, AV): materialised as two batched GEMMs plus a memory-bound
//! softmax, or one fused (flash) kernel.

use super::{elementwise, gemm};

/// Forward and backward time of the attention core of one layer on one GPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttentionTime {
    pub forward_s: f64,
    pub backward_s: f64,
    /// The memory-bound softmax/dropout part of `forward_s` (materialised only).
    pub softmax_forward_s: f64,
}

/// Inputs of [`attention`], per layer and GPU.
#[derive(Clone, Copy, Debug)]
pub struct Core {
    /// FLOPs of QKᵀ and AV in the forward as the kernel executes them
    /// ([`crate::estimator::performance::flops::executed_attention_flops`]): every key when
    /// materialised (4·t·s·h/TP), the masked blocks it skips taken out when fused.
    pub flops: f64,
    /// Score elements per layer on this GPU (t · context · heads / TP) for the softmax traffic.
    pub scores: f64,
    pub element_bytes: f64,
    pub flash: bool,
}

/// - Materialised (Megatron-LM before fused attention): two batched GEMMs of half the FLOPs each,
///   on the GEMM curve (calculon times the batched matmuls as GEMMs too), and the softmax/dropout
///   traffic of [`elementwise::SOFTMAX_ELEMENTS`] per score; backward 2× forward for the GEMMs and
///   the softmax.
/// - Fused (FlashAttention-2, Dao 2023): FLOPs at `flash_fwd` of the 16-bit peak, the masked
///   blocks skipped (§3.1.1 "causal masking"; in `flops`); the backward recomputes the scores — 5 matmuls against
///   the forward's 2 (Algorithm 2) — at `flash_bwd`. Attention stays 16-bit under FP8 recipes
///   (Transformer Engine runs FP8 only in the linear layers), so `peak16` is used.
///
/// Both forms take the step-level `share` (and a Hopper-class GPU's floor, `gemm::Gemm::for_gpu`): `flash_fwd`/`flash_bwd` are, like the GEMM curve,
/// kernel benchmarks run alone, and what a full step loses against those (the share) is lost by
/// every tensor-core kernel, the materialised form's batched GEMMs and the fused kernel alike.
/// The memory-bound softmax is timed by bytes and takes no share.
pub fn attention(
    c: &Core,
    gemm: &gemm::Gemm,
    peak16: f64,
    bandwidth: f64,
    flash_fwd: f64,
    flash_bwd: f64,
) -> AttentionTime {
    if c.flops <= 0.0 {
        return AttentionTime::default();
    }
    if c.flash {
        let work = c.flops;
        let fwd = super::rate_time(work, gemm.kernel_rate(peak16, flash_fwd));
        let bwd = super::rate_time(2.5 * work, gemm.kernel_rate(peak16, flash_bwd));
        return AttentionTime {
            forward_s: fwd,
            backward_s: bwd,
            softmax_forward_s: 0.0,
        };
    }
    let bmm = 2.0 * gemm.time(0.5 * c.flops);
    let softmax = elementwise::time(
        elementwise::SOFTMAX_ELEMENTS * c.scores * c.element_bytes,
        bandwidth,
    );
    AttentionTime {
        forward_s: bmm + softmax,
        backward_s: 2.0 * (bmm + softmax),
        softmax_forward_s: softmax,
    }
}
