//! The central area: headline, diagnostics and the four charts. Normal mode is a 2 × 2 grid;
//! presentation mode puts the memory chart and the sweep first, large, and the rest below.

use egui::Ui;

use super::charts::{self, architecture, composition, roofline, sweep};
use super::{Prefs, headline};
use crate::estimator::solver::{self, FitCache, FitOptions};
use crate::estimator::{Estimate, estimate};
use crate::scenario::Scenario;

/// Smallest height a chart gets; below it the area scrolls instead of squashing.
const MIN_CHART: f32 = 200.0;

/// Draws the area; returns a scenario to adopt when the user applies a make-it-fit suggestion.
pub fn central(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    baseline: Option<&Scenario>,
    scratch: &mut Scenario,
    fit: &mut FitCache,
) -> Option<Scenario> {
    let current = estimate(scenario);
    let base = baseline.map(|b| (b, estimate(b)));
    let largest = |s: &Scenario| {
        solver::max_micro_batch(s)
            .value()
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    };
    let cur_batch = largest(scenario);
    let base_batch = base.as_ref().map(|(b, _)| largest(b));
    let cur_col = headline::Column {
        title: "Current",
        estimate: &current,
        largest_batch: cur_batch,
    };
    let base_col = base
        .as_ref()
        .zip(base_batch)
        .map(|((_, e), batch)| headline::Column {
            title: "Baseline",
            estimate: e,
            largest_batch: batch,
        });
    headline::ui(ui, prefs, &cur_col, base_col.as_ref());
    headline::diagnostics_ui(ui, prefs, &current);
    // The search runs only when the scenario changed (memoized on the scenario itself).
    let adopt = if current.memory.fits {
        None
    } else {
        super::fit::ui(ui, prefs, fit.get(scenario, FitOptions::default()))
    };
    super::fit::quant_ui(ui, prefs, scenario);
    ui.separator();
    let base_est = base.as_ref().map(|(_, e)| e);
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            let h = ((ui.available_height() - 2.0 * title_height(ui)) / 2.0 - 12.0).max(MIN_CHART);
            let body = ui.text_style_height(&egui::TextStyle::Body);
            let tornado_h = (body * 1.6 * 12.0 + 60.0).max(MIN_CHART);
            if prefs.presentation {
                presentation(
                    ui, prefs, scenario, &current, baseline, base_est, scratch, h,
                );
            } else {
                grid(
                    ui, prefs, scenario, &current, baseline, base_est, scratch, h,
                );
            }
            ui.separator();
            charts::title(
                ui,
                "Sensitivity: what one notch of each knob changes",
                "How much per-GPU memory each knob changes when moved one notch down or up, largest first; hover a bar for the step-time change.",
            );
            charts::sensitivity::ui(ui, prefs, scenario, tornado_h);
        });
    adopt
}

fn title_height(ui: &Ui) -> f32 {
    ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y
}

#[allow(clippy::too_many_arguments)]
fn grid(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    base_est: Option<&Estimate>,
    scratch: &mut Scenario,
    h: f32,
) {
    ui.columns(2, |cols| {
        let [left, right] = cols else { return };
        memory_chart(left, prefs, scenario, current, base_est, h);
        roofline_chart(right, prefs, scenario, current, h);
    });
    ui.columns(2, |cols| {
        let [left, right] = cols else { return };
        architecture_chart(left, prefs, scenario, current, scratch);
        sweep_chart(right, prefs, scenario, current, baseline, scratch, h);
    });
}

#[allow(clippy::too_many_arguments)]
fn presentation(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    base_est: Option<&Estimate>,
    scratch: &mut Scenario,
    h: f32,
) {
    let big = (h * 1.5).max(MIN_CHART);
    ui.columns(2, |cols| {
        let [left, right] = cols else { return };
        memory_chart(left, prefs, scenario, current, base_est, big);
        sweep_chart(right, prefs, scenario, current, baseline, scratch, big);
    });
    ui.separator();
    ui.columns(2, |cols| {
        let [left, right] = cols else { return };
        roofline_chart(left, prefs, scenario, current, h);
        architecture_chart(right, prefs, scenario, current, scratch);
    });
}

fn memory_chart(
    ui: &mut Ui,
    prefs: &Prefs,
    scenario: &Scenario,
    current: &Estimate,
    base: Option<&Estimate>,
    h: f32,
) {
    charts::title(
        ui,
        &format!("Per-GPU memory by component ({})", prefs.unit.label()),
        "Stacked in a fixed order, one bar per phase of the step (“(peak)” marks the phase that sets the peak); dashed line: the GPU's memory.",
    );
    composition::ui(ui, prefs, scenario, current, base, h);
}

fn roofline_chart(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, current: &Estimate, h: f32) {
    charts::title(
        ui,
        "Roofline: compute vs memory bandwidth (log–log)",
        "Attainable FLOP/s against arithmetic intensity (FLOP per byte moved). Left of the ridge a step is memory-bound.",
    );
    roofline::ui(ui, prefs, scenario, current, h);
}

fn architecture_chart(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    scratch: &mut Scenario,
) {
    charts::title(
        ui,
        "Architectures: this scenario on other GPUs",
        "Memory, bandwidth and latency per GPU, each with its own scale, and whether this scenario fits.",
    );
    let _ = (current, scratch);
    architecture::ui(ui, prefs, scenario);
}

fn sweep_chart(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    scratch: &mut Scenario,
    h: f32,
) {
    charts::title(
        ui,
        &format!(
            "Sweep: per-GPU memory ({}) against one input",
            prefs.unit.label()
        ),
        "Everything else as set; the dotted line marks where it stops (or starts) fitting.",
    );
    sweep::ui(ui, prefs, scenario, current, baseline, scratch, h);
}
