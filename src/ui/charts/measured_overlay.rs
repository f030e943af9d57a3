//! A measured run drawn over the estimate: a snapshot's allocated (solid) and reserved (dashed)
//! bytes over the timeline, its recording stretched over the estimated step (event k of N at
//! k/(N−1) of the step: the snapshot has no layer marks to align on); a light measurement as
//! labelled horizontal lines, each saying which statistic it is, on the timeline and on the
//! composition chart.

use egui_plot::{HLine, Line, LineStyle, PlotPoint, PlotUi, Text};

use super::memory_tick;
use crate::measured::{LightMeasurement, Measurement};
use crate::ui::{Prefs, measured_state, theme};
use crate::units::{Bytes, MemoryUnit};

/// The largest measured value, in `u`.
pub fn top(m: &Measurement, u: MemoryUnit) -> f64 {
    match m {
        Measurement::Snapshot(t) => u.value(Bytes(t.reserved_peak.max(t.allocated_peak))),
        Measurement::Light(l) => l
            .values
            .iter()
            .map(|(_, v)| u.value(Bytes(*v)))
            .fold(0.0, f64::max),
    }
}

fn lines(plot_ui: &mut PlotUi<'_>, prefs: &Prefs, l: &LightMeasurement, right: f64) {
    let u = prefs.unit;
    let color = theme::measured(prefs.theme);
    for (s, v) in &l.values {
        let y = u.value(Bytes(*v));
        let name = format!("measured: {}", s.label());
        plot_ui.hline(
            HLine::new(name.clone(), y)
                .color(color)
                .style(LineStyle::dashed_loose())
                .width(2.0),
        );
        plot_ui.text(
            Text::new(
                name.clone(),
                PlotPoint::new(right, y),
                format!("{name} {}", memory_tick(u, y)),
            )
            .anchor(egui::Align2::RIGHT_BOTTOM)
            .color(color),
        );
    }
}

/// Over the timeline of `n` points.
pub fn timeline(plot_ui: &mut PlotUi<'_>, prefs: &Prefs, m: &Measurement, n: usize) {
    let u = prefs.unit;
    let color = theme::measured(prefs.theme);
    match m {
        Measurement::Snapshot(t) => {
            let last = t.points.last().map_or(1, |p| p.event.max(1)) as f64;
            let span = (n.max(1) - 1) as f64;
            let x = |e: usize| -0.5 + (e as f64 / last) * (span + 1.0);
            let alloc: Vec<[f64; 2]> = t
                .points
                .iter()
                .map(|p| [x(p.event), u.value(Bytes(p.allocated))])
                .collect();
            let reserved: Vec<[f64; 2]> = t
                .points
                .iter()
                .map(|p| [x(p.event), u.value(Bytes(p.reserved))])
                .collect();
            plot_ui.line(
                Line::new("measured allocated", alloc)
                    .color(color)
                    .width(2.5),
            );
            plot_ui.line(
                Line::new("measured reserved", reserved)
                    .color(color)
                    .style(LineStyle::dashed_dense())
                    .width(1.5),
            );
            if let Some(p) = t.points.get(t.peak_point) {
                let y = u.value(Bytes(p.allocated));
                plot_ui.text(
                    Text::new(
                        "measured peak",
                        PlotPoint::new(x(p.event) - 1.0, y),
                        format!("measured {}", memory_tick(u, y)),
                    )
                    .anchor(egui::Align2::RIGHT_CENTER)
                    .color(color),
                );
            }
        }
        Measurement::Light(l) => lines(plot_ui, prefs, l, n as f64 - 0.5),
    }
}

/// On the composition chart of `columns` bars: the measured statistics as lines (a snapshot as its
/// allocated and reserved peaks).
pub fn composition(plot_ui: &mut PlotUi<'_>, prefs: &Prefs, columns: usize) {
    let Some(m) = measured_state::loaded(plot_ui.ctx()) else {
        return;
    };
    let light = match &m.measurement {
        Measurement::Light(l) => l.clone(),
        Measurement::Snapshot(t) => LightMeasurement {
            values: vec![
                (crate::measured::Statistic::Allocated, t.allocated_peak),
                (crate::measured::Statistic::Reserved, t.reserved_peak),
            ],
        },
    };
    lines(plot_ui, prefs, &light, columns as f64 - 0.5);
}
