//! torchtitan's per-op selective activation checkpointing (`Checkpointing::PerOp`,
//! `activation_checkpoint.selective_ac_option = "op"`), derived from pytorch/torchtitan at
//! 9dec370 (`torchtitan/parallelisms/parallelize_llama.py` l. 214–260; docs/frameworks/torchtitan.md).
//!
//! Each transformer block runs under `create_selective_checkpoint_contexts` with a policy that
//! marks MUST_SAVE the outputs of the ops in `_save_list` (`aten.mm`, the flash and efficient SDPA
//! kernels, `_c10d_functional.reduce_scatter_tensor`, `aten.abs`, `aten.max`) except every second
//! `aten.mm` (a per-block counter: the 1st, 3rd, 5th … are kept), and recomputes everything else in
//! backward. In a Llama block the matmuls run wq, wk, wv, wo, then w1, w3, w2 (SwiGLU) or
//! fc1, fc2, so a block keeps (a fused QKV projection, GPT-2's `c_attn`, is one matmul: then the
//! 1st is QKV, the 2nd the output projection, and the MLP's first matrix is the 3rd):
//! - its input (the checkpoint's argument);
//! - the outputs of wq, wv and, in the MLP, w1 and w2 (SwiGLU) or fc1 (two-matrix MLPs);
//! - the fused attention's output and FP32 log-sum-exp (flash / efficient SDPA only: the math
//!   path's `bmm`s are not in the list);
//! - with tensor and sequence parallelism, the two reduce-scatter outputs (attention and MLP) —
//!   and the row-parallel matmul output before its reduce-scatter is the full b·s·h.
//!
//! Not covered by the derivation (9dec370 has neither): MoE blocks (the MLP rule is applied to the
//! active FFN rows) and FP8 linears, whose `_scaled_mm` is not in the list (with an FP8 recipe no
//! linear output is kept).

use super::activations::Sizes;
use super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{AttentionKernel, FfnKind, Fp8Recipe};

// The FLOPs it recomputes: `performance::flops::per_op_recomputed_share`.

/// Bytes one block keeps for backward under the per-op policy, on one GPU; `input` is the block
/// input's bytes (the same as full checkpointing keeps).
pub fn saved(c: &Ctx, m: &ResolvedModel, z: &Sizes, input: f64) -> f64 {
    let e = c.ec;
    let linears = if c.fp8 == Fp8Recipe::None {
        // Separate projections: wq (1st) and wv (3rd); fused: QKV (1st). Then the MLP from an odd
        // position: SwiGLU w1 and w2 (1st and 3rd of its three), a two-matrix MLP fc1 only. A
        // row-parallel w2 under TP yields partial sums of the whole b·s·h before its reduce-scatter.
        let attention = if m.fused_qkv {
            z.bsq + 2.0 * z.bsk
        } else {
            z.bsq + z.bsk
        };
        let mlp = match m.ffn_kind {
            FfnKind::SwiGlu => z.bsf + z.bsh,
            FfnKind::Gelu | FfnKind::SquaredRelu => z.bsf,
        };
        e * (attention + mlp)
    } else {
        0.0
    };
    let attention = if c.attention == AttentionKernel::Flash {
        e * z.bsq + 4.0 * z.bas
    } else {
        0.0
    };
    let reduce_scatter = if c.sp && c.tp > 1.0 {
        2.0 * e * z.bsh / c.tp
    } else {
        0.0
    };
    (input + (linears + attention + reduce_scatter) * c.saved_scale()).max(0.0)
}
