//! "Make it fit": when the scenario does not fit, the solver's cheapest fitting alternatives, each
//! with what changes and what it costs; one click applies one (undoable like any edit).

use egui::{RichText, Ui};

use super::{Prefs, theme};
use crate::estimator::solver::FitResult;
use crate::scenario::Scenario;
use crate::units::fmt_seconds;

/// Lists the suggestions; returns the scenario to apply when one is chosen.
pub fn ui(ui: &mut Ui, prefs: &Prefs, result: &FitResult) -> Option<Scenario> {
    if result.already_fits {
        return None;
    }
    let mut chosen = None;
    let n = result.suggestions.len();
    let title = format!(
        "Make it fit: {n} suggestion{}",
        if n == 1 { "" } else { "s" }
    );
    // Presentation mode is chart-first: the list starts collapsed (its own open state, so that
    // leaving presentation mode does not close the list at the desk) and scrolls when open.
    let (salt, max_h) = if prefs.presentation {
        ("make_it_fit_presentation", ui.available_height() * 0.3)
    } else {
        ("make_it_fit", f32::INFINITY)
    };
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .id_salt(salt)
        .default_open(!prefs.presentation)
        .show(ui, |ui| {
            egui::ScrollArea::vertical()
                .id_salt("make_it_fit_scroll")
                .max_height(max_h.max(60.0))
                .auto_shrink([false, true])
                .show(ui, |ui| list(ui, prefs, result, &mut chosen));
        });
    chosen
}

/// The suggestions, one line each with its Apply button.
fn list(ui: &mut Ui, prefs: &Prefs, result: &FitResult, chosen: &mut Option<Scenario>) {
    if result.suggestions.is_empty() {
        ui.label(format!(
            "Nothing in the searched space fits within {} GPUs (precision, optimizer, \
             checkpointing, ZeRO, offload, layout, micro-batch).",
            result.budget_gpus
        ));
        return;
    }
    for (i, s) in result.suggestions.iter().enumerate() {
        ui.horizontal_wrapped(|ui| {
            let apply = ui
                .button(format!("Apply {}", i + 1))
                .on_hover_text("Replace the scenario with this one (Ctrl+Z undoes it).");
            if apply.clicked() {
                *chosen = Some(s.scenario.clone());
            }
            let summary = format!(
                "{} — {} per step, {} GPUs, headroom {}",
                arrows(&s.changes.join("; ")),
                fmt_seconds(s.step_time_s),
                s.gpus,
                prefs.unit.format(s.headroom)
            );
            ui.label(RichText::new(summary).color(theme::good(prefs.theme)))
                .on_hover_text(if s.costs.is_empty() {
                    "No extra cost.".to_owned()
                } else {
                    arrows(&s.costs.join("\n"))
                });
        });
    }
}

/// The solver writes "none → 3"; the bundled UI font has no arrow glyph.
fn arrows(text: &str) -> String {
    text.replace('→', "->")
}
