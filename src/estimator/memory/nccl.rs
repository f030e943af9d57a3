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
//! One communicator per parallel group a GPU runs collectives in: data parallel (training only; two
//! under hybrid sharding, the node's shard group and the replica group), tensor, pipeline, context
//! and expert parallel. Pipeline send/recv is counted as one communicator of the pipeline group
//! (Megatron-Core batches them with `batch_isend_irecv` on that group); PyTorch gives unbatched
//! point-to-point ops a 2-rank communicator per neighbour pair, one more on interior stages.
//! Serving engines are left out: vLLM's budget charges its non-PyTorch growth itself
//! (docs/engines/vllm.md §2.3), SGLang's reads the free memory after its communicators exist.

use crate::scenario::{Mode, Scenario, ServingEngine};
use crate::units::MIB;

/// The NCCL buffers one GPU holds, bytes.
pub fn bytes(sc: &Scenario) -> f64 {
    if sc.mode == Mode::Inference
        && matches!(
            sc.inference.engine,
            Some(ServingEngine::Vllm(_) | ServingEngine::Sglang(_) | ServingEngine::LlamaCpp(_))
        )
    {
        return 0.0;
    }
    let o = &sc.overheads;
    let one = |n: u32| match n {
        0 | 1 => 0.0,
        2 => o.nccl_mib_two_rank_communicator * MIB,
        _ => o.nccl_mib_per_communicator * MIB,
    };
    let p = &sc.parallel;
    let data = if sc.mode == Mode::Training {
        if sc.strategies.hybrid_shard && p.dp > p.gpus_per_node.max(1) {
            let shard = p.gpus_per_node.max(1);
            one(shard) + one(p.dp / shard)
        } else {
            one(p.dp)
        }
    } else {
        0.0
    };
    data + one(p.tp) + one(p.pp) + one(p.cp) + one(sc.model.moe.ep)
}
