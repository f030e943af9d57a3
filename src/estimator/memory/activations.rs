//! Activations a transformer saves for backward, per layer and outside the layers, for one
//! micro-batch on one GPU, under each implementation profile.
//!
//! Hugging Face profile: derived op by op from what each eager PyTorch op saves (autograd's
//! `derivatives.yaml`), checked against the measured steps (docs/model.md §3, tests/measured.rs).
//! Megatron profile: Korthikanti et al. 2022 §4.1 and Table 2 (arXiv:2205.05198), generalised to
//! GQA, SwiGLU, other element sizes, flash attention and dropout off.

use super::ctx::{Ctx, ceil};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{ArchKind, AttentionKernel, Checkpointing, FfnKind, Mode, NormKind, Profile};

/// One layer's saved bytes by block (masks kept apart so the per-layer breakdown can show them).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerActs {
    /// Q, K, V, attention output, flash log-sum-exp.
    pub attention: f64,
    /// b·a·s² terms: softmax output, dropout output (materialised attention only).
    pub scores: f64,
    pub mlp: f64,
    /// Norm inputs, outputs, statistics (and the residual stream they hold).
    pub norm: f64,
    /// Dropout masks (b·s·h and b·a·s²).
    pub masks: f64,
}

impl LayerActs {
    pub fn total(&self) -> f64 {
        self.attention + self.scores + self.mlp + self.norm + self.masks
    }
    /// What selective recomputation keeps: everything but the b·a·s² terms (Korthikanti §4.1).
    pub fn without_scores(&self, bas2_mask: f64) -> f64 {
        self.total() - self.scores - bas2_mask
    }
}

/// Sizes of one micro-batch on one GPU (TP shards heads and FFN; SP shards the rest).
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub bsh: f64,
    pub bs: f64,
    pub bsq: f64,
    pub bsk: f64,
    pub bsf: f64,
    pub bas: f64,
    pub bas2: f64,
    pub bsv: f64,
    /// Divisor of the replicated (non-TP) regions: t with sequence parallelism, else 1.
    pub tr: f64,
    /// Divisor of what a column-parallel linear saves of its input (a norm's output): t under
    /// Megatron's sequence parallelism, which saves the sequence shard and all-gathers it again in
    /// backward (Megatron-LM `megatron/core/tensor_parallel/layers.py` at 960c06b); 1 under
    /// DTensor's (the Hugging Face kernels: torchtitan's `PrepareModuleInput(Shard(1) →
    /// Replicate())` all-gathers before the linears, and autograd saves the whole sequence;
    /// measured with torchtitan 0.2.2 on CPU, tests/data/measured/torchtitan-tp-sp-cpu.json).
    pub lin_tr: f64,
}

