//! The controls panel: every input of a scenario, grouped and collapsible. Each control has a label,
//! a unit and a hover text (what it does; for a strategy, what it costs). Only the scenario is edited.

mod adapt;
mod blocks;
mod context_parallel;
mod engine;
mod engine_paste;
mod framework;
mod framework_stack;
mod hardware;
mod input;
mod llamacpp;
mod model;
mod optimizer;
mod post_training;
mod serving;
mod strategies;
mod timing_parts;
mod towers;
mod workload;

use egui::{CollapsingHeader, RichText, Ui};

use super::{Prefs, theme};
use crate::estimator::{Diagnostic, Estimate};
use crate::scenario::Scenario;

/// Draws all groups into a scrolling panel.
pub fn ui(ui: &mut Ui, s: &mut Scenario, est: &Estimate, prefs: &Prefs) {
    ui.spacing_mut().slider_width = if prefs.presentation { 200.0 } else { 130.0 };
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            group(ui, "Scenario", false, |ui| document_ui(ui, s));
            group(ui, "Model", true, |ui| model::ui(ui, s, est));
            group(ui, "Workload", true, |ui| workload::ui(ui, s));
            if s.mode == crate::scenario::Mode::Inference {
                group(ui, "Serving features", false, |ui| serving::ui(ui, s));
                group(ui, "Serving engine", true, |ui| engine::ui(ui, s, est));
            }
            group(ui, "Mixture of experts", false, |ui| adapt::moe_ui(ui, s));
            group(ui, "Fine-tuning and quantization", false, |ui| {
                adapt::peft_ui(ui, s);
                adapt::quantization_ui(ui, s);
            });
            if s.mode == crate::scenario::Mode::Training {
                group(ui, "Post-training", false, |ui| post_training::ui(ui, s));
            }
            group(ui, "Framework", false, |ui| framework::ui(ui, s));
            group(ui, "Input pipeline", false, |ui| input::ui(ui, s));
            group(ui, "Precision", false, |ui| workload::precision_ui(ui, s));
            group(ui, "Optimizer", false, |ui| optimizer::ui(ui, s));
            group(ui, "Strategies", true, |ui| strategies::ui(ui, s));
            group(ui, "Parallelism", true, |ui| {
                strategies::parallel_ui(ui, s);
                inline_diagnostics(ui, est, prefs, Diagnostic::concerns_layout);
            });
            group(ui, "Hardware", true, |ui| hardware::ui(ui, s, prefs));
            group(ui, "Overheads", false, |ui| hardware::overheads_ui(ui, s));
            group(ui, "Timing", false, |ui| {
                hardware::timing_ui(ui, s);
                timing_parts::ui(ui, s);
            });
        });
}

/// The scenario's name and notes (saved in the file; notes are the hover text of a preset).
fn document_ui(ui: &mut Ui, s: &mut Scenario) {
    let label = ui.label("Name");
    ui.add(egui::TextEdit::singleline(&mut s.name).desired_width(f32::INFINITY))
        .labelled_by(label.id)
        .on_hover_text("Shown in the title bar and saved in the file.");
    let label = ui.label("Notes");
    ui.add(
        egui::TextEdit::multiline(&mut s.notes)
            .desired_rows(3)
            .desired_width(f32::INFINITY),
    )
    .labelled_by(label.id)
    .on_hover_text("What the scenario is for and where its numbers come from.");
}

fn group(ui: &mut Ui, title: &str, open: bool, add: impl FnOnce(&mut Ui)) {
    CollapsingHeader::new(RichText::new(title).strong())
        .default_open(open)
        .show(ui, add);
}

fn inline_diagnostics(ui: &mut Ui, est: &Estimate, prefs: &Prefs, which: fn(Diagnostic) -> bool) {
    for d in est.diagnostics.iter().filter(|d| which(*d)) {
        ui.label(
            RichText::new(format!("Warning: {}", d.message()))
                .color(theme::severity(d.severity(), prefs.theme)),
        );
    }
}
