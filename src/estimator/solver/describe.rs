//! Words for what a suggestion changes and what each change costs (allocates: run only for the few
//! suggestions kept, never in the search).

use crate::scenario::{
    Checkpointing, Mode, OffloadTarget, OptimizerKind, PrecisionMode, PrecisionSpec, Scenario,
    ZeroStage,
};
use crate::units::fmt_sig;

/// One line per changed knob, and one line per cost.
pub fn describe(
    orig: &Scenario,
    new: &Scenario,
    base_time_s: f64,
    time_s: f64,
) -> (Vec<String>, Vec<String>) {
    let mut changes = Vec::new();
    let mut costs = Vec::new();
    if orig.precision != new.precision {
        changes.push(format!(
            "Precision: {} → {}",
            precision_label(&orig.precision, orig.mode),
            precision_label(&new.precision, new.mode)
        ));
        costs.push(precision_cost(&new.precision).to_owned());
    }
    if orig.optimizer.kind != new.optimizer.kind {
        changes.push(format!(
            "Optimizer: {} → {}",
            optimizer_label(orig.optimizer.kind),
            optimizer_label(new.optimizer.kind)
        ));
        costs.push(optimizer_cost(new.optimizer.kind).to_owned());
    }
    let (o, n) = (orig.strategies.checkpointing, new.strategies.checkpointing);
    if o != n {
        changes.push(format!(
            "Activation checkpointing: {} → {}",
            checkpointing_label(o),
            checkpointing_label(n)
        ));
        costs.push(checkpointing_cost(n).to_owned());
    }
    let (o, n) = (orig.strategies.zero, new.strategies.zero);
    if o != n {
        changes.push(format!("ZeRO stage: {} → {}", zero_label(o), zero_label(n)));
        costs.push(zero_cost(n).to_owned());
    }
    let (os, ns) = (&orig.strategies, &new.strategies);
    if (os.offload_optimizer, os.offload_params) != (ns.offload_optimizer, ns.offload_params) {
        changes.push(format!(
            "Offload: {} → {}",
            offload_label(os.offload_optimizer, os.offload_params),
            offload_label(ns.offload_optimizer, ns.offload_params)
        ));
        costs.push(
            "Offloaded states cross the host link every step (ZeRO-Offload, Ren et al. 2021 §4); \
             prefetch hides part of it"
                .to_owned(),
        );
    }
    layout_lines(orig, new, &mut changes, &mut costs);
    if base_time_s.is_finite() && time_s.is_finite() && base_time_s > 0.0 && time_s > 0.0 {
        let pct = (time_s / base_time_s - 1.0) * 100.0;
        costs.push(format!(
            "Estimated step time {} % vs. the current scenario",
            signed(pct)
        ));
    }
    (changes, costs)
}

fn layout_lines(
    orig: &Scenario,
    new: &Scenario,
    changes: &mut Vec<String>,
    costs: &mut Vec<String>,
) {
    let (o, n) = (&orig.parallel, &new.parallel);
    if n.sequence_parallel && !o.sequence_parallel {
        changes.push(
            "Sequence parallelism on (Megatron-Core trains a mixture of experts with tensor \
             parallelism only with it)"
                .to_owned(),
        );
    }
    if (o.tp, o.pp, o.dp, o.cp) != (n.tp, n.pp, n.dp, n.cp) {
        changes.push(format!(
            "Layout TP × PP × DP: {} × {} × {}{} → {} × {} × {}{} ({} GPUs)",
            o.tp,
            o.pp,
            o.dp,
            crate::scenario::cp_suffix(o),
            n.tp,
            n.pp,
            n.dp,
            crate::scenario::cp_suffix(n),
            n.gpus()
        ));
        if n.cp > o.cp {
            costs.push(
                "Context parallelism passes K/V between ranks in every layer (ring attention, \
                 Liu et al. 2023; hidden behind attention while it is long enough)"
                    .to_owned(),
            );
        }
        if n.gpus() > o.gpus() {
            costs.push(format!("{} more GPUs", n.gpus() - o.gpus()));
        }
        if n.tp > o.tp {
            costs.push(
                "Tensor parallelism all-reduces activations in every layer (Megatron-LM, \
                 Shoeybi et al. 2019 §3)"
                    .to_owned(),
            );
        }
        if n.pp > o.pp {
            costs.push(
                "Pipeline bubble (p − 1)/m of the step (Narayanan et al. 2021 §2.2)".to_owned(),
            );
        }
    }
    let (ow, nw) = (&orig.workload, &new.workload);
    if (ow.micro_batch, ow.grad_accum_steps) != (nw.micro_batch, nw.grad_accum_steps) {
        let global = u64::from(nw.micro_batch) * u64::from(nw.grad_accum_steps) * u64::from(n.dp);
        changes.push(format!(
            "Micro-batch × accumulation: {} × {} → {} × {} (global batch {} sequences kept)",
            ow.micro_batch, ow.grad_accum_steps, nw.micro_batch, nw.grad_accum_steps, global
        ));
        if nw.micro_batch < ow.micro_batch {
            costs.push("Smaller micro-batches use the GPU less efficiently".to_owned());
        }
    }
}

