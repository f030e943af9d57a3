//! Training phases of one pipeline stage: what is live at the end of forward (the loss), in the loss
//! backward, during the layers' backward and in the optimizer step. The peak is the largest phase.

use super::activations::{self as act, LayerActs, Sizes};
use super::ctx::{self, Ctx};
use super::layer_moments as moments;
use super::states::ModelStates;
use crate::estimator::model::ResolvedModel;
use crate::estimator::{Breakdown, Component, LayerBreakdown, Phase, PhasePeaks};
use crate::scenario::{ArchKind, AttentionKernel, Checkpointing, Profile, ZeroStage};
use crate::units::Bytes;

/// One stage's place in the pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Stage {
    pub layers: f64,
    pub first: bool,
    pub last: bool,
    /// Micro-batches whose activations are held at once (1F1B: p − stage on stage `stage`).
    pub in_flight: f64,
}

/// Everything the phases need, computed once.
#[derive(Clone, Copy, Debug)]
pub struct Parts {
    pub states: ModelStates,
    /// Optimizer-step temporaries.
    pub opt_temp: f64,
    /// Autocast 16-bit copies of the stage's matmul weights (saved for backward).
    pub casts: f64,
    pub comm: f64,
    /// ZeRO-3 / parameter offload: gathered full-size weights of the layers being computed.
    pub gathered: f64,
    pub layer: LayerActs,
    pub z: Sizes,
    /// The framework's saved bytes beyond the layers and its transient at the loss
    /// (`frameworks::hf::lora_stage`).
    pub framework: (f64, f64),
    /// The part of `framework.0` that belongs to the last stage's final norm and head.
    pub framework_last: f64,
}

/// Bytes saved per layer under the checkpointing policy, and the recomputation transient in
/// backward (Chen et al. 2016 §4.3 for every-k; Korthikanti §4.1 for selective).
fn checkpointed(c: &Ctx, m: &ResolvedModel, p: &Parts, layers: f64) -> (f64, f64) {
    let full = p.layer.total();
    // The layer input: the residual stream (FP32 under HF autocast; 16-bit in Megatron's kernels).
    let e_in = if c.profile == Profile::Megatron {
        c.ec
    } else {
        c.er
    };
    let input = e_in * p.z.bsh / p.z.tr * c.saved_scale();
    match c.checkpointing {
        Checkpointing::None => (full * layers, 0.0),
        Checkpointing::Selective => {
            let kept = p.layer.without_scores(act::score_mask(c, &p.z));
            (kept * layers, full - kept)
        }
        Checkpointing::Full => (input * layers, full),
        Checkpointing::PerOp => {
            let kept = super::per_op::saved(c, m, &p.z, input).min(full);
            (kept * layers, full - kept)
        }
        Checkpointing::EveryK => {
            let k = c.checkpoint_every.min(layers.max(1.0));
            (input * ctx::ceil(layers / k), full * k)
        }
    }
}

/// HF eager decoders build a b×1×s×s float mask; checkpointing keeps it alive as an argument of
/// every checkpointed layer (measured: GPT-2 with checkpointing, +4·b·s² bytes).
fn held_mask(c: &Ctx, m: &ResolvedModel) -> f64 {
    let hf_eager =
        c.profile == Profile::HuggingFace && c.attention == AttentionKernel::Materialized;
    if hf_eager && m.arch == ArchKind::Decoder && c.checkpointing != Checkpointing::None {
        c.b * c.s * c.s * c.cp * c.er
    } else {
        0.0
    }
}

fn base(p: &Parts, grads: f64) -> Breakdown {
    let mut b = Breakdown::default();
    b.set(Component::Weights, Bytes(p.states.weights));
    b.set(Component::MasterWeights, Bytes(p.states.master));
    b.set(Component::Gradients, Bytes(grads));
    b.set(Component::OptimizerStates, Bytes(p.states.optimizer));
    b.set(Component::CommBuffers, Bytes(p.comm));
    b
}

