//! Sizes of one training micro-batch on one GPU: FLOPs, weights, gradients, activations, optimizer.

use super::flops;
use super::inputs::Inputs;
use crate::estimator::model::ResolvedModel;
use crate::estimator::{Component, MemoryEstimate, Phase};
use crate::scenario::{
    AttentionKernel, Checkpointing, EightBitLibrary, ModelFamily, OffloadTarget, OptimizerKind,
    PruneKind, ResolvedPrecision, Scenario, ZeroStage,
};

/// Per-GPU sizes of a training micro-batch (bytes unless named otherwise).
#[derive(Clone, Copy, Debug, Default)]
pub struct Work {
    pub micro_batch: f64,
    /// Context-parallel degree: this GPU computes 1/cp of every sequence's tokens.
    pub cp: f64,
    /// Tokens per sample: the sequence length for transformers, 1 otherwise.
    pub tokens_per_sample: f64,
    /// Bytes per activation element.
    pub act_bytes: f64,
    pub forward_flops: f64,
    pub recompute_flops: f64,
    /// Matmul weights one forward reads, in the compute copy's type.
    pub weight_bytes: f64,
    /// Autocast's per-forward cast of FP32 weights to their 16-bit copies: read the stored weights,
    /// write the copy (0 without copies).
    pub cast_bytes: f64,
    pub weight_bytes_per_param: f64,
    /// This GPU's share of the weights after ZeRO-3 sharding (what parameter offload moves).
    pub weight_bytes_shard: f64,
    pub grad_bytes_per_param: f64,
    /// Bytes per parameter of the stored weights: what a sharded optimizer (ZeRO-1/2) all-gathers
    /// after its update, whatever type the gradients were reduced in.
    pub stored_weight_bytes_per_param: f64,
    pub grad_bytes_per_gpu: f64,
    /// Of `grad_bytes_per_gpu`, a mixture's routed experts' (full training; LoRA's adapters are
    /// all counted with the dense part): they are reduced over the expert-data-parallel group.
    pub expert_grad_bytes_per_gpu: f64,
    pub saved_activations: f64,
    pub lookup_bytes: f64,
    /// Parameters this GPU's optimizer updates (ZeRO-1+ shards them over DP).
    pub optimizer_params: f64,
    /// GPU memory traffic of the update (0 when the optimizer runs on the host).
    pub optimizer_bytes: f64,
    /// Master weights and optimizer states per optimizer parameter, bytes: what ZeRO-Infinity
    /// swaps between NVMe and the host for the update.
    pub state_bytes_per_param: f64,
    /// Bytes the update moves per optimizer parameter, wherever it runs: weight, master copy and
    /// states read and written, the gradient read.
    pub update_bytes_per_param: f64,
    /// Share of the weight matrices structured pruning keeps (1 otherwise).
    pub keep: f64,
}

impl Work {
    /// Tokens of one micro-batch this GPU computes: b · seq_len ÷ cp.
    pub fn local_tokens(&self) -> f64 {
        self.micro_batch * self.tokens_per_sample / self.cp.max(1.0)
    }

