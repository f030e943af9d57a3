//! `compare`: a measurement held against the estimate as a Markdown report (also what the app's
//! "Measured" panel shows): what was measured, which statistic it is, the error against the
//! estimate, where they differ most, and the overhead calibration it implies (not applied).

use crate::estimator::Estimate;
use crate::measured::compare::{Change, Row, calibration, rows};
use crate::measured::{MeasuredTimeline, Measurement};
use crate::scenario::Scenario;
use crate::units::{Bytes, MemoryUnit};

fn gib(x: f64) -> String {
    MemoryUnit::GiB.format(Bytes(x))
}

/// One line naming the measurement.
pub fn describe(m: &Measurement) -> String {
    match m {
        Measurement::Snapshot(t) => describe_snapshot(t),
        Measurement::Light(l) => {
            let names: Vec<&str> = l.values.iter().map(|(s, _)| s.label()).collect();
            format!("light measurement: {}", names.join(", "))
        }
    }
}

fn describe_snapshot(t: &MeasuredTimeline) -> String {
    if t.events == 0 {
        format!(
            "PyTorch memory snapshot, device {}: no recorded history (the state at the dump only)",
            t.device
        )
    } else {
        format!(
            "PyTorch memory snapshot, device {}: {} recorded allocator events",
            t.device, t.events
        )
    }
}

/// The comparison rows as a Markdown table.
pub fn rows_markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| measured statistic | compared with | measured | estimated | error |\n|---|---|---:|---:|---:|\n",
    );
    for r in rows {
        let err = r.error().map_or_else(
            || "—".to_owned(),
            |e| {
                format!(
                    "{}{:.1} %",
                    if e >= 0.0 { "+" } else { "−" },
                    e.abs() * 100.0
                )
            },
        );
        let estimated = if r.comparable {
            gib(r.estimated)
        } else {
            "—".to_owned()
        };
        out.push_str(&format!(
            "| {} | {} | {} | {estimated} | {err} |\n",
            r.statistic,
            r.against,
            gib(r.measured),
        ));
    }
    out
}

/// The row with the largest absolute difference, in words.
pub fn largest_difference(rows: &[Row]) -> Option<String> {
    let r = rows
        .iter()
        .filter(|r| {
            r.comparable
                && (r.statistic.starts_with("at the peak")
                    || !rows.iter().any(|x| x.statistic.starts_with("at the peak")))
        })
        .max_by(|a, b| {
            (a.estimated - a.measured)
                .abs()
                .total_cmp(&(b.estimated - b.measured).abs())
        })?;
    let d = r.estimated - r.measured;
    Some(format!(
        "Largest difference: {} — the estimate is {} {} than measured ({} vs {}).",
        r.statistic,
        gib(d.abs()),
        if d >= 0.0 { "higher" } else { "lower" },
        gib(r.estimated),
        gib(r.measured)
    ))
}

/// The calibration as a Markdown table (empty when there is none).
pub fn calibration_markdown(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "The measurement implies no change of the overhead assumptions.\n".to_owned();
    }
    let mut out =
        String::from("| assumption | now | from the measurement | why |\n|---|---:|---:|---|\n");
    for c in changes {
        out.push_str(&format!(
            "| `{}` | {:.4} | {:.4} | {} |\n",
            c.field, c.from, c.to, c.why
        ));
    }
    out
}

/// The whole report.
pub fn markdown(s: &Scenario, est: &Estimate, m: &Measurement, source: &str) -> String {
    let rows = rows(m, est);
    let mut out = format!(
        "# Estimate vs measurement\n\nScenario: {}\n\nMeasurement: {} ({source})\n\n",
        s.name,
        describe(m)
    );
    out.push_str(&rows_markdown(&rows));
    if let Some(line) = largest_difference(&rows) {
        out.push_str(&format!("\n{line}\n"));
    }
    out.push_str("\n## Calibration (not applied)\n\n");
    out.push_str(&calibration_markdown(&calibration(m, s, est)));
    out.push_str(
        "\nApply it with the app's \"Calibrate from measurement\" button (one undoable edit) or edit \
         `overheads` in the scenario file.\n",
    );
    out
}
