//! One training step on one GPU: FLOPs and bytes of forward + backward (+ recomputation), the
//! optimizer update, collectives, the pipeline bubble and offload traffic.

use super::comm::{allreduce_time, bubble_fraction, chosen_latency, one_bit_ratio};
use super::inputs::Inputs;
use super::roofline::{div, phase};
use super::types::{Communication, OffloadTraffic, PhaseRoofline};
use super::work::{Work, offload_link, offload_traffic, spill_bytes};
use crate::estimator::MemoryEstimate;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::MlpShape;
use crate::scenario::{Checkpointing, ModelFamily, OffloadTarget, Profile, Scenario, ZeroStage};
use crate::units::{Bytes, BytesPerSec};

/// Everything the assembly step needs from a training step.
#[derive(Clone, Copy, Debug, Default)]
pub struct TrainingStep {
    pub phase: PhaseRoofline,
    pub optimizer: PhaseRoofline,
    pub model_flops: f64,
    pub comm: Communication,
    pub offload: OffloadTraffic,
    /// The optimizer's update on the host when it is offloaded ([`host_optimizer_s`]), s.
    pub host_optimizer_s: f64,
    /// Sequences (samples) per step over all replicas, and tokens.
    pub samples: f64,
    pub tokens: f64,
    /// The parts model's breakdown (transformers with a known peak), else `None`.
    pub parts: Option<super::parts::StepParts>,
}

/// FLOPs and bytes of one step on one GPU.
pub fn training(s: &Scenario, m: &ResolvedModel, mem: &MemoryEstimate, i: &Inputs) -> TrainingStep {
    let w = Work::new(s, m, mem, i);
    let accum = s.workload.grad_accum_steps.max(1) as f64;
    let recompute_weights = match s.strategies.checkpointing {
        Checkpointing::Full | Checkpointing::EveryK => 1.0,
        Checkpointing::PerOp => super::flops::per_op_recomputed_share(m),
        Checkpointing::None | Checkpointing::Selective => 0.0,
    };
    // Per micro-batch: weights read by forward, backward (dX) and recomputation (plus autocast's
    // cast in every forward, reference §1.7 "AMP"); gradients
    // read-modify-written by accumulation; saved activations written by forward and read by
    // backward, and their gradients (same size) written and read once in backward: 4×.
    let bytes_mb = w.weight_bytes * (2.0 + recompute_weights)
        + w.cast_bytes * (1.0 + recompute_weights)
        + w.grad_bytes_per_gpu * 2.0
        + w.saved_activations * 4.0
        + w.lookup_bytes * 2.0;
    let tokens_mb = w.local_tokens();
    let split = i.tp as f64 * i.pp as f64;
    let lora_saved = super::peft_moe::lora_flops_saved(s, m, tokens_mb, split, w.keep) * accum;
    let hw_flops = (3.0 * w.forward_flops + w.recompute_flops) * accum - lora_saved;
    let mut train_phase = phase(hw_flops, bytes_mb * accum, i);
    let optimizer = phase(0.0, w.optimizer_bytes, i);
    let parts = super::parts::training_parts(s, m, &w, i, &s.timing.parts);
    if let Some(p) = &parts {
        train_phase = parts_phase(train_phase, p);
    }
    let mut comm = communication(s, m, &w, i, train_phase.time_s);
    let hide = parts.as_ref().map_or(0.0, |p| p.ring_window_s);
    let (cp_bytes, cp_s) = super::context_parallel::step(s, m, &w, i, hide);
    (comm.cp_bytes, comm.cp_time_s) = (Bytes(cp_bytes), cp_s);
    if let Some(p) = &parts {
        // The parts model: TP collectives hidden by `tp_overlap`, pipeline sends exposed
        // (after `pp_overlap`), and the bubble idles for the stage's kernels and its exposed
        // TP communication (every micro-batch carries both; Narayanan et al. 2021 §2.2).
        // Hidden communication is not free: its kernels take SMs and memory bandwidth from the
        // compute it overlaps (`super::parts::overlap_tax`).
        let tp_ov = s.timing.parts.tp_overlap.clamp(0.0, 1.0);
        let (_, tp_inter) = i.collective_bw(i.tp, 1);
        let tp_keep = (1.0 - tp_ov) + tp_ov * super::parts::overlap_tax(tp_inter);
        comm.tp_time_s *= tp_keep;
        comm.tp_latency_s *= 1.0 - tp_ov;
        let dp_hidden = comm.dp_time_s - comm.dp_exposed_s;
        comm.dp_exposed_s += dp_hidden.max(0.0) * super::parts::overlap_tax(comm.dp_internode);
        comm.pp_p2p_s = p.p2p_s;
        // Every micro-batch's path: its compute and the sends it waits for (a mixture's tokens too).
        let path = train_phase.time_s + comm.tp_time_s + comm.ep_time_s + p.p2p_s + cp_s;
        comm.bubble_s = comm.bubble_fraction * path;
    }
    let offload = offload(s, &w, i, recompute_weights, accum, mem);
    TrainingStep {
        phase: train_phase,
        optimizer,
        model_flops: 3.0 * w.forward_flops * accum - lora_saved,
        comm,
        offload,
        host_optimizer_s: host_optimizer_s(s, &w, i),
        samples: w.micro_batch * accum * i.dp as f64,
        tokens: w.micro_batch * accum * i.dp as f64 * w.tokens_per_sample,
        parts,
    }
}

