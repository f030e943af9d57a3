//! Notices (errors and confirmations shown in the window, never silent) and the small modal dialogs:
//! typed path, unsaved changes, about, sources.

use egui::{Id, Modal, RichText, Ui};

use super::{Prefs, theme};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Error,
}

/// A message shown until dismissed. Errors put the message first and the path last.
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub level: Level,
    pub text: String,
}

impl Notice {
    pub fn info(text: impl Into<String>) -> Self {
        Notice {
            level: Level::Info,
            text: text.into(),
        }
    }
    pub fn error(text: impl Into<String>) -> Self {
        Notice {
            level: Level::Error,
            text: text.into(),
        }
    }
}

/// Draws the notices; each has a dismiss button.
pub fn notices_ui(ui: &mut Ui, prefs: &Prefs, notices: &mut Vec<Notice>) {
    let mut dismiss = None;
    for (i, n) in notices.iter().enumerate() {
        let (icon, color) = match n.level {
            Level::Info => ("", theme::note(prefs.theme)),
            Level::Error => ("Error:", theme::bad(prefs.theme)),
        };
        ui.horizontal_wrapped(|ui| {
            if ui
                .small_button("×")
                .on_hover_text("Dismiss this message")
                .clicked()
            {
                dismiss = Some(i);
            }
            ui.label(RichText::new(format!("{icon} {}", n.text)).color(color));
        });
    }
    if let Some(i) = dismiss {
        notices.remove(i);
    }
}

/// What the user did in a dialog this frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Pending,
    Ok,
    /// Secondary action ("Save" in the unsaved-changes dialog).
    Alternative,
    Cancel,
}

/// A prompt for a file path (the fallback when no native dialog is available).
pub fn path_prompt(ctx: &egui::Context, title: &str, text: &mut String) -> Answer {
    let mut answer = Answer::Pending;
    let modal = Modal::new(Id::unique("path_prompt")).show(ctx, |ui| {
        ui.set_width(520.0);
        ui.heading(title);
        ui.label("Type or paste the file path:");
        let edit = ui.add(
            egui::TextEdit::singleline(text)
                .desired_width(f32::INFINITY)
                .hint_text("/path/to/scenario.ron"),
        );
        let edit = edit.labelled_by(ui.label("File path").id);
        if !edit.has_focus() && text.is_empty() {
            edit.request_focus();
        }
        if edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter)) {
            answer = Answer::Ok;
        }
        ui.horizontal(|ui| {
            if ui.button("OK").clicked() {
                answer = Answer::Ok;
            }
            if ui.button("Cancel").clicked() {
                answer = Answer::Cancel;
            }
        });
    });
    if modal.should_close() && answer == Answer::Pending {
        answer = Answer::Cancel;
    }
    answer
}

/// "Unsaved changes" confirmation before something discards the document.
pub fn confirm_discard(ctx: &egui::Context, document: &str, action: &str) -> Answer {
    let mut answer = Answer::Pending;
    let modal = Modal::new(Id::unique("confirm_discard")).show(ctx, |ui| {
        ui.heading("Unsaved changes");
        ui.label(format!(
            "“{document}” has changes that are not saved. {action} anyway?"
        ));
        ui.horizontal(|ui| {
            if ui.button("Save first").clicked() {
                answer = Answer::Alternative;
            }
            if ui.button("Discard changes").clicked() {
                answer = Answer::Ok;
            }
            if ui.button("Cancel").clicked() {
                answer = Answer::Cancel;
            }
        });
    });
    if modal.should_close() && answer == Answer::Pending {
        answer = Answer::Cancel;
    }
    answer
}

/// A modal with a heading, text and a Close button; returns true when closed.
pub fn info_dialog(ctx: &egui::Context, title: &str, body: &str) -> bool {
    let mut close = false;
    let modal = Modal::new(Id::unique(("info", title))).show(ctx, |ui| {
        ui.set_max_width(560.0);
        ui.heading(title);
        ui.label(body);
        close |= ui.button("Close").clicked();
    });
    close || modal.should_close()
}

pub const ABOUT: &str = "VRAM Explorer estimates the per-GPU memory of a training or inference step, \
how fast it runs (roofline), and what another GPU or memory technology would change. \
Everything is recomputed from the scenario every frame; nothing is measured on your machine.";

pub const SOURCES: &str = "Every formula is written down with its source in docs/model.md: \
ZeRO (Rajbhandari et al. 2020) for sharded states, Korthikanti et al. 2022 for activations and \
selective recomputation, Chen et al. 2016 for checkpointing, the roofline of Williams et al. 2009, \
vendor datasheets for the GPU catalog (each entry names its document and confidence), and measured \
PyTorch/HF peaks for the accuracy tests.";
