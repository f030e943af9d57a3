//! The numbers the memory model reads, from the resolved scenario (`estimator::resolve`: every
//! degree ≥ 1, every size finite and in range, every fraction in [0, 1]), so the rest of the model
//! computes without guards.

use crate::estimator::Diagnostics;
use crate::estimator::model::ResolvedModel;
use crate::estimator::resolve::{Resolved, resolve_with_model};
use crate::scenario::{
    AttentionKernel, Checkpointing, DropoutMask, Mode, OffloadTarget, OptimizerKind, Profile,
    PruneKind, Scenario, ZeroStage,
};

/// Sanitised inputs of the memory model. Sizes are `f64` element counts, byte sizes are bytes per
/// element.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the resolved switches of the scenario, one per input the formulas branch on"
)]
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub mode: Mode,
    /// Whose layer kernels run (`Profile::kernels`: LitGPT and torchtune run Hugging Face's rules).
    pub profile: Profile,
    /// The framework the user runs, and its settings (`memory::frameworks`).
    pub framework: crate::estimator::memory::frameworks::Framework,
    /// The serving engine of inference (resolved: never `None` after `estimator::resolve`).
    pub engine: crate::scenario::ServingEngine,
    /// Sequences per micro-batch on this GPU (static batch) or requests in flight (dynamic batching).
    pub b: f64,
    /// Training: tokens per sequence on this GPU (seq_len ÷ CP, rounded up). Inference: prompt tokens.
    pub s: f64,
    /// Context-parallel degree (1 outside transformer training, `estimator::resolve`). Attention of
    /// the s local queries runs over s·cp keys.
    pub cp: f64,
    pub cp_style: crate::scenario::CpStyle,
    /// Inference: generated tokens.
    pub generated: f64,
    pub grad_accum: f64,
    pub dropout: bool,
    pub mask_bytes: f64,
    pub tp: f64,
    /// The routed experts' tensor-parallel degree ([`expert_tp`]).
    pub etp: f64,
    pub pp: f64,
    pub dp: f64,
    pub sp: bool,
    /// Micro-batches per pipeline flush.
    pub pp_microbatches: f64,
    pub pp_interleave: f64,
    /// Activation (compute) element bytes.
    pub ec: f64,
    /// Residual-stream element bytes: FP32 under autocast (FP32 embeddings), else `ec`.
    pub er: f64,
    /// Autocast: FP32 weights with 16-bit compute copies.
    pub amp: bool,
    pub e_weights: f64,
    /// The weights' element type (what dense groups are stored as).
    pub weights: crate::tensor::Dtype,
    pub e_grads: f64,
    pub e_states: f64,
    pub e_master: f64,
    pub e_kv: f64,
    /// Seed article §4.1 per-layer precision: the attention block's activations in FP32.
    pub attention_fp32: bool,
    pub attention: AttentionKernel,
    pub checkpointing: Checkpointing,
    pub checkpoint_every: f64,
    pub compress8: bool,
    pub fused_ce: bool,
    /// The new block kinds run Transformers' torch reference paths (`BlockKernels::TorchReference`)
    /// rather than fused GPU kernels.
    pub torch_blocks: bool,
    pub zero: ZeroStage,
    pub offload_optimizer: OffloadTarget,
    pub offload_params: OffloadTarget,
    pub optimizer: OptimizerKind,
    pub foreach: bool,
    /// Whose 8-bit Adam steps (`optimizer.eight_bit_library`).
    pub eight_bit_library: crate::scenario::EightBitLibrary,
    /// `OptimizerKind::StateBytes`: state bytes per trainable parameter.
    pub state_bytes_per_param: f64,
    /// FP8 training recipe (`precision.fp8_recipe`; training only, `None` in inference).
    pub fp8: crate::scenario::Fp8Recipe,
    pub prune_fraction: f64,
    pub prune_kind: PruneKind,
    pub sharing_fraction: f64,
    pub all_logits: bool,
    /// Input batch bytes resident on the GPU: the micro-batch plus prefetched batches
    /// (`article::input_pipeline`; token ids + labels at 16 B/token by default).
    pub input_bytes: f64,
    /// The input is images (CNN pipelines); token inputs of non-transformer families are ignored.
    pub image_input: bool,
    pub dynamic_batching: bool,
    pub mean_length_fraction: f64,
    pub kv_block_tokens: f64,
    /// Inference serving features (`InferenceFeatures::default()`, all off, in training).
    pub features: crate::scenario::InferenceFeatures,
    /// Sequences per request that share its prompt's KV blocks (dynamic batching with
    /// `sequences_per_prompt` n); 1 otherwise — a static batch is expanded into `b` instead.
    pub fork: f64,
    pub second_tier_bytes: f64,
    /// Gradient communication buckets when DP > 1, bytes.
    pub comm_bytes: f64,
    /// Post-training (resolved; `algorithm: Off` outside training). Under DPO `b` counts the
    /// chosen and the rejected sequences.
    pub post: crate::scenario::PostTraining,
}