pub fn sizes(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> Sizes {
    let t = c.tp;
    let heads = f64::from(m.heads);
    let kv = f64::from(m.kv_heads);
    let d = f64::from(m.head_dim);
    let bs = b * s;
    let heads_rank = ceil(heads / t);
    Sizes {
        bsh: bs * f64::from(m.hidden),
        bs,
        bsq: bs * heads_rank * d,
        bsk: bs * ceil(kv / t) * d,
        // A mixture of experts runs each token through top-k (× capacity) + shared experts.
        bsf: bs * ceil(f64::from(m.ffn) / t) * m.moe.routed_rows_per_token(),
        bas: b * heads_rank * s,
        // Context parallelism: s local queries against the whole sequence's s·cp keys (ring: cp
        // blocks of s; Ulysses: heads ÷ cp over s·cp tokens, the same count).
        bas2: b * heads_rank * s * s * c.cp,
        // DeepSpeed AutoTP keeps the head whole: every GPU computes all the logits.
        bsv: bs * ceil(f64::from(m.vocab) / super::frameworks::deepspeed::vocab_tp(c)),
        tr: if c.sp { t } else { 1.0 },
        lin_tr: if c.sp && c.profile == Profile::Megatron {
            t
        } else {
            1.0
        },
    }
}

pub fn layer(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> LayerActs {
    let a = match c.profile {
        Profile::HuggingFace | Profile::LitGpt | Profile::Torchtune => {
            super::frameworks::layer(c, m, z, hf_layer(c, m, z))
        }
        Profile::Megatron => megatron_layer(c, m, z),
    };
    let k = c.saved_scale();
    LayerActs {
        attention: a.attention * k,
        scores: a.scores * k,
        mlp: (a.mlp + moe_extra(c, m, z)) * k,
        norm: a.norm * k,
        masks: a.masks,
    }
}

/// One Hugging Face norm with `n` consumers of its output. LayerNorm (`native_layer_norm`) saves its
/// input and FP32 mean/rstd; HF RMSNorm is unfused Python: `pow` saves x as FP32, the rsqrt output
/// (FP32, per token), the normalised x in the input type and the output. Under autocast each
/// consuming linear saves its own 16-bit copy of the output (no cache for non-leaf tensors). Under
/// sequence parallelism the norm runs on the sequence shard and the linears save the gathered
/// output (`Sizes::lin_tr`).
fn hf_norm(c: &Ctx, m: &ResolvedModel, z: &Sizes, consumers: f64) -> f64 {
    let out = if c.amp { consumers * c.ec } else { c.er };
    let body = match m.norm {
        NormKind::LayerNorm => c.er * z.bsh + 8.0 * z.bs,
        NormKind::RmsNorm => (4.0 + c.er) * z.bsh + 4.0 * z.bs,
    };
    body / z.tr + out * z.bsh / z.lin_tr
}

/// How many linears read each norm's output: (Q, K, V or one fused QKV; gate and up or one FC1).
pub fn norm_consumers(m: &ResolvedModel) -> (f64, f64) {
    let qkv = if m.fused_qkv { 1.0 } else { 3.0 };
    let mlp = if m.ffn_kind == FfnKind::SwiGlu {
        2.0
    } else {
        1.0
    };
    (qkv, mlp)
}

/// One pre-norm as a layer's `norm` term counts it, its output read by `consumers` linears
/// (under autocast each saves its own 16-bit copy: `hf_norm`), with the framework's extra per norm
/// (`frameworks::norm_extra`); Megatron's saves its input and FP32 statistics. [`layer`]'s term is the mixer's pre-norm
/// (Q, K, V: [`norm_consumers`]) plus the MLP's; `layer_kinds` counts the pre-norms a layer kind
/// has, each with its own consumers.
pub fn pre_norm(c: &Ctx, m: &ResolvedModel, z: &Sizes, consumers: f64) -> f64 {
    let k = c.saved_scale();
    match c.profile {
        Profile::Megatron => megatron_norm(c, m, z) * k,
        Profile::HuggingFace | Profile::LitGpt | Profile::Torchtune => {
            (hf_norm(c, m, z, consumers) + super::frameworks::norm_extra(c, m, z)) * k
        }
    }
}

fn hf_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> LayerActs {
    let ec = c.ec;
    let eager = c.attention == AttentionKernel::Materialized;
    let (qkv_consumers, mlp_consumers) = norm_consumers(m);
    // Eager GQA repeats K and V to all heads (`repeat_kv`, copies); SDPA/flash takes them as is.
    let kv = if eager { 2.0 * z.bsq } else { 2.0 * z.bsk };
    let lse = if eager { 0.0 } else { 4.0 * z.bas };
    // Seed article §4.1: attention kept in FP32 while the FFN runs 16-bit.
    let ea = c.attention_bytes();
    let attention = ea * (z.bsq + kv + z.bsq) + lse;
    let (scores, s2_mask) = if eager {
        let e_sm = if c.amp || m.softmax_fp32 { 4.0 } else { ea };
        let after = if c.dropout || e_sm != ea { ea } else { 0.0 };
        let mask = if c.dropout { c.mask_bytes } else { 0.0 };
        ((e_sm + after) * z.bas2, mask * z.bas2)
    } else {
        (0.0, 0.0)
    };
    let mlp = ec
        * z.bsf
        * match m.ffn_kind {
            FfnKind::Gelu if m.gelu_tanh => 5.0,
            FfnKind::Gelu => 2.0,
            // HF `ReLUSquaredActivation`: relu saves its output, `square` the same tensor, the down
            // projection the squared output: two f-wide tensors, as GELU.
            FfnKind::SquaredRelu => 2.0,
            FfnKind::SwiGlu => 4.0,
        };
    let masks = if c.dropout {
        2.0 * c.mask_bytes * z.bsh / z.tr
    } else {
        0.0
    } + s2_mask;
    LayerActs {
        attention,
        scores,
        mlp,
        norm: hf_norm(c, m, z, qkv_consumers) + hf_norm(c, m, z, mlp_consumers),
        masks,
    }
}

/// Korthikanti §4.1 with 2-byte terms scaled by `ec/2`: attention 11sbh + 5as²b (QKV input 2,
/// Q and K 4, V 2, output-projection input 2, dropout mask 1; softmax 2as²b, its mask as²b, dropout
/// output 2as²b), MLP 19sbh (input 2, GeLU input 8, GeLU output 8, mask 1), norms 4sbh (and their
/// FP32 statistics, which the paper leaves out). Measured to the byte with Megatron-Core's own
/// layer on CPU (tests/data/measured/megatron-core-layer.json, `tests/megatron_layer_measured.rs`). TP divides
/// the head/FFN terms by t (Eq. 2), SP also the rest (Eq. 4). GQA shrinks K and V to kv·d wide;
/// SwiGLU saves the 2f-wide fc1 output and the f-wide product (6·sbf); flash keeps no s² terms
/// (FP32 log-sum-exp instead).
fn megatron_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> LayerActs {
    let e = c.ec;
    let ea = c.attention_bytes();
    let eager = c.attention == AttentionKernel::Materialized;
    // Megatron's own `DotProductAttention` repeats the KV heads to every query head before its
    // matmuls (`transformer/dot_product_attention.py` lines 170–176, `repeat_interleave`), which
    // then save the repeated K and V.
    // Selective recomputation reruns the core attention, repeats included: its checkpoint keeps
    // the unrepeated Q, K and V.
    let repeated =
        eager && c.framework.megatron_local && c.checkpointing != Checkpointing::Selective;
    let kv = if repeated { z.bsq } else { z.bsk };
    let attention =
        e * z.bsh / z.tr + ea * (2.0 * z.bsq + 2.0 * kv) + if eager { 0.0 } else { 4.0 * z.bas };
    let scores = if eager {
        ea * z.bas2 * if c.dropout { 2.0 } else { 1.0 } + softmax_fallback_mask(c, z)
    } else {
        0.0
    };
    let mlp = e * z.bsh / z.tr
        + e * z.bsf
            * match m.ffn_kind {
                FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
                FfnKind::SwiGlu => 3.0,
            };
    let masks = if c.dropout {
        2.0 * c.mask_bytes * z.bsh / z.tr + if eager { c.mask_bytes * z.bas2 } else { 0.0 }
    } else {
        0.0
    };
    LayerActs {
        attention,
        scores,
        mlp,
        norm: 2.0 * megatron_norm(c, m, z),
        masks,
    }
}

/// The s × s bool causal mask Megatron's own attention keeps when its softmax falls back to torch:
/// `FusedScaleMaskSoftmax` runs the fused kernel (no mask made) only for 16 < s_k ≤ 4,096 with
/// s_q, s_k and b·np divisible by 4 (`fusions/fused_softmax.py` `is_kernel_available`, 0.16.1,
/// Megatron-LM's default `masked_softmax_fusion`); otherwise `masked_fill_` applies a fresh
/// `get_default_causal_mask(s)` and keeps it for backward (`transformer/utils.py`). Measured on
/// CPU, where the fallback always runs (tests/data/measured/megatron-core-layer.json). Under
/// Transformer Engine's attention: none.
fn softmax_fallback_mask(c: &Ctx, z: &Sizes) -> f64 {
    if !c.framework.megatron_local {
        return 0.0;
    }
    let s = c.s;
    let attn_batches = if s > 0.0 { z.bas / s } else { 0.0 };
    let divides = |x: f64| (x % 4.0) == 0.0;
    let fused = s > 16.0 && s <= 4096.0 && divides(s) && divides(attn_batches);
    if fused { 0.0 } else { s * s }
}

/// One Megatron pre-norm: its input and its FP32 statistics, mean and 1/σ for LayerNorm
/// (`native_layer_norm`; Transformer Engine's and Apex's fused norms likewise), 1/σ for RMSNorm;
/// on the sequence shard under SP. Measured: tests/data/measured/megatron-core-layer.json.
fn megatron_norm(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let stats = match m.norm {
        NormKind::LayerNorm => 8.0,
        NormKind::RmsNorm => 4.0,
    };
    (c.ec * z.bsh + stats * z.bs) / z.tr
}

/// A mixture-of-experts layer saves besides its experts' MLPs:
/// - Hugging Face (Mixtral) and the other eager profiles: the dispatched token rows (h wide, the
///   experts' input, one per routed row), the expert outputs the routing weights multiply (h wide),
///   and the router's softmax in FP32 (b·s·E; `softmax(router_logits, dtype=torch.float)`);
/// - Megatron-Core (0.16.1, `megatron/core/transformer/moe/`, default settings): the experts' input
///   rows (h wide; the grouped fc1 keeps them); the router's top-k on the rank's own tokens, its
///   int64 indices and the FP32 softmax over the k chosen logits (`moe_utils.py`
///   `topk_routing_with_score_function`: top-k first, then the softmax; 12·k B a token ÷ SP); and
///   what the token dispatcher saves, the default all-gather's or the all-to-all's
///   (`implementation.megatron_moe_dispatcher`): the routing weights and bool map `masked_select`
///   reads, `permute`'s int64 sorted indices and the selected routing weights the fused SwiGLU
///   keeps ([`super::frameworks::megatron::dispatcher_tensors`]; measured on CPU,
///   tests/data/measured/megatron-core-moe.json). The routing weights
///   multiply the activation inside the experts (`experts.py` `activation_func_with_probs`), and
///   the dispatchers un-permute without them (`combine_preprocess` / `combine_postprocess`): no
///   expert output is kept.
///
/// Under sequence parallelism the experts see every token of the tensor-parallel group, not the
/// rank's shard: Megatron's dispatchers all-gather the tokens over the expert tensor-parallel group
/// (`gather_from_sequence_parallel_region`; its size defaults to TP, `model_parallel_config.py`
/// `expert_tensor_parallel_size`), as the experts' FFN width is split over TP (`Sizes::bsf`); an
/// eager framework's MoE runs on the gathered sequence.
fn moe_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if m.moe.experts == 0 {
        return 0.0;
    }
    let routed = m.moe.routed_expert_rows_per_token();
    let experts = f64::from(m.moe.experts);
    if c.profile == Profile::Megatron {
        let router = 12.0 * f64::from(m.moe.top_k) * z.bs / z.tr;
        c.ec * routed * z.bsh * expert_token_share(c, z)
            + router
            + super::frameworks::megatron::dispatcher_saved(c, m, z)
    } else {
        2.0 * c.ec * routed * z.bsh * expert_token_share(c, z) + 4.0 * z.bs * experts
    }
}

/// The share of the micro-batch's tokens a GPU's routed experts see: every token of the TP group
/// (1) when the experts are split over TP; under sequence parallelism with the experts split over
/// ETP < TP ranks (`Ctx::etp`), the tokens of its ETP group's sequence shards, ETP/TP (Megatron-Core
/// 0.16.1: both dispatchers gather over the expert tensor-parallel group, `tp_ep_group` /
/// `tp_group` built from `expt_tp`; measured at TP 2, ETP 1 in tests/data/measured/megatron-core-moe.json;
/// torchtitan at ETP 1 shards the routed tokens over TP too, `ReordererSequenceParallel`).
/// Their FFN width is split over ETP, so their FFN-wide tensors (`Sizes::bsf`, rows × width) do not
/// change under sequence parallelism.
pub fn expert_token_share(c: &Ctx, z: &Sizes) -> f64 {
    c.etp.min(z.tr) / z.tr
}

/// The b·a·s² dropout mask of a layer (what selective recomputation also drops).
pub fn score_mask(c: &Ctx, z: &Sizes) -> f64 {
    if c.dropout && c.attention == AttentionKernel::Materialized {
        c.mask_bytes * z.bas2
    } else {
        0.0
    }
}

/// Whether the model ends in a token-level loss over the vocabulary (LM or MLM head).
pub fn has_lm_loss(m: &ResolvedModel) -> bool {
    m.arch == ArchKind::Decoder || m.mlm_head
}

/// Saved outside the layers on the first pipeline stage (embeddings).
/// HF decoder: the embedding-dropout mask; RoPE cos/sin (2·s·d, shared by all layers). HF encoder:
/// embedding LayerNorm input and statistics, its output (saved by layer 0's projections), mask.
/// Megatron: the embedding-dropout mask (Korthikanti §4.3).
pub fn first_stage_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes, s: f64) -> f64 {
    let mask = if c.dropout {
        c.mask_bytes * z.bsh / z.tr
    } else {
        0.0
    };
    match c.profile {
        Profile::Megatron => mask,
        Profile::HuggingFace | Profile::LitGpt | Profile::Torchtune => {
            let rope = if m.positions == crate::scenario::PositionKind::Rotary {
                2.0 * s * f64::from(m.head_dim) * c.er
            } else {
                0.0
            };
            // The embedding LayerNorm's output is layer 0's q/k/v input (`Sizes::lin_tr`).
            let enc = if m.arch == ArchKind::Encoder {
                let out = if c.amp { 3.0 * c.ec } else { c.er };
                (c.er * z.bsh + 8.0 * z.bs) / z.tr + out * z.bsh / z.lin_tr
            } else {
                0.0
            };
            mask + rope + enc * c.saved_scale() + super::frameworks::first_stage(c, m, z)
        }
    }
}

