//! FLOPs, bytes moved, roofline, step time, communication and cost — the bandwidth side of the
//! estimator. Formulas and sources: docs/bandwidth.md. Pure and allocation-free.
//!
//! Layout: [`flops`] (FLOPs and weights from dimensions), [`roofline`] (Williams 2009), [`comm`]
//! (collectives, bubble, compression), `training` / `inference` (one step on one GPU), [`cost`],
//! `projections` (the article's "future" items), [`compare`] (every GPU and memory technology).

mod batch_fit;
pub mod breakdown;
pub mod comm;
pub mod compare;
pub mod context_parallel;
pub mod cost;
pub mod flops;
mod inference;
mod inputs;
pub mod launch;
pub mod p2p_allreduce;
pub mod parts;
pub mod peft_moe;
pub mod phase_swap;
pub mod post_training;
mod projections;
pub mod roofline;
pub mod score_kernel;
pub mod serving;
pub mod towers;
mod training;
mod types;
pub mod weight_only;
mod work;

pub use compare::{Comparison, ComparisonRow, RowKind, compare};
pub use types::*;

use super::model::ResolvedModel;
use super::{Diagnostic, Diagnostics, MemoryEstimate, Resolved};
use crate::hardware::GpuSpec;
use crate::scenario::{Dtype, Mode, PrecisionMode, Scenario};
use crate::units::{BytesPerSec, FlopsPerSec};
use inputs::Inputs;

/// Roofline, time and cost of a resolved scenario on its own GPU.
pub fn estimate_performance(
    r: &Resolved,
    memory: &MemoryEstimate,
    diagnostics: &mut Diagnostics,
) -> Performance {
    let (scenario, model) = (&r.scenario, r.model);
    scenario
        .gpu
        .with_spec(|hw| evaluate(scenario, model, memory, hw, diagnostics))
}

/// The same on any GPU spec (the comparison passes catalog GPUs and memory what-ifs); `scenario` is
/// a resolved one (`Resolved::scenario`).
pub fn evaluate(
    scenario: &Scenario,
    model: &ResolvedModel,
    memory: &MemoryEstimate,
    hw: &GpuSpec,
    diagnostics: &mut Diagnostics,
) -> Performance {
    let i = Inputs::new(scenario, hw, compute_dtype(scenario), diagnostics);
    // Returned as built: `core` writes the result in place (no copy of the large `Performance`).
    core(scenario, model, memory, &i, Some(diagnostics))
}

/// The type the matrix multiplies run in: FP8 under an FP8 training recipe (Transformer Engine's
/// recipes and DeepSeek-V3's run the linear layers' GEMMs in FP8: E4M3 forward, E5M2 gradients,
/// one tensor-core rate; the parts model keeps attention, elementwise work and the LM head at the
/// 16-bit peak), else the scenario's compute type, or the activations' type when every type is
/// chosen by hand. Inference with FP8 weights runs W8A8 FP8 GEMMs (vLLM 0.34
/// `model_executor/layers/quantization/fp8.py` `Fp8LinearMethod`: dynamic FP8 activation scales and
/// FP8 scaled matmuls, or weight-only Marlin "for GPUs that lack FP8 hardware support"). A GPU
/// without an FP8 rate falls back to its 16-bit one (`PeakTable::dense`), which is that Marlin case.
pub fn compute_dtype(s: &Scenario) -> Dtype {
    use crate::scenario::{Fp8Recipe, Mode, WeightFormat};
    let fp8 = match s.mode {
        Mode::Training => s.precision.fp8_recipe != Fp8Recipe::None,
        Mode::Inference => s.quantization.weights == WeightFormat::Fp8,
    };
    if fp8 {
        return Dtype::Fp8E4M3;
    }
    match s.precision.mode {
        PrecisionMode::Custom => s.precision.activations,
        _ => s.precision.compute,
    }
}

/// The performance on the given inputs. With `d` (the scenario's own evaluation) also the
/// projections, and the memory-bound note when the main phase (training step, else decode, else
/// prefill) is memory-bound; the comparison's rows need neither.
fn core(
    s: &Scenario,
    m: &ResolvedModel,
    mem: &MemoryEstimate,
    i: &Inputs,
    d: Option<&mut Diagnostics>,
) -> Performance {
    match s.mode {
        Mode::Training => assemble_training(s, m, mem, i, d),
        Mode::Inference => assemble_inference(s, m, mem, i, d),
    }
}

/// The projections and the memory-bound note, for the scenario's own evaluation (see [`core`]).
fn extras(
    s: &Scenario,
    mem: &MemoryEstimate,
    i: &Inputs,
    p: (&Communication, &StepTime, &Cost),
    main_bound: Bound,
    d: Option<&mut Diagnostics>,
) -> Projections {
    let Some(d) = d else {
        return Projections::default();
    };
    // The bound is the GPU roofline's: a llama.cpp CPU build runs on no GPU.
    match main_bound {
        _ if s.runs_on_cpu_only() => {}
        Bound::Memory => d.insert(Diagnostic::MemoryBound),
        Bound::Overhead => d.insert(Diagnostic::OverheadBound),
        _ => {}
    }
    projections::projections(s, mem, i, p.0, p.1, p.2)
}

