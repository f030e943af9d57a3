//! PyTorch FSDP1 and FSDP2 (torch 2.15.0): the unsharded parameters and communication buffers a
//! fully sharded step holds beyond the sharded model states. Derived from the wheel's
//! `torch/distributed/fsdp/` (`_runtime_utils.py`, `_flat_param.py`, `_init_utils.py`,
//! `_fully_shard/_fsdp_param_group.py`, `_fully_shard/_fsdp_collectives.py`,
//! `_fully_shard/_fsdp_state.py`) and held to CPU/gloo records (docs/frameworks/fsdp.md).
//!
//! A unit is one transformer block (the usual `transformer_auto_wrap_policy` / `fully_shard` per
//! block); the root unit holds what is outside the blocks (embeddings, final norm, untied head).

use super::super::ctx::Ctx;
use super::super::inventory;
use super::super::training::{Parts, Stage};
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::lora;
use crate::estimator::{Component, Diagnostic, Diagnostics, Phase, PhasePeaks};
use crate::scenario::{LossCall, Profile, ReduceDtype, RlAlgorithm, Sharding, ZeroStage};

/// Whether FSDP shards this step: `sharding` is FSDP1 or FSDP2 and `strategies.zero` is stage 3
/// (FSDP always shards parameters, gradients and optimizer states; stages 1–2 keep the generic
/// ZeRO rule).
pub fn applies(c: &Ctx) -> bool {
    shards(c.framework.sharding, c.zero)
}

/// [`applies`] from the scenario's choices (for `Ctx` itself and the step time).
pub fn shards(sharding: Sharding, zero: ZeroStage) -> bool {
    matches!(sharding, Sharding::Fsdp1 | Sharding::Fsdp2) && zero == ZeroStage::Stage3
}

/// [`pipeline_no_sync`] from the scenario's choices and the number of pipeline stages.
pub fn pipelined(sharding: Sharding, zero: ZeroStage, pp_stages: f64) -> bool {
    shards(sharding, zero) && sharding == Sharding::Fsdp2 && pp_stages > 1.0
}

/// FSDP with a ZeRO stage other than 3 (FSDP has none: `ShardingStrategy` FULL_SHARD and
/// SHARD_GRAD_OP both shard all three states, `fully_shard` likewise), and FSDP1 under pipeline
/// parallelism (`torch/distributed/pipelining` builds its stages from `fully_shard` modules; FSDP1
/// has no pipeline integration in torch 2.15.0).
pub fn diagnose(sharding: Sharding, zero: ZeroStage, pp_stages: u32, d: &mut Diagnostics) {
    if !matches!(sharding, Sharding::Fsdp1 | Sharding::Fsdp2) {
        return;
    }
    if zero != ZeroStage::Stage3 {
        d.insert(Diagnostic::FsdpNeedsZero3);
    }
    if sharding == Sharding::Fsdp1 && pp_stages > 1 {
        d.insert(Diagnostic::Fsdp1WithPipeline);
    }
}

/// FSDP1 at one rank switches `FULL_SHARD` / `SHARD_GRAD_OP` to `NO_SHARD` (`_init_utils.py`
/// line 433, "FSDP is switching to use `NO_SHARD`"): the flat parameter is used in place.
fn no_shard(c: &Ctx) -> bool {
    c.framework.sharding == Sharding::Fsdp1 && c.dp <= 1.0
}

/// Bytes of one element of an unsharded parameter: `MixedPrecision(param_dtype)` casts the
/// all-gathered parameters to the compute type while the FP32 shard stays (`_flat_param.py`
/// `_mp_shard`, FSDP2 `FSDPParam.init_all_gather_outputs` in `param_dtype`).
fn e_unsharded(c: &Ctx) -> f64 {
    c.ec
}

/// A pass of the step, for the units it holds unsharded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Forward,
    Backward,
}

