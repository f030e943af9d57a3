//! Per-GPU memory against one input (batch, sequence length, a parallel degree or the parameter
//! count), with the capacity line and the value where it stops (or starts) fitting. Each point
//! re-estimates a scratch copy of the scenario with only that one field changed: the scenario is
//! cloned into the scratch once per curve, never per point.

use egui::Ui;
use egui_plot::{HLine, Line, LineStyle, MarkerShape, Plot, Points, VLine};

use super::sweep_view::View;
use super::{legend, memory_tick, static_plot};
use crate::estimator::solver::{self, ScaleAxis};
use crate::estimator::{Estimate, estimate};
use crate::scenario::{Mode, Scenario, ShapeSource};
use crate::ui::widgets::{self, Choice, opt};
use crate::ui::{Prefs, SweepAxis, theme};

/// The value of `axis` in a scenario.
pub fn value(s: &Scenario, axis: SweepAxis) -> f64 {
    match axis {
        SweepAxis::Batch => batch_field(s) as f64,
        SweepAxis::SeqLen => match s.mode {
            Mode::Training => s.workload.seq_len as f64,
            Mode::Inference => s.inference.prompt_tokens as f64,
        },
        SweepAxis::Dp => s.parallel.dp as f64,
        SweepAxis::Tp => s.parallel.tp as f64,
        SweepAxis::Pp => s.parallel.pp as f64,
        SweepAxis::Params => s.model.params,
    }
}

fn batch_field(s: &Scenario) -> u32 {
    if s.mode == Mode::Inference && s.inference.dynamic_batching {
        s.inference.concurrent_requests
    } else {
        s.workload.micro_batch
    }
}

/// Sets the field of `axis` (rounded to an integer where the field is one).
pub fn set(s: &mut Scenario, axis: SweepAxis, v: f64) {
    let n = v.round().clamp(1.0, u32::MAX as f64) as u32;
    match axis {
        SweepAxis::Batch => {
            if s.mode == Mode::Inference && s.inference.dynamic_batching {
                s.inference.concurrent_requests = n;
            } else {
                s.workload.micro_batch = n;
            }
        }
        SweepAxis::SeqLen => match s.mode {
            Mode::Training => s.workload.seq_len = n,
            Mode::Inference => s.inference.prompt_tokens = n,
        },
        SweepAxis::Dp => s.parallel.dp = n,
        SweepAxis::Tp => s.parallel.tp = n,
        SweepAxis::Pp => s.parallel.pp = n,
        SweepAxis::Params => {
            s.model.shape = ShapeSource::ParamCount;
            s.model.params = v;
        }
    }
}

/// The swept range (inclusive) of an axis.
pub fn range(axis: SweepAxis) -> (f64, f64) {
    match axis {
        SweepAxis::Batch => (1.0, 4096.0),
        SweepAxis::SeqLen => (128.0, 1_048_576.0),
        SweepAxis::Dp => (1.0, 1024.0),
        SweepAxis::Tp | SweepAxis::Pp => (1.0, 64.0),
        SweepAxis::Params => (1e8, 2e12),
    }
}

/// More GPUs lower memory: for degrees we look for the smallest that fits, otherwise the largest.
pub const fn more_is_less(axis: SweepAxis) -> bool {
    matches!(axis, SweepAxis::Dp | SweepAxis::Tp | SweepAxis::Pp)
}

/// Sample positions of an axis: powers of two and 1.5× between them for integers, 40 log steps for
/// the parameter count.
fn samples(axis: SweepAxis, out: &mut Vec<f64>) {
    let (lo, hi) = range(axis);
    out.clear();
    if axis == SweepAxis::Params {
        let steps = 40;
        for i in 0..=steps {
            out.push(lo * (hi / lo).powf(i as f64 / steps as f64));
        }
        return;
    }
    let mut v = lo;
    while v <= hi {
        out.push(v);
        if v >= 2.0 && v * 1.5 <= hi && !more_is_less(axis) {
            out.push(v * 1.5);
        }
        v *= 2.0;
    }
}

/// (x in log10, per-GPU peak in the display unit) per sample.
fn curve(scratch: &mut Scenario, base: &Scenario, axis: SweepAxis, prefs: &Prefs) -> Vec<[f64; 2]> {
    let mut xs = Vec::new();
    samples(axis, &mut xs);
    scratch.clone_from(base);
    xs.iter()
        .map(|&x| {
            set(scratch, axis, x);
            let m = estimate(scratch).memory;
            [widgets::log10(x), prefs.unit.value(m.gpu_total)]
        })
        .collect()
}

