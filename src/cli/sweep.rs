//! `vram-explorer sweep`: one input over a range, the memory at each point, as CSV.

use std::fmt::Write;

use clap::ValueEnum;

use crate::estimator::{Component, Phase, estimate};
use crate::scenario::{Mode, Scenario, ShapeSource, validate};

/// The input a sweep moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SweepAxis {
    /// Micro-batch (`workload.micro_batch`).
    Batch,
    /// Sequence length: `workload.seq_len` in training, `inference.prompt_tokens` in inference.
    Seq,
    /// Parameter count (`model.params`; the shape is derived from it).
    Params,
    /// Data-parallel degree.
    Dp,
    /// Tensor-parallel degree.
    Tp,
    /// Pipeline-parallel degree.
    Pp,
}

impl SweepAxis {
    /// Default (from, to) of the axis.
    fn default_range(self) -> (f64, f64) {
        match self {
            SweepAxis::Batch => (1.0, 256.0),
            SweepAxis::Seq => (512.0, 131_072.0),
            SweepAxis::Params => (1e8, 1e12),
            SweepAxis::Dp => (1.0, 256.0),
            SweepAxis::Tp | SweepAxis::Pp => (1.0, 64.0),
        }
    }

    /// The CSV column name: the dotted field it sets.
    fn column(self, mode: Mode) -> &'static str {
        match (self, mode) {
            (SweepAxis::Batch, _) => "workload.micro_batch",
            (SweepAxis::Seq, Mode::Training) => "workload.seq_len",
            (SweepAxis::Seq, Mode::Inference) => "inference.prompt_tokens",
            (SweepAxis::Params, _) => "model.params",
            (SweepAxis::Dp, _) => "parallel.dp",
            (SweepAxis::Tp, _) => "parallel.tp",
            (SweepAxis::Pp, _) => "parallel.pp",
        }
    }

    fn is_integer(self) -> bool {
        self != SweepAxis::Params
    }

    /// Sets the axis to `x` (already rounded for integer axes).
    fn apply(self, s: &mut Scenario, x: f64) {
        let n = x as u32;
        match self {
            SweepAxis::Batch => s.workload.micro_batch = n,
            SweepAxis::Seq => match s.mode {
                Mode::Training => s.workload.seq_len = n,
                Mode::Inference => s.inference.prompt_tokens = n,
            },
            SweepAxis::Params => {
                s.model.params = x;
                s.model.shape = ShapeSource::ParamCount;
            }
            SweepAxis::Dp => s.parallel.dp = n,
            SweepAxis::Tp => s.parallel.tp = n,
            SweepAxis::Pp => s.parallel.pp = n,
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

/// The points of a sweep: `steps` values from `from` to `to`, rounded and de-duplicated for integer
/// axes.
pub fn points(axis: SweepAxis, from: f64, to: f64, steps: u32, scale: Scale) -> Vec<f64> {
    let n = steps.max(2);
    let mut out: Vec<f64> = (0..n)
        .map(|i| {
            let t = f64::from(i) / f64::from(n - 1);
            let x = match scale {
                Scale::Linear => from + (to - from) * t,
                Scale::Log => from * (to / from).powf(t),
            };
            if axis.is_integer() { x.round() } else { x }
        })
        .collect();
    out.dedup();
    out
}

/// Runs the sweep and returns the CSV text, or an error naming the bad bound or field.
pub fn run(
    base: &Scenario,
    axis: SweepAxis,
    from: Option<f64>,
    to: Option<f64>,
    steps: u32,
    scale: Scale,
) -> Result<String, String> {
    let (d_from, d_to) = axis.default_range();
    let (from, to) = (from.unwrap_or(d_from), to.unwrap_or(d_to));
    if !(from.is_finite() && to.is_finite() && from > 0.0 && to > 0.0) {
        return Err(format!(
            "--from and --to must be positive numbers (got {from} and {to})"
        ));
    }
    let column = axis.column(base.mode);
    let mut csv = format!(
        "{column},fits,peak_phase,tensor_peak_bytes,gpu_total_bytes,capacity_bytes,headroom_bytes"
    );
    for c in Component::ALL {
        let _ = write!(csv, ",{}_bytes", c.key());
    }
    let _ = write!(csv, "{}", super::perf::csv_header());
    csv.push('\n');
    for x in points(axis, from, to, steps, scale) {
        let mut s = base.clone();
        axis.apply(&mut s, x);
        if let Some(e) = validate::validate(&s).first() {
            return Err(format!("{column} = {x}: `{}` {}", e.field, e.message));
        }
        let est = estimate(&s);
        let m = &est.memory;
        let _ = write!(
            csv,
            "{x},{},{},{},{},{},{}",
            m.fits,
            m.peak_phase.map_or("", Phase::key),
            m.tensor_peak.get(),
            m.gpu_total.get(),
            m.capacity.get(),
            m.headroom.get()
        );
        for c in Component::ALL {
            let _ = write!(csv, ",{}", m.peak.get(c).get());
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
            points(SweepAxis::Batch, 1.0, 256.0, 9, Scale::Log),
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]
        );
        assert_eq!(
            points(SweepAxis::Tp, 1.0, 2.0, 5, Scale::Linear),
            [1.0, 2.0]
        );
    }
}