fn signed(x: f64) -> String {
    if x >= 0.0 {
        format!("+{}", fmt_sig(x))
    } else {
        fmt_sig(x)
    }
}

/// A short name for a precision recipe.
pub fn precision_label(p: &PrecisionSpec, mode: Mode) -> String {
    let c = p.compute.label();
    let main = match p.mode {
        PrecisionMode::Uniform => format!("pure {c}"),
        PrecisionMode::Amp => format!("AMP ({c} autocast, FP32 weights)"),
        PrecisionMode::MasterWeights => format!("{c} weights with FP32 master"),
        PrecisionMode::Custom => format!(
            "{} weights, {} activations",
            p.weights.label(),
            p.activations.label()
        ),
    };
    match mode {
        Mode::Inference => format!("{main}, {} KV cache", p.kv_cache.label()),
        Mode::Training => main,
    }
}

fn precision_cost(p: &PrecisionSpec) -> &'static str {
    match p.mode {
        PrecisionMode::Uniform => {
            "16-bit optimizer states and no FP32 master copy can lose small updates (Micikevicius \
             et al. 2018 §3.1)"
        }
        PrecisionMode::Custom if p.weights.bits() < 16 => {
            "Weight quantisation: accuracy depends on the method (GPTQ, AWQ, bitsandbytes)"
        }
        _ => "Same arithmetic speed on tensor cores; numerics as in the recipe",
    }
}

pub fn optimizer_label(k: OptimizerKind) -> &'static str {
    match k {
        OptimizerKind::Sgd => "SGD",
        OptimizerKind::SgdMomentum => "SGD with momentum",
        OptimizerKind::Adam => "Adam",
        OptimizerKind::AdamW => "AdamW",
        OptimizerKind::Adam8bit => "8-bit Adam",
        OptimizerKind::Adafactor => "Adafactor",
        OptimizerKind::Lion => "Lion",
        OptimizerKind::Muon => "Muon",
        OptimizerKind::StateBytes => "optimizer (given state bytes)",
    }
}

fn optimizer_cost(k: OptimizerKind) -> &'static str {
    match k {
        OptimizerKind::Adam8bit => {
            "8-bit states with block-wise scales; matches 32-bit Adam on the tasks of Dettmers et al. 2021"
        }
        OptimizerKind::Adafactor => {
            "Factored second moment, no first moment (Shazeer & Stern 2018): may need tuning"
        }
        _ => "A different optimizer changes the training dynamics",
    }
}

pub fn checkpointing_label(c: Checkpointing) -> &'static str {
    match c {
        Checkpointing::None => "none",
        Checkpointing::Selective => "selective",
        Checkpointing::Full => "full",
        Checkpointing::EveryK => "every k layers",
        Checkpointing::PerOp => "per-op (torchtitan)",
    }
}

fn checkpointing_cost(c: Checkpointing) -> &'static str {
    match c {
        Checkpointing::None => "No recomputation",
        Checkpointing::Selective => {
            "Recomputes attention only: +2–7 % step time (Korthikanti et al. 2022 §5, Table 4)"
        }
        Checkpointing::PerOp => {
            "Recomputes every other matmul and the elementwise ops (torchtitan's per-op policy): \
             about a third of each layer's matmul FLOPs again"
        }
        Checkpointing::Full | Checkpointing::EveryK => {
            "Recomputes the forward in backward: ≈ +33 % FLOPs, 30–40 % measured (Chen et al. 2016 \
             §5.4; Korthikanti et al. 2022 Table 4)"
        }
    }
}

pub fn zero_label(z: ZeroStage) -> &'static str {
    match z {
        ZeroStage::None => "none",
        ZeroStage::Stage1 => "1",
        ZeroStage::Stage2 => "2",
        ZeroStage::Stage3 => "3",
    }
}

fn zero_cost(z: ZeroStage) -> &'static str {
    match z {
        ZeroStage::Stage3 => {
            "Parameters are all-gathered in forward and backward: 1.5× the communication of data \
             parallelism (ZeRO §7.2.2), in every micro-batch"
        }
        ZeroStage::Stage2 => {
            "Same communication volume as data parallelism (ZeRO §7.2.1) per micro-batch; the \
             gradients are reduce-scattered after every micro-batch"
        }
        _ => "Same communication volume as data parallelism (ZeRO §7.2.1)",
    }
}

/// Where states live: "GPU" (not offloaded), "CPU" or "NVMe".
pub fn offload_target_label(t: OffloadTarget) -> &'static str {
    match t {
        OffloadTarget::None => "GPU",
        OffloadTarget::Cpu => "CPU",
        OffloadTarget::Nvme => "NVMe",
    }
}

fn offload_label(opt: OffloadTarget, params: OffloadTarget) -> String {
    let t = offload_target_label;
    match (opt, params) {
        (OffloadTarget::None, OffloadTarget::None) => "none".to_owned(),
        (o, OffloadTarget::None) => format!("optimizer states to {}", t(o)),
        (o, p) => format!("optimizer states to {}, parameters to {}", t(o), t(p)),
    }
}
