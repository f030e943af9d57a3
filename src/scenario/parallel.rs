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
        }
    }
}

impl Parallelism {
    /// GPUs in the layout: DP × TP × PP.
    pub fn gpus(&self) -> u64 {
        self.dp as u64 * self.tp as u64 * self.pp as u64
    }
}
