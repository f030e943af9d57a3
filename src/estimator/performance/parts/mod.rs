//! The step-time parts model (issue 13; docs/time-model.md): one training step of a transformer
//! on one GPU as the sum of the kernels it is made of — GEMMs on a size- and generation-dependent
//! efficiency curve, the attention core (materialised or fused), memory-bound elementwise work by
//! bytes moved, recomputation by checkpointing mode, pipeline point-to-point sends. Collectives,
//! the bubble and the optimizer are added by `training` (comm.rs). Pure, allocation-free, per layer
//! *kind* (one uniform layer), not per layer.
//!
//! calculon (calculon-ai/calculon, commit caa4b11f8fe1fee3ba57adaacb7590d7deabd053) times each op
//! the same way in its `no_overlap` processing mode: compute and memory time add.

pub mod attention;
pub mod elementwise;
pub mod fp8_casts;
pub mod gemm;
pub mod pipeline;
pub mod search;

use super::inputs::Inputs;
use super::work::Work;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::MixerShape;
use crate::scenario::{
    ArchKind, AttentionKernel, Checkpointing, ElementwiseKernels, FfnKind, Fp8Recipe, ModelFamily,
    NormKind, PartsTiming, PositionKind, Profile, Scenario,
};

/// 16-bit dense peak from which a GPU counts as Hopper-class for `gemm_efficiency_hopper` and
/// the Hopper GEMM curve (H100 SXM: 989 TFLOP/s; A100: 312); a Hopper-class GPU runs every
/// tensor-core kernel at least as fast as an Ampere-class one at this peak (`gemm::Gemm::for_gpu`),
/// so the step time does not jump up here.
pub const HOPPER_PEAK16: f64 = 600e12;

/// Exposed pipeline sends of one step: every transfer of `activation_bytes` (t·h·element) per
/// chunk boundary, the steady phase's hidden by `pp_overlap`, the warm-up's and cool-down's always
/// exposed (`pipeline::p2p_edge_transfers`).
fn exposed_p2p(s: &Scenario, i: &Inputs, activation_bytes: f64, pp_overlap: f64) -> f64 {
    if i.pp <= 1 {
        return 0.0;
    }
    let accum = s.workload.grad_accum_steps.max(1);
    let micro = super::comm::pipeline_microbatches(s);
    // The schedule that runs: 1F1B where the interleaving would not (`comm::interleave_runs`).
    let v = super::comm::effective_interleave(i.pp, micro, s.parallel.pp_interleave);
    let bytes = pipeline::p2p_bytes_per_microbatch(activation_bytes, 1.0, 1.0, i.tp, v);
    let (link, _) = i.collective_bw(i.pp, i.tp.saturating_mul(i.dp).saturating_mul(i.cp));
    let all = f64::from(accum) * rate_time(bytes, link);
    let transfers = 2.0 * f64::from(micro) * f64::from(v);
    let edge = pipeline::p2p_edge_transfers(i.pp, micro, v) / transfers;
    all * (edge + (1.0 - edge) * (1.0 - pp_overlap))
}

/// Share of an overlapped (hidden) collective's duration that still costs step time: the SMs and
/// memory bandwidth its kernels take from the compute running beside it. calculon's
/// `processor_usage` (calculon-ai/calculon at caa4b11f8fe1fee3ba57adaacb7590d7deabd053,
/// `calculon/llm/layers.py` `compute_processing_time`: a hidden transfer adds
/// `net_time × processor_usage` to the compute; `systems/h100_80g_nvl8.json` and
/// `a100_80g.json`: 0.15 on the NVLink network, 0.02 on the InfiniBand one).
pub fn overlap_tax(internode: bool) -> f64 {
    if internode { 0.02 } else { 0.15 }
}

/// Bytes one logit element moves through Megatron's unfused vocab-parallel cross-entropy
/// (`megatron/core/tensor_parallel/cross_entropy.py` at f2e5db402c, Megatron-Core r0.8; Megatron-LM
/// 2021 runs the same ops), logits of `element_bytes`: forward `.float()` (read e, write 4),
/// `max` (4), subtract in place (8), `exp` in place (8), `sum` (4), `div_` (8); backward `mul_`
/// (8) and the cast of the gradient back (4 + e). 52 B at BF16 (the research note
/// docs/research/h100-weak-scaling-configs.md §5 counts the same).
pub fn loss_bytes_per_logit(element_bytes: f64) -> f64 {
    2.0 * element_bytes + 4.0 * (1.0 + 1.0 + 2.0 + 2.0 + 1.0 + 2.0 + 2.0 + 1.0)
}

