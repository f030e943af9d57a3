//! What LoRA, mixtures of experts and quantized weights change in the time model: backward without the
//! frozen weights' gradients, the weights a forward actually reads, and expert-parallel all-to-alls.

use super::flops;
use super::work::read_weights;
use crate::estimator::memory::peft::layer_matrix_elems_stored;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::lora::active_adapters_per_layer;
use crate::estimator::model::moe::all_to_all_bytes;
use crate::scenario::{Mode, ModelFamily, MoeDispatcher, PeftMethod, Scenario, WeightFormat};

pub(super) fn lora(s: &Scenario, m: &ResolvedModel) -> bool {
    s.mode == Mode::Training
        && m.family == ModelFamily::Transformer
        && s.peft.method != PeftMethod::Full
}

/// FLOPs a LoRA step does not execute, per GPU and micro-batch of `tokens` tokens: backward computes
/// no gradient for the frozen matrices (the weight-gradient GEMM, 2 FLOPs per weight and token; the
/// input-gradient GEMM remains), minus the adapters' own forward and backward (6 per adapter
/// parameter a token runs through, a mixture's top-k experts' only; Kaplan et al. 2020 §2.1
/// convention). `keep` is the share of the matrices
/// structured pruning leaves (the forward runs only those, so only those have gradient GEMMs to
/// skip). 0 for full training. Never more than the forward's matmul FLOPs (≤ a third of the step's).
pub fn lora_flops_saved(
    s: &Scenario,
    m: &ResolvedModel,
    tokens: f64,
    split: f64,
    keep: f64,
) -> f64 {
    if !lora(s, m) {
        return 0.0;
    }
    let adapters =
        active_adapters_per_layer(m, s.peft.rank, s.peft.targets, 1.0) * f64::from(m.layers);
    let frozen = flops::matmul_weights(m) * keep;
    ((2.0 * frozen - 6.0 * adapters) * tokens / split.max(1.0)).max(0.0)
}

/// Trainable parameters per GPU for gradient traffic and the optimizer: with LoRA the adapters a
/// rank of `tp` tensor-parallel ranks and `pp` stages holds (its expert-parallel share of the
/// experts'; `lora::rank_adapters_per_layer`, as the memory estimate counts them), else `full`
/// (the caller's count).
pub fn trainable_params(s: &Scenario, m: &ResolvedModel, full: f64, tp: f64, pp: f64) -> f64 {
    if lora(s, m) {
        crate::estimator::model::lora::rank_adapters_per_layer(
            m,
            s.peft.rank,
            s.peft.targets,
            tp,
            s.mode,
        ) * f64::from(m.layers)
            / pp.max(1.0)
    } else {
        full
    }
}

/// Bytes a forward over `tokens` tokens reads, as a fraction of `read_weights(m)` in the weight type:
/// quantized layer matrices at their bits per weight (inference), and of a mixture's routed experts
/// only this GPU's ⌈E/ep⌉ and of those the ones some token is sent to: 1 − (1 − k/E)^(tokens·ep) in
/// expectation under uniform, independent routing (a decode step of batch 1 reads k of E experts).
pub fn read_scale(s: &Scenario, m: &ResolvedModel, tokens: f64) -> f64 {
    let total = read_weights(m);
    if total <= 0.0 || m.family != ModelFamily::Transformer {
        return 1.0;
    }
    // Every routed expert (ep = 1): ⌈E/1⌉/E = 1.
    let layer_mats = f64::from(m.layers) * layer_matrix_elems_stored(m, 1.0);
    let mats = m.ffn_kind.matrices();
    let e = f64::from(m.moe.experts);
    let routed = if m.blocks.is_flat() {
        f64::from(m.layers) * e * mats * f64::from(m.hidden) * f64::from(m.ffn)
    } else {
        m.blocks.sum(|k| k.routed)
    };
    // With expert parallelism a GPU holds ⌈E/ep⌉ experts and serves the tokens of all ep ranks.
    let ep = f64::from(m.moe.ep.max(1));
    let touched = if e > 0.0 {
        let miss = (1.0 - f64::from(m.moe.top_k) / e).max(0.0);
        (1.0 - miss.powf((tokens * ep).max(1.0))) * m.moe.stored_expert_fraction()
    } else {
        1.0
    };
    let format = if s.mode == Mode::Inference {
        s.quantization.weights
    } else {
        WeightFormat::AsPrecision
    };
    let e_w = s.precision_types().weights.bytes();
    let bits = format.bits_per_weight(s.quantization.group_size, m.hidden, true);
    let ratio = bits.map_or(1.0, |b| b / 8.0 / e_w.max(0.125));
    let layers_read = (layer_mats - routed * (1.0 - touched)).max(0.0);
    let rest = (total - layer_mats).max(0.0);
    if s.quantization.experts_only && s.mode == Mode::Inference {
        // Only the experts are quantized: the dense matrices are read in the precision's type.
        let dense = (layer_mats - routed).max(0.0);
        return ((rest + dense + routed * touched * ratio) / total).clamp(0.0, 4.0);
    }
    ((rest + layers_read * ratio) / total).clamp(0.0, 4.0)
}

