//! The step's timeline (`estimator::timeline`): live tensor bytes at each point of the step, stacked
//! by component in `Component::ALL` order (one bar per point, no gaps), the phases as labelled
//! bands, the peak marked, and a measured run drawn over it (`measured_overlay.rs`).

use egui::Ui;
use egui_plot::{Bar, BarChart, PlotPoint, PlotUi, Polygon, Text};

use super::{memory_tick, static_plot};
use crate::estimator::timeline::Timeline;
use crate::estimator::{Component, Estimate};
use crate::measured::align::Aligned;
use crate::scenario::Scenario;
use crate::ui::a11y::{self, Part};
use crate::ui::{Prefs, measured_state, theme};

/// The two views of the memory chart, as a toggle in its header (kittest finds them by label).
pub fn toggle(ui: &mut Ui) -> bool {
    let mut on = measured_state::with(ui.ctx(), |s| s.timeline);
    let before = on;
    ui.selectable_value(&mut on, false, "Composition")
        .on_hover_text("One stacked bar per phase of the step.");
    ui.selectable_value(&mut on, true, "Timeline")
        .on_hover_text("Live bytes through the step, layer by layer, with a measured run over it.");
    if on != before {
        measured_state::with(ui.ctx(), |s| s.timeline = on);
    }
    on
}

/// One bar chart per component over the points, stacked.
fn stacked(prefs: &Prefs, t: &Timeline) -> Vec<BarChart> {
    let u = prefs.unit;
    let mut charts: Vec<BarChart> = Vec::new();
    for c in Component::ALL.into_iter().filter(|c| c.is_tensor()) {
        if t.points.iter().all(|p| p.bytes.get(c).get() <= 0.0) {
            continue;
        }
        let color = theme::component_on(c, prefs.theme);
        let bars = t
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Bar::new(i as f64, u.value(p.bytes.get(c)))
                    .name(p.step.label())
                    .width(1.0)
                    .fill(color)
                    .stroke(egui::Stroke::NONE)
            })
            .collect();
        let chart = BarChart::new(c.label(), bars)
            .color(color)
            .element_formatter(Box::new(|_, _| String::new()));
        let below: Vec<&BarChart> = charts.iter().collect();
        let chart = chart.stack_on(&below);
        charts.push(chart);
    }
    charts
}

/// Every other phase shaded, each labelled at the top (with its micro-batch when the step has
/// several); where micro-batches are left out, a line saying how many.
fn bands(plot_ui: &mut PlotUi<'_>, prefs: &Prefs, t: &Timeline, top: f64) {
    // Screen pixels per point of the step, and about one character's width.
    let px = plot_ui.transform().dpos_dvalue_x().abs();
    let char_px = f64::from(
        plot_ui
            .ctx()
            .global_style()
            .text_styles
            .get(&egui::TextStyle::Body)
            .map_or(14.0, |f| f.size),
    ) * 0.55;
    let mbs = t.micro_batch_spans();
    if let [(first, _, end), (last, _, _)] = mbs.as_slice()
        && last - first > 1
    {
        let x = *end as f64 - 0.5;
        let more = last - first - 1;
        plot_ui.vline(
            egui_plot::VLine::new("more micro-batches", x)
                .color(theme::capacity(prefs.theme))
                .style(egui_plot::LineStyle::dashed_loose()),
        );
        plot_ui.text(
            Text::new(
                "more micro-batches",
                PlotPoint::new(x, top * 0.55),
                format!("… {more} more micro-batches …"),
            )
            .anchor(egui::Align2::CENTER_CENTER)
            .color(theme::capacity(prefs.theme)),
        );
    }
    for (k, (phase, a, b)) in t.phase_spans().into_iter().enumerate() {
        let label = match t.points.get(a) {
            Some(p) if t.micro_batches > 1 && phase != crate::estimator::Phase::OptimizerStep => {
                format!("{} · mb {}", phase.label(), p.micro_batch)
            }
            _ => phase.label().to_owned(),
        };
        let (x0, x1) = (a as f64 - 0.5, b as f64 - 0.5);
        if k % 2 == 0 {
            let pts = vec![[x0, 0.0], [x1, 0.0], [x1, top], [x0, top]];
            plot_ui.polygon(
                Polygon::new(phase.label(), pts)
                    .fill_color(theme::band(prefs.theme))
                    .stroke(egui::Stroke::NONE)
                    .allow_hover(false),
            );
        }
        // A label wider than its band takes the short name, or none (they would overlap).
        let width = (x1 - x0) * px;
        let fits = |s: &str| s.chars().count() as f64 * char_px <= width;
        let label = if fits(&label) {
            label
        } else if fits(short(phase)) {
            short(phase).to_owned()
        } else {
            continue;
        };
        plot_ui.text(
            Text::new(phase.label(), PlotPoint::new((x0 + x1) / 2.0, top), label)
                .anchor(egui::Align2::CENTER_TOP)
                .color(theme::capacity(prefs.theme)),
        );
    }
}

