//! `vram-explorer fit`: the solvers' answers for a scenario — the largest micro-batch, context and
//! model that fit, the fewest GPUs, and "make it fit" suggestions ranked by cost per token (GPU-seconds
//! per step), the fastest always listed.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::estimator::estimate;
use crate::estimator::solver::{
    FitOptions, FitResult, MAX_ESTIMATES, ScaleAxis, Solved, Target, make_it_fit, max_fitting,
    min_degree, quant_fit,
};
use crate::presets::to_ron_string;
use crate::scenario::{Mode, PeftMethod, Scenario};
use crate::units::Bytes;
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

/// "Which quantization fits at this context": every weight format (`solver::quant_fit`).
fn formats_text(s: &Scenario, out: &mut String) {
    if !formats_apply(s) {
        return;
    }
    let _ = writeln!(
        out,
        "\nWeight formats (layer matrices; longest context that fits):"
    );
    for q in quant_fit(s) {
        let bits = q
            .bits_per_weight
            .map_or_else(|| "as stored".to_owned(), |b| format!("{b:.3} bits"));
        let native = match q.native {
            Some(true) => ", native",
            Some(false) => ", not native on this GPU",
            None => "",
        };
        let _ = writeln!(
            out,
            "  {:<20} {bits:<11} weights {:>10}  {:<3} headroom {:>11}  context {}{native}",
            q.format.label(),
            MemoryUnit::GiB.format(q.weights),
            if q.fits { "fits" } else { "no" },
            MemoryUnit::GiB.format(q.headroom),
            solved_text(q.max_context)
        );
    }
}

fn formats_json(s: &Scenario) -> Value {
    if !formats_apply(s) {
        return Value::Null;
    }
    quant_fit(s)
        .iter()
        .map(|q| {
            json!({
                "format": format!("{:?}", q.format), "bits_per_weight": q.bits_per_weight,
                "weights_bytes": q.weights.get(), "fits": q.fits,
                "headroom_bytes": q.headroom.get(), "max_context": solved_json(q.max_context),
                "native": q.native,
            })
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
            gib(Bytes(b.host_total() as f64))
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
    formats_text(s, &mut out);
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