/// Saved outside the layers on the last pipeline stage, without the loss: HF decoder final norm;
/// HF encoder MLM transform (dense output, GELU output, LayerNorm statistics and output). Megatron:
/// final LayerNorm input 2sbh and its FP32 statistics + output-layer input 2sbh (Korthikanti §4.3).
pub fn last_stage_extra(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let k = c.saved_scale();
    match c.profile {
        Profile::Megatron => (megatron_norm(c, m, z) + c.ec * z.bsh / z.tr) * k,
        Profile::HuggingFace | Profile::LitGpt | Profile::Torchtune => match m.arch {
            ArchKind::Decoder => hf_norm(c, m, z, 1.0) * k + super::frameworks::final_norm(c, m, z),
            // The transform LayerNorm's output is the decoder linear's input (`Sizes::lin_tr`).
            ArchKind::Encoder if m.mlm_head => {
                let out = if c.amp { c.ec } else { c.er };
                ((2.0 * c.ec * z.bsh + 8.0 * z.bs) / z.tr + out * z.bsh / z.lin_tr) * k
            }
            ArchKind::Encoder => 0.0,
        },
    }
}

/// Element bytes of the loss's log-probabilities: FP32 for HF causal LMs (`ForCausalLMLoss` calls
/// `logits.float()`) and Megatron (FP32 logits, Korthikanti §4.3); the compute type for HF
/// `BertForMaskedLM` (plain `CrossEntropyLoss` on the logits; measured: bf16 BERT keeps 2·b·s·V).
pub fn loss_bytes(c: &Ctx, m: &ResolvedModel) -> f64 {
    if c.profile == Profile::HuggingFace && m.arch == ArchKind::Encoder {
        c.ec
    } else {
        4.0
    }
}

