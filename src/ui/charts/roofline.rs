//! Bandwidth saturation: a log-log roofline (Williams et al. 2009) of the scenario's GPU — the memory
//! roof, the compute roof for the compute type and the ridge point — with the step's operating points.

use egui::Ui;
use egui_plot::{Line, LineStyle, MarkerShape, Points, VLine};

use super::static_plot;
use crate::estimator::{Estimate, performance};
use crate::scenario::Scenario;
use crate::ui::{Prefs, theme, widgets};
use crate::units::fmt_sig;

/// Arithmetic intensity range always shown, FLOP/byte (log10); widened to every operating point.
const X_RANGE: (f64, f64) = (-1.0, 4.0);

/// Decades of room right of the last tick, for its label.
const LABEL_ROOM: f64 = 0.35;

/// The x range (log10 FLOP/B) that holds [`X_RANGE`], the ridge and every point, with half a
/// decade of room on the right for the marker.
pub fn x_range(points: &[(&str, f64, f64)], ridge: Option<f64>) -> (f64, f64) {
    let logs = points
        .iter()
        .map(|p| p.1)
        .chain(ridge)
        .filter(|v| *v > 0.0)
        .map(f64::log10);
    logs.fold(X_RANGE, |(lo, hi), x| (lo.min(x - 0.5), hi.max(x + 0.5)))
}

/// Attainable TFLOP/s at arithmetic intensity `ai` (FLOP/B) under both roofs.
fn attainable(ai: f64, peak_tflops: f64, bw_gb_s: f64) -> f64 {
    (ai * bw_gb_s / 1e3).min(peak_tflops)
}

pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, height: f32) {
    // Without a sourced compute peak only the memory roof is drawn (no ridge, no flat roof).
    let known = est.performance.peak_known;
    let peak = if known {
        est.performance.peak.as_tflops()
    } else {
        f64::INFINITY
    };
    let bw = est.performance.bandwidth.as_gb_per_s();
    let ridge = (known && bw > 0.0 && peak > 0.0).then(|| peak * 1e3 / bw);
    let points = operating_points(est);
    let range = x_range(&points, ridge);
    let roof = roof_line(range, peak, bw);
    let th = prefs.theme;
    let items = legend_items(th, scenario, est, &points, ridge);
    let points: Vec<(&str, f64, f64)> = points
        .into_iter()
        .map(|(n, ai, t)| (n, ai, if known { t } else { attainable(ai, peak, bw) }))
        .collect();
    let marker = points
        .last()
        .map(|p| [widgets::log10(p.1), widgets::log10(p.2)]);
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let legend = ("Roofline", theme::legend_min_size(prefs));
    super::with_legend(ui, legend, height, &items, |ui, plot_h| {
        let shown = static_plot(ui, "roofline", plot_h)
            .include_x(range.0)
            // Room for the last decade's label ("10 k"), centred on its tick: else it is cut at
            // the plot's edge.
            .include_x(range.1 + LABEL_ROOM)
            .y_axis_min_width(body * 3.5)
            .x_grid_spacer(widgets::log10_marks(body * 3.0))
            .y_grid_spacer(widgets::log10_marks(body * super::LABEL_GAP))
            .x_axis_label("Arithmetic intensity (FLOP per byte)")
            .y_axis_label("TFLOP/s")
            .x_axis_formatter(|m, _| widgets::log10_label(m.value))
            .y_axis_formatter(|m, _| widgets::log10_label(m.value))
            .label_formatter(hover_label)
            .show(ui, |plot_ui| {
                plot_ui.line(
                    Line::new("roof", roof)
                        .color(theme::roof(prefs.theme))
                        .width(2.5),
                );
                if let Some(r) = ridge {
                    plot_ui.vline(
                        VLine::new("ridge", widgets::log10(r))
                            .color(theme::baseline(prefs.theme))
                            .style(LineStyle::dotted_dense()),
                    );
                }
                for (i, &(name, ai, tflops)) in points.iter().enumerate() {
                    let color = theme::operating_points(th)[i % 4];
                    plot_ui.points(
                        Points::new(name, vec![[widgets::log10(ai), widgets::log10(tflops)]])
                            .shape(MarkerShape::Circle)
                            .filled(true)
                            .radius(6.0)
                            .color(color),
                    );
                }
            });
        if let Some(at) = marker {
            super::marker_node(ui, "Roofline", &shown.transform, at, 7.0);
        }
        for (name, ai, tflops) in &points {
            let at = [widgets::log10(*ai), widgets::log10(*tflops)];
            super::marker_node(ui, &format!("Roofline {name}"), &shown.transform, at, 7.0);
        }
    });
}

/// The hover text at a plot position: intensity and TFLOP/s, back from their logs.
fn hover_label(pos: &egui_plot::HoverPosition<'_>) -> Option<String> {
    let p = match pos {
        egui_plot::HoverPosition::NearDataPoint { position, .. } => position,
        egui_plot::HoverPosition::Elsewhere { position } => position,
    };
    Some(format!(
        "intensity {} FLOP/B\n{} TFLOP/s",
        fmt_sig(10f64.powf(p.x)),
        fmt_sig(10f64.powf(p.y))
    ))
}

/// "Roof: 989 TFLOP/s BF16, 3350 GB/s" (the GPU is named in the headline and the architecture
/// chart), or "no sourced BF16 peak" when the catalog has no compute peak for this GPU and type
/// (then only the memory roof is drawn).
fn roof_name(scenario: &Scenario, est: &Estimate) -> String {
    let dtype = performance::compute_dtype(scenario);
    let bw = est.performance.bandwidth.as_gb_per_s();
    let compute = if est.performance.peak_known {
        format!(
            "{} TFLOP/s {}",
            fmt_sig(est.performance.peak.as_tflops()),
            dtype.label()
        )
    } else {
        format!("no sourced {} peak", dtype.label())
    };
    format!("Roof: {compute}, {} GB/s", fmt_sig(bw))
}

/// The roof over `range` (log10 FLOP/B), as plot points (log10 TFLOP/s).
fn roof_line(range: (f64, f64), peak: f64, bw: f64) -> Vec<[f64; 2]> {
    let steps = 60;
    (0..=steps)
        .map(|i| {
            let x = range.0 + (range.1 - range.0) * f64::from(i) / f64::from(steps);
            [x, widgets::log10(attainable(10f64.powf(x), peak, bw))]
        })
        .collect()
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

/// The legend under the plot: the roof, the ridge, then each operating point.
fn legend_items(
    th: crate::ui::ThemeChoice,
    scenario: &Scenario,
    est: &Estimate,
    points: &[(&str, f64, f64)],
    ridge: Option<f64>,
) -> Vec<(egui::Color32, String)> {
    let mut items = Vec::with_capacity(6);
    items.push((theme::roof(th), roof_name(scenario, est)));
    if let Some(r) = ridge {
        items.push((theme::baseline(th), format!("Ridge {} FLOP/B", fmt_sig(r))));
    }
    let bw = est.performance.bandwidth.as_gb_per_s();
    for (i, (name, ai, tflops)) in points.iter().enumerate() {
        let color = theme::operating_points(th)[i % 4];
        let rate = if est.performance.peak_known {
            format!("{} TFLOP/s", fmt_sig(*tflops))
        } else {
            // Memory-bound rate only: an upper bound, the compute peak being unknown.
            format!("≤ {} TFLOP/s (memory roof)", fmt_sig(ai * bw / 1e3))
        };
        items.push((color, format!("{name}: {} FLOP/B, {rate}", fmt_sig(*ai))));
    }
    items
}