/// One training step on one GPU (all micro-batches), by part, seconds. The critical pipeline
/// stage is timed: ⌈L/PP⌉ layers plus the LM head and loss (the last stage).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct StepParts {
    /// Forward + backward GEMMs of the layers and the LM head (no recomputation).
    pub gemm_s: f64,
    /// Attention core forward + backward (no recomputation).
    pub attention_s: f64,
    /// The attention layers' part of `attention_s` (a hybrid's scans excluded): what a
    /// context-parallel ring hides its K/V transfers behind.
    pub ring_window_s: f64,
    /// Memory-bound elementwise kernels forward + backward, and the loss.
    pub elementwise_s: f64,
    /// The recomputed forward (full: the whole layer; selective: the attention core).
    pub recompute_s: f64,
    /// Exposed pipeline point-to-point sends.
    pub p2p_s: f64,
    /// The step-level GEMM share used (`gemm_efficiency` or its Hopper value).
    pub gemm_share: f64,
    /// Whether the layers' elementwise work was timed as eager PyTorch's kernels
    /// (`timing.parts.elementwise`, [`eager_elementwise`]) rather than fused ones.
    pub eager_elementwise: bool,
}

impl StepParts {
    /// Kernel time of the step (no collectives, bubble or optimizer).
    pub fn compute_s(&self) -> f64 {
        self.gemm_s + self.attention_s + self.elementwise_s + self.recompute_s
    }
}

/// `flops / rate`, 0 when the rate is not positive.
pub(crate) fn rate_time(flops: f64, rate: f64) -> f64 {
    if rate > 0.0 && flops > 0.0 {
        flops / rate
    } else {
        0.0
    }
}

/// Whether a training step's layers run eager PyTorch's separate elementwise kernels
/// (`timing.parts.elementwise`; `Auto`: everything but Megatron-Core and compiled torchtune).
pub fn eager_elementwise(s: &Scenario) -> bool {
    match s.timing.parts.elementwise {
        ElementwiseKernels::Fused => false,
        ElementwiseKernels::Eager => true,
        ElementwiseKernels::Auto => match s.implementation.profile {
            Profile::Megatron => false,
            Profile::Torchtune => !s.implementation.torchtune.compile,
            Profile::HuggingFace | Profile::LitGpt => true,
        },
    }
}

/// What the hidden-width (replicated) region is divided by on one GPU: tensor parallelism splits it
/// only under sequence parallelism (Korthikanti et al. 2022 §4.2.2).
fn replicated_div(s: &Scenario, tp: f64) -> f64 {
    if s.parallel.sequence_parallel {
        tp
    } else {
        1.0
    }
}

/// The FFN width one token's MLP runs at, per layer: a uniform model's FFN × its active MLPs; a
/// layer pattern's mean over its blocks (from their active MLP weights, the routers' h × E taken
/// off), so that DeepSeek-V3's 3 dense layers of 18,432 and 58 of 8 + 1 experts of 2,048 count as
/// such whichever run the pattern lists first (`m.ffn` is the first MLP kind's width).
fn ffn_active_width(m: &ResolvedModel, active: f64) -> f64 {
    if m.blocks.is_flat() {
        return f64::from(m.ffn) * active;
    }
    let h = f64::from(m.hidden);
    let mats = m.ffn_kind.matrices();
    let (_, mlp) = super::flops::layer_matmul_weights(m);
    let routers = h * f64::from(m.moe.experts) * m.moe_layer_share();
    if h > 0.0 {
        ((mlp - routers) / (mats * h)).max(0.0)
    } else {
        0.0
    }
}