/// Where fitting stops (or, for degrees, starts) along the axis, from the solver: exact for the
/// estimator, not limited to the sampled points.
fn boundary(scenario: &Scenario, scratch: &mut Scenario, axis: SweepAxis) -> Option<f64> {
    let solved = match axis {
        SweepAxis::Batch => solver::max_micro_batch(scenario),
        SweepAxis::SeqLen => solver::max_context(scenario),
        SweepAxis::Dp => solver::min_degree(scenario, ScaleAxis::Dp),
        SweepAxis::Tp => solver::min_degree(scenario, ScaleAxis::Tp),
        SweepAxis::Pp => solver::min_degree(scenario, ScaleAxis::Pp),
        SweepAxis::Params => {
            scratch.clone_from(scenario);
            scratch.model.shape = ShapeSource::ParamCount;
            return solver::max_model_size(scratch)
                .value()
                .map(|millions| millions as f64 * 1e6);
        }
    };
    solved.value().map(|v| v as f64)
}

const AXES: [Choice<SweepAxis>; 6] = [
    opt(
        SweepAxis::Batch,
        "Batch size",
        "Micro-batch (or concurrent requests with dynamic batching).",
    ),
    opt(
        SweepAxis::SeqLen,
        "Sequence length",
        "Training sequence length, or the inference prompt length.",
    ),
    opt(
        SweepAxis::Dp,
        "Data-parallel degree",
        "GPUs holding replicas (with ZeRO, shards).",
    ),
    opt(
        SweepAxis::Tp,
        "Tensor-parallel degree",
        "GPUs splitting each layer's matrices.",
    ),
    opt(
        SweepAxis::Pp,
        "Pipeline-parallel degree",
        "GPUs holding consecutive layer groups.",
    ),
    opt(
        SweepAxis::Params,
        "Parameter count",
        "Model size; the shape is derived from the count.",
    ),
];

/// The chart, with the axis selector above it.
pub fn ui(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    scratch: &mut Scenario,
    height: f32,
) {
    let axis_hover = "What the x axis varies; everything else stays as set.";
    widgets::choice(ui, &mut prefs.sweep_axis, &AXES, "Sweep over", axis_hover);
    let axis = prefs.sweep_axis;
    let u = prefs.unit;
    let points = curve(scratch, scenario, axis, prefs);
    let base_points = baseline.map(|b| curve(scratch, b, axis, prefs));
    let cap = u.value(current.memory.capacity);
    let here = [
        widgets::log10(value(scenario, axis)),
        u.value(current.memory.gpu_total),
    ];
    let edge = boundary(scenario, scratch, axis).map(widgets::log10);
    let view = super::sweep_view::view(&points, cap, here, edge);
    let plot_h = (height - ui.spacing().interact_size.y - 6.0).max(80.0);
    let th = prefs.theme;
    frame(ui, prefs, axis, view, plot_h).show(ui, |plot_ui| {
        if let Some(bp) = base_points {
            plot_ui.line(
                Line::new("Baseline", bp)
                    .color(theme::baseline(th))
                    .style(LineStyle::dashed_dense())
                    .width(2.0),
            );
        }
        plot_ui.line(
            Line::new("Per-GPU peak", points)
                .color(theme::current(th))
                .width(2.5),
        );
        plot_ui.hline(
            HLine::new("GPU memory", cap)
                .color(theme::capacity(th))
                .style(LineStyle::dashed_loose())
                .width(2.0),
        );
        if let Some(x) = edge {
            let what = if more_is_less(axis) {
                "Smallest"
            } else {
                "Largest"
            };
            let name = format!(
                "{what} that fits: {} {}",
                widgets::log10_label(x),
                axis.unit()
            );
            plot_ui.vline(
                VLine::new(name, x)
                    .color(theme::good(th))
                    .style(LineStyle::dotted_dense()),
            );
        }
        plot_ui.points(
            Points::new("This scenario", vec![here])
                .shape(MarkerShape::Diamond)
                .radius(7.0)
                .color(theme::current(th)),
        );
    });
}

/// The plot: log x axis of `axis` over the view's window, memory y axis from 0 to its top, hover
/// with units.
fn frame<'a>(ui: &Ui, prefs: &Prefs, axis: SweepAxis, view: View, height: f32) -> Plot<'a> {
    let u = prefs.unit;
    let unit = axis.unit();
    // Room for the current point's marker at either end.
    let pad = (view.x.1 - view.x.0) * 0.03;
    let corner = if more_is_less(axis) {
        egui_plot::Corner::RightTop
    } else {
        egui_plot::Corner::RightBottom
    };
    static_plot("sweep", height)
        .legend(legend(corner))
        .x_axis_label(format!("{} ({unit})", axis.label()))
        .reset()
        .default_x_bounds(view.x.0 - pad, view.x.1 + pad)
        .default_y_bounds(0.0, view.y_max)
        .y_axis_min_width(ui.text_style_height(&egui::TextStyle::Body) * 4.0)
        .x_grid_spacer(widgets::log10_marks)
        .x_axis_formatter(|mark, _| widgets::log10_label(mark.value))
        .y_axis_formatter(move |mark, _| memory_tick(u, mark.value))
        .label_formatter(move |pos| {
            let p = match pos {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => position,
                egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            Some(format!(
                "{} {unit}\n{}",
                widgets::log10_label(p.x),
                memory_tick(u, p.y)
            ))
        })
}