/// (units unsharded at once inside a block, root bytes) for the stage. With
/// `reshard_after_forward`, in forward the current unit only: FSDP1 has `forward_prefetch=False` by
/// default, and FSDP2's implicit prefetch issues the next all-gather from the next unit's
/// pre-forward, after this unit's post-forward has resharded it (`_fsdp_param_group.py`
/// `get_all_gather_streams`: separate streams, same CPU order), so what it adds is the held
/// all-gather buffer ([`staging`]). In backward the current unit and the next one prefetched
/// (FSDP1 `BackwardPrefetch.BACKWARD_PRE`, FSDP2 `_backward_prefetch` from `pre_backward`; at one
/// rank FSDP2's prefetch gathers nothing). Without it every unit of the stage stays unsharded from
/// its forward to its backward. Measured on CPU with a 512-token vocabulary, where the peaks sit
/// inside the blocks (docs/frameworks/fsdp.md "Inside the blocks"). The root is never resharded
/// after forward (FSDP1 `_post_forward_reshard`: `not state._is_root`; FSDP2 `_fsdp_state.py`
/// `_lazy_init` sets the root's `post_forward_mesh_info = None`). With [`own_units`] the root
/// keeps nothing of the embedding and the head (their moments are [`edges`]).
fn units(c: &Ctx, m: &ResolvedModel, st: Stage, pass: Pass) -> (f64, f64) {
    let in_flight = if !c.framework.fsdp.reshard_after_forward {
        st.layers
    } else if pass == Pass::Forward {
        1.0
    } else {
        (1.0 + prefetches(c)).min(st.layers.max(1.0))
    };
    let (emb, head) = edge_bytes(c, m, st);
    let root = if own_units(c, m) { 0.0 } else { emb + head };
    (in_flight, root)
}

/// Units the backward prefetches beside the current one: one, except FSDP2 at one rank, whose
/// prefetch all-gathers nothing (`unshard` returns before `foreach_all_gather` at world size 1).
fn prefetches(c: &Ctx) -> f64 {
    if c.framework.sharding == Sharding::Fsdp2 && c.dp <= 1.0 {
        0.0
    } else {
        1.0
    }
}

/// Unsharded bytes of the stage's embedding and head (the head's count includes the final norm's
/// h parameters, which torchtune leaves in the root unit).
fn edge_bytes(c: &Ctx, m: &ResolvedModel, st: Stage) -> (f64, f64) {
    let (emb, head) = edge_elems(c, m, st);
    (emb * e_unsharded(c), head * e_unsharded(c))
}

/// Elements of the stage's embedding and head on this tensor-parallel rank, as the inventory
/// counts them (`inventory::rank_edge_params`): the first stage's embeddings (the word table ÷ TP,
/// a position table whole), the last stage's head ÷ TP, and under a pipeline a tied head's copy of
/// the word table on the last stage.
fn edge_elems(c: &Ctx, m: &ResolvedModel, st: Stage) -> (f64, f64) {
    (
        inventory::rank_edge_params(c, m, st.first, false),
        inventory::rank_edge_params(c, m, false, st.last),
    )
}

/// Parameter elements of a stage per GPU as FSDP units hold them: its blocks as this GPU holds them
/// (`inventory::stage_block_params`: norms and other replicated parameters whole, only its
/// expert-parallel rank's experts, pruning and weight sharing applied) and its embedding and
/// head ÷ TP.
pub fn stage_elements(c: &Ctx, m: &ResolvedModel, st: Stage) -> f64 {
    let (emb, head) = edge_elems(c, m, st);
    inventory::stage_block_params(c, m, st.layers) + emb + head
}

/// Whether the embedding and the head are `fully_shard` units of their own (torchtune 0.6.1
/// `custom_sharded_layers: ['tok_embeddings', 'output']`, `training/_distributed.py`
/// `shard_model`: every matching module gets `fully_shard(m, reshard_after_forward=...)` before
/// the root). Without `reshard_after_forward` they stay unsharded from forward to backward, as in
/// the root; a tied table is both units' parameter, which is left in the root.
fn own_units(c: &Ctx, m: &ResolvedModel) -> bool {
    edge_units(c, m) && c.framework.fsdp.reshard_after_forward
}