/// One layer's memory-bound kernels forward on one GPU, seconds, and the bytes its backward moves
/// per forward byte: the fused count (norms and dropout-adds on the full hidden state unless
/// sequence parallel, the activation on the rank's FFN shard) or eager PyTorch's
/// (`elementwise::eager_layer`, with the rotary embedding on the rank's heads, and a mixture of
/// experts' routing, `elementwise::moe_routing`; the ratio is then their time-weighted mean).
fn elementwise_forward(
    s: &Scenario,
    m: &ResolvedModel,
    t: f64,
    tp: f64,
    e: f64,
    bw: f64,
    ffn_active: f64,
) -> (f64, f64) {
    let rep_div = replicated_div(s, tp);
    // The hidden-width region's norms and residual adds are per sub-layer: a transformer layer
    // has two, a hybrid's Mamba-, attention- or MLP-only layer one.
    let sublayers = crate::estimator::memory::layer_kinds::sublayers_per_layer(m) / 2.0;
    // The activation runs in the layers that have an MLP, at their width (`ffn_active` is the
    // mean over every layer).
    let mlp_share = crate::estimator::memory::layer_kinds::attention_and_mlp_shares(m).1;
    let ffn_active = if mlp_share > 0.0 {
        ffn_active / mlp_share
    } else {
        0.0
    };
    let bytes = |b: f64, kernels: f64| elementwise::time_in_kernels(t * b, kernels, bw);
    if !eager_elementwise(s) {
        let swiglu = m.ffn_kind == FfnKind::SwiGlu;
        let (rep, act) =
            elementwise::layer_elements_per_token(f64::from(m.hidden), ffn_active, swiglu);
        return (
            bytes(rep * e / rep_div, 4.0) * sublayers + bytes(act * e / tp, 1.0) * mlp_share,
            2.0,
        );
    }
    let shape = elementwise::EagerShape {
        rms_norm: m.norm == NormKind::RmsNorm,
        dropout: s.workload.dropout,
        activation: match m.ffn_kind {
            FfnKind::SwiGlu => elementwise::Activation::SwiGlu,
            FfnKind::Gelu => elementwise::Activation::Gelu,
            FfnKind::SquaredRelu => elementwise::Activation::SquaredRelu,
        },
    };
    let h = f64::from(m.hidden);
    let k = elementwise::eager_layer(h, ffn_active, shape, e);
    let (rope, mla) = eager_attention(m, t, tp, e, bw);
    let fwd = bytes(k.replicated / rep_div, k.replicated_kernels) * sublayers
        + rope
        + bytes(k.mlp / tp, k.mlp_kernels) * mlp_share;
    // A mixture of experts routes every token on every rank (hidden-width ops, like the norms), in
    // its MoE layers (a pattern's share: DeepSeek-V3's first three are dense).
    let routing = if m.moe.experts > 0 {
        let experts = f64::from(m.moe.experts);
        let (b, kernels) = elementwise::moe_routing(h, f64::from(m.moe.top_k), experts, e);
        bytes(b / rep_div, kernels) * m.moe_layer_share()
    } else {
        0.0
    };
    let total = fwd + mla + routing;
    let backward = elementwise::EAGER_BACKWARD_RATIO * fwd
        + elementwise::MLA_BACKWARD_RATIO * mla
        + elementwise::MOE_ROUTING_BACKWARD_RATIO * routing;
    let ratio = if total > 0.0 {
        backward / total
    } else {
        elementwise::EAGER_BACKWARD_RATIO
    };
    (total, ratio)
}

/// The attention side of an eager layer's forward on one GPU, seconds, as the mean over the
/// model's layer kinds: (softmax attention's rotary embedding, latent attention's ops). Each kind
/// on the rank's heads (K/V heads replicated when tensor parallelism exceeds them, the KV cache's
/// rule; the latent norms and MLA's shared RoPE key on every rank). Mamba and gated-DeltaNet
/// mixers run no rotary embedding; their own elementwise kernels are not counted.
fn eager_attention(m: &ResolvedModel, t: f64, tp: f64, e: f64, bw: f64) -> (f64, f64) {
    let layers = f64::from(m.blocks.layers());
    if layers <= 0.0 {
        return (0.0, 0.0);
    }
    let rotary = m.positions == PositionKind::Rotary;
    let time = |(b, kernels): (f64, f64)| elementwise::time_in_kernels(t * b, kernels, bw);
    let (mut rope, mut mla) = (0.0, 0.0);
    for k in m.blocks.kinds() {
        let n = f64::from(k.count);
        match k.mixer {
            MixerShape::Attention {
                heads, head_dim, ..
            } if rotary => {
                let kv = k.mixer.kv_width_rank(tp);
                rope += n * time(elementwise::rotary(heads / tp * head_dim, kv, e));
            }
            MixerShape::Mla(s) => {
                mla += n * time(elementwise::mla(
                    s.heads / tp,
                    s.q_lora,
                    s.kv_lora,
                    s.qk_head_dim(),
                    s.rope,
                    e,
                ));
            }
            _ => {}
        }
    }
    (rope / layers, mla / layers)
}

