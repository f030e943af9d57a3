//! The parallel layout of a step.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Parallelism {
    /// Data-parallel degree. Valid: 1 ..= 65536.
    pub dp: u32,
    /// Tensor-parallel degree (Megatron). Should divide heads, KV heads and FFN size.
    pub tp: u32,
    /// Pipeline-parallel degree. Should divide layers.
    pub pp: u32,
    /// Sequence parallelism alongside TP (Korthikanti et al. 2022 §4.2.2).
    pub sequence_parallel: bool,
    /// Micro-batches per pipeline flush (1F1B); 0 = `grad_accum_steps`.
    pub pp_microbatches: u32,
    /// Interleaved pipeline stages per GPU (virtual stages); 1 = plain 1F1B.
    pub pp_interleave: u32,
    /// GPUs per node: collectives within a node use NVLink/PCIe, across nodes the network.
    pub gpus_per_node: u32,
    /// Context-parallel degree (training): each rank of a CP group holds seq_len ÷ cp tokens of every
    /// sequence; attention still covers the whole sequence (docs/context-parallel.md). 1 = off.
    /// Valid: 1 ..= 65536.
    pub cp: u32,
    /// How context-parallel attention exchanges the sequence: ring (KV passed peer to peer) or
    /// all-to-all (DeepSpeed-Ulysses, needs heads and KV heads divisible by cp).
    pub cp_style: CpStyle,
}

/// The context-parallel attention algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CpStyle {
    /// Ring attention (Liu et al. 2023, arXiv:2310.01889): every rank keeps its queries and passes
    /// its K/V chunk round the ring, cp − 1 times, overlapped with the attention of the chunk it
    /// holds (Megatron-Core through TransformerEngine `AttnFuncWithCPAndKVP2P`).
    #[default]
    Ring,
    /// DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509): all-to-alls turn the sequence
    /// split into a head split before attention (q, k, v) and back after it (the output).
    AllToAll,
}

/// " × CP n (ring)" when context parallelism is on, else empty (for layout lines).
pub fn cp_suffix(p: &Parallelism) -> String {
    if p.cp > 1 {
        let style = match p.cp_style {
            CpStyle::Ring => "ring",
            CpStyle::AllToAll => "all-to-all",
        };
        format!(" × CP {} ({style})", p.cp)
    } else {
        String::new()
    }
}

impl CpStyle {
    pub const ALL: [CpStyle; 2] = [CpStyle::Ring, CpStyle::AllToAll];

    pub const fn label(self) -> &'static str {
        match self {
            CpStyle::Ring => "Ring (P2P KV)",
            CpStyle::AllToAll => "All-to-all (Ulysses)",
        }
    }
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism {
            dp: 1,
            tp: 1,
            pp: 1,
            sequence_parallel: false,
            pp_microbatches: 0,
            pp_interleave: 1,
            gpus_per_node: 8,
            cp: 1,
            cp_style: CpStyle::Ring,
        }
    }
}

impl Parallelism {
    /// GPUs in the layout: DP × TP × PP × CP.
    pub fn gpus(&self) -> u64 {
        (self.dp as u64 * self.tp as u64 * self.pp as u64).saturating_mul(u64::from(self.cp.max(1)))
    }
}