/// The larger of the embedding's and the head's own moments under [`own_units`]: each is
/// unsharded beside the other units in flight in that pass ([`units`]: in backward the block its
/// pre-backward prefetches) plus, in forward, its own all-gather output held until the next
/// copy-out ([`staging`], FSDP2 `wait_for_unshard`; FSDP1's `_mp_shard`). 0 when FSDP keeps them
/// in the root.
fn edges(c: &Ctx, m: &ResolvedModel, st: Stage, in_flight: f64, pass: Pass) -> f64 {
    if !own_units(c, m) {
        return 0.0;
    }
    let unit = unit_bytes(c, m);
    let held = |x: f64| {
        if pass == Pass::Backward {
            0.0
        } else {
            staging(c, x)
        }
    };
    let moment = |x: f64| {
        if x > 0.0 {
            x + (in_flight - 1.0) * unit + held(x.max(unit))
        } else {
            0.0
        }
    };
    let (emb, head) = edge_bytes(c, m, st);
    moment(emb).max(moment(head))
}

/// One unit's unsharded parameter bytes (one block as this GPU holds it:
/// `inventory::rank_block_params`). A quantized LoRA base is gathered as stored: torchao's
/// `NF4Tensor` all-gathers its packed data and scales (`fsdp_pre_all_gather`, the FSDP2 extension
/// torchtune's QLoRA relies on), and bitsandbytes' 4-bit weights under FSDP are flat parameters of
/// their packed `quant_storage` (Answer.AI's FSDP-QLoRA), so the block matrices count at their
/// stored bits and only the rest (norms, biases) in the unsharded type. FSDP2's unsharded NF4 weight
/// probed on CPU: 4.126 bits a weight (tests/data/measured/fsdp-nf4-unshard-probe.json); a whole
/// QLoRA step under FSDP is not measured.
pub fn unit_bytes(c: &Ctx, m: &ResolvedModel) -> f64 {
    let block = inventory::rank_block_params(c, m);
    match c.framework.quantized_base_bits {
        Some(bits) => {
            let stored = crate::estimator::memory::peft::layer_matrix_elems_stored(
                m,
                m.moe.stored_expert_fraction(),
            );
            let matrices = (stored / c.tp + inventory::expert_tp_excess(c, m)).min(block);
            matrices * bits / 8.0 + (block - matrices) * e_unsharded(c)
        }
        None => block * e_unsharded(c),
    }
}

/// The stage's parts under FSDP: the gathered weights are those of the layers' backward, the units
/// in flight there ([`units`]) and the root. FSDP1's unsharded flat parameter is its all-gather
/// output (`_flat_param.py` `_full_param_padded`; under mixed precision the input is `_mp_shard`,
/// the shard in `param_dtype`). FSDP2's prefetched unit is its flat all-gather output until its
/// copy-out at the unit's pre-backward, which frees it (`wait_for_unshard`: "in backward, we free
/// the all-gather result immediately after the current copy-out"): one unit either way. Autocast
/// copies do not exist (the parameters are already in the compute type) and neither do DDP's
/// buckets. The forward's blocks hold fewer: [`forward_gathered`].
pub fn parts(c: &Ctx, m: &ResolvedModel, p: Parts, st: Stage) -> Parts {
    if !applies(c) {
        return p;
    }
    let mut out = p;
    out.comm = 0.0;
    out.gathered = backward_gathered(c, m, st).unwrap_or(0.0);
    // No autocast copies: under FSDP `Ctx` takes the compute type's rules (`amp` off).
    if !no_shard(c) {
        out.casts = 0.0;
    }
    out
}

/// The gathered bytes inside a block in backward ([`parts`]), or `None` when FSDP does not apply.
/// No staging: FSDP1's `_mp_shard` is freed right after the prefetch's all-gather, before the
/// layer's backward (measured), and FSDP2's prefetched buffer is the prefetched unit.
pub fn backward_gathered(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    in_blocks(c, m, st, Pass::Backward, 0.0, |in_flight, root, unit| {
        (in_flight * unit + root).max(edges(c, m, st, in_flight, Pass::Backward))
    })
}

/// `f(units in flight, root bytes, unit bytes)` in `pass` when FSDP shards the stage, `at_one`
/// under FSDP1's `NO_SHARD` (nothing gathered), `None` when FSDP does not apply.
fn in_blocks<T>(
    c: &Ctx,
    m: &ResolvedModel,
    st: Stage,
    pass: Pass,
    at_one: T,
    f: impl FnOnce(f64, f64, f64) -> T,
) -> Option<T> {
    if !applies(c) {
        return None;
    }
    if no_shard(c) {
        return Some(at_one);
    }
    let (in_flight, root) = units(c, m, st, pass);
    Some(f(in_flight, root, unit_bytes(c, m)))
}

