//! What an expert-parallel step sends, by how it dispatches its tokens: an all-to-all sends each
//! routed row to its expert's rank (GShard §2.2); Megatron-Core's default all-gather dispatcher
//! gathers every token of the ETP × EP group and reduce-scatters the outputs back
//! (`token_dispatcher.py` 0.16.1), EP/k times the bytes at top-k and TP 1; a forward rerun by
//! checkpointing dispatches again.

#![allow(clippy::float_cmp, reason = "exact arithmetic on small integers")]

use vram_explorer::estimator::estimate;
use vram_explorer::scenario::{Checkpointing, Mode, MoeDispatcher, Profile, Scenario};

/// A Mixtral-shaped MoE (8 experts, top-2) trained at EP 8 over DP 8, one micro-batch.
fn scenario(profile: Profile, dispatcher: MoeDispatcher) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.model.moe.experts = 8;
    s.model.moe.top_k = 2;
    s.model.moe.ep = 8;
    s.parallel.dp = 8;
    s.implementation.profile = profile;
    s.implementation.megatron_moe_dispatcher = dispatcher;
    s
}

/// [`scenario`] at tensor-parallel degree `tp` with sequence parallelism (how Megatron-Core runs
/// a mixture with TP).
fn sequence_parallel(profile: Profile, dispatcher: MoeDispatcher, tp: u32) -> Scenario {
    let mut s = scenario(profile, dispatcher);
    s.parallel.tp = tp;
    s.parallel.sequence_parallel = true;
    s
}

fn ep_bytes(s: &Scenario) -> f64 {
    estimate(s).performance.communication.ep_bytes.get()
}

/// Megatron's all-gather dispatcher moves every token of the group, (EP − 1)·tokens·h per
/// collective, against the all-to-all's routed rows, k·tokens·h·(EP − 1)/EP: EP/k = 4 times the
/// bytes at EP 8, top-2. The all-to-all dispatcher, and every other profile, send the all-to-all's.
#[test]
fn megatron_all_gather_dispatch_moves_ep_over_k_times_the_bytes() {
    let gathered = ep_bytes(&scenario(Profile::Megatron, MoeDispatcher::AllGather));
    let routed = ep_bytes(&scenario(Profile::Megatron, MoeDispatcher::AllToAll));
    assert!(routed > 0.0);
    assert_eq!(gathered, 4.0 * routed);
    // The setting is Megatron's: under Hugging Face it changes nothing.
    let hf = ep_bytes(&scenario(Profile::HuggingFace, MoeDispatcher::AllGather));
    assert_eq!(hf, routed);
    // Without expert parallelism (at TP 1) nothing is sent, whichever dispatcher.
    let mut s = scenario(Profile::Megatron, MoeDispatcher::AllGather);
    s.model.moe.ep = 1;
    assert_eq!(ep_bytes(&s), 0.0);
}

/// Full checkpointing reruns each layer's forward in backward, its dispatch and combine with it:
/// six collectives per MoE layer instead of four; selective checkpointing reruns attention only.
#[test]
fn a_recomputed_forward_dispatches_again() {
    let with = |c: Checkpointing| {
        let mut s = scenario(Profile::Megatron, MoeDispatcher::AllToAll);
        s.strategies.checkpointing = c;
        ep_bytes(&s)
    };
    let none = with(Checkpointing::None);
    assert_eq!(with(Checkpointing::Full), 1.5 * none);
    assert_eq!(with(Checkpointing::Selective), none);
}

/// Expert tensor parallelism 1 at TP 2 (EP 4 over DP 4): the all-gather dispatcher gathers over
/// ETP × EP = 4 ranks the tokens of their sequence shards, (ETP·EP − 1)/TP = 1.5 × tokens·h per
/// collective, where the TP × EP group at ETP 2 gathers 7 shards, 3.5 ×; and each GPU
/// holds its experts whole and reduces their gradients over the DP × TP ÷ (ETP × EP) = 2 ranks
/// holding them, where at ETP 2 each expert shard lives on one GPU (nothing of it reduced).
#[test]
fn expert_tensor_parallelism_changes_what_is_gathered_and_reduced() {
    let with = |etp: u32| {
        let mut s = sequence_parallel(Profile::Megatron, MoeDispatcher::AllGather, 2);
        s.parallel.dp = 4;
        s.model.moe.ep = 4;
        s.model.moe.etp = etp;
        let c = estimate(&s).performance.communication;
        (c.ep_bytes.get(), c.dp_bytes.get())
    };
    let ((ep1, dp1), (ep2, dp2)) = (with(1), with(2));
    assert!((ep2 / ep1 - 3.5 / 1.5).abs() < 1e-12, "{ep1} vs {ep2}");
    assert!(dp1 > dp2, "ETP 1 reduces whole experts: {dp1} vs {dp2}");
}