/// The training phase timed by the parts model: compute time = GEMMs + attention core (+ their
/// recomputation), memory time = elementwise kernels, added (calculon's `no_overlap` mode; the
/// kernels run one after another). FLOPs and bytes stay the roofline's.
fn parts_phase(mut ph: PhaseRoofline, p: &super::parts::StepParts) -> PhaseRoofline {
    let total = p.compute_s();
    let memory = p.elementwise_s;
    ph.compute_time_s = total - memory;
    ph.memory_time_s = memory;
    ph.time_s = total;
    ph.bound = if memory > total - memory {
        super::types::Bound::Memory
    } else {
        super::types::Bound::Compute
    };
    if total > 0.0 {
        ph.attainable = crate::units::FlopsPerSec(ph.flops / total);
        ph.saturation = (total - memory) / total;
        ph.idle_share = memory / total;
    }
    ph
}

/// Tensor-parallel all-reduces (Megatron: 2 per layer in forward, 2 in backward, 2 more when the
/// forward is recomputed; Korthikanti §4.2), the data-parallel collectives ([`DpCollectives`]:
/// once per step, or in every micro-batch under ZeRO-2/3 and FSDP; ZeRO-3 1.5× an all-reduce's
/// volume, ZeRO §7; 1-bit compression; a mixture's routed experts over their
/// expert-data-parallel group, [`expert_data_parallel`]), pipeline bubble.
pub fn communication(
    s: &Scenario,
    m: &ResolvedModel,
    w: &Work,
    i: &Inputs,
    phase_time: f64,
) -> Communication {
    let accum = s.workload.grad_accum_steps.max(1);
    let mut c = Communication {
        zero_factor: 1.0,
        compression_ratio: 1.0,
        ..Communication::default()
    };
    if m.family == ModelFamily::Transformer && i.tp > 1 {
        // Per sub-layer (a transformer has two; a hybrid's Mamba-, attention- or MLP-only
        // layers one): its forward and backward reductions, and the recomputed forward's.
        // Megatron's token dispatcher carries a MoE sub-layer's traffic (`peft_moe`).
        let sublayers = crate::estimator::memory::layer_kinds::sublayers_per_layer(m)
            - super::peft_moe::megatron_moe_sublayers_without_tp(s, m);
        let per_layer = sublayers
            * match s.strategies.checkpointing {
                // Per-op recomputes wk/w3 from the gathered norm outputs and wo's reduction: as full.
                Checkpointing::Full | Checkpointing::EveryK | Checkpointing::PerOp => 3.0,
                Checkpointing::None | Checkpointing::Selective => 2.0,
            }
            + megatron_sp_regathers(s, m);
        let layers = f64::from(m.layers.div_ceil(i.pp));
        c.tp_allreduces = (per_layer * layers).round() as u32;
        let bytes = w.local_tokens() * m.hidden as f64 * w.act_bytes;
        let (bw, _) = i.collective_bw(i.tp, 1);
        let (each, ring, tree) = allreduce_time(bytes, i.tp, bw, i.alpha_s, i.algo);
        let count = per_layer * layers * accum as f64;
        c.tp_time_s = each * count;
        c.tp_latency_s = chosen_latency(ring, tree, i.algo) * count;
        c.tp_bandwidth = BytesPerSec(bw);
    }
    data_parallel(s, m, w, i, phase_time, &mut c);
    let micro = super::comm::pipeline_microbatches(s);
    let (ep_bytes, ep_s) = super::peft_moe::ep_comm(s, m, i, w.local_tokens(), accum as f64);
    (c.ep_bytes, c.ep_time_s) = (Bytes(ep_bytes), ep_s);
    c.bubble_fraction = bubble_fraction(i.pp, micro, s.parallel.pp_interleave);
    c.bubble_s = c.bubble_fraction * phase_time;
    c
}

