//! LitGPT 0.5.13: what its modules and its fine-tuning loop keep alive beyond Hugging Face's eager
//! SDPA rules. Derivation and measurements: docs/frameworks/litgpt.md (`litgpt/model.py`,
//! `litgpt/lora.py`, `litgpt/utils.py`, `litgpt/finetune/{full,lora}.py` at 0.5.13);
//! tests/data/measured/litgpt-cpu-steps.json, held within 1 % per phase by tests/framework_stack.rs.

use super::super::activations::{LayerActs, Sizes};
use super::super::ctx::Ctx;
use super::super::peft::Ext;
use super::Loss;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{AttentionKernel, Checkpointing, LoraTargets, NormKind};

/// One layer beside the Hugging Face rules:
/// - `CausalSelfAttention.forward` repeats K and V to all heads before SDPA (`model.py` lines
///   536–539, `repeat_interleave`): SDPA saves b·a·s·d for each instead of b·k·s·d;
/// - `scaled_dot_product_attention` returns `y.transpose(1, 2)` (line 596) and the `reshape` before
///   the output projection copies it: the projection saves its own b·s·a·d copy;
/// - `RMSNorm.forward` (lines 1315–1322) normalises in FP32 (`x.float()`) and multiplies by
///   `weight.float()`: the normalised x saved for the weight's gradient is FP32 (Hugging Face keeps
///   it in the input type), plus an FP32 copy of the weight.
pub fn layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, a: LayerActs) -> LayerActs {
    let ea = c.attention_bytes();
    let repeat = if c.attention == AttentionKernel::Materialized {
        0.0 // the eager rule already counts the repeated copies
    } else {
        2.0 * ea * (z.bsq - z.bsk)
    };
    let o_copy = ea * z.bsq;
    LayerActs {
        attention: a.attention + (repeat + o_copy) * c.saved_scale(),
        norm: a.norm + 2.0 * norm_extra(c, m, z),
        ..a
    }
}

/// A LitGPT RMSNorm beside a Hugging Face one: the FP32 normalised x (4 − e_r bytes more per
/// element) and the FP32 weight copy (4·h).
pub fn norm_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if m.norm != NormKind::RmsNorm {
        return 0.0;
    }
    super::fp32_normalised_x(c, z) + 4.0 * f64::from(m.hidden)
}

/// LoRA (`litgpt/lora.py`): when not all of q, k, v are adapted, the fused adapter
/// (`LoRAQKVLinear.forward`, lines 381–415) scatters B's output into the fused width with
/// `zero_pad` (`index_copy_`), which keeps b·s·(adapted q, k, v widths) and an int64 index
/// (measured: [2, 256, 384] per layer for q, v). The frozen norm weight no longer needs the FP32
/// normalised x (the Hugging Face rule drops only its input-type copy): what [`layer`] added for
/// it (`norm_extra`, an RMSNorm's only), never more.
pub fn lora_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, x: &Ext, a: LayerActs) -> LayerActs {
    if !x.lora() {
        return a;
    }
    let t = x.targets;
    // With all of q, k, v adapted `zero_pad` returns its input: nothing more is saved.
    let padded = (t.q || t.k || t.v) && !(t.q && t.k && t.v);
    let widths = if padded {
        f64::from(u8::from(t.q)) * z.bsq + f64::from(u8::from(t.k) + u8::from(t.v)) * z.bsk
    } else {
        0.0
    };
    // `index_copy_` keeps its int64 index, one per adapted column.
    let index = 8.0 * widths / z.bs.max(1.0);
    let norm_fp32 = if m.norm == NormKind::RmsNorm {
        super::super::layer_kinds::sublayers_per_layer(m) * super::fp32_normalised_x(c, z)
    } else {
        0.0
    };
    let (attn_in, mlp_in) = legacy_inputs(c, z, x.targets, false);
    // A hybrid's layers without attention or MLP have none of these linears.
    let shares @ (attention, mlp) = super::super::layer_kinds::attention_and_mlp_shares(m);
    LayerActs {
        attention: a.attention + (c.ec * widths * c.saved_scale() + index + attn_in) * attention,
        mlp: a.mlp + mlp_in * mlp,
        norm: (a.norm - norm_fp32).max(0.0),
        masks: a.masks + adapter_dropout(c, z, x, shares),
        ..a
    }
}