/// Megatron's all-to-all under sequence parallelism (TP 2, EP 4) sends the rows of the rank's own
/// sequence shard, k·(tokens/2)·h·(EP − 1)/EP = 0.75·tokens·h, and all-gathers the received rows
/// over the expert TP group, (ETP − 1)·k·tokens/2·h = 1: 1.75·tokens·h against the whole-sequence
/// all-to-all's 1.5 (7/6 of it; the MoE sub-layer then charges no TP collectives of its own). With
/// each expert whole (ETP 1) nothing is gathered: 0.75 (½).
#[test]
fn megatron_all_to_all_sends_the_sequence_shard() {
    let bytes = |profile: Profile, etp: u32| {
        let mut s = sequence_parallel(profile, MoeDispatcher::AllToAll, 2);
        s.parallel.dp = 4;
        s.model.moe.ep = 4;
        s.model.moe.etp = etp;
        ep_bytes(&s)
    };
    let whole_sequence = bytes(Profile::HuggingFace, 0);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    assert!(close(
        bytes(Profile::Megatron, 0),
        whole_sequence * 7.0 / 6.0
    ));
    assert!(close(bytes(Profile::Megatron, 1), whole_sequence * 0.5));
}

/// A routed expert's gradients are reduced over its expert-data-parallel group, DP × TP ÷ (ETP ×
/// EP) ranks (Megatron-Core's expert DDP buffers, DeepSpeed-MoE's expert data-parallel groups):
/// at EP 8 over DP 8 each expert lives on one GPU and nothing of it is sent; at EP 4 two GPUs hold
/// each and reduce its gradients; without expert parallelism all of them over DP.
#[test]
fn expert_gradients_are_reduced_over_their_expert_data_parallel_group() {
    let at = |ep: u32| {
        let mut s = scenario(Profile::Megatron, MoeDispatcher::AllToAll);
        s.model.moe.ep = ep;
        let e = estimate(&s);
        let routed = f64::from(e.model.layers) * e.model.moe.routed_params_per_layer;
        let g = s.precision.resolve().gradients.bytes();
        let c = e.performance.communication;
        (c.dp_bytes.get(), c.dp_time_s, routed * g)
    };
    let (b8, t8, routed) = at(8);
    let (b4, t4, _) = at(4);
    let (b1, t1, _) = at(1);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    assert!(routed > 0.0 && b8 > 0.0);
    assert!(close(b4 - b8, routed / 4.0), "{b4} − {b8} vs {routed} / 4");
    assert!(close(b1 - b8, routed), "{b1} − {b8} vs {routed}");
    assert!(t8 < t4 && t4 < t1, "{t8} < {t4} < {t1}");
}