/// One layer's FP8 casts on one GPU over a step's `accum` micro-batches, seconds: FP8 GEMMs (a
/// training recipe on a GPU with an FP8 rate) need their operands cast (`fp8_casts`); 0
/// otherwise. Megatron-Core's Transformer Engine linears are fused (QKV, MLP-up) and cast their
/// weights once per step.
fn fp8_cast_time(
    s: &Scenario,
    m: &ResolvedModel,
    i: &Inputs,
    (t, accum): (f64, f64),
    ffn_active: f64,
    e: f64,
) -> f64 {
    if s.precision.fp8_recipe == Fp8Recipe::None || i.peak <= i.peak16 {
        return 0.0;
    }
    let tp = f64::from(i.tp.max(1));
    let te = s.implementation.profile == Profile::Megatron;
    let c = fp8_casts::layer(m, t, tp, replicated_div(s, tp), ffn_active, e, te);
    let weights = if te {
        fp8_casts::WeightCasts::OncePerStep
    } else {
        fp8_casts::WeightCasts::EveryMicroBatch
    };
    c.step_time(accum, weights, i.bandwidth)
}

/// One layer's attention core on one GPU, as the kernel executes it (`score_kernel::training`),
/// and the attention layers' own part of it (a hybrid's scans apart: what a CP ring hides its K/V
/// transfers behind); `(t, seq, tp, e)`: the GPU's tokens, the sequence, TP, element bytes.
fn attention_times(
    s: &Scenario,
    m: &ResolvedModel,
    (t, seq, tp, e): (f64, f64, f64, f64),
    gemms: &gemm::Gemm,
    i: &Inputs,
    pt: &PartsTiming,
) -> (attention::AttentionTime, attention::AttentionTime) {
    let kernel = super::score_kernel::training(s);
    let causal = m.arch == ArchKind::Decoder;
    let (softmax, scans) = super::flops::executed_attention_flops_split(m, seq, kernel, causal);
    let core = attention::Core {
        flops: t * (softmax + scans) / tp,
        scores: t * super::flops::softmax_scores_per_token(m, seq) / tp,
        element_bytes: e,
        flash: s.strategies.attention == AttentionKernel::Flash,
    };
    let (fwd, bwd) = (pt.flash_forward_efficiency, pt.flash_backward_efficiency);
    let time =
        |c: &attention::Core| attention::attention(c, gemms, i.peak16, i.bandwidth, fwd, bwd);
    let all = time(&core);
    let ring = if scans > 0.0 {
        time(&attention::Core {
            flops: t * softmax / tp,
            ..core
        })
    } else {
        all
    };
    (all, ring)
}

/// The parts of a transformer training step, or `None` when the parts model does not apply
/// (other families, an unknown peak): the flat roofline with `timing.compute_efficiency` times
/// those.
pub fn training_parts(
    s: &Scenario,
    m: &ResolvedModel,
    w: &Work,
    i: &Inputs,
    pt: &PartsTiming,
) -> Option<StepParts> {
    if m.family != ModelFamily::Transformer || !i.peak_known || i.peak16 <= 0.0 {
        return None;
    }
    let tp = f64::from(i.tp.max(1));
    // This GPU's tokens (÷ CP); attention runs them against the whole sequence's keys.
    let t = w.local_tokens();
    let seq = w.tokens_per_sample;
    let e = w.act_bytes;
    let h = f64::from(m.hidden);
    // The GPU's generation picks both its GEMM size curve and its fitted step-level share, and a
    // Hopper-class GPU runs no kernel slower than the fastest Ampere-class one (`Gemm::for_gpu`).
    let gemms = gemm::Gemm::for_gpu(i.peak, i.peak16, pt);
    let share = gemms.share;
    let bw = i.bandwidth;
    let g = |f: f64| gemms.time(f);

    let keep = w.keep;
    let gemm_fwd = gemm::layer_forward(m, t, tp, keep, &gemms);
    let active = m.moe.active_mlps();

    let (att, ring) = attention_times(s, m, (t, seq, tp, e), &gemms, i, pt);

    let ffn_active = ffn_active_width(m, active);
    let (ew_fwd, ew_backward) = elementwise_forward(s, m, t, tp, e, bw, ffn_active);

    let layers = f64::from(m.layers.div_ceil(i.pp.max(1)));
    // LM head (on the last stage): 2·t·h·V/TP forward, 2× backward; the loss by its kernels. FP8
    // recipes keep the output head in 16-bit (DeepSeek-V3 report §3.3.1 "the output head";
    // Megatron-Core's output layer is not a Transformer Engine FP8 module; torchtitan's float8
    // conversion skips `output`), so it runs at the 16-bit peak.
    let head_f = t * super::flops::head_flops_per_token(m) * keep / tp;
    let head_fwd = if s.precision.fp8_recipe == Fp8Recipe::None {
        g(head_f)
    } else {
        gemms.at_peak(i.peak16).time(head_f)
    };
    let (passes, adapter_gemms) = lora_gemms(s, m, t, tp, &gemms);
    let loss = elementwise::time(loss_bytes_per_logit(e) * t * f64::from(m.vocab) / tp, bw);

    let recompute_layer = match s.strategies.checkpointing {
        Checkpointing::None => 0.0,
        Checkpointing::Selective => att.forward_s,
        Checkpointing::Full | Checkpointing::EveryK => gemm_fwd + att.forward_s + ew_fwd,
        // Every other matmul and the elementwise ops; the attention output is kept.
        Checkpointing::PerOp => gemm_fwd * super::flops::per_op_recomputed_share(m) + ew_fwd,
    };
    let accum = f64::from(s.workload.grad_accum_steps.max(1));
    let casts = fp8_cast_time(s, m, i, (t, accum), ffn_active, e);
    let p2p = exposed_p2p(s, i, t * h * e, pt.pp_overlap);
    Some(StepParts {
        gemm_s: accum * (layers * (passes * gemm_fwd + adapter_gemms) + passes * head_fwd),
        attention_s: accum * layers * (att.forward_s + att.backward_s),
        ring_window_s: accum * layers * (ring.forward_s + ring.backward_s),
        elementwise_s: accum * (layers * (1.0 + ew_backward) * ew_fwd + loss) + layers * casts,
        recompute_s: accum * layers * recompute_layer,
        p2p_s: p2p,
        gemm_share: share,
        eager_elementwise: eager_elementwise(s),
    })
}