/// How many data-parallel collectives one step runs, in reduce-scatters of the gradients (the
/// reduce half of an all-reduce) and all-gathers of weights, once per step and in every
/// micro-batch, by what each framework does under gradient accumulation:
///
/// - **No ZeRO, ZeRO-1**: one all-reduce (ZeRO-1: one reduce-scatter and one all-gather of the
///   updated weights) at the accumulation boundary. Megatron-Core runs every micro-batch but the
///   last under `no_sync` (`megatron/core/pipeline_parallel/schedules.py`
///   `forward_backward_no_pipelining` at d98e8a6: "Run computation for last microbatch out of
///   context handler (want to synchronize gradients)"); DeepSpeed stages 0 and 1 reduce "only at
///   gradient accumulation boundaries" (`deepspeed/runtime/engine.py` `allreduce_gradients`,
///   0.19.6 at edaa722; `stage_1_and_2.py` `reduce_ready_partitions_and_remove_grads` reduces
///   when `partition_gradients or is_gradient_accumulation_boundary()`).
/// - **ZeRO-2**: the gradients are held only as this rank's partition, so every micro-batch's are
///   reduce-scattered into it ("ZeRO stage >= 2 communicates during non gradient accumulation
///   boundaries as well", `engine.py` `allreduce_gradients`; `stage_1_and_2.py`
///   `reduce_ready_partitions_and_remove_grads`), and the updated weights are all-gathered once.
///   Megatron-FSDP's `optim_grads` likewise (`grad_reduce_every_bprop`,
///   `megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py` at d98e8a6; its
///   `no_sync` says "for grads shard mode there will actually always be gradient sync").
/// - **ZeRO-3 / FSDP**: every micro-batch gathers the weights for its forward and again for its
///   backward and reduce-scatters its gradients (DeepSpeed `stage3.py`: the gradient hooks run in
///   every backward and `partition_grads` copies the first micro-batch's partition and adds the
///   later ones', `micro_step_id`; Megatron-FSDP `optim_grads_params` releases the weights after
///   forward, `_post_forward`, and reduces every backward). FSDP (1 and 2) without
///   `reshard_after_forward` (FSDP1 `SHARD_GRAD_OP`) keeps the gathered weights from forward to
///   backward: one gather per micro-batch. FSDP2 reduce-scatters each micro-batch "without any
///   intervention" unless the user calls `set_requires_gradient_sync(False)` (pytorch/pytorch
///   PR #126166); torchtitan does not (pytorch/torchtitan PR #1710, declined: "doing gradient
///   sync requires extra communication but reduce the memory overhead … doing it by default makes
///   the code simpler"), nor do torchtune's recipes, and the memory estimate holds the sharded
///   gradients accordingly. Hugging Face's Trainer enters Accelerate's `no_sync` for every
///   micro-batch but the last (`accelerator.no_sync`; FSDP1 `no_sync()`, FSDP2 since
///   huggingface/accelerate PR #3762): deferred reduce-scatters and unsharded gradients, which
///   neither the memory nor the time estimate models (docs/time-model.md).
/// - **FSDP2 under a pipeline** ([`fsdp2_pipeline`]): one all-gather and one reduce-scatter per
///   step.
///
/// Counts are per step and replica; `per_micro` is multiplied by the step's micro-batches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DpCollectives {
    /// (reduce-scatters, all-gathers) once per step.
    pub once: (f64, f64),
    /// (reduce-scatters, all-gathers) in every micro-batch.
    pub per_micro: (f64, f64),
}

impl DpCollectives {
    /// The collectives of a step of `s` (see the type's doc); `deferred` is [`fsdp2_pipeline`].
    pub fn of(s: &Scenario, deferred: bool) -> DpCollectives {
        let fsdp = matches!(
            s.implementation.sharding,
            crate::scenario::Sharding::Fsdp1 | crate::scenario::Sharding::Fsdp2
        );
        let gathers = if fsdp && !s.implementation.fsdp.reshard_after_forward {
            1.0
        } else {
            2.0
        };
        let (once, per_micro) = match s.strategies.zero {
            ZeroStage::None | ZeroStage::Stage1 => ((1.0, 1.0), (0.0, 0.0)),
            ZeroStage::Stage2 => ((0.0, 1.0), (1.0, 0.0)),
            ZeroStage::Stage3 if deferred => ((1.0, 1.0), (0.0, 0.0)),
            ZeroStage::Stage3 => ((0.0, 0.0), (1.0, gathers)),
        };
        DpCollectives { once, per_micro }
    }

