//! MLPs and mixtures of experts under the Transformers torch paths (docs/blocks-measured.md "MLP"
//! and "MoE"; `integrations/moe.py` `grouped_mm_experts_forward`, transformers 5.24.0). Measured
//! on CPU; the grouped_mm path is the same autograd graph on a GPU (`torch._grouped_mm`).

use super::{Dims, Flavour};
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// A dense MLP: GLU (SwiGLU, GeGLU) h + 4f per token (input, gate output, up output, activation
/// output, product); GELU and ReLU² h + 2f.
pub fn dense(c: &Ctx, d: &Dims, f: f64, kind: FfnKind) -> f64 {
    let w = match kind {
        FfnKind::SwiGlu => 4.0,
        FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
    };
    c.ec * d.t * (d.h + w * f)
}

/// A top-k mixture through `grouped_mm`. Router per token: input (h), softmax over the E experts
/// (FP32), top-k sum and weights (1 + k), top-k indices (k int64); DeepSeek's sigmoid
/// group-limited router adds 2·n_group + topk_group int64 and an E-wide bool mask (n_group =
/// topk_group = 1 here: the scenario does not carry them; at DeepSeek-V3's 8 / 4 the difference is
/// < 0.1 % of the router's bytes); gpt-oss keeps only its input and the k softmaxed weights.
/// Experts per routed row (t·k rows): gathered input (h), gate_up output (2fe), activation input
/// and output (2fe), down output (h), routing weight (1); three int64 index vectors and E int32
/// offsets. gpt-oss's clamped SwiGLU with biases keeps 7fe (not 4) and four index vectors. Shared
/// experts: a GLU each (4fe; the input is the router's); Qwen3-Next's sigmoid gate adds 1 + h.
pub fn mixture(c: &Ctx, m: &ResolvedModel, d: &Dims, fl: Flavour) -> f64 {
    let e = c.ec;
    let (experts, k) = (f64::from(m.moe.experts), f64::from(m.moe.top_k));
    let fe = f64::from(m.moe.ffn);
    let t = d.t;
    let rows = t * k;
    let router = if fl.gpt_oss {
        t * (e * d.h + 4.0 * k) + 8.0 * rows
    } else if fl.deepseek {
        t * (e * d.h + 4.0 * (experts + 1.0 + k) + 8.0 * (2.0 + 1.0 + k) + experts)
    } else {
        t * (e * d.h + 4.0 * (experts + 1.0 + k)) + 8.0 * rows
    };
    let (act, index_vectors) = if fl.gpt_oss { (7.0, 4.0) } else { (4.0, 3.0) };
    let routed =
        rows * (e * (2.0 * d.h + act * fe) + 4.0) + 8.0 * index_vectors * rows + 4.0 * experts;
    let shared = f64::from(m.moe.shared);
    let shared_b = if shared > 0.0 {
        e * t * 4.0 * shared * fe
            + if fl.qwen3_next {
                e * t * (1.0 + d.h)
            } else {
                0.0
            }
    } else {
        0.0
    };
    router + routed + shared_b
}