/// Expert-parallel bytes one GPU sends per micro-batch of `tokens` tokens, over the stage's layers,
/// on the expert-parallel link and on the expert tensor-parallel one: [`ep_collective_bytes`]
/// times [`ep_collectives_per_layer`] per MoE layer.
pub fn all_to_all_bytes_per_step(
    s: &Scenario,
    m: &ResolvedModel,
    tokens: f64,
    layers: f64,
    elem_bytes: f64,
) -> (f64, f64) {
    // Megatron's dispatcher also gathers over the expert TP group at EP 1.
    let gathers_over_etp =
        megatron_dispatches(s) && crate::estimator::memory::ctx::expert_tp(s) > 1.0;
    if m.moe.experts == 0 || (m.moe.ep <= 1 && !gathers_over_etp) {
        return (0.0, 0.0);
    }
    let (ep, tp) = ep_collective_bytes(s, m, tokens, elem_bytes);
    let n = ep_collectives_per_layer(s) * layers * m.moe_layer_share();
    (ep * n, tp * n)
}

/// Expert-parallel collectives per MoE layer and micro-batch: dispatch and combine in forward, their
/// gradients in backward when training (GShard, Lepikhin et al. 2020 §2.2), and dispatch and combine
/// again when checkpointing reruns the layers' forward (full or every k-th: the recomputed forward
/// dispatches its tokens anew).
fn ep_collectives_per_layer(s: &Scenario) -> f64 {
    match s.mode {
        Mode::Inference => 2.0,
        Mode::Training if s.strategies.checkpointing.recomputes_whole_layers() => 6.0,
        Mode::Training => 4.0,
    }
}

/// Bytes one GPU sends in one expert-parallel collective for `tokens` tokens. An all-to-all sends
/// each routed row to its expert's rank: rows·h·e·(EP − 1)/EP (GShard §2.2). Megatron-Core's
/// dispatchers (training; [`megatron_dispatches`]) carry all of the MoE sub-layer's token traffic,
/// which therefore charges no TP collectives of its own unless shared experts run beside it
/// ([`megatron_moe_sublayers_without_tp`]):
/// - the default all-gather dispatcher (`implementation.megatron_moe_dispatcher: AllGather`)
///   all-gathers every token of the ETP × EP group and reduce-scatters the outputs back
///   (`token_dispatcher.py` `MoEAllGatherTokenDispatcher.token_dispatch` / `token_combine`,
///   0.16.1): each rank receives (ETP·EP − 1) sequence shards of tokens/TP, (ETP·EP − 1)/TP ·
///   tokens·h·e per collective (at ETP = TP the (EP − 1)·tokens·h·e beyond a dense MLP's TP
///   gather, plus that gather's (TP − 1)/TP);
/// - the all-to-all dispatcher under sequence parallelism (`MoEAlltoAllTokenDispatcher`) sends the
///   routed rows of the rank's own sequence shard, tokens/TP, and all-gathers the rows it received
///   over the expert TP group (`dispatch_postprocess`; reduce-scatters them back in
///   `combine_preprocess`): (ETP − 1)·rows·tokens/TP·h·e on that group's link; its `tp_group` is
///   the expert TP group (`pg_collection.expt_tp`), so nothing at ETP 1.
///
/// Returns (bytes on the expert-parallel link, bytes on the expert TP group's).
fn ep_collective_bytes(s: &Scenario, m: &ResolvedModel, tokens: f64, elem: f64) -> (f64, f64) {
    let (h, ep) = (f64::from(m.hidden), f64::from(m.moe.ep.max(1)));
    let rows = m.moe.routed_expert_rows_per_token();
    let dispatcher = match s.mode {
        Mode::Training => s.implementation.megatron_dispatcher(),
        Mode::Inference => None,
    };
    let tp = f64::from(s.parallel.tp.max(1));
    let etp = crate::estimator::memory::ctx::expert_tp(s);
    if dispatcher == Some(MoeDispatcher::AllGather) {
        ((etp * ep - 1.0) / tp * tokens * h * elem, 0.0)
    } else if dispatcher.is_some() && s.parallel.sequence_parallel && tp > 1.0 {
        let gather = (etp - 1.0) * rows / tp * tokens * h * elem;
        (all_to_all_bytes(tokens * rows / tp, h, elem, ep), gather)
    } else {
        (all_to_all_bytes(tokens * rows, h, elem, ep), 0.0)
    }
}