/// The gathered bytes in the backward of the layers that run it after the first:
/// `[second, second-to-last, last]`. Each unit is resharded after its backward
/// (`reshard_after_backward`, whatever `reshard_after_forward` says), so without
/// `reshard_after_forward` the units not yet back-propagated stay; with it the current and the
/// prefetched unit, and in the last layer nothing left to prefetch (measured). `None` when FSDP
/// does not apply.
pub fn later_gathered(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<[f64; 3]> {
    in_blocks(
        c,
        m,
        st,
        Pass::Backward,
        [0.0; 3],
        |in_flight, root, unit| {
            // Units left at the layer that runs n-th (0 = the first) of the stage's backward.
            let at = |nth: f64| in_flight.min((st.layers - nth).max(1.0)) * unit + root;
            [at(1.0), at(st.layers - 2.0), at(st.layers - 1.0)]
        },
    )
}

/// The gathered bytes inside a block in forward: the units in flight there ([`units`]), the root
/// and the all-gather staging ([`staging`]: FSDP2's held buffer, FSDP1's `_mp_shard`), or `None`
/// when FSDP does not apply (the stage's `gathered` holds).
pub fn forward_gathered(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    in_blocks(c, m, st, Pass::Forward, 0.0, |in_flight, root, unit| {
        (in_flight * unit + root + staging(c, unit)).max(edges(c, m, st, in_flight, Pass::Forward))
    })
}

/// Bytes of one element of the reduce-scatter (`ReduceDtype::Default`: FSDP1 in `param_dtype`,
/// FSDP2 2.15 in the sharded parameters' type).
fn e_reduce(c: &Ctx) -> f64 {
    match (c.framework.fsdp.reduce_dtype, c.framework.sharding) {
        (ReduceDtype::Fp32, _) => 4.0,
        (ReduceDtype::Default, Sharding::Fsdp2) => c.e_weights,
        _ => e_unsharded(c),
    }
}

/// What a later layer's backward holds beyond the first one's, whose peak comes before any unit is
/// reduced: (the reduce-scatter input FSDP2 keeps, the reduced unit's sharded gradients). A unit's
/// reduction runs at its post-backward, after the unit's own backward and with its activation
/// gradients freed: FSDP2 `foreach_reduce` (`_fsdp_collectives.py`: `reduce_scatter_input`
/// allocated, the gradients copied in and then freed, `reduce_output` of 1/DP) and FSDP1
/// `_reduce_grad` (`_runtime_utils.py`). FSDP2 2.15 keeps the input in
/// `comm_ctx.reduce_scatter_states` until the next unit's post-backward
/// (`reduce_scatter_max_input_buffers` = 1; `_fsdp_param_group.py` `post_backward`), so it
/// lives through the next layer's backward; FSDP1 keeps nothing. (0, 0) when FSDP does not apply.
pub fn later_backward(c: &Ctx, m: &ResolvedModel) -> f64 {
    if !applies(c) || no_shard(c) || c.framework.sharding != Sharding::Fsdp2 {
        return 0.0;
    }
    grad_elements(c, m) * e_reduce(c)
}

/// Unsharded gradient bytes a layer's backward holds before any reduction: (the down projection's
/// fresh gradient, the first a layer's backward writes; the head's, which the root unit reduces
/// only at the end of backward), in the unsharded parameters' type (FSDP's gradients follow
/// `param_dtype` until the reduce-scatter). None of either under LoRA (frozen), and no head in
/// the root under [`edge_units`] (its own unit is reduced after its own backward). (0, 0) when
/// FSDP does not apply.
pub fn fresh_gradients(c: &Ctx, m: &ResolvedModel, st: Stage) -> (f64, f64) {
    if !applies(c) || c.framework.lora {
        return (0.0, 0.0);
    }
    let e = e_unsharded(c);
    let down = super::super::layer_moments::down_projection_elems(m) / c.tp * e;
    let head = if edge_units(c, m) {
        0.0
    } else {
        let (_, head) = edge_elems(c, m, st);
        // A tied table's gradient is the head's where the loss runs too (on one stage the table is
        // the embedding's; under a pipeline the last stage's copy is in `head`).
        let tied = if st.first && st.last && m.tied_embeddings {
            inventory::word_embeddings(m) / c.tp
        } else {
            0.0
        };
        head.max(tied) * e
    };
    (down, head)
}

/// Elements of one unit that get a gradient: the block as this GPU holds it, or under LoRA with
/// FSDP2 only its adapters. FSDP2's `post_backward` (`_fsdp_param_group.py`) gathers
/// `fsdp_params_with_grad`, the parameters whose unsharded gradient exists, and `foreach_reduce`
/// copies and reduce-scatters only those; a frozen base weight has none. FSDP1 mixes frozen and
/// trained parameters only under `use_orig_params=True`, and its flat parameter's gradient is
/// one flat tensor over the whole unit.
fn grad_elements(c: &Ctx, m: &ResolvedModel) -> f64 {
    if c.framework.lora && c.framework.sharding == Sharding::Fsdp2 {
        lora::rank_adapters_per_layer(
            m,
            c.framework.lora_rank,
            c.framework.lora_targets,
            c.tp,
            c.mode,
        )
    } else {
        inventory::rank_block_params(c, m)
    }
}

/// Whether the stage runs under `torch.distributed.pipelining` with FSDP2: every micro-batch's
/// backward runs without gradient sync (`stage.py` `backward_maybe_with_nosync`: on an
/// `FSDPModule` it calls `set_reshard_after_backward(False)` and `set_requires_gradient_sync(False)`
/// before each backward; the reduce-scatters run once, after the last micro-batch: torch 2.6 at
/// the end of its backward, torch 2.15 as the schedule's `perform_reduce_grad`). FSDP1 has no
/// pipeline integration ([`diagnose`]).
pub fn pipeline_no_sync(c: &Ctx) -> bool {
    pipelined(c.framework.sharding, c.zero, c.pp)
}

/// Bytes of one element of a gradient accumulated without sync: the reduce-scatter's type, at
/// least the parameters'. torch 2.15 `FSDPParamGroup.post_backward` with `reduce_grads` off
/// casts each unit's gradient to `FSDPParam.unsharded_grad_dtype` (`reduce_dtype`, else the
/// sharded parameters' original type) and sets it as the parameter's `grad_dtype`, so autograd
/// accumulates the later micro-batches in that type (`_fsdp_param_group.py`
/// `_set_unsharded_grad_dtypes`); torch 2.6 did the same for a `reduce_dtype` that differs from
/// the gradient's (`_fsdp_param.py` `to_accumulated_grad_if_needed`).
pub fn e_accumulated(c: &Ctx) -> f64 {
    e_reduce(c).max(e_unsharded(c))
}

/// Under [`pipeline_no_sync`], the stage's unsharded gradients, accumulated over its micro-batches
/// from the first backward until the reduce-scatters after the last: every block of the stage and
/// the root's embedding and head, over TP, in [`e_accumulated`]. `None` otherwise.
pub fn pipeline_gradients(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    pipeline_no_sync(c).then(|| stage_gradient_elements(c, m, st) * e_accumulated(c))
}

/// Elements of the stage that get a gradient: every parameter ([`stage_elements`]), or under LoRA
/// its layers' adapters only (the base, the embedding and the head are frozen).
pub fn stage_gradient_elements(c: &Ctx, m: &ResolvedModel, st: Stage) -> f64 {
    if c.framework.lora {
        st.layers * grad_elements(c, m)
    } else {
        stage_elements(c, m, st)
    }
}

/// The transient of the backward under [`pipeline_no_sync`]: (in a micro-batch's backward, one
/// unit's fresh gradient in the parameters' type before it is added to the accumulated copy; at the
/// deferred reduce-scatter, one unit's reduce-scatter input and output).
pub fn pipeline_backward(c: &Ctx, m: &ResolvedModel) -> (f64, f64) {
    let per_elem = grad_elements(c, m);
    (
        per_elem * e_unsharded(c),
        per_elem * e_reduce(c) * (1.0 + 1.0 / c.dp),
    )
}

/// FSDP2's held all-gather buffer: one unit (`wait_for_unshard` keeps the current result "to free
/// after the next copy-out"); none at one rank, where `unshard` all-gathers nothing and
/// `wait_for_unshard` copies the shards straight into the unsharded tensors
/// (`_fsdp_param_group.py` lines 480, 523).
fn staging2(c: &Ctx, unit: f64) -> f64 {
    if c.dp > 1.0 { unit } else { 0.0 }
}

/// `MixedPrecision(param_dtype)`: the compute type is narrower than the sharded parameters. (Not
/// `Ctx::amp`, which is off under FSDP: its mixed precision has no autocast.)
fn mixed_precision(c: &Ctx) -> bool {
    c.ec < c.e_weights
}

/// The all-gather staging beside a unit of `unit` bytes: FSDP2's held buffer ([`staging2`]);
/// FSDP1's `_mp_shard`, which lives only through its own all-gather (`_flat_param.py`
/// `post_unshard` → `_free_low_precision_sharded_param`): one unit's shard.
fn staging(c: &Ctx, unit: f64) -> f64 {
    match c.framework.sharding {
        Sharding::Fsdp2 => staging2(c, unit),
        _ if mixed_precision(c) => unit / c.dp,
        _ => 0.0,
    }
}

/// Whether the loop computes the loss after the root's forward (`implementation.fsdp.loss`;
/// `Auto`: torchtune's and LitGPT's recipes and the post-training trainers, which compute log
/// probabilities from the returned logits (TRL's DPO and GRPO, verl's actor); the Hugging Face
/// Trainer and Megatron-Core's `GPTModel` compute it in the forward from the labels).
pub fn loss_after_forward(c: &Ctx) -> bool {
    match c.framework.fsdp.loss {
        LossCall::InModelForward => false,
        LossCall::AfterModelForward => true,
        LossCall::Auto => {
            matches!(c.framework.profile, Profile::Torchtune | Profile::LitGpt)
                || c.post.algorithm != RlAlgorithm::Off
        }
    }
}

/// Whether the root unit is sharded again once the model's forward returns: FSDP2 in torch ≥ 2.8
/// with the root given `reshard_after_forward=True` explicitly
/// (`implementation.fsdp.root_reshard_after_forward`). FSDP1 never reshards the root
/// (`_post_forward_reshard`: `not state._is_root`).
fn root_resharded(c: &Ctx) -> bool {
    c.framework.sharding == Sharding::Fsdp2
        && c.framework.fsdp.reshard_after_forward
        && c.framework.fsdp.root_reshard_after_forward
}

/// The gathered bytes at the loss, where every block has run its forward: (end of forward, loss
/// backward), or `None` when FSDP does not apply. With the loss after the model's forward
/// ([`loss_after_forward`]) the root's post-forward has freed the held all-gather output
/// (`_fsdp_state.py` `_post_forward`: `release_all_gather_state_for_comm_reuse` on the forward's
/// root, torch 2.4 to 2.15) and, with [`root_resharded`], the root's parameters; the loss's
/// backward runs before any pre-backward hook (they are on the model's outputs), so nothing is
/// prefetched (measured, `fsdp_run.py --loss-outside`). The end of the root's forward is then a
/// moment of its own: [`at_head`]. A pipeline stage without the head is treated so too: its
/// forward ends at its root's post-forward (derived from the same lines, not measured). With
/// `reshard_after_forward` no block is
/// unsharded at the forward's loss (FSDP2 still holds its last all-gather buffer), and at the loss
/// backward only the last block, prefetched by the root's pre-backward (FSDP1 `BACKWARD_PRE`,
/// FSDP2's backward prefetch; at one rank FSDP2's prefetch gathers nothing). Without it every
/// block stays. Measured: docs/frameworks/fsdp.md. Under [`own_units`] no block is unsharded at
/// either point and the loss backward holds the head, which the root's pre-backward prefetched
/// (tests/data/measured/fsdp-custom-sharded-cpu-steps.json: the head's all-gather output is live
/// there, the last block's is not; FSDP1's `BACKWARD_PRE` is taken to do the same: derived).
pub fn at_loss(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<(f64, f64)> {
    if !applies(c) || no_shard(c) {
        return None;
    }
    let (_, root) = units(c, m, st, Pass::Backward);
    let unit = unit_bytes(c, m);
    // A stage without the head ends its forward where the root post-forward frees the held output.
    if loss_after_forward(c) || !st.last {
        let root = if root_resharded(c) { 0.0 } else { root };
        let blocks = kept_blocks(c, st) * unit;
        return Some((root + blocks, root + blocks));
    }
    let held = held_at_loss(c, m, st, unit);
    if own_units(c, m) {
        // The root's pre-backward prefetches the next unit, the head, not a block.
        return Some((held, prefetches(c) * edge_bytes(c, m, st).1));
    }
    let kept = kept_blocks(c, st);
    // With resharding, the loss's backward holds the block the root's pre-backward prefetched.
    let bwd = if c.framework.fsdp.reshard_after_forward {
        prefetches(c).min(st.layers)
    } else {
        kept
    };
    Some((root + kept * unit + held, root + bwd * unit))
}

/// The gathered bytes at the end of the root's forward, the head's output just made, when the loss
/// runs after the forward ([`loss_after_forward`]): what [`at_loss`] holds with the loss inside the
/// forward (the root, the blocks kept without resharding, FSDP2's held all-gather output). `None`
/// when the loss runs inside the forward (that moment is the loss's) or FSDP does not apply.
pub fn at_head(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    if !st.last || !applies(c) || no_shard(c) || !loss_after_forward(c) {
        return None;
    }
    let (_, root) = units(c, m, st, Pass::Backward);
    let unit = unit_bytes(c, m);
    let held = held_at_loss(c, m, st, unit);
    if own_units(c, m) {
        return Some(held);
    }
    Some(root + kept_blocks(c, st) * unit + held)
}

/// Blocks kept unsharded once every block has run its forward: none with
/// `reshard_after_forward`, all of the stage's without it.
fn kept_blocks(c: &Ctx, st: Stage) -> f64 {
    if c.framework.fsdp.reshard_after_forward {
        0.0
    } else {
        st.layers
    }
}

/// The gathered bytes when the root's pre-backward all-gathers a root resharded after forward
/// ([`root_resharded`]): its unsharded parameters and, until their copy-out, its flat all-gather
/// output (none at one rank, where the shards are copied straight in). With the loss after the
/// forward that happens once the loss's backward has made the logits' gradient (measured under
/// torchtune's `shard_model` at world size 2: the root's 32.8 MB all-gather output beside its two
/// 16.4 MB unsharded parameters and the gradient's chunks); with the loss inside, before the
/// loss's backward, every saved tensor still live (measured with 16-token sequences, where it is
/// the backward's peak). `None` when the root is not all-gathered there.
pub fn root_regathered(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    if !applies(c) || no_shard(c) || !root_resharded(c) {
        return None;
    }
    let (_, root) = units(c, m, st, Pass::Backward);
    Some(root + staging2(c, root))
}

/// The gathered bytes when FSDP2 first all-gathers the root in forward: its unsharded parameters,
/// and its flat all-gather output, which is freed only at the next unit's wait, after that unit's
/// all-gather output is allocated (`_fsdp_param_group.py` `wait_for_unshard`: the previous result
/// is released, then the copy-out): the root twice and one block, before any activation is saved.
/// Measured with 16-token sequences (FSDP2 over LoRA at world size 2), where it is the forward's
/// peak. With `custom_sharded_layers` the first unit gathered is the embedding's (the root keeps
/// only the final norm), so the embedding counts twice instead. `None` for FSDP1 (its flat
/// parameter is the all-gather output), at one rank, or when the first unit holds neither the
/// embedding nor the head (a middle pipeline stage).
pub fn forward_start(c: &Ctx, m: &ResolvedModel, st: Stage) -> Option<f64> {
    if !applies(c) || c.framework.sharding != Sharding::Fsdp2 || c.dp <= 1.0 {
        return None;
    }
    let first = if edge_units(c, m) {
        edge_bytes(c, m, st).0
    } else {
        units(c, m, st, Pass::Forward).1
    };
    (first > 0.0).then(|| 2.0 * first + unit_bytes(c, m))
}

/// FSDP2's all-gather output held at the forward's loss: the forward's last one, the last
/// block's, or the head's when it is a unit of its own (with or without resharding; measured,
/// `fsdp_run.py --custom-sharded`). FSDP1 holds none.
fn held_at_loss(c: &Ctx, m: &ResolvedModel, st: Stage, unit: f64) -> f64 {
    if c.framework.sharding != Sharding::Fsdp2 {
        return 0.0;
    }
    let last = if edge_units(c, m) && st.last {
        edge_bytes(c, m, st).1
    } else {
        unit
    };
    staging2(c, last)
}

/// `custom_sharded_layers` with untied embeddings: the embedding and the head are units of their
/// own whether or not they reshard after forward (gathered, held and reduced on their own; a tied
/// table stays in the root). [`own_units`] adds resharding, which frees them between passes.
fn edge_units(c: &Ctx, m: &ResolvedModel) -> bool {
    c.framework.fsdp.custom_sharded_layers && !m.tied_embeddings
}

/// [`at_loss`], or `gathered` (the blocks' figure) at both points when FSDP does not apply.
pub fn loss_gathered(c: &Ctx, m: &ResolvedModel, st: Stage, gathered: f64) -> (f64, f64) {
    at_loss(c, m, st).unwrap_or((gathered, gathered))
}

/// What FSDP's side streams keep reserved beyond the tensors of the peak: the caching allocator
/// keeps a stream's freed blocks for that stream (`CUDACachingAllocator.cpp`: blocks are found per
/// stream, and an expandable segment belongs to one stream), so memory FSDP allocates on its own
/// streams stays reserved while the default stream reaches its peak.
/// - The sharded gradients. FSDP2 allocates the reduce-scatter output on its reduce-scatter
///   stream and the sharded gradients are views of it (`_fsdp_collectives.py` `foreach_reduce`:
///   "The RS output is allocated in the RS stream and used in the default stream (for
///   optimizer)", torch 2.6.0 and 2.15.0); FSDP1's `_reduce_grad` runs under
///   `_post_backward_stream` and allocates the shard there (`_runtime_utils.py`
///   `_get_reduce_scatter_tensors`, `torch.empty_like`, 2.15.0), kept as `_saved_grad_shard` and
///   then `.grad`. `zero_grad` frees them at the next step into that stream's pool: a phase
///   reserves the stage's sharded gradients (its optimizer step's) less the shards live in it
///   (none under a pipeline, whose live gradients are unsharded).
/// - FSDP2's flat all-gather output (`foreach_all_gather` allocates `all_gather_copy_in`'s input
///   and output on the copy-in stream; the per-parameter unsharded tensors are copied out on the
///   default stream): the pool reaches the largest flat buffer, the root's embedding and head (the
///   larger of the two when they are units of their own), of which one unit's ([`staging2`]) is
///   counted live. FSDP1 unshards into its unshard stream's pool (`_unshard`), whose live part is
///   the gathered units; its excess over them is not derived.
///
/// The reserved peak is the largest phase with its pools, so this returns that less the tensor
/// peak. A post-training run's generation is left out: verl empties the cache around its rollout
/// (`workers/sharding_manager/fsdp_vllm.py`: `FSDPVLLMShardingManager.__enter__` and `__exit__`
/// call `empty_cache()`).
pub fn stream_pools(c: &Ctx, m: &ResolvedModel, phases: &PhasePeaks, st: Stage) -> f64 {
    if !applies(c) || no_shard(c) || c.dp <= 1.0 {
        return 0.0;
    }
    let Some((_, peak)) = phases.peak() else {
        return 0.0;
    };
    let shards = phases
        .get(Phase::OptimizerStep)
        .map_or(0.0, |b| b.get(Component::Gradients).get());
    let flat = if c.framework.sharding == Sharding::Fsdp2 {
        let (emb, head) = edge_bytes(c, m, st);
        let root = if edge_units(c, m) {
            emb.max(head)
        } else {
            emb + head
        };
        (root - unit_bytes(c, m)).max(0.0)
    } else {
        0.0
    };
    let mut top = peak.tensor_total().get();
    for (ph, b) in Phase::ALL.iter().zip(&phases.0) {
        let Some(b) = b.as_ref().filter(|_| *ph != Phase::Generation) else {
            continue;
        };
        // Under a pipeline the gradients a phase holds are the unsharded ones autograd made on
        // the default stream ([`pipeline_gradients`]); the shards exist only after the last
        // backward.
        let live = if pipeline_no_sync(c) {
            0.0
        } else {
            b.get(Component::Gradients).get()
        };
        top = top.max(b.tensor_total().get() + (shards - live).max(0.0) + flat);
    }
    top - peak.tensor_total().get()
}
