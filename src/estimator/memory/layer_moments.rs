//! The moments of a training step inside the blocks, beside the loss and the end of backward that
//! `training::phases` charges: the last block's forward, and the backward of the first, the second,
//! the second-to-last and the last layer to run it. Measured on CPU with a 512-token vocabulary,
//! where the peaks sit inside the blocks (FSDP1 / FSDP2, with and without checkpointing, and PEFT
//! LoRA: docs/frameworks/fsdp.md "Inside the blocks"). Outside FSDP only the later layers'
//! backward under checkpointing is used (FSDP1 at one rank, `NO_SHARD`, measured it); the first
//! layer's moment and the forward keep the Hugging Face rules there.

use super::activations::Sizes;
use super::ctx::Ctx;
use super::frameworks::StageExtra;
use super::training::{Parts, Stage};
use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// The forward's moment inside the last block beside the saved tensors of the whole forward: the
/// gathered weights (under FSDP the fewer units a block holds there) and what the block writes,
/// less what only the final norm and the loss save (`last_and_loss`).
pub fn in_block_forward(
    c: &Ctx,
    m: &ResolvedModel,
    p: &Parts,
    fw: &StageExtra,
    last_and_loss: f64,
) -> f64 {
    let inside =
        |g: f64| g + block_forward_transient(c, m, &p.z) - (last_and_loss + p.framework.0).max(0.0);
    // Outside FSDP the loss is where the records peak; the block's moment stays the gathered
    // weights alone there (not measured beyond FSDP's records: a note in docs/frameworks/fsdp.md).
    fw.forward_gathered.map_or(p.gathered, inside)
}

/// Live inside a block in forward beside its saved tensors. At its last projection: the output
/// being written (b·s·h) and, under LoRA, what only the MLP's locals keep there: a frozen down
/// projection's b·s·f input and, with the up (and gate) projections frozen too, the MLP's
/// normalised input, which no op saves. A checkpointed block saves nothing, so at its product
/// the MLP holds the activation's output, the up projection's and the product (three b·s·f; two
/// without a gate) beside the layer's residual and the MLP's normalised input.
fn block_forward_transient(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let t = c.framework.lora_targets;
    let lora = c.framework.lora;
    let gated = m.ffn_kind == FfnKind::SwiGlu;
    let frozen_down = c.framework.frozen_down();
    let frozen_in = lora && !t.up && (!gated || !t.gate);
    // The row-parallel down projection writes the whole b·s·h of partial sums; under sequence
    // parallelism its reduce-scatter's shard beside them.
    let written = c.ec * z.bsh + if z.tr > 1.0 { c.ec * z.bsh / z.tr } else { 0.0 };
    let at_down = written
        + if frozen_down { c.ec * z.bsf } else { 0.0 }
        + if frozen_in {
            c.er * z.bsh / z.lin_tr
        } else {
            0.0
        };
    if c.checkpointing.recomputes_whole_layers() {
        let product = if gated { 3.0 } else { 2.0 };
        // The residual (on the shard) and the MLP's normalised input (gathered: `Sizes::lin_tr`).
        at_down.max(product * c.ec * z.bsf + c.er * z.bsh / z.tr + c.er * z.bsh / z.lin_tr)
    } else {
        at_down
    }
}

/// The backward of a stage as `training::phases` has it.
pub struct Backward {
    /// The first layer's backward: (gradients, saved, transient).
    first: (f64, f64, f64),
    /// Saved bytes of one micro-batch's layers.
    per_mb: f64,
    /// Saved by the last stage outside its layers (the final norm).
    last_stage: f64,
    /// Gradients at the end of backward.
    g_end: f64,
}

impl Backward {
    pub fn new(first: (f64, f64, f64), per_mb: f64, last_stage: f64, g_end: f64) -> Self {
        Self {
            first,
            per_mb,
            last_stage,
            g_end,
        }
    }
}

