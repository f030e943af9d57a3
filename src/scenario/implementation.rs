//! What the framework keeps alive, and the overheads beyond tensors.

use serde::{Deserialize, Serialize};

use super::HfFramework;

/// What the framework's kernels keep alive: the same model saves different tensors under different
/// implementations (see docs/model.md "Implementation profiles").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Profile {
    /// Hugging Face transformers in eager PyTorch: unfused ops, fp32 logits and loss, what
    /// `../reference/measured` recorded.
    #[default]
    HuggingFace,
    /// Megatron-Core: fused kernels, 16-bit activations, 1-byte dropout masks (Korthikanti et al.
    /// 2022 Table 2 holds exactly), the vocab-parallel cross-entropy working in the logits'
    /// storage and a gradient buffer alive for the whole run (docs/frameworks/megatron-core.md).
    Megatron,
    /// LitGPT 0.5.13 (docs/frameworks/litgpt.md): eager PyTorch with SDPA, chunked LM head whose
    /// logit chunks stay alive through backward and the optimizer step, per-chunk loss in the
    /// logits' type, a preallocated KV cache. Settings: `implementation.litgpt`.
    LitGpt,
    /// torchtune 0.6.1 (docs/frameworks/torchtune.md): chunked output with an FP32 per-chunk loss,
    /// logits freed before backward, torchao NF4 QLoRA. Settings: `implementation.torchtune`.
    Torchtune,
}