/// The passes of the model's matrices per micro-batch (forward, input gradient, weight gradient:
/// 3) and the time of one layer's LoRA adapter GEMMs. Under LoRA every base matrix is frozen, so
/// backward computes its input gradient and no weight gradient (2 passes; the FLOPs
/// `peft_moe::lora_flops_saved` takes off the roofline), and the adapters a token runs through
/// (a mixture's top-k experts', `lora::active_adapters_per_layer`) run their own skinny GEMMs
/// three times, each on the curve at an adapter matrix's mean size (A and B of a rank-r adapter
/// over the tokens; a routed expert's see k ÷ E of them, which this reads larger than it is).
fn lora_gemms(s: &Scenario, m: &ResolvedModel, t: f64, tp: f64, gemms: &gemm::Gemm) -> (f64, f64) {
    if !super::peft_moe::lora(s, m) {
        return (3.0, 0.0);
    }
    use crate::estimator::model::lora;
    let active = lora::active_adapters_per_layer(m, s.peft.rank, s.peft.targets, tp);
    let (params, tensors, _, _) = lora::layer_adapters(m, s.peft.rank, s.peft.targets);
    let total = 2.0 * active * t;
    let each = if tensors > 0.0 {
        (2.0 * t * params / tensors / tp).min(total)
    } else {
        total
    };
    (2.0, 3.0 * gemms.time_of_gemms(total, each))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The attention side of an eager layer, by kind: DeepSeek-V3's latent attention at TP 1 moves
    /// `elementwise::mla`'s 418,944 B per token in 29 kernels and no softmax-attention rotary;
    /// Llama-3-8B at TP 8 rotates its 4 query heads and its one K/V head (20 B per element).
    #[test]
    fn eager_attention_is_charged_per_layer_kind() {
        let (t, bw) = (16_384.0, 4.8e12);
        let s = crate::presets::bundled_scenario("deepseek-v3-inference-8xh200-fp8").unwrap();
        let m = crate::estimator::model::resolve(&s.model, &mut Default::default());
        let (rope, mla) = eager_attention(&m, t, 1.0, 2.0, bw);
        assert_eq!(rope, 0.0);
        let expected = elementwise::time_in_kernels(t * 418_944.0, 29.0, bw);
        assert!((mla / expected - 1.0).abs() < 1e-12, "{mla} vs {expected}");

        let mut spec = crate::scenario::ModelSpec::default();
        let tr = &mut spec.transformer;
        (tr.layers, tr.hidden, tr.heads, tr.kv_heads, tr.ffn) = (32, 4096, 32, 8, 14336);
        let m = crate::estimator::model::resolve(&spec, &mut Default::default());
        let (rope, mla) = eager_attention(&m, t, 8.0, 2.0, bw);
        let expected = elementwise::time_in_kernels(t * 20.0 * (512.0 + 128.0), 10.0, bw);
        assert!(
            (rope / expected - 1.0).abs() < 1e-12,
            "{rope} vs {expected}"
        );
        assert_eq!(mla, 0.0);
    }
}
