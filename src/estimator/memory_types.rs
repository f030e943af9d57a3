//! The memory side of an [`Estimate`](super::Estimate): components in stack order, phases, peaks.

use crate::units::Bytes;

listed_enum! {
    /// A component of per-GPU memory. `ALL` is the one fixed stack order used by charts, legends, tables
    /// and the CLI.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[repr(u8)]
    pub enum Component {
        Weights,
        MasterWeights,
        Gradients,
        OptimizerStates,
        /// Activations saved for backward (training) — created in forward, alive until their backward.
        Activations,
        /// Short-lived buffers at the peak: logits and their gradient, optimizer temporaries, recomputation,
        /// autocast weight copies, inputs.
        Transient,
        KvCache,
        /// The frozen reference policy of DPO / GRPO / PPO (a second copy of the weights).
        ReferenceModel,
        /// PPO's frozen reward model.
        RewardModel,
        /// PPO's value model (critic): trained, so weights, gradients and optimizer states.
        Critic,
        /// A co-located rollout engine's reservation (vLLM `gpu_memory_utilization`).
        RolloutEngine,
        CommBuffers,
        /// NCCL communicators' own buffers (outside PyTorch's allocator: nvidia-smi only).
        NcclBuffers,
        CudaContext,
        /// Caching-allocator rounding, fragmentation and library workspaces.
        AllocatorReserve,
    }
}

impl Component {
    pub const fn label(self) -> &'static str {
        match self {
            Component::Weights => "Weights",
            Component::MasterWeights => "Master weights",
            Component::Gradients => "Gradients",
            Component::OptimizerStates => "Optimizer states",
            Component::Activations => "Saved activations",
            Component::Transient => "Transient buffers",
            Component::KvCache => "KV cache",
            Component::ReferenceModel => "Reference model",
            Component::RewardModel => "Reward model",
            Component::Critic => "Critic (value model)",
            Component::RolloutEngine => "Rollout engine",
            Component::CommBuffers => "Communication buffers",
            Component::NcclBuffers => "NCCL buffers",
            Component::CudaContext => "CUDA context",
            Component::AllocatorReserve => "Allocator reserve",
        }
    }

    /// A stable machine-readable key (CLI JSON, CSV).
    pub const fn key(self) -> &'static str {
        match self {
            Component::Weights => "weights",
            Component::MasterWeights => "master_weights",
            Component::Gradients => "gradients",
            Component::OptimizerStates => "optimizer_states",
            Component::Activations => "activations",
            Component::Transient => "transient",
            Component::KvCache => "kv_cache",
            Component::ReferenceModel => "reference_model",
            Component::RewardModel => "reward_model",
            Component::Critic => "critic",
            Component::RolloutEngine => "rollout_engine",
            Component::CommBuffers => "comm_buffers",
            Component::NcclBuffers => "nccl_buffers",
            Component::CudaContext => "cuda_context",
            Component::AllocatorReserve => "allocator_reserve",
        }
    }

    /// The other models of a post-training run (DPO, GRPO, PPO): zero in every other step.
    pub const fn is_post_training(self) -> bool {
        matches!(
            self,
            Component::ReferenceModel
                | Component::RewardModel
                | Component::Critic
                | Component::RolloutEngine
        )
    }

    /// Whether `torch.cuda.max_memory_allocated` counts it (tensor bytes) or only nvidia-smi does.
    pub const fn is_tensor(self) -> bool {
        !matches!(
            self,
            Component::NcclBuffers | Component::CudaContext | Component::AllocatorReserve
        )
    }
}

/// Bytes per component, indexed by [`Component`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Breakdown(pub [Bytes; Component::COUNT]);

impl Breakdown {
    pub fn get(&self, c: Component) -> Bytes {
        self.0[c as usize]
    }
    pub fn set(&mut self, c: Component, b: Bytes) {
        self.0[c as usize] = b;
    }
    pub fn add(&mut self, c: Component, b: Bytes) {
        self.0[c as usize] += b;
    }
    pub fn total(&self) -> Bytes {
        self.0.iter().copied().sum()
    }
    /// Sum of the tensor components (what `max_memory_allocated` reports).
    pub fn tensor_total(&self) -> Bytes {
        Component::ALL
            .iter()
            .filter(|c| c.is_tensor())
            .map(|c| self.get(*c))
            .sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = (Component, Bytes)> + '_ {
        Component::ALL.into_iter().map(|c| (c, self.get(c)))
    }
}

listed_enum! {
    /// A phase of a step. Training: forward end, loss backward, backward, optimizer step.
    /// Inference: prefill, decode.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[repr(u8)]
    pub enum Phase {
        Forward,
        LossBackward,
        Backward,
        OptimizerStep,
        Prefill,
        Decode,
        /// Post-training: the policy (or rollout engine) generates the completions.
        Generation,
        /// Post-training: the reference (and reward) model scores the completions, no autograd.
        Scoring,
    }
}

impl Phase {
    pub const fn label(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::LossBackward => "loss backward",
            Phase::Backward => "backward",
            Phase::OptimizerStep => "optimizer step",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Generation => "generation",
            Phase::Scoring => "scoring",
        }
    }
    pub const fn key(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::LossBackward => "loss_backward",
            Phase::Backward => "backward",
            Phase::OptimizerStep => "optimizer",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
            Phase::Generation => "generation",
            Phase::Scoring => "scoring",
        }
    }
}

