//! The central area: headline, diagnostics and the charts ([`Chart`]). Normal mode is a 2 × 2 grid;
//! presentation mode puts the memory chart and the sweep first, large, and the rest below; the
//! sensitivity chart spans the width under either.

use egui::Ui;

use super::charts::chart::{Chart, ChartCtx};
use super::{Prefs, headline};
use crate::estimator::solver::{self, FitCache, FitOptions};
use crate::estimator::{Estimate, estimate};
use crate::scenario::Scenario;

/// Smallest height a chart gets; below it the area scrolls instead of squashing.
const MIN_CHART: f32 = 200.0;

/// Charts side by side, and their height as a multiple of the normal chart height.
struct Row {
    charts: [Chart; 2],
    scale: f32,
}

/// Normal mode: a 2 × 2 grid.
const GRID: [Row; 2] = [
    Row {
        charts: [Chart::Memory, Chart::Roofline],
        scale: 1.0,
    },
    Row {
        charts: [Chart::Architecture, Chart::Sweep],
        scale: 1.0,
    },
];

/// Presentation mode: the memory chart and the sweep first, large.
const PRESENTATION: [Row; 2] = [
    Row {
        charts: [Chart::Memory, Chart::Sweep],
        scale: 1.5,
    },
    Row {
        charts: [Chart::Roofline, Chart::Architecture],
        scale: 1.0,
    },
];

/// Draws the area from the frame's one estimate of `scenario`; returns a scenario to adopt when
/// the user applies a make-it-fit suggestion.
pub fn central(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    scratch: &mut Scenario,
    fit: &mut FitCache,
) -> Option<Scenario> {
    let base = baseline.map(|b| (b, estimate(b)));
    let largest = |s: &Scenario| {
        solver::max_micro_batch(s)
            .value()
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    };
    let cur_col = headline::Column {
        title: "Current",
        estimate: current,
        largest_batch: largest(scenario),
    };
    let base_col = base.as_ref().map(|(b, e)| headline::Column {
        title: "Baseline",
        estimate: e,
        largest_batch: largest(b),
    });
    headline::ui(ui, prefs, &cur_col, base_col.as_ref());
    headline::diagnostics_ui(ui, prefs, current);
    // The search runs only when the scenario changed (memoized on the scenario itself).
    let adopt = if current.memory.fits {
        None
    } else {
        super::fit::ui(ui, prefs, fit.get(scenario, FitOptions::default()))
    };
    super::fit::quant_ui(ui, prefs, scenario);
    ui.separator();
    let mut cx = ChartCtx {
        prefs,
        scenario,
        estimate: current,
        baseline: base.as_ref().map(|(b, e)| (*b, e)),
        scratch,
        height: MIN_CHART,
    };
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let h = ((ui.available_height() - 2.0 * title_height(ui)) / 2.0 - 12.0).max(MIN_CHART);
            let (rows, separated) = if cx.prefs.presentation {
                (&PRESENTATION, true)
            } else {
                (&GRID, false)
            };
            for (i, row) in rows.iter().enumerate() {
                if separated && i > 0 {
                    ui.separator();
                }
                cx.height = (h * row.scale).max(MIN_CHART);
                ui.columns(2, |cols| {
                    for (col, chart) in cols.iter_mut().zip(row.charts) {
                        chart.ui(col, &mut cx);
                    }
                });
            }
            ui.separator();
            let body = ui.text_style_height(&egui::TextStyle::Body);
            cx.height = (body * 1.6 * 12.0 + 60.0).max(MIN_CHART);
            Chart::Sensitivity.ui(ui, &mut cx);
        });
    adopt
}

fn title_height(ui: &Ui) -> f32 {
    ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y
}
