//! The menu bar: File, Edit, View, Presets, Help. Returns the commands chosen; view preferences are
//! edited in place. Every shortcut is shown next to its item.

use std::path::PathBuf;

use egui::{Button, KeyboardShortcut, Ui};

use super::{Prefs, ThemeChoice};
use crate::app::commands::{self, Command};
use crate::presets;
use crate::units::MemoryUnit;

/// What the menus need to know to enable and label their items.
pub struct MenuState<'a> {
    pub prefs: &'a mut Prefs,
    pub recent: &'a [PathBuf],
    pub can_undo: bool,
    pub can_redo: bool,
    pub baseline_pinned: bool,
    pub has_path: bool,
}

fn item(ui: &mut Ui, label: &str, shortcut: Option<&KeyboardShortcut>, enabled: bool) -> bool {
    let mut button = Button::new(label);
    if let Some(s) = shortcut {
        button = button.shortcut_text(ui.ctx().format_shortcut(s));
    }
    ui.add_enabled(enabled, button).clicked()
}

pub fn ui(ui: &mut Ui, st: MenuState<'_>, out: &mut Vec<Command>) {
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| file_menu(ui, &st, out));
        ui.menu_button("Edit", |ui| edit_menu(ui, &st, out));
        ui.menu_button("View", |ui| view_menu(ui, st.prefs, out));
        ui.menu_button("Presets", |ui| presets_menu(ui, out));
        ui.menu_button("Help", |ui| {
            if item(ui, "About VRAM Explorer", None, true) {
                out.push(Command::About);
            }
            if item(ui, "Where the formulas come from", None, true) {
                out.push(Command::Sources);
            }
            if item(ui, "Seed article claims…", None, true) {
                out.push(Command::Claims);
            }
        });
    });
}

fn file_menu(ui: &mut Ui, st: &MenuState<'_>, out: &mut Vec<Command>) {
    let entries: [(&str, Option<&KeyboardShortcut>, Command); 3] = [
        ("New", Some(&commands::NEW), Command::New),
        ("Open…", Some(&commands::OPEN), Command::Open),
        ("Open path…", None, Command::OpenTyped),
    ];
    for (label, shortcut, cmd) in entries {
        if item(ui, label, shortcut, true) {
            out.push(cmd);
        }
    }
    ui.menu_button("Open recent", |ui| {
        if st.recent.is_empty() {
            ui.label("No recent files");
        }
        for path in st.recent {
            let name = path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            if ui
                .button(name)
                .on_hover_text(path.display().to_string())
                .clicked()
            {
                out.push(Command::OpenPath(path.clone()));
            }
        }
        if !st.recent.is_empty() && item(ui, "Clear recent files", None, true) {
            out.push(Command::ClearRecent);
        }
    });
    ui.separator();
    if item(ui, "Save", Some(&commands::SAVE), true) {
        out.push(Command::Save);
    }
    if item(ui, "Save as…", Some(&commands::SAVE_AS), true) {
        out.push(Command::SaveAs);
    }
    if item(ui, "Save to path…", None, true) {
        out.push(Command::SaveTyped);
    }
    if item(ui, "Export PNG…", None, true) {
        out.push(Command::ExportPng);
    }
    if item(ui, "Export report (Markdown + CSV)…", None, true) {
        out.push(Command::ExportReport);
    }
    ui.separator();
    if item(ui, "Import model config.json…", None, true) {
        out.push(Command::ImportConfig);
    }
    if item(ui, "Count parameters from safetensors…", None, true) {
        out.push(Command::ImportCheckpoint);
    }
    ui.separator();
    if item(ui, "Quit", Some(&commands::QUIT), true) {
        out.push(Command::Quit);
    }
    let _ = st.has_path;
}

fn edit_menu(ui: &mut Ui, st: &MenuState<'_>, out: &mut Vec<Command>) {
    if item(ui, "Undo", Some(&commands::UNDO), st.can_undo) {
        out.push(Command::Undo);
    }
    if item(ui, "Redo", Some(&commands::REDO), st.can_redo) {
        out.push(Command::Redo);
    }
    ui.separator();
    if item(ui, "Pin as baseline", Some(&commands::PIN), true) {
        out.push(Command::PinBaseline);
    }
    if item(ui, "Clear baseline", None, st.baseline_pinned) {
        out.push(Command::ClearBaseline);
    }
    ui.separator();
    if item(ui, "Copy breakdown as CSV", None, true) {
        out.push(Command::CopyBreakdown);
    }
}

fn view_menu(ui: &mut Ui, prefs: &mut Prefs, out: &mut Vec<Command>) {
    ui.label("Theme");
    ui.radio_value(&mut prefs.theme, ThemeChoice::Dark, "Dark");
    ui.radio_value(&mut prefs.theme, ThemeChoice::Light, "Light");
    ui.separator();
    ui.label("Memory unit");
    ui.radio_value(&mut prefs.unit, MemoryUnit::GiB, "GiB (2^30 bytes)");
    ui.radio_value(&mut prefs.unit, MemoryUnit::GB, "GB (10^9 bytes)");
    ui.separator();
    let present = if prefs.presentation {
        "[x] Presentation mode"
    } else {
        "Presentation mode"
    };
    if item(ui, present, Some(&commands::PRESENT), true) {
        out.push(Command::TogglePresentation);
    }
    let controls = if prefs.controls_in_presentation {
        "[x] Controls in presentation"
    } else {
        "Controls in presentation"
    };
    if item(ui, controls, Some(&commands::CONTROLS), prefs.presentation) {
        out.push(Command::ToggleControls);
    }
}

fn presets_menu(ui: &mut Ui, out: &mut Vec<Command>) {
    let library = presets::bundled();
    let mut group = "";
    for (i, p) in library.iter().enumerate() {
        if p.group != group {
            if !group.is_empty() {
                ui.separator();
            }
            group = p.group;
            ui.label(egui::RichText::new(group).strong());
        }
        let notes = if p.notes.is_empty() {
            "No notes."
        } else {
            p.notes.as_str()
        };
        if ui.button(&p.name).on_hover_text(notes).clicked() {
            out.push(Command::LoadPreset(i));
        }
    }
}