/// What only the last stage holds: its extra saved tensors, the loss's saved tensors, and the
/// loss's forward and backward transients (all 0 on other stages).
fn last_stage_terms(c: &Ctx, m: &ResolvedModel, z: &Sizes, last: bool) -> (f64, f64, f64, f64) {
    if !last {
        return (0.0, 0.0, 0.0, 0.0);
    }
    (
        act::last_stage_extra(c, m, z),
        act::loss_saved(c, m, z),
        act::loss_forward_transient(c, m, z),
        act::loss_backward_transient(c, m, z),
    )
}

/// The torch paths' training-time cache, held by the model output until the loss, and what the
/// towers hold there.
fn held_until_loss(c: &Ctx, m: &ResolvedModel, st: Stage) -> f64 {
    let cache = if st.last && super::blocks::applies(c, m) {
        super::blocks::training_cache(c, m, c.b, c.s)
    } else {
        0.0
    };
    let towers = if st.first && st.last {
        super::towers::held_at_loss(c, m, c.b)
    } else {
        0.0
    };
    cache + towers
}

/// FSDP's own moments of the forward, as transients relative to the phase's saved tensors
/// (`saved`, of which `loss` is the loss's): with the loss after the root's forward, the end of
/// that forward (the head's output made, the loss's tensors not yet; `beside` is what else is live
/// there), which holds what FSDP frees before the loss; and FSDP2's first all-gather of the root,
/// before anything is saved. 0 when neither applies.
fn fsdp_forward_moments(
    c: &Ctx,
    m: &ResolvedModel,
    st: Stage,
    z: &Sizes,
    beside: f64,
    loss: f64,
    saved: f64,
) -> f64 {
    use super::frameworks::fsdp;
    let head =
        fsdp::at_head(c, m, st).map_or(0.0, |g| g + act::head_output(c, m, z) + beside - loss);
    let start = fsdp::forward_start(c, m, st).map_or(0.0, |g| g - saved);
    head.max(start)
}

/// The loss's backward transient (`at_loss`, relative to the phase's saved tensors), or, when
/// larger, the moment where an FSDP2 root resharded after forward is all-gathered again: its
/// all-gather output and unsharded parameters; with the loss after the forward beside the logits'
/// gradient, the loss's saved tensors (`loss`) freed (measured, `torchtune_fsdp_run.py`), with the
/// loss inside before its backward, every saved tensor live (measured, `fsdp_run.py --seq 16`).
fn loss_backward_moment(
    c: &Ctx,
    m: &ResolvedModel,
    st: Stage,
    z: &Sizes,
    at_loss: f64,
    loss: f64,
) -> f64 {
    use super::frameworks::fsdp;
    fsdp::root_regathered(c, m, st).map_or(at_loss, |g| {
        if fsdp::loss_after_forward(c) {
            at_loss.max(g + act::head_output(c, m, z) - loss)
        } else {
            at_loss.max(g)
        }
    })
}

