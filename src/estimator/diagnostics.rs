//! Things worth telling the user about a scenario: data, never panics or errors.
//! A fixed-size bit set, so the estimator never allocates.

/// One diagnostic. The order is the order they are listed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Diagnostic {
    DoesNotFit,
    TpDoesNotDivideHeads,
    TpDoesNotDivideKvHeads,
    TpDoesNotDivideFfn,
    TpDoesNotDivideVocab,
    PpDoesNotDivideLayers,
    PpMoreStagesThanLayers,
    ZeroWithoutDataParallel,
    SequenceParallelWithoutTp,
    OffloadWithoutZero,
    FitsOnlyWithSecondTier,
    InputClamped,
    ShapeDerivedFromParams,
    MemoryBound,
    ExpertParallelExceedsDp,
    ExpertParallelDoesNotDivideExperts,
    ExpertTpNotModelled,
    HeadsDoNotDivideHidden,
    KvHeadsDoNotDivideHeads,
    IntegerTrainingType,
    TooManyLayerKinds,
    FrameworkSettingsIgnored,
    FlashAttention2NeedsHalfPrecision,
    FrameworkWithoutPipeline,
    ContextParallelIgnored,
    CpDoesNotDivideHeads,
    CpDoesNotDivideSequence,
    PostTrainingSettingsIgnored,
    EngineWouldNotStart,
    RequestLongerThanEngineContext,
    RequestsBeyondEnginePool,
    FsdpNeedsZero3,
    Fsdp1WithPipeline,
    DeepSpeedZeroWithPipeline,
    MegatronNeedsTpDividingKvHeads,
    MegatronMoeNeedsSequenceParallel,
    MegatronLocalLayersWithoutCp,
    MegatronAllGatherDispatcher,
    OverheadBound,
    TorchBlocksWithoutTp,
    EnginePoolBelowContext,
    EngineNeedsTpDividingHeads,
    EngineDefaultContextRefused,
    EngineContextAboveModel,
    MegatronInterleavingNeedsMicrobatches,
    PipelineMicrobatchesBeyondStep,
}

impl Diagnostic {
    pub const ALL: [Diagnostic; 46] = [
        Diagnostic::DoesNotFit,
        Diagnostic::TpDoesNotDivideHeads,
        Diagnostic::TpDoesNotDivideKvHeads,
        Diagnostic::TpDoesNotDivideFfn,
        Diagnostic::TpDoesNotDivideVocab,
        Diagnostic::PpDoesNotDivideLayers,
        Diagnostic::PpMoreStagesThanLayers,
        Diagnostic::ZeroWithoutDataParallel,
        Diagnostic::SequenceParallelWithoutTp,
        Diagnostic::OffloadWithoutZero,
        Diagnostic::FitsOnlyWithSecondTier,
        Diagnostic::InputClamped,
        Diagnostic::ShapeDerivedFromParams,
        Diagnostic::MemoryBound,
        Diagnostic::ExpertParallelExceedsDp,
        Diagnostic::ExpertParallelDoesNotDivideExperts,
        Diagnostic::ExpertTpNotModelled,
        Diagnostic::HeadsDoNotDivideHidden,
        Diagnostic::KvHeadsDoNotDivideHeads,
        Diagnostic::IntegerTrainingType,
        Diagnostic::TooManyLayerKinds,
        Diagnostic::FrameworkSettingsIgnored,
        Diagnostic::FlashAttention2NeedsHalfPrecision,
        Diagnostic::FrameworkWithoutPipeline,
        Diagnostic::ContextParallelIgnored,
        Diagnostic::CpDoesNotDivideHeads,
        Diagnostic::CpDoesNotDivideSequence,
        Diagnostic::PostTrainingSettingsIgnored,
        Diagnostic::EngineWouldNotStart,
        Diagnostic::RequestLongerThanEngineContext,
        Diagnostic::RequestsBeyondEnginePool,
        Diagnostic::FsdpNeedsZero3,
        Diagnostic::Fsdp1WithPipeline,
        Diagnostic::DeepSpeedZeroWithPipeline,
        Diagnostic::MegatronNeedsTpDividingKvHeads,
        Diagnostic::MegatronMoeNeedsSequenceParallel,
        Diagnostic::MegatronLocalLayersWithoutCp,
        Diagnostic::MegatronAllGatherDispatcher,
        Diagnostic::OverheadBound,
        Diagnostic::TorchBlocksWithoutTp,
        Diagnostic::EnginePoolBelowContext,
        Diagnostic::EngineNeedsTpDividingHeads,
        Diagnostic::EngineDefaultContextRefused,
        Diagnostic::EngineContextAboveModel,
        Diagnostic::MegatronInterleavingNeedsMicrobatches,
        Diagnostic::PipelineMicrobatchesBeyondStep,
    ];