    /// The step's volume in all-reduces of the gradients (counts only; types apart): an
    /// all-reduce is one reduce-scatter and one all-gather (ZeRO §7.1). 1 for DDP and ZeRO-1/2
    /// without accumulation, 1.5 for ZeRO-3 (ZeRO §7.2.2), × the micro-batches where they repeat.
    pub fn allreduces(&self, micro: f64) -> f64 {
        0.5 * (self.once.0 + self.once.1 + micro * (self.per_micro.0 + self.per_micro.1))
    }
}

/// The data-parallel gradient reduction (ZeRO-3: also the weights' gathers) of one step, into `c`:
/// the collectives of [`DpCollectives`], each group's once-per-step and per-micro-batch
/// collectives timed as all-reduces of their bytes (a reduce-scatter and an all-gather of S bytes
/// move what an all-reduce of S/2 does), the latter once per micro-batch. Hidden by
/// `comm_overlap`, but never more than the step's kernels (`phase_time`) it could run beside.
fn data_parallel(
    s: &Scenario,
    m: &ResolvedModel,
    w: &Work,
    i: &Inputs,
    phase_time: f64,
    c: &mut Communication,
) {
    // Gradients are reduced over DP × CP: CP ranks hold the same weights (Megatron-Core's
    // `get_data_parallel_group(with_context_parallel=True)`); CP sits inside DP in the rank order.
    let dp_group = i.dp.saturating_mul(i.cp.max(1));
    let deferred = fsdp2_pipeline(s, i);
    let expert = w.expert_grad_bytes_per_gpu.min(w.grad_bytes_per_gpu);
    let (edp, stride) = expert_data_parallel(s, m, dp_group, i.tp);
    // Expert TP below TP replicates the experts over TP ÷ ETP ranks even at DP = 1.
    if dp_group > 1 || (edp > 1 && expert > 0.0) {
        let micro = f64::from(s.workload.grad_accum_steps.max(1));
        let plan = DpCollectives::of(s, deferred);
        c.zero_factor = plan.allreduces(micro);
        if s.strategies.one_bit_comm {
            let bits = (w.grad_bytes_per_param * 8.0).max(1.0);
            c.compression_ratio = one_bit_ratio(s.strategies.one_bit_warmup_fraction, bits);
        }
        let lora = super::peft_moe::lora(s, m);
        let (g, gathered) = bytes_by_type(s, w, lora);
        // All-reduce-equivalent bytes per gradient byte of one set of collectives.
        let per_grad_byte = |(scatters, gathers): (f64, f64)| {
            if g > 0.0 {
                0.5 * (scatters * g + gathers * gathered) / g / c.compression_ratio
            } else {
                0.0
            }
        };
        let (once, each) = (per_grad_byte(plan.once), per_grad_byte(plan.per_micro));
        let dense = w.grad_bytes_per_gpu - expert;
        let (bw, inter) = i.collective_bw(dp_group, i.tp);
        let (expert_bw, _) = i.collective_bw(edp, stride);
        // Every collective of a step: the once-per-step set, then `micro` per-micro-batch sets.
        let mut t = [0.0; 3];
        for (scale, times) in [(once, 1.0), (each, micro)] {
            if scale <= 0.0 {
                continue;
            }
            let d = allreduce_time(dense * scale, dp_group, bw, i.alpha_s, i.algo);
            let e = allreduce_time(expert * scale, edp, expert_bw, i.alpha_s, i.algo);
            // Both collectives' latency terms, so that what is not latency stays the transfer.
            t[0] += times * (d.0 + e.0);
            t[1] += times * (d.1 + e.1);
            t[2] += times * (d.2 + e.2);
        }
        let [t, ring, tree] = t;
        let sent = |bytes: f64, group: u32| if group > 1 { bytes } else { 0.0 };
        let volume = once + micro * each;
        c.dp_bytes = Bytes(sent(dense * volume, dp_group) + sent(expert * volume, edp));
        c.dp_bus_factor = super::comm::allreduce_bus_factor(dp_group);
        c.dp_bandwidth = BytesPerSec(bw);
        c.dp_internode = inter;
        c.dp_ring_latency_s = ring;
        c.dp_tree_latency_s = tree;
        c.dp_time_s = t;
        let exposed = if deferred {
            // The reduce-scatter runs after the last micro-batch: nothing hides it on the first
            // stage, which finishes last.
            let scatter_share = if g + gathered > 0.0 {
                g / (g + gathered)
            } else {
                0.5
            };
            scatter_share * t + (1.0 - scatter_share) * t * (1.0 - i.comm_overlap)
        } else {
            t * (1.0 - i.comm_overlap)
        };
        // What overlaps runs beside the step's kernels: no more can hide than they last.
        c.dp_exposed_s = exposed.max(t - phase_time.max(0.0));
    }
}

