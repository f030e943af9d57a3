//! Memory-saving strategies a scenario turns on.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Checkpointing {
    #[default]
    None,
    /// Recompute only the attention core (Korthikanti et al. 2022 §4.1 "selective").
    Selective,
    /// Keep each layer's input, recompute the layer in backward.
    Full,
    /// Keep the input of every k-th layer (`checkpoint_every`); 0 means k = ⌈√L⌉ (Chen et al. 2016 §4.3).
    EveryK,
    /// torchtitan's per-op selective checkpointing (`selective_ac_option = "op"`): each layer keeps
    /// its input, the outputs of every other matmul (Q, V, MLP gate and down) and the fused
    /// attention's output; the rest is recomputed (torchtitan 9dec370 `parallelize_llama.py`
    /// l. 214–260; docs/frameworks/torchtitan.md).
    PerOp,
}

impl Checkpointing {
    /// Whether a checkpointed layer saves only its input and reruns its whole forward in backward
    /// (full, every k-th): its forward keeps nothing of its own beyond transients.
    pub const fn recomputes_whole_layers(self) -> bool {
        matches!(self, Checkpointing::Full | Checkpointing::EveryK)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AttentionKernel {
    /// Scores (s × s per head) materialised and saved: eager attention, SDPA math path.
    Materialized,
    /// FlashAttention / memory-efficient SDPA: no s × s tensor kept.
    #[default]
    Flash,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ZeroStage {
    /// Plain data parallel (FSDP NO_SHARD).
    #[default]
    None,
    /// Optimizer states sharded (ZeRO-1).
    Stage1,
    /// + gradients (ZeRO-2, FSDP SHARD_GRAD_OP).
    Stage2,
    /// + parameters (ZeRO-3, FSDP FULL_SHARD).
    Stage3,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OffloadTarget {
    #[default]
    None,
    /// Host DRAM over PCIe.
    Cpu,
    /// NVMe through host (ZeRO-Infinity).
    Nvme,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PruneKind {
    /// Weights removed in blocks: dense smaller matrices, no index overhead.
    #[default]
    Structured,
    /// Individual weights zeroed and stored sparse (CSR: a 4-byte column index per kept value).
    Unstructured,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecondTier {
    #[default]
    None,
    /// Host DRAM over PCIe.
    Host,
    /// A CXL Type-3 memory expander.
    Cxl,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Strategies {
    pub checkpointing: Checkpointing,
    /// k for `Checkpointing::EveryK`; 0 = ⌈√L⌉.
    pub checkpoint_every: u32,
    pub attention: AttentionKernel,
    /// Saved activations stored as 8-bit with per-group scales (ActNN / Chen et al. 2021 style).
    pub activation_compression_8bit: bool,
    pub zero: ZeroStage,
    /// FSDP HYBRID_SHARD (`_HYBRID_SHARD_ZERO2` with stage 2): the ZeRO stage shards within a node
    /// (the data-parallel ranks of `parallel.gpus_per_node` GPUs) and replicates across nodes.
    pub hybrid_shard: bool,
    pub offload_optimizer: OffloadTarget,
    pub offload_params: OffloadTarget,
    /// Fraction of weights removed by pruning. Valid: [0, 0.99].
    pub prune_fraction: f64,
    pub prune_kind: PruneKind,
    /// Fraction of the transformer layers whose weights are shared with another layer (ALBERT-style).
    /// Valid: [0, 1).
    pub weight_sharing_fraction: f64,
    /// 1-bit Adam / 1-bit LAMB style compressed gradient communication.
    pub one_bit_comm: bool,
    /// Share of steps run uncompressed as warm-up before compression starts. Valid: [0, 1].
    pub one_bit_warmup_fraction: f64,
    /// A second memory tier the step can spill to.
    pub second_tier: SecondTier,
    /// Capacity of the second tier per GPU, GiB (2^30 B). Counted only with a `second_tier`.
    pub second_tier_gib: f64,
}

impl Default for Strategies {
    fn default() -> Self {
        Strategies {
            checkpointing: Checkpointing::None,
            checkpoint_every: 0,
            attention: AttentionKernel::Flash,
            activation_compression_8bit: false,
            zero: ZeroStage::None,
            hybrid_shard: false,
            offload_optimizer: OffloadTarget::None,
            offload_params: OffloadTarget::None,
            prune_fraction: 0.0,
            prune_kind: PruneKind::Structured,
            weight_sharing_fraction: 0.0,
            one_bit_comm: false,
            one_bit_warmup_fraction: 0.15,
            second_tier: SecondTier::None,
            second_tier_gib: 0.0,
        }
    }
}