    pub fn new(s: &Scenario, m: &ResolvedModel, mem: &MemoryEstimate, i: &Inputs) -> Work {
        let prec = s.precision_types();
        let st = &s.strategies;
        let split = i.tp as f64 * i.pp as f64;
        let keep = match st.prune_kind {
            PruneKind::Structured => 1.0 - st.prune_fraction,
            PruneKind::Unstructured => 1.0,
        };
        let cp = f64::from(i.cp.max(1));
        // Context parallelism splits every sequence's tokens, and with Megatron's load-balanced
        // causal chunks (2·cp per sequence, ranks i and 2cp − 1 − i together) the attention work too.
        let (forward_flops, recompute_flops) = forward_flops(s, m, split * cp, keep);
        // A rank's share, with the matrices it holds whole (`replicated_matrices_beyond_split`),
        // and of a mixture's routed experts only its expert-parallel rank's: a GPU reads, reduces
        // and gathers those alone (the others' over their own expert-data-parallel groups).
        let whole = m.replicated_matrices_beyond_split(i.tp as f64) * keep / i.pp as f64;
        let elsewhere = f64::from(m.layers)
            * m.moe.routed_params_per_layer
            * (1.0 - m.moe.stored_expert_fraction());
        let (experts_at_tp, excess, etp) = expert_split(s, m, i, elsewhere, keep / split);
        let params = (param_count(m) - elsewhere).max(0.0) * keep / split + whole + excess;
        let read = (read_weights(m) - elsewhere).max(0.0) * keep / split + whole + excess;
        let compute_w = prec.weight_compute_copies.unwrap_or(prec.weights).bytes();
        let lora = super::peft_moe::lora(s, m);
        let TrainedTypes {
            g,
            stored,
            master,
            states,
        } = trained_types(s, &prec, lora);
        let zero_shard = |stage: ZeroStage| zero_degree(s, m, stage);
        // ZeRO shards the GPU's experts over their expert-data-parallel group (DP × TP / ETP / ep)
        // and the rest over DP: `params` split so, per ZeRO stage.
        let ep = f64::from(m.moe.ep.max(1));
        let experts = experts_at_tp + excess;
        let sharded = |stage: ZeroStage| {
            let (z, on) = (zero_shard(stage), st.zero as u8 >= stage as u8);
            let edp = if on {
                crate::estimator::memory::ctx::expert_ranks(z, i.tp as f64, etp) / ep
            } else {
                1.0
            };
            (params - experts) / z + experts / edp.max(1.0)
        };
        // LoRA: gradients and optimizer updates of the adapters only.
        let trained = super::peft_moe::trainable_params(s, m, params, i.tp as f64, i.pp as f64);
        // LoRA's adapters are all reduced with the dense part.
        let expert_grads = if lora { 0.0 } else { experts.min(trained) * g };
        let optimizer_params = if lora {
            trained / zero_shard(ZeroStage::Stage1)
        } else {
            sharded(ZeroStage::Stage1)
        };
        let update = 2.0 * (stored + master + states) + g;
        let optimizer_bytes = match st.offload_optimizer {
            OffloadTarget::None => {
                optimizer_params * (update + megatron_grad_copy(s, master, g) + torchao_buffers(s))
            }
            _ => 0.0,
        };
        let b = s.workload.micro_batch.max(1) as f64;
        let (tokens_per_sample, lookup_bytes) = sample_shape(s, m, b);
        Work {
            micro_batch: b,
            cp,
            tokens_per_sample,
            act_bytes: prec.activations.bytes(),
            forward_flops,
            recompute_flops,
            weight_bytes: read * compute_w,
            cast_bytes: prec
                .weight_compute_copies
                .map_or(0.0, |c| read * (prec.weights.bytes() + c.bytes())),
            weight_bytes_per_param: compute_w,
            weight_bytes_shard: sharded(ZeroStage::Stage3) * compute_w,
            grad_bytes_per_param: g,
            stored_weight_bytes_per_param: stored,
            grad_bytes_per_gpu: trained * g,
            expert_grad_bytes_per_gpu: expert_grads,
            saved_activations: saved_activations(s, m, mem, i),
            lookup_bytes,
            optimizer_params,
            optimizer_bytes,
            state_bytes_per_param: master + states,
            update_bytes_per_param: update,
            keep,
        }
    }
}

/// Bytes per trained parameter: gradient, stored weight, master copy, optimizer states.
struct TrainedTypes {
    g: f64,
    stored: f64,
    master: f64,
    states: f64,
}

/// The element bytes of what the optimizer trains. LoRA trains its adapters in their own type, as
/// the memory model keeps them (FP32 under PEFT, the model's under LitGPT and torchtune:
/// `frameworks::adapter_element_bytes`), with no master copy; else the resolved precision's.
fn trained_types(s: &Scenario, prec: &ResolvedPrecision, lora: bool) -> TrainedTypes {
    let adapter = lora.then(|| {
        crate::estimator::memory::frameworks::adapter_element_bytes(
            s.implementation.profile,
            prec.weights,
        )
        .unwrap_or(4.0)
    });
    let (g, state_type, master, stored) = match adapter {
        Some(e) => (e, e, 0.0, e),
        None => (
            prec.gradients.bytes(),
            prec.optimizer_states.bytes(),
            prec.master_weights.map_or(0.0, |d| d.bytes()),
            prec.weights.bytes(),
        ),
    };
    let states = optimizer_state_bytes(
        s.optimizer.kind,
        state_type,
        s.optimizer.state_bytes_per_param,
    );
    TrainedTypes {
        g,
        stored,
        master,
        states,
    }
}

/// Bytes per parameter torchao's 8-bit AdamW moves beside the update: its compiled step writes
/// three FP32 buffers of the parameter's size and reads them back (the memory side's
/// `states::TORCHAO_8BIT_BUFFER_BYTES`, measured), 24 B; bitsandbytes' kernel updates in place.
fn torchao_buffers(s: &Scenario) -> f64 {
    let o = &s.optimizer;
    if o.kind == OptimizerKind::Adam8bit && o.eight_bit_library == EightBitLibrary::Torchao {
        2.0 * crate::estimator::memory::states::TORCHAO_8BIT_BUFFER_BYTES
    } else {
        0.0
    }
}

