//! Sensitivity ("tornado"): how much per-GPU memory each knob changes when moved one notch down or
//! up, largest first; hover gives the step-time change too. From `estimator::sensitivity`.

use egui::Ui;
use egui_plot::{AxisHints, Bar, BarChart, Corner, VLine};

use super::{legend, memory_tick, static_plot};
use crate::estimator::sensitivity::{Notch, Row, sensitivity};
use crate::scenario::Scenario;
use crate::ui::{Prefs, theme};
use crate::units::{fmt_seconds, fmt_sig};

fn bar(prefs: &Prefs, y: f64, knob: &'static str, up: bool, n: Notch) -> Bar {
    let dir = if up { "up" } else { "down" };
    let color = if up {
        theme::operating_points(prefs.theme)[0]
    } else {
        theme::current(prefs.theme)
    };
    let fits = if n.fits { "fits" } else { "does not fit" };
    let sign = if n.time_delta_s >= 0.0 { "+" } else { "−" };
    Bar::new(y, prefs.unit.value(n.memory_delta))
        .name(format!(
            "{knob}, one notch {dir}: step time {sign}{}, {fits}",
            fmt_seconds(n.time_delta_s.abs())
        ))
        .width(0.7)
        .fill(color)
        .stroke(egui::Stroke::new(1.0, theme::bar_outline(prefs.theme)))
}

pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, height: f32) {
    let s = sensitivity(scenario);
    let mut rows: Vec<Row> = s
        .rows
        .iter()
        .copied()
        .filter(|r| r.down.is_some() || r.up.is_some())
        .collect();
    // Largest at the top: the plot's y grows upwards, so sort ascending.
    rows.sort_by(|a, b| a.memory_span().total_cmp(&b.memory_span()));
    let labels: Vec<&'static str> = rows.iter().map(|r| r.knob.label()).collect();
    let u = prefs.unit;
    let down: Vec<Bar> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(bar(prefs, i as f64, r.knob.label(), false, r.down?)))
        .collect();
    let up: Vec<Bar> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(bar(prefs, i as f64, r.knob.label(), true, r.up?)))
        .collect();
    let fmt = move |b: &Bar, _: &BarChart| format!("{}\nmemory {}", b.name, signed(u, b.value));
    let n = labels.len();
    static_plot(ui, "sensitivity", height)
        .legend(legend(Corner::RightBottom))
        .reset()
        .include_y(-0.6)
        .include_y(n as f64 - 0.4)
        .show_grid([true, false])
        .custom_y_axes(vec![
            AxisHints::new_y()
                .label_spacing(12.0..=16.0)
                .min_thickness(ui.text_style_height(&egui::TextStyle::Body) * 9.0)
                .formatter(move |mark, _| {
                    let i = mark.value.round();
                    if (mark.value - i).abs() > 1e-6 || i < 0.0 {
                        return String::new();
                    }
                    labels
                        .get(i as usize)
                        .map_or_else(String::new, |l| (*l).to_owned())
                }),
        ])
        .y_grid_spacer(egui_plot::uniform_grid_spacer(|_| [1.0, 10.0, 100.0]))
        .custom_x_axes(vec![
            AxisHints::new_x()
                .label(format!("Change of per-GPU memory ({})", u.label()))
                .label_spacing(80.0..=100.0)
                .formatter(move |mark, _| memory_tick(u, mark.value)),
        ])
        .label_formatter(|_| None)
        .show(ui, |plot_ui| {
            plot_ui.bar_chart(
                BarChart::new("One notch down", down)
                    .horizontal()
                    .color(theme::current(prefs.theme))
                    .element_formatter(Box::new(fmt)),
            );
            plot_ui.bar_chart(
                BarChart::new("One notch up", up)
                    .horizontal()
                    .color(theme::operating_points(prefs.theme)[0])
                    .element_formatter(Box::new(fmt)),
            );
            plot_ui.vline(VLine::new("No change", 0.0).color(theme::capacity(prefs.theme)));
        });
}

/// `+1.5 GiB` / `−0.25 GiB`.
fn signed(u: crate::units::MemoryUnit, value: f64) -> String {
    let sign = if value >= 0.0 { "+" } else { "−" };
    format!("{sign}{} {}", fmt_sig(value.abs()), u.label())
}
