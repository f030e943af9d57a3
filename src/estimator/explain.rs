//! Explained numbers: for one memory component, its formula, the formula with the scenario's values
//! filled in, its source and the assumption behind it (issue 7 "Explained numbers").
//!
//! Not on the per-frame path (only for the hovered or clicked component), so it may allocate. The
//! `value` is always the estimate's own byte count at the peak and the `terms` always sum to it: the
//! terms are recomputed with the estimator's own helpers (`memory::states`, `memory::inference`,
//! `Ctx`) and the per-layer breakdown it returns; whatever a term does not cover (adapters, gathered
//! layers, stage extras, a phase where part of it is not live) is shown as an explicit remainder, so
//! the text can never disagree with the chart. Formulas and sources: docs/model.md.

mod engine_pool;
mod llamacpp;
mod parts;
mod post_training;
mod serving;

use super::memory::ctx::Ctx;
use super::memory::peft;
use super::resolve::resolve_with_model;
use super::{Component, Diagnostics, Estimate, ResolvedModel};
use crate::scenario::{Mode, ModelFamily, Scenario};
use crate::units::{Bytes, GIB, MIB, fmt_sig};
use parts::Parts;

/// Why a component has the size it has.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub title: &'static str,
    /// Symbolic, e.g. `Ψ_stage × e_w ÷ N_d`.
    pub formula: String,
    /// The same with the scenario's numbers substituted, ending in `= value`.
    pub filled: String,
    /// Bytes at the peak: exactly `e.memory.peak.get(component)`.
    pub value: Bytes,
    pub source: &'static str,
    pub assumption: &'static str,
    /// Named parts summing to `value`.
    pub terms: Vec<(String, Bytes)>,
}

/// A byte count for the text: MiB below 1 GiB, else GiB.
pub fn show(b: Bytes) -> String {
    if b.get().abs() < GIB {
        format!("{} MiB", fmt_sig(b.get() / MIB))
    } else {
        format!("{} GiB", fmt_sig(b.as_gib()))
    }
}

/// The pipeline stage that sets the peak, as the estimator chose it (the memory model's own
/// stage description).
pub(crate) use crate::estimator::memory::training::Stage;

fn stage(c: &Ctx, m: &ResolvedModel, e: &Estimate) -> Stage {
    // With PP the limiting stage class as the estimator computed it; else the one stage.
    match e.memory.limiting_stage() {
        Some(s) => Stage {
            layers: f64::from(s.layers),
            first: s.role == crate::estimator::StageRole::First,
            last: s.role == crate::estimator::StageRole::Last,
            in_flight: s.in_flight,
        },
        None => Stage {
            layers: f64::from(m.layers.max(1)),
            first: true,
            last: true,
            in_flight: if c.mode == Mode::Training {
                c.in_flight_microbatches()
            } else {
                1.0
            },
        },
    }
}

/// The gradient bytes the limiting stage holds at the end of its backward when DeepSpeed's stage 1
/// or 2 runs the step, whose gradients are copies made for it
/// (`memory::frameworks::deepspeed::step_gradients`): what the timeline draws the backward up to.
/// `None` elsewhere (stage 3 draws its backward's own gradients, the other steps theirs).
pub(crate) fn deepspeed_backward_gradients(s: &Scenario, e: &Estimate) -> Option<f64> {
    use super::memory::frameworks::deepspeed;
    let m = &e.model;
    let r = resolve_with_model(s, m, &mut Diagnostics::default());
    let x = peft::Ext::new(&r.scenario, m);
    let ctx = x.base_ctx(Ctx::of(&r));
    let st = stage(&ctx, m, e);
    (ctx.mode == Mode::Training
        && m.family == ModelFamily::Transformer
        && !deepspeed::grads_in_partition_buffer(&ctx))
    .then(|| parts::stage_gradients(&ctx, &x, m, &st))
    .filter(|g| deepspeed::step_gradients(&ctx, m, *g).is_some())
}