pub use crate::estimator::num::ceil;

impl Ctx {
    /// Bytes of an attention element (Q, K, V, scores, softmax): 4 when attention is kept in FP32
    /// (`precision.attention_fp32`, the seed article §4.1), else the compute type's.
    pub fn attention_bytes(&self) -> f64 {
        if self.attention_fp32 { 4.0 } else { self.ec }
    }

    /// Micro-batches whose saved activations the first pipeline stage holds under 1F1B:
    /// [`Ctx::in_flight_at`] stage 0, min(p, m) and p + (p − 1)/v interleaved (Narayanan et al.
    /// 2021 §2.2). The memory estimate and the step timeline both read it.
    pub fn in_flight_microbatches(&self) -> f64 {
        self.in_flight_at(0.0)
    }

    /// Micro-batches of saved activations the 0-based pipeline stage `i` keeps at once, in units of
    /// one micro-batch through all of the stage's layers.
    ///
    /// 1F1B: stage i runs p − i − 1 warm-up forwards before its first backward, so it holds
    /// min(p − i, m) (Narayanan et al. 2021 §2.2). Interleaved over v model chunks: NVIDIA
    /// Megatron-LM megatron/core/pipeline_parallel/schedules.py `get_pp_rank_microbatches` (read at
    /// commit 00611e6e, 2025) runs 2(p − i − 1) + (v − 1)·N warm-up chunk forwards
    /// (N = `microbatch_group_size_per_vp_stage`, by default p), at most m·v, and one more in the
    /// steady state; each chunk holds 1/v of the stage's layers. Stage 0 with m ≥ p: p + (p − 1)/v.
    pub fn in_flight_at(&self, i: f64) -> f64 {
        let (p, m, v) = (self.pp, self.pp_microbatches, self.pp_interleave);
        let i = i.clamp(0.0, (p - 1.0).max(0.0));
        if p <= 1.0 {
            1.0
        } else if v > 1.0 {
            let chunks = 2.0 * (p - i - 1.0) + (v - 1.0) * p + 1.0;
            chunks.min(m * v) / v
        } else {
            (p - i).min(m)
        }
    }

    /// Resolves `sc` (with its model `m`) and reads the result: see [`Ctx::of`].
    pub fn new(sc: &Scenario, m: &ResolvedModel, d: &mut Diagnostics) -> Ctx {
        Ctx::of(&resolve_with_model(sc, m, d))
    }

    /// The memory model's view of a resolved scenario: its values as `f64`, the batch and tokens of
    /// the mode, the element sizes of the precision, the pipeline stages that hold layers and the
    /// ZeRO sharding degree (`dp`: under HYBRID_SHARD the DP ranks of one node).
    pub fn of(r: &Resolved) -> Ctx {
        let sc = &r.scenario;
        let w = &sc.workload;
        let inf = &sc.inference;
        let par = &sc.parallel;
        let st = &sc.strategies;
        let p = sc.precision_types();
        let dynamic = sc.mode == Mode::Inference && inf.dynamic_batching;
        let post = post_training(sc);
        let (features, b, fork) = serving_batch(sc, dynamic);
        let b = dpo_pairs(&post) * b;
        let (s, cp) = tokens_per_gpu(sc);
        let amp = p.weight_compute_copies.is_some() && !fsdp_sharded(sc);
        let ec = match p.weight_compute_copies {
            Some(c) => c.bytes(),
            None => p.activations.bytes(),
        };
        let tp = f64::from(par.tp);
        Ctx {
            mode: sc.mode,
            profile: sc.implementation.profile.kernels(),
            framework: crate::estimator::memory::frameworks::Framework::of(sc),
            engine: engine_of(sc),
            b,
            s,
            cp,
            cp_style: par.cp_style,
            generated: f64::from(inf.generated_tokens),
            grad_accum: f64::from(w.grad_accum_steps),
            dropout: model_dropout(sc),
            mask_bytes: match sc.implementation.dropout_mask {
                DropoutMask::OneByte => 1.0,
                DropoutMask::Float => ec,
            },
            tp,
            etp: expert_tp(sc),
            pp: f64::from(r.pp_stages),
            dp: f64::from(r.zero_dp),
            sp: par.sequence_parallel && tp > 1.0,
            pp_microbatches: f64::from(par.pp_microbatches),
            pp_interleave: f64::from(par.pp_interleave),
            ec,
            er: if amp { 4.0 } else { ec },
            amp,
            e_weights: p.weights.bytes(),
            weights: p.weights,
            e_grads: p.gradients.bytes(),
            e_states: p.optimizer_states.bytes(),
            e_master: p.master_weights.map_or(0.0, |t| t.bytes()),
            e_kv: p.kv_cache.bytes(),
            attention_fp32: p.attention_fp32,
            attention: st.attention,
            checkpointing: st.checkpointing,
            checkpoint_every: f64::from(st.checkpoint_every),
            compress8: st.activation_compression_8bit,
            fused_ce: sc.implementation.fused_cross_entropy,
            // The torch reference rules were measured on one device and know no TP sharding.
            torch_blocks: torch_blocks(sc) && tp <= 1.0,
            zero: st.zero,
            offload_optimizer: st.offload_optimizer,
            offload_params: st.offload_params,
            optimizer: sc.optimizer.kind,
            foreach: sc.optimizer.foreach,
            eight_bit_library: sc.optimizer.eight_bit_library,
            state_bytes_per_param: sc.optimizer.state_bytes_per_param,
            fp8: fp8_of(sc),
            prune_fraction: st.prune_fraction,
            prune_kind: st.prune_kind,
            sharing_fraction: st.weight_sharing_fraction,
            all_logits: inf.all_logits,
            input_bytes: input_bytes(sc, b, s),
            image_input: sc.input.kind == crate::scenario::InputKind::Images,
            dynamic_batching: dynamic,
            mean_length_fraction: inf.mean_length_fraction,
            kv_block_tokens: f64::from(inf.kv_block_tokens),
            features,
            fork,
            second_tier_bytes: second_tier_bytes(st),
            comm_bytes: sc.overheads.comm_buffer_mib * crate::units::MIB,
            post,
        }
    }

