//! `vram-explorer fit`: the solvers' answers for a scenario — the largest micro-batch, context and
//! model that fit, the fewest GPUs, and "make it fit" suggestions ranked by cost per token (GPU-seconds
//! per step), the fastest always listed.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::estimator::solver::{
    FitOptions, FitResult, MAX_ESTIMATES, NOT_GGUF, QuantFit, ScaleAxis, Solved, Target,
    make_it_fit, max_fitting, min_degree, not_under_llamacpp, quant_fit,
};
use crate::estimator::{Estimate, estimate};
use crate::presets::to_ron_string;
use crate::scenario::{Mode, PeftMethod, Scenario};
use crate::units::{MemoryUnit, fmt_seconds};

fn solved_text(s: Solved) -> String {
    match s {
        Solved::Found(v) => v.to_string(),
        Solved::AtLimit(v) => format!("{v} (the whole valid range fits)"),
        Solved::NoneFits => "none fits".to_owned(),
        Solved::NotApplicable => "not applicable".to_owned(),
    }
}

fn solved_json(s: Solved) -> Value {
    match s {
        Solved::Found(v) => json!({ "status": "found", "value": v }),
        Solved::AtLimit(v) => json!({ "status": "at_limit", "value": v }),
        Solved::NoneFits => json!({ "status": "none_fits", "value": null }),
        Solved::NotApplicable => json!({ "status": "not_applicable", "value": null }),
    }
}

/// (text label, JSON key, target). The model size is in layers for a transformer given by its
/// dimensions, else in millions of parameters (`solver::Target::ModelSize`).
const LIMITS: [(&str, &str, Target); 3] = [
    ("largest micro-batch", "max_micro_batch", Target::MicroBatch),
    ("largest context (tokens)", "max_context", Target::Context),
    (
        "largest model (layers / M params)",
        "max_model_size",
        Target::ModelSize,
    ),
];

const DEGREES: [(&str, &str, ScaleAxis); 3] = [
    ("fewest data-parallel GPUs", "min_dp", ScaleAxis::Dp),
    ("smallest tensor-parallel degree", "min_tp", ScaleAxis::Tp),
    ("smallest pipeline degree", "min_pp", ScaleAxis::Pp),
];

/// The solvers' answers as text (or JSON).
pub fn run(s: &Scenario, max_gpus: u32, top: usize, as_json: bool) -> String {
    let result = make_it_fit(s, FitOptions { max_gpus, top });
    if as_json {
        json_text(s, &result)
    } else {
        text(s, &result)
    }
}

fn json_text(s: &Scenario, result: &FitResult) -> String {
    let est = estimate(s);
    let limits: serde_json::Map<String, Value> = LIMITS
        .iter()
        .map(|(_, k, t)| ((*k).to_owned(), solved_json(max_fitting(s, *t))))
        .chain(
            DEGREES
                .iter()
                .map(|(_, k, a)| ((*k).to_owned(), solved_json(min_degree(s, *a)))),
        )
        .collect();
    let suggestions: Vec<Value> = result
        .suggestions
        .iter()
        .map(|g| {
            json!({
                "changes": g.changes, "costs": g.costs, "step_time_s": g.step_time_s,
                "gpu_seconds": g.gpu_seconds, "headroom_bytes": g.headroom.get(), "gpus": g.gpus,
                "scenario_ron": to_ron_string(&g.scenario),
            })
        })
        .collect();
    // A CPU build holds nothing on a GPU and the estimator has no host capacity: no verdict.
    let gpu = est.cpu_build().is_none();
    let v = json!({
        "fits": gpu.then_some(est.memory.fits),
        "headroom_bytes": gpu.then_some(est.memory.headroom.get()),
        "cpu_only": super::json::cpu_only(&est),
        "limits": limits,
        "weight_formats": formats_json(s),
        "weight_formats_not_applicable": not_applicable_json(s),
        "make_it_fit": {
            "already_fits": result.already_fits,
            "budget_gpus": result.budget_gpus,
            "estimates": result.estimates,
            "stopped_early": result.stopped_early,
            "suggestions": suggestions,
        },
    });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}

/// Whether weight formats change this scenario: inference, or training on a frozen LoRA base.
fn formats_apply(s: &Scenario) -> bool {
    s.mode == Mode::Inference || s.peft.method == PeftMethod::Lora
}