/// QLoRA with bitsandbytes ≤ 0.43.1 (LitGPT pinned `bitsandbytes==0.42.0`, `pyproject.toml` at
/// 00af8b0d, 2024-09-27): `finetune/lora.py` (lines 129–139 there) wraps the model in Lightning's
/// `BitsandbytesPrecision(mode, dtype)` with the precision's dtype as compute dtype and no
/// `ignore_modules`, so every `nn.Linear` — `LoRALinear.linear`, `LoRAQKVLinear.linear` and the LM
/// head — is a bitsandbytes `Linear4bit`, whose `MatMul4Bit.forward` kept `ctx.tensors = (A, B)`
/// (docs/frameworks/bitsandbytes.md): each frozen linear keeps its input, which `x.to(compute_dtype)`
/// does not copy. Beyond what is saved anyway: the q/k/v input (norm_1's output), the output
/// projection's input (the `reshape` copy), the MLP input (norm_2's, shared by `fc_1`/`fc_2`) and
/// `proj`'s input, each unless its adapter saves that same tensor (targeted, no dropout: with
/// `lora_dropout` the adapter saves the dropped copy). (attention, MLP) bytes; derived from the
/// source, not measured (the 4-bit path needs CUDA).
/// With `all`, also the inputs an adapter saves too (the same tensor, which the adapter releases in
/// backward and `ctx` does not).
fn legacy_inputs(c: &Ctx, z: &Sizes, t: LoraTargets, all: bool) -> (f64, f64) {
    if !c.framework.bnb_legacy {
        return (0.0, 0.0);
    }
    let kept = |targeted: bool| all || !targeted || c.framework.adapter_dropout;
    let on = |b: bool| f64::from(u8::from(b));
    let ea = c.attention_bytes();
    let attention =
        on(kept(t.q || t.k || t.v)) * c.ec * z.bsh / z.lin_tr + on(kept(t.o)) * ea * z.bsq;
    let mlp = on(kept(t.gate || t.up)) * c.ec * z.bsh / z.lin_tr + on(kept(t.down)) * c.ec * z.bsf;
    (attention * c.saved_scale(), mlp * c.saved_scale())
}

/// What [`legacy_inputs`] keeps, over a stage of `layers` layers and the 4-bit LM head's input on
/// the last: `ctx.tensors = (A, B)` (bitsandbytes 0.42.0 `autograd/_functions.py` line 523) is a
/// plain attribute of the backward node, not a `save_for_backward` tensor, so autograd does not
/// release it after the node's backward (`PyNode::release_variables`, pytorch
/// `torch/csrc/autograd/python_function.cpp`, clears only `saved_variables`); it lives as long as
/// the graph. `fit()`
/// (`finetune/lora.py` at 00af8b0d, lines 304–308) keeps the graph through its loop locals
/// `logits` (the head's outputs, whose `grad_fn` reaches every node) and `loss` until they are
/// rebound: after `model(...)` returns and after `chunked_cross_entropy` returns in the next
/// iteration. So the inputs are not freed in backward, stay through the optimizer step, and the
/// previous iteration's are alive through the next forward and its loss. This is the leak
/// bitsandbytes PR #1270 removed (0.43.2: "the bug that caused a lot of memory issues with
/// QLoRA"). Every frozen 4-bit linear's input counts here, also one its adapter saves as well
/// (released in backward by the adapter, not by `ctx`). Under activation checkpointing 0 (not
/// derived: the recomputed graph is another one).
pub fn kept_by_graph(c: &Ctx, m: &ResolvedModel, z: &Sizes, layers: f64, last: bool) -> f64 {
    if !c.framework.bnb_legacy || c.checkpointing != Checkpointing::None {
        return 0.0;
    }
    let (attention, mlp) = legacy_inputs(c, z, c.framework.lora_targets, true);
    let head = if last {
        c.ec * z.bsh / z.lin_tr * c.saved_scale()
    } else {
        0.0
    };
    let (with_attention, with_mlp) = super::super::layer_kinds::attention_and_mlp_shares(m);
    layers * (attention * with_attention + mlp * with_mlp) + head
}