/// The four training phases of a stage.
pub fn phases(c: &Ctx, m: &ResolvedModel, p: &Parts, st: Stage) -> PhasePeaks {
    // The framework's step beside the Hugging Face rules (`memory::frameworks`).
    let (p, fw) = &super::frameworks::step(c, m, p, st);
    let z = &p.z;
    let (per_mb, recompute) = checkpointed(c, m, p, st.layers);
    let per_mb = per_mb * fw.on_device;
    let first = if st.first {
        act::first_stage_extra(c, m, z, c.s) + super::towers::saved(c, m, c.b, c.s)
    } else {
        0.0
    };
    let (last, loss, fwd_t, loss_t) = last_stage_terms(c, m, z, st.last);
    let saved = st.in_flight * (per_mb + first) + last + loss + held_mask(c, m) + p.framework.0;
    let inputs = c.input_bytes + super::towers::inputs(m, c.b) + fw.buffers;
    let head_grad = head_gradient(m, st.last);
    let (g_fwd, g_mid, g_end) = gradient_points(c, p, fw, head_grad);
    let fixed = p.casts + p.gathered + inputs;

    let mut out = PhasePeaks::default();
    let mut phase = |ph: Phase, grads: f64, acts: f64, transient: f64| {
        let mut b = base(p, grads);
        b.set(Component::Activations, Bytes(acts));
        b.set(Component::Transient, Bytes(transient));
        out.set(ph, b);
    };
    // Live at the loss beside its own tensors: the training cache, what the graph keeps.
    let beside = held_until_loss(c, m, st) + fw.kept_by_graph;
    // Context parallelism's exchange buffers live inside one layer's attention: at the end of
    // forward (an upper bound: the last layer saves less by then) and beside the layer's backward.
    let (cp_fwd, cp_bwd) = super::context_parallel::attention_transients(c, z);
    // FSDP holds fewer units at the loss than in a block (the larger of the two points is charged).
    let (g_loss_fwd, g_loss_bwd) = super::frameworks::fsdp::loss_gathered(c, m, st, p.gathered);
    let fsdp_fwd = fsdp_forward_moments(c, m, st, z, beside, loss, saved);
    let loss_fwd_t = (fwd_t + beside + p.framework.1 + g_loss_fwd).max(fsdp_fwd);
    phase(
        Phase::Forward,
        g_fwd,
        saved,
        fixed - p.gathered
            + loss_fwd_t
                .max(cp_fwd + g_loss_fwd)
                .max(moments::in_block_forward(c, m, p, fw, last + loss)),
    );
    if st.last {
        phase(
            Phase::LossBackward,
            g_fwd,
            saved,
            fixed - p.gathered + loss_backward_moment(c, m, st, z, g_loss_bwd + loss_t, loss),
        );
    }
    // Backward: the first layer's backward (head gradient done, loss buffers freed, one layer
    // recomputed) or the end of backward (all gradients; a tied embedding's gradient is summed:
    // embedding backward output + the sum, 2·V·h).
    let mid_t = fixed + recompute + act::layer_backward_transient(c, m, z) + cp_bwd + fw.backward;
    let end_t = inputs
        + p.gathered
        + fw.after_backward()
        + end_of_backward(c, m, z, st.first)
        + fw.backward_end;
    let first_layer = (g_mid, saved - loss, mid_t);
    let b = moments::Backward::new(first_layer, per_mb, last, g_end);
    let (g_mid, mid_acts, mid_t) = moments::layer_backward(c, m, p, fw, st, b);
    let mid_total = g_mid + mid_acts + mid_t;
    let end_total = g_end + end_t;
    let late = super::blocks::backward::late(c, m, st.first && st.last, first, head_grad / c.tp)
        .or(fw.output_backward(saved - loss));
    let late_fixed = fixed + fw.backward;
    let decoder =
        if let Some(l) = late.filter(|l| l.total() + late_fixed > mid_total.max(end_total)) {
            (l.grads, l.acts, late_fixed + l.transient)
        } else if mid_total >= end_total {
            (g_mid, mid_acts, mid_t)
        } else {
            (g_end, 0.0, end_t)
        };
    // An encoder-decoder's encoder runs its backward last (`memory::towers`).
    let decoder_total = decoder.0 + decoder.1 + decoder.2;
    let enc_fixed =
        fixed - p.casts + super::towers::casts_in_encoder_backward(c, m, p.casts) + fw.backward;
    let (g, a, t) = super::towers::encoder_backward(c, m, c.b, own_gradients(p, fw), st.first)
        .filter(|(g, a)| g + a + enc_fixed > decoder_total)
        .map_or(decoder, |(g, a)| (g, a, enc_fixed));
    phase(Phase::Backward, g, a, t + fw.held);
    phase(
        Phase::OptimizerStep,
        fw.step_grads.unwrap_or(p.states.grads),
        0.0,
        p.opt_temp + inputs + fw.held + fw.after_backward(),
    );
    out
}