/// Whether Megatron-Core's token dispatcher runs the scenario's MoE layers (training a mixture
/// under the Megatron profile): it then carries their token traffic ([`ep_collective_bytes`]).
fn megatron_dispatches(s: &Scenario) -> bool {
    s.mode == Mode::Training
        && s.model.moe.experts > 0
        && s.implementation.megatron_dispatcher().is_some()
}

/// The share of the average layer's sub-layers whose TP collectives Megatron-Core's dispatcher
/// replaces: its MoE sub-layers without shared experts. `MoELayer.forward` (0.16.1
/// `transformer/moe/moe_layer.py`) hands the sequence-parallel shard to the dispatcher and its
/// experts' linears are `is_expert` (no TP collectives of their own); shared experts are a
/// `SharedExpertMLP` on the same shard, with a dense MLP's TP all-gather and reduce-scatter, so a
/// layer with them keeps its sub-layer's. 0 outside Megatron training or without experts.
pub fn megatron_moe_sublayers_without_tp(s: &Scenario, m: &ResolvedModel) -> f64 {
    if megatron_dispatches(s) && m.moe.shared == 0 {
        m.moe_layer_share()
    } else {
        0.0
    }
}

/// Expert-parallel bytes per GPU and their time for `tokens` tokens per forward (× `forwards`), over
/// the expert-parallel group's link (intra-node when EP × ETP GPUs fit a node) plus one latency α per
/// collective that moves bytes. Not overlapped: the experts wait for their tokens.
pub fn ep_comm(
    s: &Scenario,
    m: &ResolvedModel,
    i: &super::inputs::Inputs,
    tokens: f64,
    forwards: f64,
) -> (f64, f64) {
    let layers = f64::from(m.layers.div_ceil(i.pp.max(1)));
    let elem = s.precision_types().activations.bytes();
    let (ep_bytes, tp_bytes) = all_to_all_bytes_per_step(s, m, tokens, layers, elem);
    let (ep_bytes, tp_bytes) = (ep_bytes * forwards, tp_bytes * forwards);
    if ep_bytes + tp_bytes <= 0.0 {
        return (0.0, 0.0);
    }
    // Megatron orders the expert ranks ETP, EP, DP: EP ranks sit ETP apart (TP apart by default),
    // the expert TP group's side by side.
    let etp = crate::estimator::memory::ctx::expert_tp(s) as u32;
    let (bw, _) = i.collective_bw(m.moe.ep, etp);
    let (bw_tp, _) = i.collective_bw(etp, 1);
    // One latency α per collective, and per expert-TP gather or scatter beside it (an all-to-all
    // over one EP rank returns its input).
    let gathers = f64::from(u8::from(ep_bytes > 0.0)) + f64::from(u8::from(tp_bytes > 0.0));
    let latency =
        gathers * ep_collectives_per_layer(s) * layers * m.moe_layer_share() * forwards * i.alpha_s;
    let time = super::roofline::div(ep_bytes, bw) + super::roofline::div(tp_bytes, bw_tp);
    (ep_bytes + tp_bytes, time + latency)
}
