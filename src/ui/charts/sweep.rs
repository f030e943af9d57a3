//! Per-GPU memory against one input (batch, sequence length, a parallel degree or the parameter
//! count), with the capacity line and the value where it stops (or starts) fitting. Each point
//! re-estimates a scratch copy of the scenario with only that one field changed: the scenario is
//! cloned into the scratch once per curve, never per point.

use egui::Ui;
use egui_plot::{HLine, Line, LineStyle, MarkerShape, Plot, Points, VLine};

use super::sweep_view::View;
use super::{memory_tick, static_plot};
use crate::estimator::solver::{self, ScaleAxis, Target};
use crate::estimator::{Estimate, estimate};
use crate::scenario::{Axis, Scenario};
use crate::ui::widgets::{self, Choice, opt};
use crate::ui::{Prefs, SweepAxis, theme};

/// The scenario axis behind the chart's choice ([`Axis`] knows the field the estimator reads).
pub const fn axis_of(axis: SweepAxis) -> Axis {
    match axis {
        SweepAxis::Batch => Axis::Batch,
        SweepAxis::SeqLen => Axis::Context,
        SweepAxis::Dp => Axis::Dp,
        SweepAxis::Tp => Axis::Tp,
        SweepAxis::Pp => Axis::Pp,
        SweepAxis::Cp => Axis::Cp,
        SweepAxis::Params => Axis::Params,
    }
}

/// Sample positions over the axis's typical span ([`Axis::typical`], within the valid range):
/// powers of two and 1.5× between them for integers, 40 log steps for a parameter count.
fn samples(s: &Scenario, axis: Axis, out: &mut Vec<f64>) {
    let (lo, hi) = axis.typical(s);
    out.clear();
    if !axis.is_integer(s) {
        let steps = 40;
        for i in 0..=steps {
            out.push(lo * (hi / lo).powf(i as f64 / steps as f64));
        }
        return;
    }
    let mut v = lo.max(1.0);
    while v <= hi {
        out.push(v);
        if v >= 2.0 && v * 1.5 <= hi && !axis.more_is_less() {
            out.push(v * 1.5);
        }
        v *= 2.0;
    }
}

/// (x in log10, per-GPU peak in the display unit) per sample.
fn curve(scratch: &mut Scenario, base: &Scenario, axis: Axis, prefs: &Prefs) -> Vec<[f64; 2]> {
    let mut xs = Vec::new();
    samples(base, axis, &mut xs);
    scratch.clone_from(base);
    xs.iter()
        .map(|&x| {
            axis.set(scratch, x);
            let m = estimate(scratch).memory;
            [widgets::log10(x), prefs.unit.value(m.gpu_total)]
        })
        .collect()
}

/// Where fitting stops (or, for degrees, starts) along the axis, from the solver: exact for the
/// estimator, not limited to the sampled points.
fn boundary(scenario: &Scenario, scratch: &mut Scenario, axis: Axis) -> Option<f64> {
    let solved = match axis {
        Axis::Batch => solver::max_fitting(scenario, Target::MicroBatch),
        Axis::Context => solver::max_fitting(scenario, Target::Context),
        Axis::Dp => solver::min_degree(scenario, ScaleAxis::Dp),
        Axis::Tp => solver::min_degree(scenario, ScaleAxis::Tp),
        Axis::Pp => solver::min_degree(scenario, ScaleAxis::Pp),
        Axis::Cp => {
            // The smallest power of two that fits (the degrees CP runs at).
            scratch.clone_from(scenario);
            let fits = |s: &mut Scenario, cp: u32| {
                axis.set(s, f64::from(cp));
                estimate(s).memory.fits
            };
            return (0..7)
                .map(|k| 1u32 << k)
                .find(|&cp| fits(scratch, cp))
                .map(f64::from);
        }
        Axis::ModelSize | Axis::Params => {
            // Solve on the field the sweep moves (`Params` switches a transformer to its count).
            scratch.clone_from(scenario);
            axis.set(scratch, axis.get(scenario));
            let unit = Target::ModelSize.unit(scratch);
            let max = solver::max_model_size(scratch);
            return max.value().map(|v| v as f64 * unit);
        }
    };
    solved.value().map(|v| v as f64)
}

const AXES: [Choice<SweepAxis>; 7] = [
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
        SweepAxis::Cp,
        "Context-parallel degree",
        "GPUs sharing each training sequence (long context).",
    ),
    opt(
        SweepAxis::Params,
        "Parameter count",
        "Model size; the shape is derived from the count.",
    ),
];