/// The loss's saved log-probabilities, b·s·V / t elements (HF `cross_entropy` saves the
/// `log_softmax` output; Megatron saves FP32 logits). None with a fused, chunked cross-entropy.
pub fn loss_saved(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if let Some(l) = framework_loss(c, m, z) {
        return l.saved;
    }
    if has_lm_loss(m) && !c.fused_ce {
        loss_bytes(c, m) * z.bsv
    } else {
        0.0
    }
}

/// Live at the loss in forward on top of the saved tensors: the logits in the compute type and,
/// when the loss runs in a wider type, their upcast copy (HF `logits.float()`).
pub fn loss_forward_transient(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if !has_lm_loss(m) {
        return 0.0;
    }
    if let Some(l) = framework_loss(c, m, z) {
        return l.forward;
    }
    if c.fused_ce {
        return c.ec * z.bsh;
    }
    let e = loss_bytes(c, m);
    c.ec * z.bsv + if c.ec < e { e * z.bsv } else { 0.0 }
}

/// The head's output as the model returns it, before the loss: the logits in the compute type
/// (b·s·V / t), or with a fused cross-entropy, which takes the hidden states, those (b·s·h).
pub fn head_output(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if !has_lm_loss(m) {
        0.0
    } else if c.fused_ce {
        c.ec * z.bsh
    } else {
        c.ec * z.bsv
    }
}