/// Bytes per parameter Megatron's step adds when its gradient buffer is 16-bit beside an FP32
/// master (the memory side's `states.rs` `megatron_fp32_grad_copy`): `main_grad.float()` writes
/// an FP32 copy (4 B) that the optimizer then reads in place of the 16-bit gradient (4 B more;
/// the 16-bit read is in `update` already). `megatron/core/optimizer/optimizer.py`
/// `_copy_model_grads_to_main_grads`, d98e8a6.
fn megatron_grad_copy(s: &Scenario, master: f64, g: f64) -> f64 {
    let i = &s.implementation;
    if i.sharding.megatron_fp32_grad_copy(i.profile, master, g) {
        8.0
    } else {
        0.0
    }
}

/// The degree ZeRO `stage`'s share is divided by: 1 below that stage, else the ZeRO group as the
/// memory estimate shards over it (`estimator::resolve`, `zero_dp`): DP × CP, or under hybrid
/// sharding one node's DP ranks × CP.
fn zero_degree(s: &Scenario, m: &ResolvedModel, stage: ZeroStage) -> f64 {
    if (s.strategies.zero as u8) < stage as u8 {
        return 1.0;
    }
    let stages = s.parallel.pp.min(m.layers).max(1);
    f64::from(crate::estimator::resolve::zero_group(
        &s.strategies,
        &s.parallel,
        stages,
    ))
}

/// Parameters that get gradients and optimizer updates: the model's trainable count when it has
/// one, else the forward's matmul weights. A recommender's embedding tables are left out (their
/// gradients are sparse rows, not all-reduced and not updated densely).
pub fn param_count(m: &ResolvedModel) -> f64 {
    let p = match m.family {
        ModelFamily::Recommender => m.matmul_weights,
        _ if m.params.trainable > 0.0 => m.params.trainable,
        _ if m.params.total > 0.0 => m.params.total,
        _ => read_weights(m),
    };
    finite(p)
}

/// Weights a forward reads through its matrix multiplies (embedding lookups excluded).
pub fn read_weights(m: &ResolvedModel) -> f64 {
    if m.matmul_weights > 0.0 {
        finite(m.matmul_weights)
    } else {
        finite(flops::matmul_weights(m))
    }
}

/// A count as a finite, non-negative number.
fn finite(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}

/// Optimizer state bytes per parameter (reference §1.7): Adam/AdamW two moments, SGD with momentum
/// one, 8-bit Adam two 1-byte moments, Adafactor ≈ 0 (factored), SGD none; Lion one momentum
/// (Chen et al. 2023, Alg. 1); Muon one momentum for the hidden matrices that hold nearly all
/// parameters (its AdamW part, the embeddings and head, is counted exactly by the memory estimate,
/// `memory::states`); `StateBytes` what the scenario gives (`custom`).
pub fn optimizer_state_bytes(kind: OptimizerKind, state: f64, custom: f64) -> f64 {
    match kind {
        OptimizerKind::Sgd | OptimizerKind::Adafactor => 0.0,
        OptimizerKind::SgdMomentum | OptimizerKind::Lion | OptimizerKind::Muon => state,
        OptimizerKind::Adam | OptimizerKind::AdamW => 2.0 * state,
        OptimizerKind::Adam8bit => 2.0,
        OptimizerKind::StateBytes => custom,
    }
}

/// Saved activations of one micro-batch on one GPU: the memory estimator's forward-phase figure
/// (divided by the micro-batches 1F1B keeps in flight), or — while it has none — Korthikanti et al.
/// 2022 Eq. 1, sbh(34 + 5as/h) bytes per layer in 16 bit (without the 5as/h term under
/// FlashAttention), ÷ TP.
fn saved_activations(s: &Scenario, m: &ResolvedModel, mem: &MemoryEstimate, i: &Inputs) -> f64 {
    let from_memory = mem
        .phases
        .get(Phase::Forward)
        .map_or(0.0, |b| b.get(Component::Activations).get());
    if from_memory > 0.0 && from_memory.is_finite() {
        let in_flight = i.pp.min(s.workload.grad_accum_steps.max(1)).max(1);
        return from_memory / in_flight as f64;
    }
    if m.family != ModelFamily::Transformer {
        return 0.0;
    }
    let sbh =
        s.workload.seq_len.max(1) as f64 * s.workload.micro_batch.max(1) as f64 * m.hidden as f64;
    let scores = match s.strategies.attention {
        AttentionKernel::Materialized => {
            5.0 * m.heads as f64 * s.workload.seq_len as f64 / (m.hidden.max(1)) as f64
        }
        AttentionKernel::Flash => 0.0,
    };
    let act_scale = s.precision_types().activations.bytes() / 2.0;
    sbh * (34.0 + scores) * act_scale * m.layers.div_ceil(i.pp) as f64 / i.tp as f64
}

/// Bandwidth of the path to an offload target: host DRAM over the host link (pinned or pageable, in
/// `Inputs`), NVMe through the host at the slower of the two.
pub fn offload_link(i: &Inputs, target: crate::scenario::OffloadTarget) -> f64 {
    match target {
        crate::scenario::OffloadTarget::Nvme => i.host_bw.min(i.nvme_bw),
        _ => i.host_bw,
    }
}