/// The bytes per parameter of the data-parallel collectives: the reduce-scatter's (the
/// gradients' type) and the all-gathers' (the weights'), each in its own type (ZeRO §7.1: an
/// all-reduce is a reduce-scatter and an all-gather of the same bytes). ZeRO-1/2 gather the
/// updated stored weights (Megatron's distributed optimizer under `--bf16`: FP32 `main_grad`
/// reduce-scatter, BF16 `param_data` all-gather, `megatron/core/distributed/param_and_grad_buffer.py`
/// at d98e8a6), ZeRO-3 / FSDP the copies the forward computes with (FSDP's `param_dtype`); without
/// ZeRO the all-reduce's second half carries the reduced gradients. LoRA reduces and gathers
/// only its adapters, whose gradients and weights share a type (the memory model keeps both FP32).
fn bytes_by_type(s: &Scenario, w: &Work, lora: bool) -> (f64, f64) {
    let g = w.grad_bytes_per_param;
    let gathered = match s.strategies.zero {
        ZeroStage::None => return (g, g),
        ZeroStage::Stage1 | ZeroStage::Stage2 => w.stored_weight_bytes_per_param,
        ZeroStage::Stage3 => w.weight_bytes_per_param,
    };
    if lora || g <= 0.0 || gathered <= 0.0 {
        (g, g)
    } else {
        (g, gathered)
    }
}

/// The group a mixture's routed-expert gradients are reduced over (and ZeRO-3 gathers their
/// weights over), and the rank stride between its members: the expert-data-parallel group of
/// DP × CP × TP ÷ (ETP × EP) ranks (`memory::ctx::expert_ranks` ÷ EP, whole groups only), EP × ETP
/// apart; Megatron-Core's DDP all-reduces its `expert_parallel_buffers` over it
/// (`get_expert_data_parallel_group`, `distributed_data_parallel.py`, 0.16.1). An expert whose
/// every replica sits on one rank (EP = DP × CP × TP ÷ ETP) is reduced over no one.
fn expert_data_parallel(s: &Scenario, m: &ResolvedModel, dp_group: u32, tp: u32) -> (u32, u32) {
    use crate::estimator::memory::ctx::{expert_ranks, expert_tp};
    let (etp, ep) = (expert_tp(s), f64::from(m.moe.ep.max(1)));
    let groups = (expert_ranks(f64::from(dp_group), f64::from(tp), etp) / ep).floor();
    let edp = groups.clamp(1.0, f64::from(u32::MAX)) as u32;
    (edp, (etp * ep).min(f64::from(u32::MAX)) as u32)
}

/// All-reduce equivalents per layer that Megatron's sequence parallelism adds in backward: each
/// column-parallel linear (QKV, FC1) saves its input sharded over the sequence and all-gathers it
/// again in backward for its weight gradient (Megatron-LM `megatron/core/tensor_parallel/layers.py`
/// at 960c06b, `LinearWithGradAccumulationAndAsyncCommunication`: `ctx.save_for_backward(input,
/// …)` before the forward's all-gather, `_all_gather_base(…, async_op=True)` in `backward`, beside
/// the input-gradient GEMM; Transformer Engine's `Linear` does the same). One all-gather of t·h
/// is half a ring all-reduce's bytes and steps: ½ for a mixer's input projection (attention's QKV,
/// Mamba's in_proj), ½ for a dense MLP's FC1 or a mixture's shared experts, averaged over the
/// layers. A mixture's routed experts take no part: their
/// linears are `is_expert` (`explicit_expert_comm` turns their sequence parallelism off; the
/// token dispatcher gathers the tokens). Hidden only by `timing.parts.tp_overlap`, as the other
/// TP collectives. PyTorch's DTensor sequence parallelism keeps the gathered input as autograd
/// saves it: none there.
fn megatron_sp_regathers(s: &Scenario, m: &ResolvedModel) -> f64 {
    if !s.parallel.sequence_parallel || s.implementation.profile != Profile::Megatron {
        return 0.0;
    }
    let l = f64::from(m.layers.max(1));
    let mixers = m.blocks.sum(|k| f64::from(u8::from(k.has_mixer())));
    let fc1 = m.blocks.sum(|k| match k.mlp {
        MlpShape::Dense { .. } => 1.0,
        MlpShape::Moe if m.moe.shared > 0 => 1.0,
        MlpShape::Moe | MlpShape::None => 0.0,
    });
    0.5 * (mixers + fc1) / l
}