    /// How serious: warnings change the answer's meaning, notes explain it.
    pub const fn severity(self) -> Severity {
        match self {
            Diagnostic::DoesNotFit
            | Diagnostic::EngineWouldNotStart
            | Diagnostic::EngineNeedsTpDividingHeads
            | Diagnostic::EngineContextAboveModel
            | Diagnostic::MegatronNeedsTpDividingKvHeads
            | Diagnostic::MegatronMoeNeedsSequenceParallel
            | Diagnostic::MegatronLocalLayersWithoutCp
            | Diagnostic::MegatronInterleavingNeedsMicrobatches => Severity::Error,
            Diagnostic::ShapeDerivedFromParams
            | Diagnostic::MemoryBound
            | Diagnostic::OverheadBound
            | Diagnostic::MegatronAllGatherDispatcher => Severity::Note,
            _ => Severity::Warning,
        }
    }

    /// Whether it is an answer about the job (it does not fit, the engine would not start, what
    /// bounds the step) rather than about how the scenario is set: `check` leaves these to `report`.
    pub const fn is_outcome(self) -> bool {
        matches!(
            self,
            Diagnostic::DoesNotFit
                | Diagnostic::FitsOnlyWithSecondTier
                | Diagnostic::EngineWouldNotStart
                | Diagnostic::RequestLongerThanEngineContext
                | Diagnostic::RequestsBeyondEnginePool
                | Diagnostic::EnginePoolBelowContext
                | Diagnostic::EngineDefaultContextRefused
                | Diagnostic::MemoryBound
                | Diagnostic::OverheadBound
        )
    }

    /// Whether it is about the serving engine's settings or what the engine does with them
    /// (`engine-args` lists these under the pasted line).
    pub const fn concerns_engine(self) -> bool {
        matches!(
            self,
            Diagnostic::EngineWouldNotStart
                | Diagnostic::RequestLongerThanEngineContext
                | Diagnostic::RequestsBeyondEnginePool
                | Diagnostic::EnginePoolBelowContext
                | Diagnostic::EngineNeedsTpDividingHeads
                | Diagnostic::EngineDefaultContextRefused
                | Diagnostic::EngineContextAboveModel
        )
    }

    /// Whether it is about the parallel layout (shown beside the parallel degrees in the app).
    pub const fn concerns_layout(self) -> bool {
        matches!(
            self,
            Diagnostic::TpDoesNotDivideHeads
                | Diagnostic::TpDoesNotDivideKvHeads
                | Diagnostic::TpDoesNotDivideFfn
                | Diagnostic::TpDoesNotDivideVocab
                | Diagnostic::PpDoesNotDivideLayers
                | Diagnostic::PpMoreStagesThanLayers
                | Diagnostic::ZeroWithoutDataParallel
                | Diagnostic::SequenceParallelWithoutTp
                | Diagnostic::ExpertParallelExceedsDp
                | Diagnostic::ExpertParallelDoesNotDivideExperts
                | Diagnostic::ExpertTpNotModelled
                | Diagnostic::ContextParallelIgnored
                | Diagnostic::CpDoesNotDivideHeads
                | Diagnostic::CpDoesNotDivideSequence
                | Diagnostic::TorchBlocksWithoutTp
                | Diagnostic::MegatronNeedsTpDividingKvHeads
                | Diagnostic::EngineNeedsTpDividingHeads
                | Diagnostic::MegatronMoeNeedsSequenceParallel
                | Diagnostic::MegatronLocalLayersWithoutCp
                | Diagnostic::MegatronInterleavingNeedsMicrobatches
                | Diagnostic::PipelineMicrobatchesBeyondStep
        )
    }