/// The largest of the layers' backward moments. The first layer's (`b.first`), and a later
/// one's: the layer that runs n-th holds the gradients of the n layers before it (all of them
/// under LoRA's adapters or ZeRO, sharded) and the head's, n layers' saved bytes fewer and the
/// final norm's gone, its own recomputation and backward transients, the units FSDP still gathers
/// there and the reduce-scatter input FSDP2 keeps of the unit before it
/// ([`StageExtra::later_backward`]). Under FSDP every layer's moment also holds the fresh,
/// unsharded gradients ([`StageExtra::fresh_gradients`]: the down projection's, and the head's in
/// the root, reduced only at the end of backward). The terms are linear in n but for the units
/// gathered, so the second, the second-to-last and the last layer are the candidates (measured:
/// with checkpointing a later layer is the peak).
pub fn layer_backward(
    c: &Ctx,
    m: &ResolvedModel,
    p: &Parts,
    fw: &StageExtra,
    st: Stage,
    b: Backward,
) -> (f64, f64, f64) {
    let (grads, acts, transient) = b.first;
    // Under a pipeline FSDP2 accumulates unsharded gradients instead (`fsdp::pipeline_gradients`).
    if fw.accumulated_grads.is_some() {
        return b.first;
    }
    let fsdp = fw.later_gathered.is_some();
    // Outside FSDP the first layer's moment as the Hugging Face records measured it, and the
    // later layers only under checkpointing of a model without towers (measured through
    // `NO_SHARD`; the AMP and encoder-decoder records without it do not fit this per-layer split).
    let plain_applies = c.checkpointing.recomputes_whole_layers() && m.towers.params <= 0.0;
    if !fsdp && !plain_applies {
        return b.first;
    }
    let later_g = fw.later_gathered.unwrap_or([p.gathered; 3]);
    // The final norm's saved tensors (less what LoRA's frozen head already drops).
    let last_stage = (b.last_stage + p.framework_last).max(0.0);
    let layers = st.layers;
    let held = fw.later_backward;
    let g = layer_gradients(c, m, st, b.g_end);
    // Fresh gradients beside the shards: under FSDP unsharded (the head's replaces its shard),
    // outside it the down projection's own.
    let fresh = if fsdp {
        let (down, head) = fw.fresh_gradients;
        down + if head > 0.0 { head - g.head } else { 0.0 }
    } else {
        g.down
    };
    let first_g = p.gathered;
    // The first layer's backward holds the residual stream's gradient from the final norm's
    // backward beside the layer's own (a later layer's is not measured beyond what the first
    // holds); the final norm's saved tensors are freed by then.
    let stream = c.er * p.z.bsh / p.z.tr;
    // (The head's gradient is left sharded there: with it unsharded the records' first-layer
    // peaks come out 0.3–0.5 % high; not resolved.)
    let first = if fsdp {
        (
            grads + fw.fresh_gradients.0,
            (acts - last_stage).max(0.0),
            transient + stream,
        )
    } else {
        b.first
    };
    if layers < 2.0 {
        return first;
    }
    let at = |nth: f64, gathered: f64| {
        (
            (b.g_end - g.not_yet - (layers - nth) * g.layer).max(grads) + fresh,
            // The final norm's saved tensors are freed by then.
            (acts - last_stage - nth * b.per_mb / layers).max(0.0),
            transient + held - first_g + gathered,
        )
    };
    let total = |x: &(f64, f64, f64)| x.0 + x.1 + x.2;
    [
        at(1.0, later_g[0]),
        at((layers - 2.0).max(1.0), later_g[1]),
        at(layers - 1.0, later_g[2]),
    ]
    .into_iter()
    .fold(
        first,
        |best, x| if total(&x) > total(&best) { x } else { best },
    )
}

/// Elements of one layer's MLP down projection (before TP): the first weight gradient a layer's
/// backward writes.
pub(super) fn down_projection_elems(m: &ResolvedModel) -> f64 {
    (f64::from(m.hidden) * f64::from(m.ffn)).min(m.params.per_layer)
}

/// Shares of the stage's gradients at the end of backward (bytes).
struct Shares {
    /// One layer's.
    layer: f64,
    /// Those computed after the layers: an untied embedding's, the towers' (first stage).
    not_yet: f64,
    /// The down projection's (one layer).
    down: f64,
    /// The head's (a tied table's where the loss runs too).
    head: f64,
}

/// [`Shares`] of `g_end`: the adapters of a layer under LoRA (no base gradient, a frozen head);
/// else each parameter's share of them.
fn layer_gradients(c: &Ctx, m: &ResolvedModel, st: Stage, g_end: f64) -> Shares {
    let none = Shares {
        layer: 0.0,
        not_yet: 0.0,
        down: 0.0,
        head: 0.0,
    };
    if c.framework.lora {
        return Shares {
            layer: g_end / st.layers.max(1.0),
            ..none
        };
    }
    let p = &m.params;
    let (first, last) = (f64::from(u8::from(st.first)), f64::from(u8::from(st.last)));
    let tied = f64::from(u8::from(m.tied_embeddings));
    let towers = first * (m.towers.params - m.towers.frozen).max(0.0);
    let elems = st.layers * p.per_layer + first * p.embeddings + last * p.head + towers;
    if elems <= 0.0 || p.per_layer <= 0.0 {
        return none;
    }
    let per_elem = g_end / elems;
    // A tied table's gradient is the head's where the loss runs, else the embedding's.
    let head = last * p.head + first * last * tied * p.embeddings;
    let embedding = first * p.embeddings - first * last * tied * p.embeddings;
    Shares {
        layer: per_elem * p.per_layer,
        not_yet: per_elem * (embedding + towers),
        down: per_elem * down_projection_elems(m),
        head: per_elem * head,
    }
}
