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
    let gates = if kind == FfnKind::SwiGlu { 2.0 } else { 1.0 };
    d.t * (super::read_by(c, gates) * d.h + c.ec * w * f)
}

/// T5's `T5DenseActDense` (ReLU; models/t5/modeling_t5.py, transformers 5.24.0): the `wi` input
/// and the ReLU output, which is `wo`'s input (h + f per token). Under autocast `wi` saves a 16-bit
/// cast of its FP32 input, ReLU its 16-bit output, and the activations are moved back to `wo`'s FP32
/// weight type before `wo`, which saves its own 16-bit cast (h + 2f, 16-bit). Measured: every T5
/// record's `DenseReluDense` rows (decoder and encoder alike). A non-gated `gelu` T5 is counted as
/// ReLU (the import maps both to one kind).
pub fn t5_relu(c: &Ctx, d: &Dims, f: f64) -> f64 {
    let act = if c.amp { 2.0 } else { 1.0 };
    d.t * (super::read_by(c, 1.0) * d.h + c.ec * act * f)
}

/// T5 v1.1's `T5DenseGatedActDense` with `gated-gelu`, whose activation is `gelu_new`
/// (`NewGELUActivation`, tanh GELU written in Python: it saves its input x, the tanh output, 0.5·x
/// and 1 + tanh; configuration_t5.py maps "gated-gelu" to "gelu_new"; transformers 5.24.0), per
/// token: the input (shared by wi_0 and wi_1, or a 16-bit cast each under autocast: 2h), those four
/// f-wide tensors, the GELU output and the wi_1 output the product saves, and wo's input (the
/// product; under autocast wo's own 16-bit cast, the product having gone back to FP32): h + 7f.
/// Measured: the t5-gated records' `DenseReluDense` rows (encoder and decoder, FP32 and AMP). Other
/// gated activations (`gated-relu`, `gated-silu`) save 3f fewer; the import does not tell them apart.
pub fn t5_gated(c: &Ctx, d: &Dims, f: f64) -> f64 {
    d.t * (super::read_by(c, 2.0) * d.h + c.ec * 7.0 * f)
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
    // Under autocast the router's input is a 16-bit cast and its logits (E per token) are 16-bit
    // and saved; the probabilities stay FP32 (softmax is on autocast's FP32 list); gpt-oss's
    // top-k softmax keeps the logits' type, DeepSeek's sigmoid scores and top-k weights follow the
    // 16-bit logits (measured, records' `saved_by_module`).
    let input = super::read_by(c, 1.0) * d.h;
    let logits = if c.amp { e * experts } else { 0.0 };
    let router = if fl.gpt_oss {
        t * (input + logits + e * k) + 8.0 * rows
    } else if fl.deepseek {
        let scores = if c.amp {
            e * (experts + 1.0 + k)
        } else {
            4.0 * (experts + 1.0 + k)
        };
        t * (input + logits + scores + 8.0 * (2.0 + 1.0 + k) + experts)
    } else {
        t * (input + logits + 4.0 * (experts + 1.0 + k)) + 8.0 * rows
    };
    let (act, index_vectors) = if fl.gpt_oss { (7.0, 4.0) } else { (4.0, 3.0) };
    // The routed experts run in the residual type: `torch._grouped_mm` is not on autocast's list,
    // so the FP32 norm output meets the FP32 expert weights; the routing weight is the router's
    // (16-bit under autocast).
    let routed =
        rows * (c.er * (2.0 * d.h + act * fe) + e) + 8.0 * index_vectors * rows + 4.0 * experts;
    let shared = f64::from(m.moe.shared);
    let shared_b = if shared > 0.0 {
        e * t * 4.0 * shared * fe
            + if c.amp {
                t * super::read_by(c, 2.0) * d.h
            } else {
                0.0
            }
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