/// Explains one component of the estimate of `s`.
pub fn explain(s: &Scenario, e: &Estimate, c: Component) -> Explanation {
    let m = &e.model;
    // The scenario as the estimate saw it (clamped values, hybrid-shard ZeRO divisor, …).
    let r = resolve_with_model(s, m, &mut Diagnostics::default());
    let s = &r.scenario;
    let x = peft::Ext::new(s, m);
    let ctx = x.base_ctx(Ctx::of(&r));
    let st = stage(&ctx, m, e);
    let value = e.memory.peak.get(c);
    let phase = e.memory.peak_phase;
    // A serving engine's own figures: llama.cpp's buffers, vLLM's and SGLang's pools.
    let engine = e
        .llamacpp
        .as_ref()
        .and_then(|b| llamacpp::parts(b, c))
        .or_else(|| {
            let f = e.engine.as_ref()?;
            engine_pool::parts(f, c, value, e.memory.tensor_peak)
        });
    let engine_parts = engine.is_some();
    let mut p = engine.unwrap_or_else(|| match c {
        Component::Gradients
            if phase != Some(crate::estimator::Phase::OptimizerStep)
                && let Some(p) = parts::pipeline_gradients(&ctx, m, &st) =>
        {
            p
        }
        Component::Gradients
            if let Some(p) = parts::deepspeed_gradients(&ctx, &x, m, &st, phase, value) =>
        {
            p
        }
        Component::Gradients
            if let Some(p) = parts::gradients_stepped_in_backward(&ctx, &x, m, &st, value) =>
        {
            p
        }
        Component::Weights
        | Component::MasterWeights
        | Component::Gradients
        | Component::OptimizerStates => parts::model_state(&ctx, &x, m, &st, c),
        Component::Activations => parts::activations(&ctx, m, e, &st),
        Component::Transient => parts::transient(&ctx, &x, m, &st, phase),
        Component::KvCache => parts::kv_cache(&ctx, m, &st, phase),
        Component::ReferenceModel
        | Component::RewardModel
        | Component::Critic
        | Component::RolloutEngine => post_training::model(c, value),
        Component::CommBuffers => comm(&ctx, value),
        Component::NcclBuffers => nccl(s, value),
        Component::CudaContext => context(s, value),
        Component::AllocatorReserve => reserve(s, e, (&ctx, m, &st)),
    });
    if !engine_parts {
        serving::adjust(&ctx, m, &st, c, phase, &mut p);
    }
    let phase = phase.map_or("no", |p| p.label());
    let terms = complete(p.terms, value, phase, p.rest);
    let sum: Vec<String> = terms
        .iter()
        .map(|(n, b)| format!("{} ({n})", show(*b)))
        .collect();
    let filled = if terms.is_empty() {
        format!("{}; not live at the {phase} peak = 0 B", p.lead)
    } else {
        format!("{}; {} = {}", p.lead, sum.join(" + "), show(value))
    };
    Explanation {
        title: c.label(),
        formula: p.formula,
        filled,
        value,
        source: p.source,
        assumption: p.assumption,
        terms,
    }
}

/// Adds the remainder the named terms do not cover, so the terms sum to `value` exactly.
fn complete(
    mut terms: Vec<(String, Bytes)>,
    value: Bytes,
    phase: &str,
    rest_name: &str,
) -> Vec<(String, Bytes)> {
    if value.get() == 0.0 {
        return Vec::new();
    }
    terms.retain(|(_, b)| b.get() != 0.0);
    let rest = value.get() - terms.iter().map(|(_, b)| b.get()).sum::<f64>();
    if rest.abs() > 1e-12 * value.get().abs() {
        let name = if rest > 0.0 {
            rest_name.to_owned()
        } else {
            format!("not live at the {phase} peak")
        };
        terms.push((name, Bytes(rest)));
    }
    // Exact sum: the last term absorbs rounding.
    let head: f64 = terms.iter().rev().skip(1).map(|(_, b)| b.get()).sum();
    if let Some(last) = terms.last_mut() {
        last.1 = Bytes(value.get() - head);
    }
    terms
}

/// One row of the per-layer view: bytes of one layer and of the layers on the peak stage.
pub struct LayerRow {
    pub label: &'static str,
    pub per_layer: Bytes,
    pub stage: Bytes,
}

/// The per-layer view of a transformer: (layers on the peak stage, rows). Empty for other families.
pub fn per_layer(s: &Scenario, e: &Estimate) -> (f64, Vec<LayerRow>) {
    let m = &e.model;
    if m.family != ModelFamily::Transformer {
        return (0.0, Vec::new());
    }
    let c = Ctx::of(&resolve_with_model(s, m, &mut Diagnostics::default()));
    let l = stage(&c, m, e).layers;
    let p = &e.memory.per_layer;
    let rows = [
        ("Weights", p.weights),
        ("Attention activations", p.attention_activations),
        ("MLP activations", p.mlp_activations),
        ("Norm activations", p.norm_activations),
        ("Dropout masks", p.dropout_masks),
        ("KV cache", p.kv_cache),
    ];
    let rows = rows
        .into_iter()
        .map(|(label, b)| LayerRow {
            label,
            per_layer: b,
            stage: b * l,
        })
        .collect();
    (l, rows)
}

// Overheads beyond tensors (docs/model.md §5, §8).

fn comm(c: &Ctx, value: Bytes) -> Parts {
    Parts {
        formula: "DDP gradient buckets = comm_buffer_mib × 2^20 B (when DP > 1)".to_owned(),
        lead: format!("DP = {}", c.dp),
        terms: vec![("gradient buckets".to_owned(), value)],
        source: "PyTorch DistributedDataParallel bucket_cap_mb (docs/model.md §5)",
        assumption: "Two 25 MiB buckets by default; other collectives' buffers are not counted.",
        rest: "",
    }
}

