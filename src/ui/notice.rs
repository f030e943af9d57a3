//! Notices (errors and confirmations shown in the window, never silent) and the small modal dialogs:
//! typed path, unsaved changes, about, sources.

use egui::{Id, Modal, RichText};

use super::{Prefs, theme};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    Error,
}

/// Seconds a confirmation ("Saved…", "Exported…") stays on screen; errors stay until dismissed.
pub const INFO_SECONDS: f64 = 6.0;

/// A message in the window's corner. Errors put the message first and the path last and stay until
/// dismissed; confirmations expire after [`INFO_SECONDS`].
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub level: Level,
    pub text: String,
    /// The UI clock (`InputState::time`, s) when first drawn; set by [`notices_ui`].
    pub shown_at: Option<f64>,
}

impl Notice {
    pub fn info(text: impl Into<String>) -> Self {
        Notice {
            level: Level::Info,
            text: text.into(),
            shown_at: None,
        }
    }
    pub fn error(text: impl Into<String>) -> Self {
        Notice {
            level: Level::Error,
            text: text.into(),
            shown_at: None,
        }
    }

    /// Seconds left on screen at `now`, or None for a notice that stays until dismissed.
    fn remaining(&self, now: f64) -> Option<f64> {
        match self.level {
            Level::Error => None,
            Level::Info => Some(INFO_SECONDS - (now - self.shown_at.unwrap_or(now))),
        }
    }
}

/// Drops expired confirmations and draws the rest in the bottom-right corner of `area`, over the
/// charts (never pushing them); each has a dismiss button. An expiring notice asks for one repaint
/// when it is due (no busy loop).
pub fn notices_ui(ctx: &egui::Context, area: egui::Rect, prefs: &Prefs, notices: &mut Vec<Notice>) {
    let now = ctx.input(|i| i.time);
    for n in notices.iter_mut() {
        n.shown_at.get_or_insert(now);
    }
    notices.retain(|n| n.remaining(now).is_none_or(|left| left > 0.0));
    if let Some(next) = notices
        .iter()
        .filter_map(|n| n.remaining(now))
        .reduce(f64::min)
    {
        ctx.request_repaint_after(std::time::Duration::from_secs_f64(next.max(0.0)));
    }
    if notices.is_empty() {
        return;
    }
    let mut dismiss = None;
    egui::Area::new(Id::unique("notices"))
        .order(egui::Order::Foreground)
        .pivot(egui::Align2::RIGHT_BOTTOM)
        .fixed_pos(area.right_bottom() - egui::vec2(12.0, 12.0))
        .show(ctx, |ui| {
            ui.set_max_width((area.width() * 0.6).max(200.0));
            egui::Frame::popup(ui.style()).show(ui, |ui| {
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
            });
        });
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