/// `lora_dropout` (`LoRALinear.forward`, line 165–172: `self.lora_dropout(x) @ lora_A.T`): each
/// adapter keeps a dropout mask of its input (1 byte from CUDA's fused `native_dropout`, the
/// activation type from the CPU path's `input * noise`) and `lora_A` saves the dropped input
/// instead of the input itself, which no frozen consumer keeps: one tensor more only where two
/// adapters shared an input (the MLP's `fc_1` and `fc_2`). Measured (all linear layers, FP32,
/// p = 0.05): +15,597,568 B; this rule gives +16,121,856 (0.17 % of the step's peak).
fn adapter_dropout(c: &Ctx, z: &Sizes, x: &Ext, (attention, mlp): (f64, f64)) -> f64 {
    if !c.framework.adapter_dropout {
        return 0.0;
    }
    let t = x.targets;
    let on = |b: bool| f64::from(u8::from(b));
    // The h-wide inputs are the linears' (gathered under sequence parallelism, `Sizes::lin_tr`);
    // the head- and FFN-wide ones are already this rank's share.
    let inputs = (on(t.q || t.k || t.v) * z.bsh / z.lin_tr + on(t.o) * z.bsq) * attention
        + ((on(t.gate) + on(t.up)) * z.bsh / z.lin_tr + on(t.down) * z.bsf) * mlp;
    let shared = on(t.gate && t.up) * z.bsh / z.lin_tr * mlp;
    (c.mask_bytes * inputs + c.ec * shared) * c.saved_scale()
}

/// Tokens per logit chunk (0: one chunk of the whole sequence).
fn chunk_tokens(c: &Ctx) -> f64 {
    let t = f64::from(c.framework.litgpt.lm_head_chunk_tokens);
    if t >= 1.0 { t.min(c.s) } else { c.s }
}

/// The fine-tuning loss (`fit()`: `logits[-1] = logits[-1][..., :-1, :]`; `chunked_cross_entropy`,
/// `utils.py` lines 302–331), in the logits' own type (no FP32 upcast):
/// - saved: one log-softmax per chunk over b·(s − 1) positions;
/// - forward: the logit chunks (b·s·V) and, with b > 1, the `reshape` copy of the shifted last chunk
///   (b·(c_last − 1)·V: a sliced batch-strided view is not viewable as rows);
/// - loss backward: the held logit chunks and the gradients of one chunk (2·b·c·V).
pub fn loss(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> Loss {
    let v = z.bsv / z.bs.max(1.0);
    let e = c.ec;
    let chunk = chunk_tokens(c);
    let chunks = (c.s / chunk).ceil().max(1.0);
    let last = c.s - (chunks - 1.0) * chunk;
    let copy = if c.b > 1.0 {
        c.b * (last - 1.0).max(0.0) * v * e
    } else {
        0.0
    };
    let _ = m;
    Loss {
        saved: e * c.b * (c.s - 1.0).max(0.0) * v,
        forward: e * z.bsv + copy,
        backward: held_logits(c, z) + 2.0 * e * c.b * chunk * v,
    }
}

/// The logit chunks `fit()` holds (a loop local) from the loss until the next forward returns:
/// through backward and the optimizer step.
pub fn held_logits(c: &Ctx, z: &Sizes) -> f64 {
    c.ec * z.bsv
}

/// `generate/base.py` after `set_kv_cache(batch, max_seq_length)`: a T×T bool `mask_cache` (a plain
/// attribute, T = prompt + generated) in both phases; in decode `CausalSelfAttention` repeats the
/// whole cache of one layer to all heads before SDPA (`repeat_interleave`, K and V: 2·b·a·T·d).
pub fn inference_extra(c: &Ctx, m: &ResolvedModel, ctx_len: f64) -> (f64, f64) {
    let t = c.s + c.generated;
    let mask = t * t;
    let heads = (f64::from(m.heads) / c.tp).ceil();
    let kv = (f64::from(m.kv_heads) / c.tp).ceil();
    let repeat = if heads > kv {
        2.0 * c.b * heads * ctx_len * f64::from(m.head_dim) * c.e_kv
    } else {
        0.0
    };
    (mask, mask + repeat)
}