    /// A stable machine-readable code (CLI JSON).
    pub const fn code(self) -> &'static str {
        match self {
            Diagnostic::DoesNotFit => "does_not_fit",
            Diagnostic::TpDoesNotDivideHeads => "tp_does_not_divide_heads",
            Diagnostic::TpDoesNotDivideKvHeads => "tp_does_not_divide_kv_heads",
            Diagnostic::TpDoesNotDivideFfn => "tp_does_not_divide_ffn",
            Diagnostic::TpDoesNotDivideVocab => "tp_does_not_divide_vocab",
            Diagnostic::PpDoesNotDivideLayers => "pp_does_not_divide_layers",
            Diagnostic::PpMoreStagesThanLayers => "pp_more_stages_than_layers",
            Diagnostic::ZeroWithoutDataParallel => "zero_without_data_parallel",
            Diagnostic::SequenceParallelWithoutTp => "sequence_parallel_without_tp",
            Diagnostic::OffloadWithoutZero => "offload_without_zero",
            Diagnostic::FitsOnlyWithSecondTier => "fits_only_with_second_tier",
            Diagnostic::InputClamped => "input_clamped",
            Diagnostic::ShapeDerivedFromParams => "shape_derived_from_params",
            Diagnostic::MemoryBound => "memory_bound",
            Diagnostic::OverheadBound => "overhead_bound",
            Diagnostic::TorchBlocksWithoutTp => "torch_blocks_without_tp",
            Diagnostic::ExpertParallelExceedsDp => "expert_parallel_exceeds_dp",
            Diagnostic::ExpertParallelDoesNotDivideExperts => {
                "expert_parallel_does_not_divide_experts"
            }
            Diagnostic::ExpertTpNotModelled => "expert_tp_not_modelled",
            Diagnostic::HeadsDoNotDivideHidden => "heads_do_not_divide_hidden",
            Diagnostic::KvHeadsDoNotDivideHeads => "kv_heads_do_not_divide_heads",
            Diagnostic::IntegerTrainingType => "integer_training_type",
            Diagnostic::TooManyLayerKinds => "too_many_layer_kinds",
            Diagnostic::FrameworkSettingsIgnored => "framework_settings_ignored",
            Diagnostic::FlashAttention2NeedsHalfPrecision => {
                "flash_attention_2_needs_half_precision"
            }
            Diagnostic::FrameworkWithoutPipeline => "framework_without_pipeline",
            Diagnostic::ContextParallelIgnored => "context_parallel_ignored",
            Diagnostic::CpDoesNotDivideHeads => "cp_does_not_divide_heads",
            Diagnostic::CpDoesNotDivideSequence => "cp_does_not_divide_sequence",
            Diagnostic::PostTrainingSettingsIgnored => "post_training_settings_ignored",
            Diagnostic::EngineWouldNotStart => "engine_would_not_start",
            Diagnostic::RequestLongerThanEngineContext => "request_longer_than_engine_context",
            Diagnostic::RequestsBeyondEnginePool => "requests_beyond_engine_pool",
            Diagnostic::EnginePoolBelowContext => "engine_pool_below_context",
            Diagnostic::EngineNeedsTpDividingHeads => "engine_needs_tp_dividing_heads",
            Diagnostic::EngineDefaultContextRefused => "engine_default_context_refused",
            Diagnostic::EngineContextAboveModel => "engine_context_above_model",
            Diagnostic::FsdpNeedsZero3 => "fsdp_needs_zero3",
            Diagnostic::Fsdp1WithPipeline => "fsdp1_with_pipeline",
            Diagnostic::DeepSpeedZeroWithPipeline => "deepspeed_zero_with_pipeline",
            Diagnostic::MegatronNeedsTpDividingKvHeads => "megatron_needs_tp_dividing_kv_heads",
            Diagnostic::MegatronMoeNeedsSequenceParallel => "megatron_moe_needs_sequence_parallel",
            Diagnostic::MegatronLocalLayersWithoutCp => "megatron_local_layers_without_cp",
            Diagnostic::MegatronAllGatherDispatcher => "megatron_allgather_dispatcher",
            Diagnostic::MegatronInterleavingNeedsMicrobatches => {
                "megatron_interleaving_needs_microbatches"
            }
            Diagnostic::PipelineMicrobatchesBeyondStep => "pipeline_microbatches_beyond_step",
        }
    }

    /// What to tell a person.
    pub const fn message(self) -> &'static str {
        match self {
            Diagnostic::FrameworkSettingsIgnored
            | Diagnostic::FlashAttention2NeedsHalfPrecision
            | Diagnostic::FrameworkWithoutPipeline
            | Diagnostic::FsdpNeedsZero3
            | Diagnostic::Fsdp1WithPipeline
            | Diagnostic::DeepSpeedZeroWithPipeline
            | Diagnostic::MegatronNeedsTpDividingKvHeads
            | Diagnostic::MegatronMoeNeedsSequenceParallel
            | Diagnostic::MegatronLocalLayersWithoutCp
            | Diagnostic::MegatronAllGatherDispatcher => self.framework_message(),
            Diagnostic::PpDoesNotDivideLayers
            | Diagnostic::PpMoreStagesThanLayers
            | Diagnostic::MegatronInterleavingNeedsMicrobatches
            | Diagnostic::PipelineMicrobatchesBeyondStep => self.pipeline_message(),
            Diagnostic::DoesNotFit => "Does not fit: the per-GPU peak exceeds the GPU's memory.",
            Diagnostic::TpDoesNotDivideHeads => {
                "Tensor parallel degree does not divide the attention heads; shards are uneven (the largest is used)."
            }
            Diagnostic::TpDoesNotDivideKvHeads => {
                "Tensor parallel degree does not divide the KV heads; KV heads are replicated on some ranks."
            }
            Diagnostic::TpDoesNotDivideFfn => "The TP degree does not divide the FFN size.",
            Diagnostic::TpDoesNotDivideVocab => {
                "Tensor parallel degree does not divide the vocabulary (Megatron pads it)."
            }
            Diagnostic::ZeroWithoutDataParallel => {
                "ZeRO with data parallel degree 1 shards nothing (only offload helps on one GPU)."
            }
            Diagnostic::SequenceParallelWithoutTp => {
                "Sequence parallelism needs tensor parallelism (TP > 1); it has no effect here."
            }
            Diagnostic::OffloadWithoutZero => {
                "Offload is modelled as ZeRO-Offload; it applies even without a ZeRO stage here."
            }
            Diagnostic::FitsOnlyWithSecondTier => {
                "Fits only by spilling to the second memory tier; the step slows by that tier's bandwidth."
            }
            Diagnostic::InputClamped => {
                "An input was out of range and was clamped to its valid range, or a size derived from in-range inputs was capped: a layer pattern above 10,000 layers (repeat × count), a recommender's tables × rows × dim above 10^13 parameters, KV heads above the heads, or an MoE's top-k or expert-parallel degree above its experts. `check` names out-of-range fields; the derived caps are estimated at the cap."
            }
            Diagnostic::ShapeDerivedFromParams => {
                "The transformer shape was derived from the parameter count (see docs/model.md)."
            }
            Diagnostic::MemoryBound => "The step is memory-bandwidth bound on this GPU.",
            Diagnostic::TorchBlocksWithoutTp => {
                "The torch reference block kernels' saved tensors were measured on one device: under tensor parallelism the block kinds take the fused kernels' rules, which TP divides."
            }
            Diagnostic::OverheadBound => {
                "Each forward's fixed overhead (kernel launches, ops issued from Python) is the largest part of the request: CUDA graphs or a larger batch would help."
            }
            Diagnostic::ExpertParallelExceedsDp
            | Diagnostic::ExpertTpNotModelled
            | Diagnostic::ExpertParallelDoesNotDivideExperts => self.expert_message(),
            Diagnostic::HeadsDoNotDivideHidden => {
                "The attention heads do not divide the hidden size: head_dim = hidden / heads is rounded down (set head_dim to say what the model uses)."
            }
            Diagnostic::KvHeadsDoNotDivideHeads => {
                "The KV heads do not divide the attention heads: grouped-query attention needs an equal number of query heads per KV head."
            }
            Diagnostic::TooManyLayerKinds => {
                "The layer pattern has more than 4 distinct layer kinds (every model imported so far has at most 4): the layers beyond the fourth kind are counted as the fourth."
            }
            Diagnostic::ContextParallelIgnored
            | Diagnostic::CpDoesNotDivideHeads
            | Diagnostic::CpDoesNotDivideSequence
            | Diagnostic::PostTrainingSettingsIgnored
            | Diagnostic::EngineWouldNotStart
            | Diagnostic::RequestLongerThanEngineContext
            | Diagnostic::RequestsBeyondEnginePool
            | Diagnostic::EnginePoolBelowContext
            | Diagnostic::EngineNeedsTpDividingHeads
            | Diagnostic::EngineDefaultContextRefused
            | Diagnostic::EngineContextAboveModel => self.workload_message(),
            Diagnostic::IntegerTrainingType => {
                "INT8/INT4 are storage formats: training computes activations and gradients in a float type. The figures take the integer sizes as given."
            }
        }
    }

    /// What to tell a person about how the experts are split: `message`'s share for them.
    const fn expert_message(self) -> &'static str {
        match self {
            Diagnostic::ExpertParallelExceedsDp => {
                "Expert parallel degree × expert TP exceeds or does not divide the data-parallel × context-parallel × tensor-parallel ranks, which EP ranks come from (Megatron-Core asserts it): ZeRO shards the experts as if it divided, and the step reduces their gradients over the whole expert-data-parallel groups that fit."
            }
            Diagnostic::ExpertTpNotModelled => {
                "The expert tensor-parallel degree (model.moe.etp) is modelled in training with a degree that divides TP: here (inference, where the serving engines split every expert over TP, or a degree that does not divide TP) the experts are split over TP."
            }
            _ => {
                "Expert parallel degree does not divide the experts; some GPUs hold one more expert (the largest is used)."
            }
        }
    }

    /// What to tell a person about the workloads added later (context parallelism, post-training,
    /// serving engines): `message`'s second half.
    const fn workload_message(self) -> &'static str {
        match self {
            Diagnostic::ContextParallelIgnored => {
                "Context parallelism is modelled for transformer training only: CP is taken as 1 here."
            }
            Diagnostic::CpDoesNotDivideHeads => {
                "All-to-all (Ulysses) context parallelism needs the heads and KV heads of a TP rank divisible by CP (DeepSpeed asserts it): estimated as if they divided evenly."
            }
            Diagnostic::CpDoesNotDivideSequence => {
                "The sequence length is not a multiple of 2 × CP: Megatron's load-balanced causal ring cuts each sequence into 2·CP chunks (it asserts this); estimated with the largest chunk."
            }
            Diagnostic::PostTrainingSettingsIgnored => {
                "Post-training settings that do not apply were ignored: post-training in inference mode, a precomputed reference outside DPO (no reference is held), DPO without a reference (estimated reference-free), or an offload setting the chosen framework does not have (TRL: none; verl: no reference offload, its reference is always on the host; OpenRLHF: no parameter offload)."
            }
            Diagnostic::EngineWouldNotStart => {
                "The serving engine would not start: vLLM's KV cache memory holds less than one request of its max_model_len, or SGLang's token pool holds fewer than 2 tokens (its scheduler asserts a request length of at least 1). Lower max_model_len, raise gpu_memory_utilization / mem_fraction_static, or quantize."
            }
            Diagnostic::EnginePoolBelowContext => {
                "SGLang's token pool holds fewer tokens than its context_len: it starts (and logs a warning), but caps every request at the pool (max_req_len = min(context_len − 1, pool − 1)); a longer request is rejected or truncated. Lower context_length or raise mem_fraction_static to serve full-length requests."
            }
            Diagnostic::EngineNeedsTpDividingHeads => {
                "vLLM and SGLang do not start this layout: the tensor-parallel degree must divide the attention heads (vLLM: \"Total number of attention heads must be divisible by tensor parallel size\"), and divide the KV heads or be divided by them (replicated KV heads). Estimated with the largest rank's share (⌈heads / TP⌉, ⌈KV heads / TP⌉); pick a TP degree that divides the heads."
            }
            Diagnostic::EngineDefaultContextRefused => {
                "Sized to the request (max_model_len 0), vLLM fits; but `vllm serve` without --max-model-len takes the model's whole context (max_position_embeddings), and this KV cache cannot hold one request of it: vLLM would refuse to start. Pass --max-model-len (the report gives the longest that fits)."
            }
            Diagnostic::EngineContextAboveModel => {
                "vLLM's max_model_len or SGLang's context_length is above the model's context (model.transformer.max_positions, its max_position_embeddings): both refuse to start (\"User-specified max_model_len … is greater than the derived max_model_len\") unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 / SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 is set, and positions past it give unreliable output. The memory is estimated as set. (vLLM scales the context by a linear or dynamic RoPE factor; set max_positions to the scaled length for such a model.)"
            }
            Diagnostic::RequestLongerThanEngineContext => {
                "The request (prompt + generated tokens) is longer than the engine admits: vLLM's max_model_len or SGLang's context_len (the request is rejected), or one llama.cpp slot's -c / -np cells (llama-server truncates or shifts the context)."
            }
            Diagnostic::RequestsBeyondEnginePool => {
                "The scenario's concurrent requests need more KV cache than the engine's pool holds: the engine runs as many as the pool holds (the headline's count) and queues or preempts the rest. Memory shows the pool."
            }
            _ => "",
        }
    }

    /// The framework profiles' messages ([`Self::message`]).
    /// The pipeline's diagnostics: its stages against the layers, its micro-batches against the
    /// schedule and the step.
    const fn pipeline_message(self) -> &'static str {
        match self {
            Diagnostic::PpDoesNotDivideLayers => {
                "Pipeline degree does not divide the layers: some stages hold one layer more (the first ones; under vLLM those just before the last)."
            }
            Diagnostic::PpMoreStagesThanLayers => {
                "More pipeline stages than layers: some stages are empty."
            }
            Diagnostic::MegatronInterleavingNeedsMicrobatches => {
                "Megatron-Core runs the interleaved pipeline schedule only when the micro-batches per step are a multiple of the pipeline stages (schedules.py: microbatch_group_size_per_vp_stage, by default PP, must lie in [PP, micro-batches] and leave no remainder below PP): it refuses this layout. The step is timed as plain 1F1B, without the interleaving's smaller bubble."
            }
            Diagnostic::PipelineMicrobatchesBeyondStep => {
                "More micro-batches per pipeline flush than the step runs (the gradient-accumulation steps): taken as the step's micro-batches, since a flush cannot fill the pipeline with micro-batches the step does not have."
            }
            _ => "",
        }
    }

    const fn framework_message(self) -> &'static str {
        match self {
            Diagnostic::FrameworkSettingsIgnored => {
                "The Hugging Face settings (attention implementation, trainer, fused loss, bitsandbytes, adapter dropout) apply to the Hugging Face profile (LitGPT reads only the bitsandbytes release) and to LoRA/QLoRA, and Megatron's own layers and MoE dispatcher to the Megatron profile; here some of them have no effect."
            }
            Diagnostic::FlashAttention2NeedsHalfPrecision => {
                "FlashAttention-2 runs only in FP16/BF16 (Transformers refuses an FP32 model): estimated with the fused kernel's saved tensors anyway."
            }
            Diagnostic::FrameworkWithoutPipeline => {
                "LitGPT and torchtune have no pipeline parallelism: the stages follow the generic 1F1B rule, which these frameworks cannot run."
            }
            Diagnostic::FsdpNeedsZero3 => {
                "FSDP always shards parameters, gradients and optimizer states (ZeRO stage 3; FSDP1's SHARD_GRAD_OP is stage 3 with reshard after forward off): with another ZeRO stage the generic ZeRO rule is estimated and the FSDP settings are ignored."
            }
            Diagnostic::MegatronNeedsTpDividingKvHeads => {
                "Megatron-Core does not start this layout: its attention divides the KV heads (num_query_groups) by the tensor-parallel degree and asserts it divides them (megatron/core/transformer/attention.py, Attention.__init__). Estimated with the KV heads replicated on the ranks, as vLLM serves such a layout; pick a TP degree that divides the KV heads."
            }
            Diagnostic::MegatronMoeNeedsSequenceParallel => {
                "Megatron-Core does not train a mixture of experts with tensor parallelism but without sequence parallelism: MoELayer.forward raises a ValueError (megatron/core/transformer/moe/moe_layer.py, 0.16.1). Estimated as set; turn on sequence parallelism."
            }
            Diagnostic::MegatronAllGatherDispatcher => {
                "Estimated with Megatron-Core's default all-gather token dispatcher, which gathers the tokens of the TP × EP group into its persistent global buffer (e·b·s·EP·h bytes, × ETP/TP under expert tensor parallelism, kept for the run) and keeps its routing map past the backward. Most runs with expert parallelism choose --moe-token-dispatcher-type alltoall, which gathers no such buffer: set implementation.megatron_moe_dispatcher to AllToAll (the window's MoE token dispatcher: All-to-all) for them."
            }
            Diagnostic::MegatronLocalLayersWithoutCp => {
                "Megatron-Core's own attention does not run context parallelism: DotProductAttention asserts context_parallel_size == 1 (megatron/core/transformer/dot_product_attention.py, 0.16.1; only Transformer Engine's attention supports it). Estimated as set; turn off Megatron's own layers or context parallelism."
            }
            Diagnostic::DeepSpeedZeroWithPipeline => {
                "DeepSpeed does not run ZeRO stage 2 or 3 with pipeline parallelism (deepspeed/runtime/pipe/engine.py asserts \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"): estimated per stage as if it did (stage 3's gathered parameters as for the whole model)."
            }
            Diagnostic::Fsdp1WithPipeline => {
                "FSDP1 (FullyShardedDataParallel) does not compose with torch's pipeline schedules (torch.distributed.pipelining takes FSDP2 stages, as torchtitan does): estimated per stage as if it did."
            }
            _ => "",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

/// A set of diagnostics, iterated in `Diagnostic::ALL` order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(u64);

// One bit per diagnostic.
const _: () = assert!(Diagnostic::ALL.len() <= 64);

impl Diagnostics {
    pub fn insert(&mut self, d: Diagnostic) {
        self.0 |= 1 << d as u8;
    }
    pub fn remove(&mut self, d: Diagnostic) {
        self.0 &= !(1 << d as u8);
    }
    pub fn contains(&self, d: Diagnostic) -> bool {
        self.0 & (1 << d as u8) != 0
    }
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }
    pub fn iter(&self) -> impl Iterator<Item = Diagnostic> + '_ {
        Diagnostic::ALL.into_iter().filter(|d| self.contains(*d))
    }
}

impl crate::scenario::validate::ClampReport for Diagnostics {
    fn clamped(&mut self) {
        self.insert(Diagnostic::InputClamped);
    }
}

#[cfg(test)]
mod tests {
    use super::Diagnostic;

    #[test]
    fn every_diagnostic_has_a_message_and_its_own_code() {
        for (i, d) in Diagnostic::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i, "{d:?}: ALL in declaration order");
            assert!(d.message().len() > 20, "{d:?}");
            assert!(
                Diagnostic::ALL[..i].iter().all(|o| o.code() != d.code()),
                "{d:?}"
            );
        }
    }
}