/// The chart, with the axis selector above it.
/// The legend's name for the edge at `x` (log10 of the axis value).
fn edge_label(scenario: &Scenario, axis: Axis, x: f64, unit: &str) -> String {
    // Under a serving engine the batch's edge is what its KV cache holds, not where the curve
    // meets the GPU line (`solver::max_fitting`); said as the headline says it.
    if axis == Axis::Batch && scenario.served_from_a_startup_kv_cache() {
        return format!("KV cache holds: {} {}", widgets::log10_label(x), unit);
    }
    let what = if axis.more_is_less() {
        "Smallest"
    } else {
        "Largest"
    };
    format!("{what} that fits: {} {}", widgets::log10_label(x), unit)
}

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
    let axis = axis_of(prefs.sweep_axis);
    let u = prefs.unit;
    let points = curve(scratch, scenario, axis, prefs);
    let base_points = baseline.map(|b| curve(scratch, b, axis, prefs));
    let cap = u.value(current.memory.capacity);
    let here = [
        widgets::log10(axis.get(scenario)),
        u.value(current.memory.gpu_total),
    ];
    let edge = boundary(scenario, scratch, axis).map(widgets::log10);
    let view = super::sweep_view::view(&points, cap, here, edge);
    let plot_h = (height - ui.spacing().interact_size.y - 6.0).max(80.0);
    let th = prefs.theme;
    // The batch counts the family's items (sequences, images, samples).
    let unit = if axis == Axis::Batch {
        crate::ui::family::view(scenario.model.family).items
    } else {
        axis.unit(scenario)
    };
    let edge_name = edge.map(|x| edge_label(scenario, axis, x, unit));
    let mut items = Vec::with_capacity(5);
    if base_points.is_some() {
        items.push((theme::baseline(th), "Baseline".to_owned()));
    }
    items.push((
        theme::current(th),
        "Per-GPU peak (diamond: this scenario)".to_owned(),
    ));
    items.push((theme::capacity(th), "GPU memory".to_owned()));
    if let Some(name) = &edge_name {
        items.push((theme::good(th), name.clone()));
    }
    let legend = ("Sweep", theme::legend_min_size(prefs));
    super::with_legend(ui, legend, plot_h, &items, |ui, plot_h| {
        let shown = frame(ui, prefs, axis, unit, view, plot_h).show(ui, |plot_ui| {
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
            if let (Some(x), Some(name)) = (edge, &edge_name) {
                plot_ui.vline(
                    VLine::new(name.as_str(), x)
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
        super::marker_node(ui, "Sweep", &shown.transform, here, 8.0);
        let plot = *shown.transform.frame();
        crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Plot, "Sweep", plot);
    });
}

/// The plot: log x axis of `axis` over the view's window, memory y axis from 0 to its top, hover
/// with units.
fn frame<'a>(
    ui: &Ui,
    prefs: &Prefs,
    axis: Axis,
    unit: &'static str,
    view: View,
    height: f32,
) -> Plot<'a> {
    let u = prefs.unit;
    // Room for the current point's marker at either end.
    let pad = (view.x.1 - view.x.0) * 0.03;
    static_plot(ui, "sweep", height)
        .y_grid_spacer(super::readable_marks(ui))
        .x_axis_label(format!("{} ({unit})", axis.label()))
        .reset()
        .default_x_bounds(view.x.0 - pad, view.x.1 + pad)
        .default_y_bounds(0.0, view.y_max)
        .y_axis_min_width(ui.text_style_height(&egui::TextStyle::Body) * 4.0)
        // Room for a four-digit count ("1000") and a space beside its neighbour.
        .x_grid_spacer(widgets::log10_marks(
            ui.text_style_height(&egui::TextStyle::Body) * 3.0,
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::validate::validate;

    #[test]
    fn every_sample_is_a_valid_scenario() {
        let mut s = Scenario::default();
        s.inference.dynamic_batching = true;
        let mut xs = Vec::new();
        for choice in SweepAxis::ALL {
            let axis = axis_of(choice);
            samples(&s, axis, &mut xs);
            assert!(xs.len() >= 7, "{axis:?}: {xs:?}");
            for &x in &xs {
                let mut moved = s.clone();
                axis.set(&mut moved, x);
                assert_eq!(validate(&moved), Vec::new(), "{axis:?} = {x}");
            }
        }
    }
}