/// Live at the end of backward beside the gradients: a tied embedding's gradient summed (the
/// embedding backward's output and the sum, 2·V·h) on the first stage, else the first layer's
/// input gradient. (With an encoder the tied sum happens before the encoder's backward:
/// `memory::towers`.)
fn end_of_backward(c: &Ctx, m: &ResolvedModel, z: &Sizes, first: bool) -> f64 {
    if first && m.tied_embeddings && !m.towers.has_encoder() {
        2.0 * vocab_matrix_gradient(c, m)
    } else {
        c.ec * z.bsh / z.tr
    }
}

/// One V × h gradient as this GPU holds it (the vocabulary split over TP): the embedding's or the
/// head's weight gradient, tied or not.
pub(super) fn vocab_matrix_gradient(c: &Ctx, m: &ResolvedModel) -> f64 {
    super::inventory::word_embeddings(m) / c.tp * c.e_grads
}

/// The stage's gradients as tensors of their own: none under DeepSpeed stage 3, which keeps them in
/// its partition buffer (`fw.buffers`).
fn own_gradients(p: &Parts, fw: &super::frameworks::StageExtra) -> f64 {
    if fw.grads_in_buffer {
        0.0
    } else {
        p.states.grads
    }
}

/// Gradient bytes (in forward and at the loss, in the first layer's backward, at the end of
/// backward). They exist during forward only when they accumulate over micro-batches; FSDP2 under a
/// pipeline holds the stage's unsharded ones instead of the shards until the end of backward
/// (`frameworks::fsdp::pipeline_gradients`).
fn gradient_points(
    c: &Ctx,
    p: &Parts,
    fw: &super::frameworks::StageExtra,
    head_grad: f64,
) -> (f64, f64, f64) {
    if let Some(g) = fw.accumulated_grads {
        return (g, g, g);
    }
    let accumulating =
        c.grad_accum > 1.0 || (c.pp > 1.0 && c.pp_microbatches > 1.0) || fw.persistent_grads;
    // DeepSpeed stage 3 reduces every gradient into its partition buffer (`fw.buffers`), also
    // across micro-batches: only the unreduced one in flight is a gradient of its own.
    let ds3 = fw.grads_in_buffer;
    let g_fwd = if accumulating && !ds3 {
        p.states.grads
    } else {
        0.0
    };
    let g_mid = p
        .states
        .grads
        .min(gradients_at_first_backward(c, g_fwd, head_grad));
    let g_end = if ds3 { g_mid } else { p.states.grads };
    (g_fwd, g_mid, g_end)
}

/// Gradient bytes alive in the first layer's backward: the accumulated ones, or the head's (sharded
/// under ZeRO-2/3), whichever is larger.
fn gradients_at_first_backward(c: &Ctx, g_fwd: f64, head_grad: f64) -> f64 {
    let shard_g = if c.zero == ZeroStage::Stage2 || c.zero == ZeroStage::Stage3 {
        c.dp
    } else {
        1.0
    };
    g_fwd.max(head_grad / c.tp * c.e_grads / shard_g)
}

/// Elements of the head's gradient on the last stage (a tied head's is the word-embedding
/// table's, V × h: the position table is not the head's, `inventory::word_embeddings`).
fn head_gradient(m: &ResolvedModel, last: bool) -> f64 {
    if last {
        m.params
            .head
            .max(super::inventory::word_embeddings(m) * f64::from(m.tied_embeddings))
    } else {
        0.0
    }
}

/// The per-layer breakdown of one micro-batch (what one layer holds).
pub fn layer_breakdown(layer: &LayerActs, layer_weights: f64, kv: f64) -> LayerBreakdown {
    LayerBreakdown {
        weights: Bytes(layer_weights),
        attention_activations: Bytes(layer.attention + layer.scores),
        mlp_activations: Bytes(layer.mlp),
        norm_activations: Bytes(layer.norm),
        dropout_masks: Bytes(layer.masks),
        kv_cache: Bytes(kv),
    }
}
