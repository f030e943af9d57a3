//! `vram-explorer sweep`: one input over a range, the memory at each point, as CSV.

use std::fmt::Write;

use clap::ValueEnum;

use crate::estimator::{Component, Phase, estimate};
use crate::scenario::{Axis, Scenario, validate};

/// The input a sweep moves: the CLI spellings of [`Axis`] (`--over batch|seq|params|dp|tp|pp|cp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepAxis {
    /// Micro-batch (`workload.micro_batch`), or concurrent requests with dynamic batching.
    Batch,
    /// Sequence length: `workload.seq_len` in training, `inference.prompt_tokens` in inference.
    Seq,
    /// Parameter count (`model.params`, the shape derived from it; `model.cnn.params` for a CNN).
    Params,
    /// Data-parallel degree.
    Dp,
    /// Tensor-parallel degree.
    Tp,
    /// Pipeline-parallel degree.
    Pp,
    /// Context-parallel degree (transformer training).
    Cp,
}

impl From<SweepAxis> for Axis {
    fn from(a: SweepAxis) -> Axis {
        match a {
            SweepAxis::Batch => Axis::Batch,
            SweepAxis::Seq => Axis::Context,
            SweepAxis::Params => Axis::Params,
            SweepAxis::Dp => Axis::Dp,
            SweepAxis::Tp => Axis::Tp,
            SweepAxis::Pp => Axis::Pp,
            SweepAxis::Cp => Axis::Cp,
        }
    }
}

/// Spacing of the sweep's points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scale {
    /// Geometric: equal ratios (1, 2, 4 …).
    Log,
    /// Arithmetic: equal steps.
    Linear,
}

/// The points of a sweep: `steps` values from `from` to `to`, de-duplicated; rounded to integers for
/// integer axes, else to 12 significant digits (so that f64 noise such as 272799999999.99997 prints
/// as 272800000000: `{}` of an f64 is its shortest round-trip decimal).
pub fn points(integer: bool, from: f64, to: f64, steps: u32, scale: Scale) -> Vec<f64> {
    let n = steps.max(2);
    let mut out: Vec<f64> = (0..n)
        .map(|i| {
            let t = f64::from(i) / f64::from(n - 1);
            let x = match scale {
                Scale::Linear => from + (to - from) * t,
                Scale::Log => from * (to / from).powf(t),
            };
            if integer { x.round() } else { significant(x) }
        })
        .collect();
    out.dedup();
    out
}

/// `x` rounded to 12 significant digits (through its decimal text, which rounds correctly).
fn significant(x: f64) -> f64 {
    format!("{x:.11e}").parse().unwrap_or(x)
}

/// Runs the sweep and returns the CSV text, or an error naming the bad bound or field. The first
/// column is the field the axis moves in this scenario ([`Axis::field`]); byte columns are integers.
pub fn run(
    base: &Scenario,
    over: SweepAxis,
    from: Option<f64>,
    to: Option<f64>,
    steps: u32,
    scale: Scale,
) -> Result<String, String> {
    let axis = Axis::from(over);
    let column = axis.field(base);
    if !axis.applies(base) {
        return Err(format!(
            "{column} does not change the estimate of this {:?} model",
            base.model.family
        ));
    }
    let (d_from, d_to) = axis.typical(base);
    let (from, to) = (from.unwrap_or(d_from), to.unwrap_or(d_to));
    if !(from.is_finite() && to.is_finite() && from > 0.0 && to > 0.0) {
        return Err(format!(
            "--from and --to must be positive numbers (got {from} and {to})"
        ));
    }
    let mut csv = format!(
        "{column},fits,peak_phase,tensor_peak_bytes,gpu_total_bytes,capacity_bytes,headroom_bytes"
    );
    for c in Component::ALL {
        let _ = write!(csv, ",{}_bytes", c.key());
    }
    let _ = write!(csv, "{}", super::perf::csv_header());
    csv.push('\n');
    let mut s = base.clone();
    for x in points(axis.is_integer(base), from, to, steps, scale) {
        s.clone_from(base);
        axis.set(&mut s, x);
        if let Some(e) = validate::validate(&s).first() {
            return Err(format!("{column} = {x}: `{}` {}", e.field, e.message));
        }
        let est = estimate(&s);
        let m = &est.memory;
        // `+ 0.0` turns a rounded −0 into 0.
        let b = |v: crate::units::Bytes| v.get().round() + 0.0;
        let _ = write!(
            csv,
            "{x},{},{},{},{},{},{}",
            m.fits,
            m.peak_phase.map_or("", Phase::key),
            b(m.tensor_peak),
            b(m.gpu_total),
            b(m.capacity),
            b(m.headroom)
        );
        for c in Component::ALL {
            let _ = write!(csv, ",{}", b(m.peak.get(c)));
        }
        let _ = write!(csv, "{}", super::perf::csv_row(&est));
        csv.push('\n');
    }
    Ok(csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_points_are_powers_of_two() {
        assert_eq!(
            points(true, 1.0, 256.0, 9, Scale::Log),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
        );
        assert_eq!(points(true, 1.0, 2.0, 5, Scale::Linear), [1.0, 2.0]);
    }

    fn rows(csv: &str) -> Vec<Vec<&str>> {
        csv.lines().map(|l| l.split(',').collect()).collect()
    }

    #[test]
    fn batch_under_dynamic_batching_moves_concurrent_requests() {
        let mut s = Scenario::default();
        s.inference.dynamic_batching = true;
        let csv = run(&s, SweepAxis::Batch, Some(1.0), Some(64.0), 3, Scale::Log);
        let csv = csv.unwrap_or_default();
        let rows = rows(&csv);
        let first = rows.first().cloned().unwrap_or_default();
        assert_eq!(first.first(), Some(&"inference.concurrent_requests"));
        let col = first.iter().position(|c| *c == "gpu_total_bytes");
        let totals: Vec<&str> = rows
            .iter()
            .skip(1)
            .filter_map(|r| r.get(col?).copied())
            .collect();
        assert_eq!(totals.len(), 3, "{csv}");
        assert!(totals[0] != totals[2], "flat curve: {totals:?}");
    }

    #[test]
    fn values_print_as_short_decimals_and_bytes_as_integers() {
        let s = Scenario::default();
        // Linear from 1e8 in 11 steps of 90.9e9: f64 arithmetic lands on 272799999999.99997.
        let csv = run(
            &s,
            SweepAxis::Params,
            Some(1e8),
            Some(1e12),
            12,
            Scale::Linear,
        );
        let csv = csv.unwrap_or_default();
        let rows = rows(&csv);
        let xs: Vec<&str> = rows
            .iter()
            .skip(1)
            .filter_map(|r| r.first().copied())
            .collect();
        assert_eq!(xs.get(3), Some(&"272800000000"), "{xs:?}");
        for x in &xs {
            let digits = x.chars().filter(char::is_ascii_digit).count();
            assert!(digits <= 13, "{x}");
        }
        let header = rows.first().cloned().unwrap_or_default();
        for row in rows.iter().skip(1) {
            for (name, v) in header.iter().zip(row) {
                if name.ends_with("_bytes") {
                    assert!(v.parse::<i64>().is_ok(), "{name} = {v}");
                }
            }
        }
    }
}