impl Profile {
    pub const ALL: [Profile; 4] = [
        Profile::HuggingFace,
        Profile::Megatron,
        Profile::LitGpt,
        Profile::Torchtune,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Profile::HuggingFace => "Hugging Face Transformers",
            Profile::Megatron => "Megatron-Core",
            Profile::LitGpt => "LitGPT",
            Profile::Torchtune => "torchtune",
        }
    }

    /// Whose layer kernels run: LitGPT and torchtune are eager PyTorch modules that save what
    /// Hugging Face's eager/SDPA ops save, except where `estimator/memory/frameworks/` says.
    pub const fn kernels(self) -> Profile {
        match self {
            Profile::LitGpt | Profile::Torchtune => Profile::HuggingFace,
            p => p,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DropoutMask {
    /// Fused `native_dropout` on CUDA: a 1-byte bool mask per element.
    #[default]
    OneByte,
    /// A mask of the activation's own dtype (CPU default path).
    Float,
}

/// Which kernels run the block kinds beyond plain attention (sliding window past the window, MLA,
/// mixtures of experts, Mamba-2, gated DeltaNet), i.e. what they save for backward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockKernels {
    /// The fused GPU kernels (`mamba_ssm`, flash-linear-attention): saved tensors **derived** from
    /// their source, not measured (docs/blocks-measured.md "What fused GPU kernels save instead").
    /// The default: users plan GPU jobs.
    #[default]
    Fused,
    /// Hugging Face Transformers' PyTorch reference paths (what runs without the fused kernels, e.g.
    /// on CPU): **measured** op by op (docs/blocks-measured.md, transformers 5.24.0, within 1 % per
    /// phase in tests/measured_blocks.rs). On one device: under tensor parallelism the fused rules
    /// apply, with the warning `torch_blocks_without_tp` (the measured rules know no TP sharding).
    TorchReference,
}

/// Megatron-Core's MoE token dispatcher (`--moe-token-dispatcher-type`, 0.16.1
/// `megatron/core/transformer/moe/token_dispatcher.py`): which tensors a mixture-of-experts layer
/// keeps beside its experts (docs/frameworks/megatron-core.md "The all-to-all dispatcher").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MoeDispatcher {
    /// `allgather`, Megatron's default: every rank gathers the tokens of its TP × EP group (into
    /// the persistent global buffer when the group has more than one rank) and keeps the local
    /// experts' routing map over all of them.
    #[default]
    AllGather,
    /// `alltoall`, what most expert-parallel runs choose: the rank permutes its own tokens, sends
    /// each routed row to its expert's rank and all-gathers over TP only; it keeps the router's
    /// probabilities and routing map of its own tokens, and no global buffer.
    AllToAll,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Implementation {
    pub profile: Profile,
    pub dropout_mask: DropoutMask,
    /// A fused (chunked) cross-entropy that never materialises the full fp32 b×s×V log-softmax and its
    /// gradient (Liger kernel, Megatron's vocab-parallel CE).
    pub fused_cross_entropy: bool,
    /// Which kernels run the new block kinds (Hugging Face profile): fused GPU kernels or the
    /// Transformers torch reference paths.
    pub block_kernels: BlockKernels,
    /// The Hugging Face profile's settings: attention implementation, trainer, fused loss,
    /// bitsandbytes (src/scenario/framework_hf.rs).
    pub hf: HfFramework,
    /// LitGPT's settings (read when `profile` is `LitGpt`).
    pub litgpt: super::LitGpt,
    /// torchtune's settings (read when `profile` is `Torchtune`).
    pub torchtune: super::Torchtune,
    /// Whose code shards the model states under `strategies.zero`.
    pub sharding: super::Sharding,
    /// DeepSpeed ZeRO's buffers (read when `sharding` is `DeepSpeed`).
    pub deepspeed: super::DeepSpeedZero,
    /// PyTorch FSDP's options (read when `sharding` is `Fsdp1` or `Fsdp2`).
    pub fsdp: super::Fsdp,
    /// PyTorch's `loss_parallel()` (DTensor tensor parallelism, torchtitan's default): the logits
    /// stay sharded over the vocabulary and the cross-entropy runs DTensor's decomposed log-softmax
    /// (docs/frameworks/torchtitan.md). Read under the Hugging Face profile with TP > 1; absent in
    /// older files = off.
    pub loss_parallel: bool,
    /// DeepSpeed-Inference's automatic tensor parallelism (`init_inference` with a TP size and no
    /// kernel injection; v0.8.2 `module_inject/replace_module.py` `replace_wo_policy`): TP slices
    /// only the `nn.Linear` and `nn.Embedding` modules inside the transformer blocks, so the
    /// embeddings and the head stay whole on every GPU (docs/frameworks/deepspeed.md). Read in
    /// inference with TP > 1; absent in older files = off (the vocabulary sharded as Megatron does).
    pub auto_tp: bool,
    /// Megatron-Core's own layers (`--transformer-impl local`) instead of Transformer Engine's:
    /// attention runs Megatron's `DotProductAttention`, which materialises the scores and takes
    /// their `baddbmm` input from the persistent global gather buffer, as the sequence-parallel
    /// linears take their gathered input (docs/frameworks/megatron-core.md "Megatron's global gather
    /// buffer").
    /// Read under the Megatron profile; absent in older files = off (Transformer Engine layers).
    pub megatron_local_layers: bool,
    /// Megatron-Core's MoE token dispatcher (`--moe-token-dispatcher-type`): `AllGather` (the
    /// default) or `AllToAll`. Read under the Megatron profile for a mixture of experts in
    /// training; absent in older files = `AllGather`.
    pub megatron_moe_dispatcher: MoeDispatcher,
    /// Megatron's `--grad-reduce-in-bf16`: under `--bf16` the gradients accumulate and reduce in
    /// BF16 instead of FP32. Megatron-LM `megatron/training/arguments.py` (d98e8a6, l. 1204–1217):
    /// "bfloat16 requires gradient accumulation and all-reduce to be done in fp32", so without
    /// this flag `accumulate_allreduce_grads_in_fp32` is set and Megatron-Core's
    /// `DistributedDataParallel` keeps an FP32 `main_grad` buffer and reduces FP32
    /// ([`super::Scenario::precision_types`]). Read under the Megatron profile with BF16 master
    /// weights and ZeRO none or 1 (DDP, the distributed optimizer); absent in older files = off (FP32 gradients, Megatron's default).
    pub megatron_grad_reduce_in_bf16: bool,
}

impl Implementation {
    /// The MoE token dispatcher Megatron-Core runs: `megatron_moe_dispatcher` under the Megatron
    /// profile, `None` under any other (whose expert parallelism is a plain all-to-all).
    pub fn megatron_dispatcher(&self) -> Option<MoeDispatcher> {
        (self.profile == Profile::Megatron).then_some(self.megatron_moe_dispatcher)
    }
}

impl Default for Implementation {
    fn default() -> Self {
        Implementation {
            profile: Profile::HuggingFace,
            dropout_mask: DropoutMask::OneByte,
            fused_cross_entropy: false,
            block_kernels: BlockKernels::Fused,
            hf: HfFramework::default(),
            litgpt: super::LitGpt::default(),
            torchtune: super::Torchtune::default(),
            sharding: super::Sharding::Generic,
            deepspeed: super::DeepSpeedZero::default(),
            fsdp: super::Fsdp::default(),
            loss_parallel: false,
            auto_tp: false,
            megatron_local_layers: false,
            megatron_moe_dispatcher: MoeDispatcher::AllGather,
            megatron_grad_reduce_in_bf16: false,
        }
    }
}

/// Memory a GPU shows beyond the tensors: assumptions, each visible and adjustable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Overheads {
    /// CUDA context of a process that has just initialised CUDA, MiB (2^20 B). Default 253.75 MiB =
    /// 266,076,160 B: PyTorch with lazy module loading, pytorch/pytorch PR #86509's 287,047,680 B
    /// less the 20 MiB allocator segment its test tensor reserved (docs/gpu-overheads.md §2). Before
    /// this field had `cuda_kernels_mib` beside it the default was 273.75 (the figure with the segment).
    pub cuda_context_mib: f64,
    /// Kernel modules CUDA loads as a run first uses them (lazy loading, CUDA ≥ 11.7 / PyTorch ≥ 1.13),
    /// MiB, on top of `cuda_context_mib` in a running process. Default 146 MiB: the running
    /// process's "around 400 MB" (ptrblck, pytorch/pytorch#109888) less the bare context. An
    /// assumption (what loads is what runs); 0 for eager module loading, whose context figure
    /// already holds every kernel.
    pub cuda_kernels_mib: f64,
    /// Caching-allocator rounding and fragmentation reserve, as a fraction of peak tensor bytes.
    /// An assumption (no source measures it generally; ZeRO §3.2 reports OOM with >30 % free in
    /// extreme cases). Valid: [0, 1]. Not applied under llama.cpp, whose ggml backend allocates
    /// each buffer at its exact size (docs/engines/llamacpp.md §9).
    pub allocator_reserve_fraction: f64,
    /// cuBLAS/cuDNN workspaces, MiB.
    pub workspace_mib: f64,
    /// Gradient communication buckets, MiB per GPU (PyTorch DDP `bucket_cap_mb` = 25, two in flight).
    /// Counted only when DP > 1.
    pub comm_buffer_mib: f64,
    /// NCCL's own buffers per communicator of 3 or more ranks a GPU joins (data, tensor, pipeline,
    /// context, expert parallel), MiB, outside PyTorch's allocator: 688 MB = 656.13 MiB per group
    /// of 3 or 4 ranks after one all-reduce on 4 × A100 NVLink (NVIDIA/nccl#964). An assumption:
    /// NCCL sizes them by its channel count (docs/gpu-overheads.md §3). 0 leaves them out.
    pub nccl_mib_per_communicator: f64,
    /// The same for a 2-rank communicator: 544 MB = 518.80 MiB (NVIDIA/nccl#964).
    pub nccl_mib_two_rank_communicator: f64,
}

impl Overheads {
    /// The CUDA context of a running process, MiB: the bare context and the kernels loaded lazily
    /// as the run first uses them (docs/gpu-overheads.md §2).
    pub fn running_context_mib(&self) -> f64 {
        self.cuda_context_mib + self.cuda_kernels_mib
    }
}

impl Default for Overheads {
    fn default() -> Self {
        Overheads {
            cuda_context_mib: 253.75,
            cuda_kernels_mib: 146.0,
            allocator_reserve_fraction: 0.05,
            workspace_mib: 32.0,
            comm_buffer_mib: 50.0,
            nccl_mib_per_communicator: 688e6 / 1_048_576.0,
            nccl_mib_two_rank_communicator: 544e6 / 1_048_576.0,
        }
    }
}