/// The routed experts a rank holds as TP splits them (of those on its expert-parallel rank:
/// `stored_elsewhere` are not), what it holds beyond that when they are split over ETP < TP ranks
/// instead (`memory::ctx::expert_tp`), and that ETP degree. `scale`: pruning's keep ÷ (TP × PP).
fn expert_split(
    s: &Scenario,
    m: &ResolvedModel,
    i: &Inputs,
    stored_elsewhere: f64,
    scale: f64,
) -> (f64, f64, f64) {
    let at_tp =
        (f64::from(m.layers) * m.moe.routed_params_per_layer - stored_elsewhere).max(0.0) * scale;
    let etp = crate::estimator::memory::ctx::expert_tp(s);
    let excess = crate::estimator::memory::ctx::expert_tp_excess(at_tp, i.tp as f64, etp);
    (at_tp, excess, etp)
}

/// Tokens per sample (the sequence for a transformer, 1 otherwise) and the embedding rows a
/// recommender's micro-batch of `b` samples looks up, in FP32 bytes.
fn sample_shape(s: &Scenario, m: &ResolvedModel, b: f64) -> (f64, f64) {
    match m.family {
        ModelFamily::Transformer => (s.workload.seq_len.max(1) as f64, 0.0),
        ModelFamily::Cnn => (1.0, 0.0),
        ModelFamily::Recommender => (1.0, b * flops::sample_work(&s.model).lookup_elements * 4.0),
    }
}

/// Offload and second-tier traffic of a step; prefetch hides `offload_overlap` of both.
pub fn offload_traffic(
    i: &Inputs,
    host_bytes: f64,
    host_bandwidth: f64,
    host_time_s: f64,
    tier_bytes: f64,
) -> super::types::OffloadTraffic {
    use crate::units::{Bytes, BytesPerSec};
    let tier_time_s = super::roofline::div(tier_bytes, i.tier_bw);
    super::types::OffloadTraffic {
        host_bytes: Bytes(host_bytes),
        host_bandwidth: BytesPerSec(host_bandwidth),
        host_time_s,
        tier_bytes: Bytes(tier_bytes),
        tier_bandwidth: BytesPerSec(i.tier_bw),
        tier_time_s,
        hidden_share: i.offload_overlap,
        exposed_s: (host_time_s + tier_time_s) * (1.0 - i.offload_overlap),
        tier_slowdown: 1.0,
    }
}

/// Bytes that spill to the second tier: what exceeds GPU memory, when the tier can hold it.
pub fn spill_bytes(mem: &MemoryEstimate, i: &Inputs) -> f64 {
    if i.tier_bw <= 0.0 {
        return 0.0;
    }
    let over = mem.gpu_total.get() - i.capacity;
    // As the memory estimate: a spill larger than the tier does not fit at all (nothing is timed).
    if over > 0.0 && over <= i.tier_capacity {
        over
    } else {
        0.0
    }
}

/// Forward FLOPs of one micro-batch on one GPU and its recomputation, for [`Work`].
fn forward_flops(s: &Scenario, m: &ResolvedModel, split: f64, keep: f64) -> (f64, f64) {
    let b = s.workload.micro_batch.max(1) as f64;
    if m.family != ModelFamily::Transformer {
        let work = flops::sample_work(&s.model);
        return (b * work.flops * keep / split, 0.0);
    }
    let seq = s.workload.seq_len.max(1) as f64;
    let layers = m.layers as f64;
    let tokens = b * seq;
    // One layer's FLOPs per token, computed once: the forward and a full recomputation both use it.
    let per_layer = flops::layer_flops_per_token(m, seq);
    let fwd = tokens * (layers * per_layer * keep + flops::head_flops_per_token(m) * keep)
        + super::towers::forward(m, b, seq);
    let recompute = match s.strategies.checkpointing {
        Checkpointing::None => 0.0,
        // Korthikanti App. A Eq. 8 vs Eq. 7: + 72BLsh² · s/6h = 12·B·s²·h per layer, three times
        // the attention core's forward (4·B·s²·h); the paper's count is followed.
        Checkpointing::Selective => {
            3.0 * tokens * layers * flops::attention_flops_per_token(m, seq)
        }
        Checkpointing::Full | Checkpointing::EveryK => tokens * layers * per_layer * keep,
        // torchtitan's per-op policy: the even-numbered matmuls of each layer (2 FLOPs per MAC).
        Checkpointing::PerOp => {
            let (proj, mlp) = flops::layer_matmul_weights(m);
            tokens * layers * 2.0 * (proj + mlp) * flops::per_op_recomputed_share(m) * keep
        }
    };
    (fwd / split, recompute / split)
}
