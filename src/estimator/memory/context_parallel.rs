//! Context parallelism's own buffers in one layer's attention, per GPU (training). The saved
//! activations need nothing here: every rank saves its seq_len ÷ cp tokens (`Ctx::s`) and the
//! s²-terms run over the whole sequence's keys (`activations::sizes`). What CP adds are the
//! transients of the exchange, read from the implementations at named versions:
//!
//! - **Ring** — TransformerEngine 2.20.0.dev0 (NVIDIA/TransformerEngine d0067d0,
//!   `transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py`,
//!   `AttnFuncWithCPAndKVP2P`), what Megatron-Core runs for `--context-parallel-size` with the
//!   default `cp_comm_type="p2p"`. Forward: `p2p_comm_buffers` is a list of cp KV chunks (the local
//!   `cat(k, v)` copy, then one `empty_like` receive buffer per step) that lives until the function
//!   returns, `out_per_step` keeps each step's partial output (causal: the last rank computes every
//!   step over its full queries) and the corrected output is accumulated in FP32. Backward (16-bit):
//!   `dq_buffer = empty_like(q)` and two `[2, *kv.shape]` buffers (the KV and dKV chunks in flight,
//!   double-buffered): 4 KV chunks and one q.
//! - **All-to-all** — DeepSpeed 0.19.6 (deepspeedai/DeepSpeed edaa722, `deepspeed/sequence/layer.py`,
//!   `DistributedAttention`, `_SeqAllToAll`): each of q, k, v and the output goes through a
//!   contiguous pre-all-to-all copy and an output buffer of the same size before its post-permute; the
//!   largest (q, or the output) is live twice at once. Backward does the same for the gradients.
//!
//! Ring attention's algorithm: Liu, Zaharia, Abbeel 2023 "Ring Attention with Blockwise
//! Transformers" (arXiv:2310.01889) §3; Ulysses: Jacobs et al. 2023 (arXiv:2309.14509) §3.

use super::activations::Sizes;
use super::ctx::Ctx;
use crate::scenario::CpStyle;

/// One layer's CP transients, bytes: (forward, backward). 0 without CP.
///
/// `z` is one micro-batch on this GPU (b·s/cp tokens, heads and KV heads ÷ TP).
pub fn attention_transients(c: &Ctx, z: &Sizes) -> (f64, f64) {
    if c.cp <= 1.0 {
        return (0.0, 0.0);
    }
    let e = c.ec;
    // The local K and V chunk, and the attention output (heads × head_dim wide, as q).
    let kv = 2.0 * z.bsk * e;
    let out = z.bsq * e;
    match c.cp_style {
        CpStyle::Ring => {
            // cp KV chunks + cp partial outputs + their FP32 log-sum-exps, and the FP32 output.
            let forward = c.cp * (kv + out + 4.0 * z.bas) + 4.0 * z.bsq;
            let backward = out + 4.0 * kv;
            (forward, backward)
        }
        CpStyle::AllToAll => {
            let widest = out.max(kv / 2.0);
            (2.0 * widest, 2.0 * widest)
        }
    }
}