/// FSDP2 under a pipeline (docs/frameworks/fsdp.md "Under a pipeline"): the units stay unsharded
/// from their first forward to the end of the step and the gradients are reduce-scattered once,
/// after the last micro-batch (`stage.py` `backward_maybe_with_nosync`): one all-gather and one
/// reduce-scatter per step, an all-reduce's volume, not ZeRO-3's 1.5.
fn fsdp2_pipeline(s: &Scenario, i: &Inputs) -> bool {
    s.mode == crate::scenario::Mode::Training
        && crate::estimator::memory::frameworks::fsdp::pipelined(
            s.implementation.sharding,
            s.strategies.zero,
            f64::from(i.pp),
        )
}

/// The optimizer's update run by the host's CPUs when it is offloaded (to host memory or NVMe):
/// ZeRO-Offload's CPU-Adam (Ren et al. 2021 §4: the update runs after backward, on the critical
/// path unless the one-step delayed update is on, which is not modelled) and Megatron-Core's
/// `--optimizer-cpu-offload` (`HybridDeviceOptimizer.step` after backward). The update is
/// memory-bound on the host as on a GPU: it moves the bytes the GPU's update would
/// ([`Work::update_bytes_per_param`]), and a node's GPUs share one host, so this GPU's share runs
/// at the node's bandwidth (`timing.host_optimizer_gb_s`) divided among the node's GPUs of this
/// job. States on NVMe are read into host memory for the update and written back (ZeRO-Infinity,
/// Rajbhandari et al. 2021 §5: the optimizer step runs on the CPU over states swapped in from
/// NVMe), master weights and optimizer states both ways at `timing.nvme_gb_s` per GPU, before
/// and after the update (DeepSpeed's `pipeline_read`/`pipeline_write` overlap them with it, off
/// by default).
fn host_optimizer_s(s: &Scenario, w: &Work, i: &Inputs) -> f64 {
    let swap_bytes = match s.strategies.offload_optimizer {
        OffloadTarget::None => return 0.0,
        OffloadTarget::Cpu => 0.0,
        OffloadTarget::Nvme => 2.0 * w.optimizer_params * w.state_bytes_per_param,
    };
    let sharing = f64::from(i.gpus_per_node.max(1))
        .min(s.parallel.gpus() as f64)
        .max(1.0);
    let update_bytes = w.optimizer_params * w.update_bytes_per_param * sharing;
    div(update_bytes, i.host_optimizer_bw) + div(swap_bytes, i.nvme_bw)
}

/// ZeRO-Offload (optimizer on the host: 16-bit gradients down, 16-bit weights up once per step),
/// ZeRO-3 parameter offload (weights up for every forward, backward and recomputation), and spill to
/// a second tier (read in forward, read again in backward).
fn offload(
    s: &Scenario,
    w: &Work,
    i: &Inputs,
    recompute: f64,
    accum: f64,
    mem: &MemoryEstimate,
) -> OffloadTraffic {
    let st = &s.strategies;
    let link = |t: OffloadTarget| offload_link(i, t);
    let opt_bytes = match st.offload_optimizer {
        OffloadTarget::None => 0.0,
        // The updated stored weights go up (LoRA: its adapters, in their own type).
        _ => w.optimizer_params * (w.grad_bytes_per_param + w.stored_weight_bytes_per_param),
    };
    let param_bytes = match st.offload_params {
        OffloadTarget::None => 0.0,
        _ => (2.0 + recompute) * accum * w.weight_bytes_shard,
    };
    let host_time =
        div(opt_bytes, link(st.offload_optimizer)) + div(param_bytes, link(st.offload_params));
    let bw = if st.offload_params == OffloadTarget::None {
        link(st.offload_optimizer)
    } else {
        link(st.offload_params)
    };
    let tier_bytes = 2.0 * accum * spill_bytes(mem, i);
    offload_traffic(i, opt_bytes + param_bytes, bw, host_time, tier_bytes)
}