/// "Which quantization fits at this context": every weight format (`solver::quant_fit`). Under
/// llama.cpp the GGUF file types, the scenario's first, and the formats llama.cpp does not load
/// named as not applicable; on a llama.cpp CPU build the host's buffers, with no GPU to fit.
fn formats_text(s: &Scenario, est: &Estimate, out: &mut String) {
    if !formats_apply(s) {
        return;
    }
    let gib = |b| MemoryUnit::GiB.format(b);
    let heading = if est.cpu_build().is_some() {
        "GGUF file types on this CPU build (llama.cpp -dev none: host memory, no GPU; the estimator has no host-memory capacity to fit them against)"
    } else if s.runs_on_llamacpp() {
        "GGUF file types under llama.cpp (bits: each type's base type; longest context that fits)"
    } else {
        "Weight formats (layer matrices; longest context that fits)"
    };
    let _ = writeln!(out, "\n{heading}:");
    for q in quant_fit(s) {
        let label = q.label();
        let bits = q
            .bits_per_weight
            .map_or_else(|| "as stored".to_owned(), |b| format!("{b:.3} bits"));
        let stored = if q.as_stored && s.runs_on_llamacpp() {
            ", as stored (the scenario)"
        } else {
            ""
        };
        if let Some(host) = q.host_total {
            let _ = writeln!(
                out,
                "  {label:<20} {bits:<12}host weights {:>10}  host total {:>10}  context {}{stored}",
                gib(q.weights),
                gib(host),
                solved_text(q.max_context)
            );
            continue;
        }
        let native = match q.native {
            Some(true) => ", native",
            Some(false) => ", not native on this GPU",
            None => "",
        };
        let _ = writeln!(
            out,
            "  {label:<20} {bits:<12}weights {:>10}  {:<3} headroom {:>11}  context {}{native}{stored}",
            gib(q.weights),
            if q.fits { "fits" } else { "no" },
            gib(q.headroom),
            solved_text(q.max_context)
        );
    }
    if s.runs_on_llamacpp() {
        let _ = writeln!(out, "  not applicable under llama.cpp:");
        for f in NOT_GGUF {
            let _ = writeln!(out, "    {:<18} {}", f.label(), not_under_llamacpp(f));
        }
    }
}

fn formats_json(s: &Scenario) -> Value {
    if !formats_apply(s) {
        return Value::Null;
    }
    quant_fit(s).iter().map(format_json).collect()
}

/// One row of `weight_formats`. On a llama.cpp CPU build `fits` and `headroom_bytes` are `null`
/// (nothing is on a GPU) and `host_total_bytes` gives the host's buffers.
fn format_json(q: &QuantFit) -> Value {
    let gpu = q.host_total.is_none();
    json!({
        "format": format!("{:?}", q.format), "label": q.label(),
        "file_type": match q.format {
            crate::scenario::WeightFormat::GgufFile(f) => Some(f.name()),
            _ => None,
        },
        "as_stored": q.as_stored, "bits_per_weight": q.bits_per_weight,
        "weights_bytes": q.weights.get(), "fits": gpu.then_some(q.fits),
        "headroom_bytes": gpu.then_some(q.headroom.get()),
        "host_total_bytes": q.host_total.map(crate::units::Bytes::get),
        "max_context": solved_json(q.max_context), "native": q.native,
    })
}

/// Under llama.cpp, the formats with no row and why (`solver::not_under_llamacpp`); else empty.
fn not_applicable_json(s: &Scenario) -> Value {
    if !formats_apply(s) || !s.runs_on_llamacpp() {
        return json!([]);
    }
    NOT_GGUF
        .iter()
        .map(|f| {
            json!({ "format": format!("{f:?}"), "label": f.label(), "reason": not_under_llamacpp(*f) })
        })
        .collect()
}

fn text(s: &Scenario, result: &FitResult) -> String {
    let est = estimate(s);
    let mut out = String::new();
    let gib = |b| MemoryUnit::GiB.format(b);
    let verdict = match est.cpu_build() {
        // As the report's "GPU: none": no GPU holds anything, so nothing fits or not.
        Some(b) => format!(
            "CPU only (llama.cpp -dev none): {} of host memory in llama.cpp's buffers, no GPU used \
             (the estimator has no host-memory capacity: no fit or headroom to give)",
            gib(crate::units::Bytes(b.host_total() as f64))
        ),
        None if est.memory.fits => format!("fits (headroom {})", gib(est.memory.headroom)),
        None => format!("does not fit (headroom {})", gib(est.memory.headroom)),
    };
    let _ = writeln!(out, "{}: {verdict}", s.title());
    for (label, _, t) in LIMITS {
        let _ = writeln!(out, "  {label:<34} {}", solved_text(max_fitting(s, t)));
    }
    for (label, _, a) in DEGREES {
        let _ = writeln!(out, "  {label:<34} {}", solved_text(min_degree(s, a)));
    }
    formats_text(s, &est, &mut out);
    if est.cpu_build().is_some() {
        out.push_str("\nNothing to make fit: the run uses no GPU.\n");
        return out;
    }
    if result.already_fits {
        out.push_str("\nIt fits as it is: nothing to change.\n");
        return out;
    }
    let _ = writeln!(
        out,
        "\nMake it fit (within {} GPUs, {} estimates): {} suggestion(s), cheapest per token first \
         (GPU-seconds per step), the fastest always listed",
        result.budget_gpus,
        result.estimates,
        result.suggestions.len()
    );
    if result.stopped_early {
        let _ = writeln!(
            out,
            "(the search stopped at its limit of {MAX_ESTIMATES} estimates: the best found until then)"
        );
    }
    for (i, g) in result.suggestions.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. step {}, {} GPU(s), {:.0} GPU-s per step, headroom {}",
            i + 1,
            fmt_seconds(g.step_time_s),
            g.gpus,
            g.gpu_seconds,
            gib(g.headroom)
        );
        for c in &g.changes {
            let _ = writeln!(out, "     change: {c}");
        }
        for c in &g.costs {
            let _ = writeln!(out, "     cost:   {c}");
        }
    }
    out
}
