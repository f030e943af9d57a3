//! Bandwidth saturation: a log-log roofline (Williams et al. 2009) of the scenario's GPU — the memory
//! roof, the compute roof for the compute type and the ridge point — with the step's operating points.

use egui::Ui;
use egui_plot::{Line, LineStyle, MarkerShape, Points, VLine};

use super::{legend, static_plot};
use crate::estimator::{Estimate, performance};
use crate::scenario::Scenario;
use crate::ui::{Prefs, theme, widgets};
use crate::units::fmt_sig;

/// Arithmetic intensity range of the plot, FLOP/byte (log10).
const X_RANGE: (f64, f64) = (-1.0, 4.0);

/// Attainable TFLOP/s at arithmetic intensity `ai` (FLOP/B) under both roofs.
fn attainable(ai: f64, peak_tflops: f64, bw_gb_s: f64) -> f64 {
    (ai * bw_gb_s / 1e3).min(peak_tflops)
}

pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, height: f32) {
    let gpu = scenario.gpu.spec();
    let dtype = performance::compute_dtype(scenario);
    let peak = est.performance.peak.as_tflops();
    let bw = est.performance.bandwidth.as_gb_per_s();
    let ridge = (bw > 0.0 && peak > 0.0).then(|| peak * 1e3 / bw);
    let steps = 60;
    let roof: Vec<[f64; 2]> = (0..=steps)
        .map(|i| {
            let x = X_RANGE.0 + (X_RANGE.1 - X_RANGE.0) * i as f64 / steps as f64;
            [x, widgets::log10(attainable(10f64.powf(x), peak, bw))]
        })
        .collect();
    let points = operating_points(est);
    static_plot("roofline", height)
        .legend(legend(egui_plot::Corner::RightBottom))
        .include_x(X_RANGE.0)
        .include_x(X_RANGE.1)
        .x_grid_spacer(widgets::log10_marks)
        .y_grid_spacer(widgets::log10_marks)
        .x_axis_label("Arithmetic intensity (FLOP per byte)")
        .y_axis_label("TFLOP/s")
        .x_axis_formatter(|m, _| widgets::log10_label(m.value))
        .y_axis_formatter(|m, _| widgets::log10_label(m.value))
        .label_formatter(|pos| {
            let p = match pos {
                egui_plot::HoverPosition::NearDataPoint { position, .. } => position,
                egui_plot::HoverPosition::Elsewhere { position } => position,
            };
            Some(format!(
                "intensity {} FLOP/B\n{} TFLOP/s",
                fmt_sig(10f64.powf(p.x)),
                fmt_sig(10f64.powf(p.y))
            ))
        })
        .show(ui, |plot_ui| {
            plot_ui.line(
                Line::new(
                    format!(
                        "{} roof ({} {}, {} GB/s)",
                        gpu.name,
                        fmt_sig(peak),
                        dtype.label(),
                        fmt_sig(bw)
                    ),
                    roof,
                )
                .color(theme::roof(prefs.theme))
                .width(2.5),
            );
            if let Some(r) = ridge {
                plot_ui.vline(
                    VLine::new(
                        format!("Ridge point {} FLOP/B", fmt_sig(r)),
                        widgets::log10(r),
                    )
                    .color(theme::baseline(prefs.theme))
                    .style(LineStyle::dotted_dense()),
                );
            }
            for (i, (name, ai, tflops)) in points.into_iter().enumerate() {
                let color = theme::OPERATING_POINTS[i % theme::OPERATING_POINTS.len()];
                plot_ui.points(
                    Points::new(
                        format!(
                            "{name}: {} FLOP/B, {} TFLOP/s",
                            fmt_sig(ai),
                            fmt_sig(tflops)
                        ),
                        vec![[widgets::log10(ai), widgets::log10(tflops)]],
                    )
                    .shape(MarkerShape::Circle)
                    .filled(true)
                    .radius(6.0)
                    .color(color),
                );
            }
        });
}

/// (phase name, arithmetic intensity FLOP/B, attainable TFLOP/s) of the step's phases.
fn operating_points(est: &Estimate) -> Vec<(&'static str, f64, f64)> {
    let p = &est.performance;
    [
        ("Training step", p.training),
        ("Optimizer update", p.optimizer),
        ("Prefill", p.prefill),
        ("Decode", p.decode),
    ]
    .into_iter()
    .filter_map(|(name, r)| {
        let r = r?;
        (r.intensity > 0.0).then(|| (name, r.intensity, r.attainable.as_tflops()))
    })
    .collect()
}
