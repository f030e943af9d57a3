//! torchtune 0.6.1: what its modules and recipes keep alive beyond Hugging Face's eager SDPA rules.
//! Derivation and measurements: docs/frameworks/torchtune.md (`torchtune/modules/attention.py`,
//! `torchtune/modules/loss/ce_chunked_output_loss.py`, `torchtune/models/llama3/
//! _component_builders.py`, `recipes/lora_finetune_single_device.py` at v0.6.1);
//! tests/data/measured/torchtune-cpu-steps.json, held within 1 % per phase by
//! tests/framework_stack.rs.

use super::super::activations::{LayerActs, Sizes};
use super::super::ctx::Ctx;
use super::Loss;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{AttentionKernel, RopeCache};

/// One layer beside the Hugging Face rules: `MultiHeadAttention.forward` expands K and V to all
/// heads before SDPA (`attention.py` lines 91–93, `unsqueeze(2).expand(…).flatten(1, 2)` copies),
/// so SDPA saves b·a·s·d for each instead of b·k·s·d; its two RMSNorms save their normalised x in
/// FP32 ([`norm_extra`]).
pub fn layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, a: LayerActs) -> LayerActs {
    let ea = c.attention_bytes();
    let repeat = if c.attention == AttentionKernel::Materialized {
        0.0
    } else {
        2.0 * ea * (z.bsq - z.bsk)
    };
    LayerActs {
        attention: a.attention + repeat * c.saved_scale(),
        norm: a.norm + 2.0 * norm_extra(c, m, z),
        ..a
    }
}

/// `RMSNorm.forward` (`torchtune/modules/rms_norm.py` from #2054, 0.5.0; read at v0.6.1) is
/// `F.rms_norm(x.float(), …, weight=self.scale).to(x.dtype)`: the weight multiply runs in FP32 and
/// saves the FP32 normalised x where Hugging Face's casts it back first (4 − e_r bytes more per
/// element; nothing in FP32). Before #2054 (`legacy_rms_norm`, and torchtune 0.1) torchtune's own
/// code cast it back too (`.type_as(x)` before `* self.scale`, read at 1814feb17 and ff594c231).
/// A frozen scale (LoRA) saves no normalised x at all, as the Hugging Face rule already drops.
/// Measured: tests/data/measured/torchtune-full-cpu-steps.json (BF16 full fine-tunes).
pub fn norm_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let t = &c.framework.torchtune;
    if m.norm != crate::scenario::NormKind::RmsNorm
        || c.framework.lora
        || t.legacy_rms_norm
        || t.legacy_loss
    {
        return 0.0;
    }
    super::fp32_normalised_x(c, z)
}

fn chunks(c: &Ctx) -> f64 {
    f64::from(c.framework.torchtune.output_chunks.max(1)).min(c.s.max(1.0))
}

/// `CEWithChunkedOutputLoss` (lines 35–43: `F.cross_entropy(logits.float(), …)` per chunk) after the
/// recipe's `torch.hstack` of an ignore column (all b·s positions count):
/// - saved: the FP32 log-softmax of every chunk, 4·b·s·V;
/// - forward: the logit chunks (b·s·V in the compute type) and, for 16-bit logits, the FP32 copy
///   of the chunk being reduced; the recipe's `del logits` frees the chunks before backward;
/// - loss backward: the first chunk's gradients (2 FP32 b·s·V/C), all log-softmaxes still saved.
pub fn loss(c: &Ctx, z: &Sizes) -> Loss {
    if c.framework.torchtune.legacy_loss {
        return legacy_loss(z);
    }
    if c.framework.torchtune.compile {
        return compiled_loss(c, z);
    }
    let n = chunks(c);
    let copy = if c.ec < 4.0 { 4.0 * z.bsv / n } else { 0.0 };
    Loss {
        saved: 4.0 * z.bsv,
        forward: c.ec * z.bsv + copy,
        backward: 2.0 * 4.0 * z.bsv / n,
    }
}

