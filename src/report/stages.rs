//! The pipeline stages of a report (PP > 1): one row per stage class with its layers, micro-batches in
//! flight, peak phase and peak, the limiting stage marked; the Markdown report and the CLI's text
//! table both print it. Nothing without pipeline parallelism.

use std::fmt::Write;

use crate::estimator::{Estimate, MemoryEstimate, Phase, StageClass};
use crate::scenario::Scenario;
use crate::units::{MemoryUnit, fmt_sig};

fn is_limiting(m: &MemoryEstimate, c: &StageClass) -> bool {
    m.limiting_stage().is_some_and(|l| l.first == c.first)
}

fn phase(c: &StageClass) -> &'static str {
    c.peak_phase.map_or("—", |p| p.label())
}

/// "The limiting stage is …" and a table of the stage classes.
pub fn markdown(out: &mut String, m: &MemoryEstimate, unit: MemoryUnit) {
    let Some(limiting) = m.limiting_stage() else {
        return;
    };
    let u = unit.label();
    let _ = writeln!(
        out,
        "### Pipeline stages\n\nThe limiting stage is **{}** (the largest peak; the breakdown above \
         is its). Stages 1-based; each row is the class's first stage, which keeps the most \
         micro-batches in flight.\n",
        limiting.label()
    );
    let _ = writeln!(
        out,
        "| Stage | Layers | Micro-batches in flight | Peak phase | Tensor peak {u} | GPU total {u} |\n\
         |---|---:|---:|---|---:|---:|"
    );
    for c in m.stage_classes() {
        let mark = if is_limiting(m, c) {
            " **(limiting)**"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {}{mark} | {} | {} | {} | {} | {} |",
            c.label(),
            c.layers,
            count(c.in_flight),
            phase(c),
            fmt_sig(unit.value(c.peak.tensor_total())),
            fmt_sig(unit.value(c.peak.total()))
        );
    }
    out.push('\n');
}

/// The same as indented text lines.
pub fn text(out: &mut String, m: &MemoryEstimate, unit: MemoryUnit) {
    let Some(limiting) = m.limiting_stage() else {
        return;
    };
    let _ = writeln!(
        out,
        "  Pipeline stages (limiting: {}; each class at its first stage):",
        limiting.label()
    );
    for c in m.stage_classes() {
        let mark = if is_limiting(m, c) {
            "  <- limiting"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    {:<26} {:>4} layers, {:>5} in flight, peak {} in {}{mark}",
            c.label(),
            c.layers,
            count(c.in_flight),
            unit.format(c.peak.total()),
            phase(c)
        );
    }
}

/// The 1-based stage `n`'s class in detail (`--stage`): its peak's components and its phases, as
/// Markdown or as text. An error names the stages there are.
pub fn picked(
    out: &mut String,
    (scenario, est): (&Scenario, &Estimate),
    unit: MemoryUnit,
    (n, markdown): (u32, bool),
) -> Result<(), String> {
    let m = &est.memory;
    let stages = m.stage_classes().map(|c| c.last() + 1).max().unwrap_or(1);
    let Some(c) = n.checked_sub(1).and_then(|i| m.stage_class(i)) else {
        return Err(if stages <= 1 {
            format!("--stage {n}: the scenario has no pipeline parallelism (parallel.pp = 1)")
        } else {
            format!("--stage {n}: the pipeline has stages 1 to {stages}")
        });
    };
    let limiting = if is_limiting(m, c) {
        ", the limiting stage"
    } else {
        ""
    };
    let title = if c.count > 1 {
        format!(
            "Stage {n}, one of {}{limiting}, shown at the class's largest, stage {}: {} layers, {} \
             micro-batches in flight",
            c.label(),
            c.first + 1,
            c.layers,
            count(c.in_flight)
        )
    } else {
        format!("Stage {n}: {}{limiting}", c.describe())
    };
    let u = unit.label();
    if markdown {
        let _ = writeln!(out, "## {title}\n\n| Component | {u} |\n|---|---:|");
    } else {
        let _ = writeln!(out, "{title} ({u})");
    }
    for (comp, b) in c.peak.iter().filter(|(_, b)| b.get() > 0.0) {
        row(out, markdown, comp.label(), fmt_sig(unit.value(b)));
    }
    row(
        out,
        markdown,
        "GPU total",
        fmt_sig(unit.value(c.peak.total())),
    );
    if markdown {
        let _ = writeln!(out, "\n| Phase | Tensor {u} |\n|---|---:|");
    }
    let phases =
        crate::estimator::memory::stage_phases_of(scenario, est, c.first).unwrap_or_default();
    for p in Phase::ALL {
        if let Some(b) = phases.get(p) {
            let mark = if c.peak_phase == Some(p) {
                " (peak)"
            } else {
                ""
            };
            let label = format!("{}{mark}", p.label());
            row(out, markdown, &label, fmt_sig(unit.value(b.tensor_total())));
        }
    }
    out.push('\n');
    Ok(())
}

fn row(out: &mut String, markdown: bool, label: &str, value: String) {
    let _ = if markdown {
        writeln!(out, "| {label} | {value} |")
    } else {
        writeln!(out, "  {label:<28} {value:>10}")
    };
}

/// Micro-batches in flight: whole numbers as such, fractions (interleaved schedules) to three
/// significant digits.
pub fn count(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 && x.abs() < 1e15 {
        format!("{}", x.round() as i64)
    } else {
        fmt_sig(x)
    }
}