    /// Element bytes of saved activations after optional 8-bit compression: 1 byte plus an FP32
    /// scale per 128-element group (ActNN, Chen et al. 2021, per-group quantisation).
    pub fn saved_scale(&self) -> f64 {
        if self.compress8 {
            (1.0 + 4.0 / 128.0) / self.ec.max(1.0)
        } else {
            1.0
        }
    }
}

/// The serving engine (resolved scenarios always name one; `ServingEngine::following` otherwise).
fn engine_of(sc: &Scenario) -> crate::scenario::ServingEngine {
    let following = crate::scenario::ServingEngine::following(sc.implementation.profile);
    sc.inference.engine.unwrap_or(following)
}

/// Dropout in the model's layers. LitGPT's models have none: there `workload.dropout` is the
/// adapters' `lora_dropout` (`frameworks::Framework::adapter_dropout`).
fn model_dropout(sc: &Scenario) -> bool {
    sc.workload.dropout
        && sc.mode == Mode::Training
        && sc.implementation.profile != crate::scenario::Profile::LitGpt
}

/// Transformers' own modules: the Hugging Face framework only (LitGPT and torchtune run Hugging
/// Face's kernels in modules of their own).
/// Whether the scenario selects the torch reference block kernels (Hugging Face profile).
pub(crate) fn torch_blocks(sc: &Scenario) -> bool {
    sc.implementation.block_kernels == crate::scenario::BlockKernels::TorchReference
        && sc.implementation.profile == crate::scenario::Profile::HuggingFace
}

/// Tokens per sequence on this GPU and the CP degree. Context parallelism: every rank of a CP group
/// holds seq_len ÷ cp tokens of each sequence (Megatron-Core `get_batch_on_this_cp_rank`, 2·cp
/// chunks, two per rank); inference: the prompt.
fn tokens_per_gpu(sc: &Scenario) -> (f64, f64) {
    let cp = f64::from(sc.parallel.cp.max(1));
    match sc.mode {
        Mode::Training => (ceil(f64::from(sc.workload.seq_len) / cp), cp),
        Mode::Inference => (f64::from(sc.inference.prompt_tokens), 1.0),
    }
}

/// The serving features of the mode (off in training) and the batch the memory model reads:
/// requests in flight with dynamic batching, else the micro-batch — expanded × n for inference, as
/// Hugging Face `generate` expands it (`num_beams` / `num_return_sequences`) before the prefill
/// (transformers 4.57 and 5.x `generation/utils.py` `_expand_inputs_for_generation`), each copy
/// with its own cache.
/// Third: the sequences per request that share its blocks (`Ctx::fork`).
fn serving_batch(sc: &Scenario, dynamic: bool) -> (crate::scenario::InferenceFeatures, f64, f64) {
    let inf = &sc.inference;
    if sc.mode != Mode::Inference {
        let features = crate::scenario::InferenceFeatures::default();
        return (features, f64::from(sc.workload.micro_batch), 1.0);
    }
    let n = f64::from(inf.features.sequences_per_prompt.max(1));
    if dynamic {
        (inf.features, f64::from(inf.concurrent_requests), n)
    } else {
        (inf.features, f64::from(sc.workload.micro_batch) * n, 1.0)
    }
}