/// Live in the loss backward on top of the saved tensors (`_log_softmax_backward_data`): the
/// gradient of the log-probabilities and the gradient of the logits, 2 · b·s·V / t in the loss type.
pub fn loss_backward_transient(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    if !has_lm_loss(m) {
        return 0.0;
    }
    if let Some(l) = framework_loss(c, m, z) {
        l.backward
    } else if c.fused_ce {
        2.0 * c.ec * z.bsh
    } else {
        2.0 * loss_bytes(c, m) * z.bsv
    }
}

/// A framework's own loss (`memory::frameworks`), unless a fused cross-entropy replaces it.
fn framework_loss(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> Option<super::frameworks::Loss> {
    if has_lm_loss(m) && !c.fused_ce {
        super::frameworks::loss(c, m, z)
    } else {
        None
    }
}

/// Gradient buffers alive while one layer runs backward: the MLP's and, for materialised attention,
/// the scores' input gradients (two tensors each). A gated MLP's backward holds three b·s·f
/// gradients at its product (the down projection's input gradient and the two factors'); with a
/// trained down projection its saved input is freed by then, so two count beyond the saved
/// tensors, but a frozen one (LoRA without a `down` adapter) never saved it: three (measured on
/// CPU with a 512-token vocabulary, where the peak is in the last layer's backward, PEFT 0.21.2
/// under FSDP2: docs/frameworks/fsdp.md "Inside the blocks").
pub fn layer_backward_transient(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let scores = if c.attention == AttentionKernel::Materialized {
        2.0 * c.ec * z.bas2
    } else {
        0.0
    };
    let frozen_down =
        c.mode == Mode::Training && c.framework.frozen_down() && m.ffn_kind == FfnKind::SwiGlu;
    let mlp = if frozen_down { 3.0 } else { 2.0 };
    mlp * c.ec * z.bsf + scores
}