/// Expert TP below TP replicates the experts over TP ÷ ETP ranks: at DP 1, TP 4, ETP 1, EP 2 each
/// expert sits whole on two GPUs, which reduce its gradients though there is no data parallelism.
/// At the default ETP = TP over DP 2, EP 2 each expert shard lives on one GPU: the GPU sends its
/// dense part alone, EP 1's bytes less all of its expert shards (routed ÷ TP).
#[test]
fn experts_replicated_by_expert_tensor_parallelism_are_reduced_at_dp_1() {
    use vram_explorer::estimator::Diagnostic;
    let at = |dp: u32, etp: u32, ep: u32| {
        let mut s = sequence_parallel(Profile::Megatron, MoeDispatcher::AllToAll, 4);
        s.parallel.dp = dp;
        s.model.moe.ep = ep;
        s.model.moe.etp = etp;
        let e = estimate(&s);
        assert!(!e.diagnostics.contains(Diagnostic::ExpertParallelExceedsDp));
        let routed = f64::from(e.model.layers) * e.model.moe.routed_params_per_layer;
        let g = s.precision.resolve().gradients.bytes();
        (e.performance.communication, routed * g)
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
    let (c, routed) = at(1, 1, 2);
    assert!(close(c.dp_bytes.get(), routed / 2.0), "{:?}", c.dp_bytes);
    assert!(c.dp_time_s > 0.0 && c.dp_ring_latency_s > 0.0);
    let (own, _) = at(2, 0, 2);
    let (all, _) = at(2, 0, 1);
    let (own, all) = (own.dp_bytes.get(), all.dp_bytes.get());
    assert!(own > 0.0 && close(all - own, routed / 4.0), "{all} − {own}");
}

/// Megatron's token dispatcher carries a MoE sub-layer's tokens: without shared experts the layer
/// charges the attention's TP collectives only, and at EP 1 the all-gather dispatcher still gathers
/// the TP group's sequence shards, (TP − 1)/TP·tokens·h per collective, what the MLP's TP
/// collectives moved before; shared experts (a `SharedExpertMLP` on the sequence shard) keep theirs.
#[test]
fn megatron_moe_sub_layers_leave_their_tp_collectives_to_the_dispatcher() {
    let at = |shared: u32| {
        let mut s = sequence_parallel(Profile::Megatron, MoeDispatcher::AllGather, 2);
        s.model.moe.ep = 1;
        s.model.moe.shared_experts = shared;
        let c = estimate(&s).performance.communication;
        let w = &s.workload;
        let tokens_h_e = f64::from(w.micro_batch * w.seq_len * s.model.transformer.hidden) * 2.0;
        let collectives = 4.0 * f64::from(s.model.transformer.layers * w.grad_accum_steps.max(1));
        let per_collective = c.ep_bytes.get() / collectives / tokens_h_e;
        (c.tp_allreduces, per_collective, s.model.transformer.layers)
    };
    let (routed_only, per_collective, layers) = at(0);
    // Attention's two all-reduces and the QKV input's re-gather (half of one) per layer.
    assert_eq!(2 * routed_only, 5 * layers);
    assert!((per_collective - 0.5).abs() < 1e-12, "{per_collective}");
    // With a shared expert the MLP's collectives and its FC1 re-gather stay: 2 + 2 + 1 per layer.
    let (with_shared, ..) = at(1);
    assert_eq!(with_shared, 5 * layers);
}

/// Where the expert group is smaller than TP (TP 4, ETP 1, EP 2) the all-gather dispatcher gathers
/// one other sequence shard, (ETP·EP − 1)/TP = ¼ of the tokens per collective, and the all-to-all
/// dispatcher's MoE sub-layer charges the attention's TP collectives only, like the all-gather's.
#[test]
fn a_small_expert_group_gathers_only_its_shards() {
    let at = |dispatcher: MoeDispatcher| {
        let mut s = sequence_parallel(Profile::Megatron, dispatcher, 4);
        s.parallel.dp = 1;
        (s.model.moe.ep, s.model.moe.etp) = (2, 1);
        let c = estimate(&s).performance.communication;
        let w = &s.workload;
        let tokens_h_e =
            f64::from(w.micro_batch * w.seq_len / 4 * s.model.transformer.hidden) * 2.0;
        let collectives = 4.0 * f64::from(s.model.transformer.layers * w.grad_accum_steps.max(1));
        (
            c.tp_allreduces,
            c.ep_bytes.get() / collectives / tokens_h_e,
            s.model.transformer.layers,
        )
    };
    let (gather_tp, gathered, layers) = at(MoeDispatcher::AllGather);
    assert!(
        (gathered - 1.0).abs() < 1e-12,
        "{gathered} of the shard's tokens"
    );
    let (a2a_tp, _, _) = at(MoeDispatcher::AllToAll);
    assert_eq!(2 * gather_tp, 5 * layers);
    assert_eq!(a2a_tp, gather_tp);
}
