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
    let title = format!("Make it fit ({} suggestions)", result.suggestions.len());
    egui::CollapsingHeader::new(RichText::new(title).strong())
        .id_salt("make_it_fit")
        .default_open(true)
        .show(ui, |ui| {
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
                        chosen = Some(s.scenario.clone());
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
        });
    chosen
}

/// The solver writes "none → 3"; the bundled UI font has no arrow glyph.
fn arrows(text: &str) -> String {
    text.replace('→', "->")
}
