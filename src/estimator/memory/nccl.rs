//! NCCL's own buffers: what each communicator a GPU joins allocates outside PyTorch's caching
//! allocator (docs/gpu-overheads.md §3). They are in `nvidia-smi`, never in
//! `max_memory_allocated` / `max_memory_reserved`.
//!
//! A communicator's buffers are its channels × peers × 12 MiB of protocol buffers (NCCL
//! `src/init.cc` `computeBuffSizes`, `src/transport/p2p.cc`), and the channel count is NCCL's own
//! topology decision: the estimate takes a published per-communicator total instead, as two
//! adjustable assumptions (`overheads.nccl_mib_per_communicator`, `nccl_mib_two_rank_communicator`;
//! NVIDIA/nccl#964: 688 MB per group of 3 or 4 ranks and 544 MB per 2-rank group after one 4 MB
//! all-reduce on 4 × A100 NVLink). More channels (NVSwitch systems), NVLS buffers and all-to-all
//! (NVIDIA/nccl#1685: +3.3 GB after the first `all_to_all_single` on 8 × H100) need more.
//!
//! One communicator per parallel group a GPU runs collectives in: data parallel (training only;
//! under hybrid sharding two, the node's ZeRO shard group and the replica group), tensor,
//! pipeline, context and expert parallel (mixtures of experts). Pipeline send/recv is counted as one
//! communicator of the pipeline group (Megatron-Core batches them with `batch_isend_irecv` on that
//! group); PyTorch gives unbatched point-to-point ops a 2-rank communicator per neighbour pair, one
//! more on interior stages. Serving engines create theirs at startup, before their memory budget's
//! baseline (docs/engines/vllm.md §1, sglang.md §1): outside the budget, in the GPU total.

use super::ctx::Ctx;
use crate::scenario::{Mode, Scenario, ZeroStage};
use crate::units::MIB;

/// The NCCL buffers one GPU of `sc` (read through its `Ctx`) holds, bytes.
pub fn bytes(sc: &Scenario, c: &Ctx) -> f64 {
    let o = &sc.overheads;
    let one = |n: u32| match n {
        0 | 1 => 0.0,
        2 => o.nccl_mib_two_rank_communicator * MIB,
        _ => o.nccl_mib_per_communicator * MIB,
    };
    let p = &sc.parallel;
    let dp = p.dp.max(1);
    let data = if sc.mode != Mode::Training {
        // Replicas of a server do not communicate.
        0.0
    } else if sc.strategies.hybrid_shard && sc.strategies.zero != ZeroStage::None {
        // The ZeRO shard group inside a node (`Resolved::zero_dp` ÷ CP) and the replicas across.
        let shard = ((c.dp / c.cp.max(1.0)).round() as u32).clamp(1, dp);
        one(shard) + one(dp / shard)
    } else {
        one(dp)
    };
    let experts = sc.model.moe.experts > 0;
    // EP ranks come out of DP × CP × TP / ETP ranks (`ctx::expert_ranks`; DP × CP at ETP = TP).
    let data_ranks = f64::from(dp) * f64::from(p.cp.max(1));
    let ranks = super::ctx::expert_ranks(data_ranks, f64::from(p.tp), super::ctx::expert_tp(sc));
    let edp = ranks.min(f64::from(u32::MAX)) as u32;
    let ep = if experts {
        sc.model.moe.ep.min(edp.max(1))
    } else {
        1
    };
    data + one(p.tp) + one(p.pp) + one(p.cp) + one(ep)
}