fn assemble_training(
    s: &Scenario,
    m: &ResolvedModel,
    mem: &MemoryEstimate,
    i: &Inputs,
    d: Option<&mut Diagnostics>,
) -> Performance {
    let t = training::training(s, m, mem, i);
    let comm_s = t.comm.dp_exposed_s
        + t.comm.tp_time_s
        + t.comm.ep_time_s
        + t.comm.pp_p2p_s
        + t.comm.cp_time_s;
    let input_s =
        crate::estimator::article::input_pipeline::input_transfer(s, t.phase.time_s).exposed_s;
    // A post-training step generates and scores before (DPO: beside) the policy's step.
    let rl = post_training::rollout(s, m, mem, i);
    // verl / OpenRLHF: offloaded states copied in and out between the phases.
    let swap_s = phase_swap::seconds(s, mem, i);
    let step = training_step_time(&t, &rl, comm_s, input_s, swap_s);
    let total = step.total_s;
    let mut offload = t.offload;
    offload.tier_slowdown = slowdown(total, t.offload.tier_time_s * (1.0 - i.offload_overlap));
    let gpus = s.parallel.gpus() as f64;
    let bytes = t.phase.bytes.get() + t.optimizer.bytes.get();
    let t_c = &s.timing;
    let cost = cost::cost(
        t.tokens,
        total,
        gpus,
        i,
        t_c.token_budget,
        t_c.price_per_gpu_hour,
        bytes,
    );
    let projections = extras(s, mem, i, (&t.comm, &step, &cost), t.phase.bound, d);
    Performance {
        peak: FlopsPerSec(i.peak),
        peak_known: i.peak_known,
        bandwidth: BytesPerSec(i.bandwidth),
        training: Some(t.phase),
        optimizer: Some(t.optimizer),
        communication: t.comm,
        offload,
        step,
        throughput: Throughput {
            tokens_per_s: roofline::div(t.tokens, total),
            samples_per_s: roofline::div(t.samples, total),
            mfu: roofline::utilisation(t.model_flops, total * i.peak),
            hfu: roofline::utilisation(t.phase.flops, total * i.peak),
            ..Throughput::default()
        },
        cost,
        projections,
        model_flops: t.model_flops,
        hardware_flops: t.phase.flops,
        parts: t.parts,
        ..Performance::default()
    }
}
/// A training step's parts added up, and the largest of them (what bounds the step).
fn training_step_time(
    t: &training::TrainingStep,
    rl: &post_training::RolloutTime,
    comm_s: f64,
    input_s: f64,
    swap_s: f64,
) -> StepTime {
    let total = rl.generation_s
        + rl.scoring_s
        + swap_s
        + t.phase.time_s
        + t.comm.bubble_s
        + t.optimizer.time_s
        + t.host_optimizer_s
        + comm_s
        + t.offload.exposed_s
        + input_s;
    let host_s = t.offload.exposed_s + input_s + swap_s + t.host_optimizer_s;
    let bound = largest(&[
        (t.phase.time_s + t.comm.bubble_s, t.phase.bound),
        (t.optimizer.time_s, Bound::Memory),
        (comm_s, Bound::Communication),
        (host_s, Bound::Offload),
        (rl.generation_s, rl.generation_bound),
        (rl.scoring_s, rl.scoring_bound),
    ]);
    StepTime {
        compute_phase_s: t.phase.time_s,
        optimizer_s: t.optimizer.time_s,
        host_optimizer_s: t.host_optimizer_s,
        communication_s: comm_s,
        bubble_s: t.comm.bubble_s,
        offload_s: t.offload.exposed_s,
        input_s,
        rollout_generation_s: rl.generation_s,
        scoring_s: rl.scoring_s,
        phase_swap_s: swap_s,
        // Training steps' launch gaps are inside the fitted GEMM share (docs/time-model.md).
        launch_s: 0.0,
        launch_prefill_s: 0.0,
        total_s: total,
        bound,
    }
}