/// The post-training section the memory model reads: `algorithm: Off` outside training.
fn post_training(sc: &Scenario) -> crate::scenario::PostTraining {
    if sc.mode == Mode::Training {
        sc.post_training
    } else {
        crate::scenario::PostTraining::default()
    }
}

/// Sequences per batch item: DPO runs each prompt's chosen and rejected completions as one batch
/// of 2 × micro-batch sequences (TRL 1.16 `trainer/dpo_trainer.py`
/// `DataCollatorForPreference.torch_call`: `torch.cat` of the two).
fn dpo_pairs(p: &crate::scenario::PostTraining) -> f64 {
    if p.algorithm == crate::scenario::RlAlgorithm::Dpo {
        2.0
    } else {
        1.0
    }
}

/// Whether FSDP1/FSDP2 shards this training step (ZeRO-3). Its mixed precision runs the modules
/// on the gathered compute-type parameters with no autocast, so the activation rules are those of
/// training in the compute type: one norm output for all its consumers, the residual stream in the
/// compute type (measured, docs/frameworks/fsdp.md "Mixed precision").
pub(super) fn fsdp_sharded(sc: &Scenario) -> bool {
    sc.mode == Mode::Training
        && crate::estimator::memory::frameworks::fsdp::shards(
            sc.implementation.sharding,
            sc.strategies.zero,
        )
}

/// The second tier's capacity, counted only with a tier (the window keeps the figure when the tier
/// is switched off).
fn second_tier_bytes(st: &crate::scenario::Strategies) -> f64 {
    if st.second_tier == crate::scenario::SecondTier::None {
        0.0
    } else {
        st.second_tier_gib * crate::units::GIB
    }
}

/// Input bytes on the GPU for `b` samples of `s` tokens (clamped values), finite and ≥ 0.
fn input_bytes(sc: &Scenario, b: f64, s: f64) -> f64 {
    use crate::estimator::article::input_pipeline::sample_bytes;
    let batches = 1.0 + f64::from(sc.input.gpu_prefetch_batches);
    let x = sample_bytes(&sc.input, s) * b * batches;
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}

/// The FP8 recipe a training step runs (none in inference).
fn fp8_of(sc: &crate::scenario::Scenario) -> crate::scenario::Fp8Recipe {
    if sc.mode == Mode::Training {
        sc.precision.fp8_recipe
    } else {
        crate::scenario::Fp8Recipe::None
    }
}

/// The routed experts' tensor-parallel degree in training: `model.moe.etp`, or TP when it is 0
/// (Megatron-Core's default) or does not divide TP; in inference TP (the serving engines split
/// every expert over TP). Both not modelled cases are `expert_tp_not_modelled`.
pub fn expert_tp(sc: &Scenario) -> f64 {
    f64::from(expert_tp_degree(
        sc.parallel.tp,
        sc.model.moe.etp,
        sc.mode == Mode::Training,
    ))
}

/// The ranks expert parallelism is carved out of: `data_ranks` data-parallel ranks (DP × CP) × TP ÷
/// the expert TP degree `etp`. (The inventory's EP cap passes the ZeRO group, which under hybrid
/// sharding is one node's DP × CP: there it undercounts, not modelled.) Megatron-Core's expert
/// rank generator orders the expert ranks ETP, EP, DP (`parallel_state.py`
/// `initialize_model_parallel`, 0.16.1), so its expert-data-parallel group is these ÷ EP;
/// DeepSpeed-MoE's `_create_expert_and_data_parallel` (`deepspeed/utils/groups.py`) makes DP ÷ EP
/// groups, the same at ETP = TP. The one formula every expert group size reads.
pub fn expert_ranks(data_ranks: f64, tp: f64, etp: f64) -> f64 {
    data_ranks.max(1.0) * tp.max(1.0) / etp.max(1.0)
}

/// What a rank holds of the routed experts beyond `at_tp`, its share as TP splits them, when they
/// are split over `etp` ranks instead: `at_tp` × (TP ÷ ETP − 1); 0 at the default ETP = TP. The one
/// rule the inventory and the step's per-GPU parameters read.
pub fn expert_tp_excess(at_tp: f64, tp: f64, etp: f64) -> f64 {
    at_tp * (tp.max(1.0) / etp.max(1.0) - 1.0).max(0.0)
}

/// [`expert_tp`] at tensor-parallel degree `tp` (the layout search tries other TP degrees than the
/// scenario's): `etp` when set, training and dividing `tp`, else `tp`.
pub fn expert_tp_degree(tp: u32, etp: u32, training: bool) -> u32 {
    let tp = tp.max(1);
    if etp > 0 && tp.is_multiple_of(etp) && training {
        etp
    } else {
        tp
    }
}