/// `compile=True` (`training.compile_loss`: `compute_cross_entropy` under inductor), measured on CPU
/// with torch 2.15.0 (tests/data/measured/torchtune-compiled-loss-probe.json, saved-tensor hooks):
/// - saved: every logits chunk itself (b·s·V in the compute type, which eager frees at the
///   recipe's `del logits`) and two FP32 values per row (max and log-sum-exp), 8·b·s; no FP32
///   log-softmax;
/// - forward: nothing beside the saved chunks (the upcast is fused into the reduction; derived,
///   inductor's kernels are invisible to the accountant);
/// - loss backward: one chunk's gradient in the compute type (the fused kernel's output; derived).
fn compiled_loss(c: &Ctx, z: &Sizes) -> Loss {
    Loss {
        saved: c.ec * z.bsv + 8.0 * z.bs,
        forward: 0.0,
        backward: c.ec * z.bsv / chunks(c),
    }
}

/// torchtune 0.1's loss (`legacy_loss`; ff594c231 `recipes/lora_finetune_single_device.py` lines
/// 447–453, `torchtune/modules/transformer.py` line 210), derived op by op, b·s·V FP32 elements:
/// - the model's `.float()` copy of the head's output (the 16-bit output is freed once copied);
///   the recipe's shifted `.contiguous()` copy, which its `logits` local then holds through
///   backward and the optimizer step ([`held_logits`]), the first copy freed on rebinding;
/// - saved: `CrossEntropyLoss`'s FP32 log-softmax over the transposed copy, 4·b·s·V;
/// - forward: the held copy beside it (the two copies of the shift are the same 8·b·s·V);
/// - loss backward: the held copy, `nll_loss`'s gradient and the log-softmax's input gradient,
///   12·b·s·V beside the saved log-softmax (`slice_backward`'s full-size zeros come after the
///   first two are freed: 12 in all, less).
fn legacy_loss(z: &Sizes) -> Loss {
    Loss {
        saved: 4.0 * z.bsv,
        forward: 4.0 * z.bsv,
        backward: 12.0 * z.bsv,
    }
}

/// The FP32 logits torchtune 0.1's recipe holds from the loss through backward and the optimizer
/// step (`legacy_loss`), else nothing.
pub fn held_logits(c: &Ctx, z: &Sizes) -> f64 {
    if c.framework.torchtune.legacy_loss {
        4.0 * z.bsv
    } else {
        0.0
    }
}

/// The output projection runs once per chunk (`TransformerDecoder.chunked_output`), so autograd
/// runs every chunk's loss backward first (all of them later in the graph) and holds the logit
/// gradients; the projection's weight gradient is then summed over the chunks out of place in the
/// engine's input buffer (the running sum, the next chunk's gradient and their sum: 3·V·h). Peak
/// after two chunks: (C − 2)/C of the logit gradients + 3·V·h + two chunks' input gradients.
/// A tied head (Llama 3.2's `TiedLinear`: `F.linear(x, embedding.weight)` per chunk) sums the same
/// V·h weight gradient (measured with 32 tokens, tests/data/measured/torchtune-full-cpu-steps.json).
/// With a frozen head (LoRA) no weight gradient exists and this phase is below the loss backward.
pub fn output_backward(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let n = chunks(c);
    if c.e_grads <= 0.0 || c.framework.lora || n < 2.0 || c.framework.torchtune.legacy_loss {
        return 0.0;
    }
    let head = super::super::training::vocab_matrix_gradient(c, m);
    (n - 2.0) / n * c.ec * z.bsv + 3.0 * head + 2.0 / n * c.ec * z.bsh
}