fn assemble_inference(
    s: &Scenario,
    m: &ResolvedModel,
    mem: &MemoryEstimate,
    i: &Inputs,
    d: Option<&mut Diagnostics>,
) -> Performance {
    let r = inference::inference(s, m, mem, i);
    let pp = i.pp as f64;
    // Target forwards after the prefill: one per generated token, or one verify per
    // `tokens_per_step` tokens with speculative decoding.
    let steps = r.generated / r.serving.tokens_per_step;
    let (compute, comm_s, launch_s, [bound, decode_bound]) = request_parts(&r, pp, steps);
    let phase_bound = r.decode.unwrap_or(r.prefill).bound;
    let mut offload = r.offload;
    offload.tier_slowdown = slowdown(r.total_s, r.offload.tier_time_s * (1.0 - i.offload_overlap));
    let dp = i.dp as f64;
    let generated_tokens = r.serving.decode_sequences
        * dp
        * if r.generated > 0.0 {
            r.generated
        } else {
            r.prompt
        };
    let gpus = dp * i.tp as f64 * pp;
    let bytes = r.prefill.bytes.get() + steps * r.decode.map_or(0.0, |d| d.bytes.get());
    let hardware_flops = r.hardware_flops;
    let t_c = &s.timing;
    let step = StepTime {
        compute_phase_s: compute,
        communication_s: comm_s,
        offload_s: r.offload.exposed_s,
        launch_s,
        launch_prefill_s: r.launch_prefill_s,
        total_s: r.total_s,
        bound,
        ..StepTime::default()
    };
    let cost = cost::cost(
        generated_tokens,
        r.total_s,
        gpus,
        i,
        t_c.token_budget,
        t_c.price_per_gpu_hour,
        bytes,
    );
    // The note follows the decode roofline unless the fixed overhead is the step's largest part.
    let note_bound = if bound == Bound::Overhead {
        bound
    } else {
        phase_bound
    };
    let projections = extras(s, mem, i, (&r.comm, &step, &cost), note_bound, d);
    // A llama.cpp CPU build runs on the host: its rates are the roofline's and the MFU's peak.
    let (peak, bandwidth) = r.host.unwrap_or((i.peak, i.bandwidth));
    Performance {
        peak: FlopsPerSec(peak),
        peak_known: i.peak_known || r.host.is_some(),
        bandwidth: BytesPerSec(bandwidth),
        prefill: Some(r.prefill),
        decode: r.decode,
        communication: r.comm,
        offload,
        step,
        throughput: Throughput {
            tokens_per_s: roofline::div(generated_tokens, r.total_s),
            samples_per_s: roofline::div(r.batch * dp, r.total_s),
            mfu: roofline::utilisation(r.model_flops, r.total_s * peak),
            hfu: roofline::utilisation(hardware_flops, r.total_s * peak),
            ttft_s: r.ttft_s,
            tpot_s: r.tpot_s,
            kv_bytes_per_token: crate::units::Bytes(r.kv_bytes_per_token),
            max_concurrent_requests: r.max_requests,
            serving: r.serving,
            launch: r.launch,
            decode_bound,
        },
        cost,
        projections,
        model_flops: r.model_flops,
        hardware_flops,
        ..Performance::default()
    }
}

/// The bound of the largest term (the first wins ties).
/// A request's compute time (prefill and decode steps, each decode step after its k draft steps),
/// communication, fixed overhead, and the bound of its largest part. The prefill and the decode
/// steps are bound on their own rooflines: a long prompt with a few generated tokens spends its
/// time in a compute-bound prefill.
/// Second bound: the decode steps' own (their roofline, collectives, offload share, overhead).
fn request_parts(r: &inference::InferenceStep, pp: f64, steps: f64) -> (f64, f64, f64, [Bound; 2]) {
    let draft_s = steps * (r.serving.lookahead * r.serving.draft_step_s);
    let prefill_s = pp * r.prefill.time_s;
    let decode_s = pp * steps * r.decode.map_or(0.0, |d| d.time_s) + draft_s;
    // The request's collectives over its stages (`inference::communication`).
    let comm_s = r.comm.tp_time_s + r.comm.ep_time_s;
    let launch_s = r.launch_prefill_s + r.launch_decode_s;
    let decode_bound = r.decode.unwrap_or(r.prefill).bound;
    let bound = largest(&[
        (prefill_s, r.prefill.bound),
        (decode_s, decode_bound),
        (comm_s, Bound::Communication),
        (r.offload.exposed_s, Bound::Offload),
        (launch_s, Bound::Overhead),
    ]);
    // Offload is paid once per forward: the decode steps' share of it.
    let decode_offload = r.offload.exposed_s * steps / (1.0 + steps);
    let per_step = largest(&[
        (decode_s, decode_bound),
        (r.decode_comm_s, Bound::Communication),
        (decode_offload, Bound::Offload),
        (r.launch_decode_s, Bound::Overhead),
    ]);
    (prefill_s + decode_s, comm_s, launch_s, [bound, per_step])
}

fn largest(terms: &[(f64, Bound)]) -> Bound {
    let mut best = (f64::NEG_INFINITY, Bound::Compute);
    for &(t, b) in terms {
        if t > best.0 {
            best = (t, b);
        }
    }
    best.1
}

/// total ÷ (total − tier part), 1 when nothing spills.
fn slowdown(total: f64, tier_part: f64) -> f64 {
    let without = total - tier_part;
    if tier_part > 0.0 && without > 0.0 {
        total / without
    } else {
        1.0
    }
}