/// Tensor bytes live at each phase's peak (`None` for phases the mode does not have).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhasePeaks(pub [Option<Breakdown>; Phase::COUNT]);

impl PhasePeaks {
    pub fn get(&self, p: Phase) -> Option<&Breakdown> {
        self.0[p as usize].as_ref()
    }
    pub fn set(&mut self, p: Phase, b: Breakdown) {
        self.0[p as usize] = Some(b);
    }
    /// The phase with the largest tensor total (first wins ties), and its breakdown.
    pub fn peak(&self) -> Option<(Phase, Breakdown)> {
        // Each phase's total is summed once and only the winner is copied out.
        let mut best: Option<(Phase, &Breakdown, f64)> = None;
        for p in Phase::ALL {
            if let Some(b) = self.get(p) {
                let total = b.tensor_total().get();
                if best.is_none_or(|(_, _, cur)| total > cur) {
                    best = Some((p, b, total));
                }
            }
        }
        best.map(|(p, b, _)| (p, *b))
    }
}

/// Parameter counts (exact for the transformer shapes of the measured set).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ParamCounts {
    /// All unique parameters (what `sum(p.numel() for p in model.parameters())` reports).
    pub total: f64,
    /// Token, position and token-type embeddings.
    pub embeddings: f64,
    /// One transformer layer.
    pub per_layer: f64,
    /// Everything outside the layers and embedding tables: untied LM head, MLM head, pooler, final
    /// or embedding norm.
    pub head: f64,
    /// Parameters that receive gradients and optimizer state.
    pub trainable: f64,
    /// Parameters one token's forward uses: all of a dense model; a mixture of experts counts only the
    /// top-k routed and the shared experts of each layer (what compute scales with; memory holds
    /// `total`).
    pub active: f64,
}

/// One transformer layer's saved activations and weights, to explain the totals.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerBreakdown {
    pub weights: Bytes,
    /// Saved for backward by the attention block (incl. scores when materialised).
    pub attention_activations: Bytes,
    pub mlp_activations: Bytes,
    pub norm_activations: Bytes,
    /// Dropout masks.
    pub dropout_masks: Bytes,
    /// KV cache of one layer at the inference context.
    pub kv_cache: Bytes,
}

/// Bytes that live off the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Offloaded {
    pub host: Bytes,
    pub nvme: Bytes,
    /// Spilled to the second tier (host or CXL) because the GPU is full.
    pub second_tier: Bytes,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryEstimate {
    pub params: ParamCounts,
    /// Tensor bytes per phase.
    pub phases: PhasePeaks,
    /// The phase that sets the peak.
    pub peak_phase: Option<Phase>,
    /// The peak phase's components plus NCCL buffers, CUDA context and allocator reserve: what a GPU
    /// would show.
    pub peak: Breakdown,
    /// Peak tensor bytes, comparable to `torch.cuda.max_memory_allocated()`.
    pub tensor_peak: Bytes,
    /// `tensor_peak` + NCCL buffers + context + reserve, comparable to `nvidia-smi`.
    pub gpu_total: Bytes,
    pub capacity: Bytes,
    pub fits: bool,
    /// capacity − gpu_total (negative when it does not fit).
    pub headroom: Bytes,
    pub offloaded: Offloaded,
    pub per_layer: LayerBreakdown,
    /// Pipeline stage with the peak, the limiting stage (0-based; the first stage of its class).
    pub peak_stage: u32,
    /// With pipeline parallelism: each distinct stage class (first, interior by layer count, last),
    /// in stage order, with its phases and its peak (NCCL buffers, CUDA context and allocator reserve
    /// included); all `None` without PP. The reported peak is the largest class's (by GPU total).
    pub stages: [Option<super::StageClass>; super::MAX_STAGE_CLASSES],
}

impl MemoryEstimate {
    /// The pipeline's stage classes in stage order (none without pipeline parallelism).
    pub fn stage_classes(&self) -> impl Iterator<Item = &super::StageClass> + '_ {
        self.stages.iter().flatten()
    }

    /// The class holding the 0-based stage `index`.
    pub fn stage_class(&self, index: u32) -> Option<&super::StageClass> {
        self.stage_classes().find(|c| c.contains(index))
    }

    /// The class that sets the peak (the limiting stage), with pipeline parallelism.
    pub fn limiting_stage(&self) -> Option<&super::StageClass> {
        self.stage_class(self.peak_stage)
    }

    /// What the caching allocator holds at the peak, comparable to
    /// `torch.cuda.max_memory_reserved()`: the GPU total without the CUDA context and NCCL's
    /// buffers, which live outside the allocator (docs/gpu-overheads.md, the statistics table):
    /// tensors, the allocator reserve and the library workspace (an engine's reservation under vLLM
    /// or SGLang).
    ///
    /// ```
    /// use vram_explorer::estimator::{Component, estimate};
    /// let m = estimate(&vram_explorer::scenario::Scenario::default()).memory;
    /// let outside = m.peak.get(Component::CudaContext).get() + m.peak.get(Component::NcclBuffers).get();
    /// assert_eq!(m.reserved_peak().get(), m.gpu_total.get() - outside);
    /// assert!(m.tensor_peak <= m.reserved_peak() && m.reserved_peak() <= m.gpu_total);
    /// ```
    pub fn reserved_peak(&self) -> Bytes {
        let outside = self.peak.get(Component::CudaContext) + self.peak.get(Component::NcclBuffers);
        Bytes((self.gpu_total.get() - outside.get()).max(0.0))
    }
}
