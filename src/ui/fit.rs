//! "Make it fit": when the scenario does not fit, the solver's cheapest fitting alternatives, each
//! with what changes and what it costs; one click applies one (undoable like any edit).

use egui::{RichText, Ui};

use super::widgets::fmt_count;
use super::{Prefs, theme};
use crate::estimator::solver::{
    FitResult, NOT_GGUF, QuantFit, Solved, not_under_llamacpp, quant_fit,
};
use crate::scenario::{Mode, Scenario};
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
                "{} — {} per step, {} ({:.1} GPU-h per step), headroom {}",
                arrows(&s.changes.join("; ")),
                fmt_seconds(s.step_time_s),
                crate::format::plural(s.gpus, "GPU", "GPUs"),
                s.gpu_seconds / 3600.0,
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

/// "Which quantization fits?" for inference: every weight format on this GPU with its weight
/// bytes, whether it fits and the longest prompt that does (`solver::quant_fit`). A toggle in the
/// status band opens the table in its own window (over the charts, never pushing them); the nine
/// estimates and context solves run only while it is open. Under llama.cpp the rows are GGUF file
/// types (the scenario's first) and the formats llama.cpp does not load are named below; on a CPU
/// build (`-dev none`) the columns are the host's buffers, with no GPU to fit.
pub fn quant_ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario) {
    if scenario.mode != Mode::Inference {
        return;
    }
    let id = egui::Id::unique("quant_fit_open");
    let mut open = ui.data(|d| d.get_temp::<bool>(id)).unwrap_or(false);
    let title = "Which quantization fits?";
    ui.toggle_value(&mut open, RichText::new(title).strong())
        .on_hover_text(
            "Every weight format on this GPU, other inputs as set: weight memory, whether the \
             scenario fits, and the longest prompt that fits (generated tokens kept).",
        );
    if open {
        egui::Window::new(title)
            .id(id.with("window"))
            .open(&mut open)
            .resizable(true)
            .default_width(560.0)
            .show(ui.ctx(), |ui| {
                let rows = quant_fit(scenario);
                let host = rows.iter().any(|r| r.host_total.is_some());
                let heads = if host {
                    ["Format", "Bits/weight", "Host weights", "Host total", "Max prompt"]
                } else {
                    ["Format", "Bits/weight", "Weights", "Fits", "Max prompt"]
                };
                egui::Grid::new("quant_fit_table")
                    .striped(true)
                    .num_columns(5)
                    .show(ui, |ui| {
                        for head in heads {
                            ui.label(RichText::new(head).strong());
                        }
                        ui.end_row();
                        for r in &rows {
                            quant_row(ui, prefs, r);
                        }
                    });
                if host {
                    ui.label("CPU build (-dev none): host memory, no GPU used; no host capacity to fit against.");
                }
                if scenario.runs_on_llamacpp() {
                    ui.label(RichText::new("Not applicable under llama.cpp:").strong());
                    for f in NOT_GGUF {
                        ui.label(format!("{}: {}", f.label(), not_under_llamacpp(f)));
                    }
                }
            });
    }
    ui.data_mut(|d| d.insert_temp(id, open));
}

fn quant_row(ui: &mut Ui, prefs: &Prefs, r: &QuantFit) {
    let current = r.as_stored;
    let name = RichText::new(r.label());
    let name = if current { name.strong() } else { name };
    let native = match r.native {
        Some(true) => " (native)",
        Some(false) => " (emulated)",
        None => "",
    };
    ui.label(name).on_hover_text(if current {
        format!("The scenario's format{native}.")
    } else {
        format!("Weight format{native}.")
    });
    ui.label(
        r.bits_per_weight
            .map_or_else(|| "dtype".to_owned(), |b| format!("{b:.2}")),
    );
    ui.label(prefs.unit.format(r.weights));
    if let Some(host) = r.host_total {
        ui.label(prefs.unit.format(host));
    } else {
        fits_cell(ui, prefs, r.fits);
    }
    ui.label(match r.max_context {
        Solved::Found(v) => format!("{} tokens", fmt_count(v as f64)),
        Solved::AtLimit(v) => format!(">= {} tokens", fmt_count(v as f64)),
        Solved::NoneFits => "none".to_owned(),
        Solved::NotApplicable => "—".to_owned(),
    });
    ui.end_row();
}

fn fits_cell(ui: &mut Ui, prefs: &Prefs, fits: bool) {
    let (mark, color) = if fits {
        ("yes", theme::good(prefs.theme))
    } else {
        ("no", theme::bad(prefs.theme))
    };
    ui.label(RichText::new(mark).color(color));
}
