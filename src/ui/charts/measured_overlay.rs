//! A measured run drawn over the estimate: a snapshot's allocated (solid) and reserved (dashed)
//! bytes over the timeline, its step aligned phase against phase with the estimated one where its
//! frames mark the phases, else stretched over it (`measured::align`, which the x axis names); a
//! light measurement as
//! labelled horizontal lines, each saying which statistic it is, on the timeline and on the
//! composition chart.

use egui_plot::{HLine, Line, LineStyle, PlotPoint, PlotUi, Text};

use super::memory_tick;
use crate::estimator::timeline::Timeline;
use crate::measured::align::Aligned;
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

/// Over the estimated timeline `est` (with the placement of a snapshot's points, `measured::align`).
pub fn timeline(
    plot_ui: &mut PlotUi<'_>,
    prefs: &Prefs,
    m: &Measurement,
    (est, aligned): (&Timeline, Option<&Aligned>),
) {
    let u = prefs.unit;
    let color = theme::measured(prefs.theme);
    let n = est.points.len();
    match (m, aligned) {
        (Measurement::Snapshot(t), Some(a)) => {
            let at = |i: usize| t.points.get(i).copied().unwrap_or_default();
            let alloc: Vec<[f64; 2]> =
                a.xs.iter()
                    .map(|(x, i)| [*x, u.value(Bytes(at(*i).allocated))])
                    .collect();
            let reserved: Vec<[f64; 2]> =
                a.xs.iter()
                    .map(|(x, i)| [*x, u.value(Bytes(at(*i).reserved))])
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
            if let Some((x, _)) = a.xs.iter().find(|(_, i)| *i == t.peak_point) {
                let y = u.value(Bytes(at(t.peak_point).allocated));
                plot_ui.text(
                    Text::new(
                        "measured peak",
                        PlotPoint::new(x - 1.0, y),
                        format!("measured {}", memory_tick(u, y)),
                    )
                    .anchor(egui::Align2::RIGHT_TOP)
                    .color(color),
                );
            }
        }
        (Measurement::Light(l), _) => lines(plot_ui, prefs, l, n as f64 - 0.5),
        (Measurement::Snapshot(_), None) => {}
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