/// `RotaryPositionalEmbeddings` caches cos and sin for `max_seq_len` positions in FP32
/// (`torchtune/modules/position_embeddings.py`: cache [max_seq_len, d/2, 2] + θ of d/2;
/// `Llama3ScaledRoPE` the same shape): one per model, or one per layer when every LoRA attention
/// builds its own ([`RopeCache`]; `lora_llama3_self_attention` at v0.6.1 line 418, while
/// `lora_llama3_1` passes its one module to every layer, line 208). The length is the builder's
/// `max_seq_len`, the model's `max_positions` (131,072 for Llama 3.1 / 3.2: 64 MiB per cache).
pub fn rope_cache(c: &Ctx, m: &ResolvedModel) -> f64 {
    if m.positions != crate::scenario::PositionKind::Rotary {
        return 0.0;
    }
    let d = f64::from(m.head_dim);
    let one = 4.0 * (c.framework.max_positions * d + d / 2.0);
    let per_layer =
        c.framework.lora && c.framework.torchtune.rope_cache == RopeCache::PerLoraAttention;
    // One per attention layer (a hybrid's other layers have no rotary embedding).
    let attention_layers =
        f64::from(m.layers) * super::super::layer_kinds::attention_and_mlp_shares(m).0;
    one * if per_layer { attention_layers } else { 1.0 }
}

/// LoRA (`torchtune/modules/peft/lora.py` `LoRALinear.forward`, lines 130–139) saves as PEFT does,
/// except the attention output: `output.transpose(1, 2).contiguous()` is SDPA's own output storage,
/// which SDPA keeps for its backward whether or not the output projection is trained (measured:
/// the q, v records keep it), where the Hugging Face rule drops it with a frozen projection.
pub fn lora_layer(
    c: &Ctx,
    m: &ResolvedModel,
    z: &Sizes,
    x: &super::super::peft::Ext,
    a: LayerActs,
) -> LayerActs {
    if !x.lora() || x.targets.o {
        return a;
    }
    let ea = c.attention_bytes();
    let attention = super::super::layer_kinds::attention_and_mlp_shares(m).0;
    LayerActs {
        attention: a.attention + ea * z.bsq * c.saved_scale() * attention,
        ..a
    }
}

/// The one gradient alive under [`optimizer_in_backward`]: the largest parameter's, ÷ TP, in
/// the gradients' type (at most the stage's `total` gradient bytes).
pub fn gradient_in_backward(c: &Ctx, m: &ResolvedModel, total: f64) -> f64 {
    (m.largest_tensor / c.tp * c.e_grads).min(total)
}

/// Whether the step runs torchtune's optimizer in backward (a transformer's training step).
pub fn steps_in_backward(c: &Ctx) -> bool {
    c.framework.profile == crate::scenario::Profile::Torchtune
        && c.framework.torchtune.optimizer_in_backward
}

/// `optimizer_in_bwd: True` (`torchtune/training/memory.py` `register_optim_in_bwd_hooks`: a
/// post-accumulate-grad hook runs `optim_dict[p].step()` and `zero_grad()` for each parameter):
/// at most one parameter's gradient is alive, and the step's temporaries are those of one tensor.
pub fn optimizer_in_backward(
    c: &Ctx,
    m: &ResolvedModel,
    p: super::super::training::Parts,
) -> super::super::training::Parts {
    let total = p.states.grads;
    let one = gradient_in_backward(c, m, total);
    let share = if total > 0.0 { one / total } else { 0.0 };
    let mut out = p;
    out.states.grads = one;
    out.opt_temp = step_temp_in_backward(c, p.opt_temp, share);
    out
}

/// The optimizer step's temporaries `temp` when each parameter steps alone in backward: a
/// temporary of every parameter (foreach) shrinks to one tensor's, `share` of it; one of the
/// largest tensor's (a per-tensor step) is already that. Used by the memory and its explanation.
pub fn step_temp_in_backward(c: &Ctx, temp: f64, share: f64) -> f64 {
    if super::super::states::temp_is_per_tensor(c) {
        temp
    } else {
        temp * share
    }
}