fn nccl(s: &Scenario, value: Bytes) -> Parts {
    let o = &s.overheads;
    Parts {
        formula: "NCCL buffers = Σ over the GPU's parallel groups of > 1 rank (data, tensor, pipeline, context, expert) of the MiB per communicator (2-rank groups: their own figure)".to_owned(),
        lead: format!(
            "{} MiB per communicator, {} MiB per 2-rank communicator",
            fmt_sig(o.nccl_mib_per_communicator),
            fmt_sig(o.nccl_mib_two_rank_communicator)
        ),
        terms: vec![("NCCL communicators".to_owned(), value)],
        source: "NVIDIA/nccl#964: 688 MB per group of 3–4 ranks, 544 MB per 2-rank group on 4 × A100 NVLink (docs/gpu-overheads.md §3)",
        assumption: "NCCL sizes its buffers by its channel count: NVSwitch systems, NVLS and all-to-all take more. Counted by nvidia-smi, not by PyTorch's allocator statistics; a serving engine makes them before its memory budget's baseline, outside the budget.",
        rest: "",
    }
}

fn context(s: &Scenario, value: Bytes) -> Parts {
    let o = &s.overheads;
    // The context at CUDA initialisation first, the loaded kernels the rest: under vLLM ≥ 0.6.5 the
    // value is the bare context (its non-torch term holds the kernels), under vLLM 0.6.4 and a
    // CPU-only llama.cpp build nothing.
    let bare = (o.cuda_context_mib * MIB).min(value.get());
    let kernels = (value.get() - bare).max(0.0);
    Parts {
        formula: "CUDA context = (cuda_context_mib + cuda_kernels_mib) × 2^20 B".to_owned(),
        lead: format!(
            "{} MiB at CUDA initialisation + {} MiB of kernels",
            fmt_sig(bare / MIB),
            fmt_sig(kernels / MIB)
        ),
        terms: vec![
            ("context at CUDA initialisation".to_owned(), Bytes(bare)),
            (
                "kernel modules loaded lazily as the run uses them".to_owned(),
                Bytes(kernels),
            ),
        ],
        source: "PyTorch PR #86509, lazy module loading: 253.75 MiB bare; a running process \
                 around 400 MB (pytorch#109888) (docs/gpu-overheads.md §2)",
        assumption: "The kernels loaded depend on what runs (cuda_kernels_mib: 146 MiB by \
                     default, 0 with eager loading). A serving engine's budget charges what it \
                     measures itself: vLLM ≥ 0.6.5 the kernels, vLLM 0.6.4 the whole context \
                     (docs/engines/vllm.md §8). Counted by nvidia-smi, not by \
                     torch.cuda.max_memory_allocated.",
        rest: "",
    }
}

fn reserve(s: &Scenario, e: &Estimate, (c, m, st): (&Ctx, &ResolvedModel, &Stage)) -> Parts {
    let o = &s.overheads;
    let f = crate::estimator::memory::reserve_fraction(s);
    let ws = o.workspace_mib * MIB;
    let tp = e.memory.tensor_peak;
    // A serving engine's reservation counts no side-stream pools (`engines::reservation`).
    let pools = if e.engine.is_some() {
        0.0
    } else {
        crate::estimator::memory::frameworks::fsdp::stream_pools(c, m, &e.memory.phases, *st)
    };
    let mut terms = vec![
        ("allocator rounding and fragmentation".to_owned(), tp * f),
        ("library workspace".to_owned(), Bytes(ws)),
    ];
    if pools > 0.0 {
        terms.push((
            "FSDP's side-stream pools: the sharded gradients (reduce-scatter or post-backward \
             stream) and FSDP2's largest flat all-gather buffer (copy-in stream), reserved for \
             their streams (docs/frameworks/fsdp.md)"
                .to_owned(),
            Bytes(pools),
        ));
    }
    Parts {
        formula: "reserve = fraction × tensor peak + library workspace (+ FSDP's side-stream \
                  pools)"
            .to_owned(),
        lead: format!("{} × {} + {} MiB", fmt_sig(f), show(tp), fmt_sig(ws / MIB)),
        terms,
        source: if s.runs_on_llamacpp() {
            "ggml allocates each llama.cpp buffer at its exact size (docs/engines/llamacpp.md §9)"
        } else {
            "docs/model.md §8 (HF model_memory_anatomy.md; ZeRO §3.2 on fragmentation)"
        },
        assumption: if s.runs_on_llamacpp() {
            "llama.cpp has no caching allocator: overheads.allocator_reserve_fraction does not \
             apply. The workspace stands for cuBLAS's; ggml-cuda's pool of temporaries (quantized \
             activations, dequantized weights on the cuBLAS path) is not modelled."
        } else {
            "5 % of the tensor peak is an assumption; deep eager runs at large batch reserve ≈ 20 %."
        },
        rest: "not attributed",
    }
}