/// A phase's name where its band is narrow.
fn short(p: crate::estimator::Phase) -> &'static str {
    use crate::estimator::Phase;
    match p {
        Phase::Forward => "fwd",
        Phase::LossBackward => "loss",
        Phase::Backward => "bwd",
        Phase::OptimizerStep => "opt",
        Phase::Prefill => "prefill",
        Phase::Decode => "decode",
        Phase::Generation => "gen",
        Phase::Scoring => "score",
    }
}

/// Draws the timeline of `scenario` (whose estimate is `est`) in `height` points.
pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, height: f32) {
    let measured = measured_state::loaded(ui.ctx());
    let (t, aligned) = super::timeline_cache::get(ui.ctx(), scenario, est, measured.as_ref());
    let t = t.as_ref();
    let u = prefs.unit;
    let est_top = t
        .points
        .iter()
        .map(|p| u.value(p.bytes.tensor_total()))
        .fold(0.0, f64::max);
    let meas_top = measured
        .as_deref()
        .map_or(0.0, |m| super::measured_overlay::top(&m.measurement, u));
    // Headroom for the phase names above the peak's label.
    let top = est_top.max(meas_top).max(1e-3) * 1.3;
    let mut items: Vec<(egui::Color32, String)> = Component::ALL
        .into_iter()
        .filter(|c| c.is_tensor() && t.points.iter().any(|p| p.bytes.get(*c).get() > 0.0))
        .map(|c| (theme::component_on(c, prefs.theme), c.label().to_owned()))
        .collect();
    if measured.is_some() {
        items.push((
            theme::measured(prefs.theme),
            "Measured (allocated solid, reserved dashed)".to_owned(),
        ));
    }
    super::with_legend(
        ui,
        ("Timeline", theme::legend_min_size(prefs)),
        height,
        &items,
        |ui, h| {
            draw(
                ui,
                prefs,
                t,
                (measured.as_deref(), aligned.as_deref()),
                (top, h),
            );
        },
    );
}

fn draw(
    ui: &mut Ui,
    prefs: &Prefs,
    t: &Timeline,
    (measured, aligned): (Option<&measured_state::Loaded>, Option<&Aligned>),
    (top, height): (f64, f32),
) {
    let u = prefs.unit;
    let n = t.points.len().max(1);
    let axis = match &aligned {
        Some(a) => format!("step, stage {} · {}", t.stage + 1, a.basis.describe()),
        None => format!("point of the step (pipeline stage {})", t.stage + 1),
    };
    let plot = static_plot(ui, "timeline", height)
        .default_y_bounds(0.0, top)
        .include_x(-0.5)
        .include_x(n as f64 - 0.5)
        .show_grid([false, true])
        .x_axis_label(axis)
        .y_axis_formatter(move |mark, _| memory_tick(u, mark.value))
        .label_formatter(move |pos| match pos {
            egui_plot::HoverPosition::NearDataPoint {
                plot_name,
                position,
                ..
            } => Some(format!("{plot_name}\n{}", memory_tick(u, position.y))),
            egui_plot::HoverPosition::Elsewhere { position } => Some(memory_tick(u, position.y)),
        });
    let shown = plot.show(ui, |plot_ui| {
        bands(plot_ui, prefs, t, top);
        for chart in stacked(prefs, t).into_iter().rev() {
            plot_ui.bar_chart(chart);
        }
        if let Some(i) = t.peak
            && let Some(p) = t.points.get(i)
        {
            let y = u.value(p.bytes.tensor_total());
            plot_ui.text(
                Text::new(
                    "peak",
                    PlotPoint::new(i as f64, y),
                    format!("peak {}", memory_tick(u, y)),
                )
                .anchor(egui::Align2::CENTER_BOTTOM)
                .color(theme::capacity(prefs.theme)),
            );
        }
        if let Some(m) = measured {
            super::measured_overlay::timeline(plot_ui, prefs, &m.measurement, (t, aligned));
        }
    });
    if let Some(i) = t.peak
        && let Some(p) = t.points.get(i)
    {
        let (x, y) = (i as f64, u.value(p.bytes.tensor_total()));
        let rect = shown
            .transform
            .rect_from_values(&PlotPoint::new(x - 0.5, 0.0), &PlotPoint::new(x + 0.5, y));
        a11y::rect_node(ui.ctx(), Part::Marker, "Timeline", rect);
    }
    a11y::rect_node(ui.ctx(), Part::Plot, "Timeline", *shown.transform.frame());
}
