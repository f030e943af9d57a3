//! The menu bar: File, Edit, View, Presets, Help. Every item is labelled from the command table
//! ([`super::commands`]) with its shortcut and hover text; what the user chose is returned as
//! [`Action`]s. View preferences are edited in place.

use std::path::PathBuf;

use egui::{Button, Ui};

use super::commands::{self, Action, CommandId as C};
use super::{ExportTheme, Prefs, ThemeChoice};
use crate::presets;
use crate::units::MemoryUnit;

/// What the menus need to know to enable and label their items.
pub struct MenuState<'a> {
    pub prefs: &'a mut Prefs,
    pub recent: &'a [PathBuf],
    pub can_undo: bool,
    pub can_redo: bool,
    pub baseline_pinned: bool,
}

/// A menu item from the table; pushes its command when clicked. `checked` marks a toggle's state.
fn item(ui: &mut Ui, id: C, enabled: bool, checked: Option<bool>, out: &mut Vec<Action>) {
    let Some(e) = commands::get(id) else {
        return;
    };
    let label = match checked {
        Some(true) => format!("[x] {}", e.label),
        _ => e.label.to_owned(),
    };
    let mut button = Button::new(label);
    if let Some(s) = e.shortcuts.first() {
        button = button.shortcut_text(ui.ctx().format_shortcut(s));
    }
    if ui
        .add_enabled(enabled, button)
        .on_hover_text(e.hover)
        .clicked()
    {
        out.push(Action::Run(id));
    }
}

pub fn ui(ui: &mut Ui, mut st: MenuState<'_>, out: &mut Vec<Action>) {
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| file_menu(ui, &mut st, out));
        ui.menu_button("Edit", |ui| edit_menu(ui, &st, out));
        ui.menu_button("View", |ui| view_menu(ui, st.prefs, out));
        ui.menu_button("Presets", |ui| presets_menu(ui, out));
        ui.menu_button("Help", |ui| {
            for id in [C::About, C::Sources, C::Claims] {
                item(ui, id, true, None, out);
            }
        });
    });
}

fn file_menu(ui: &mut Ui, st: &mut MenuState<'_>, out: &mut Vec<Action>) {
    for id in [C::New, C::Open, C::OpenTyped] {
        item(ui, id, true, None, out);
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
                out.push(Action::OpenPath(path.clone()));
            }
        }
        if !st.recent.is_empty() {
            item(ui, C::ClearRecent, true, None, out);
        }
    });
    ui.separator();
    for id in [
        C::Save,
        C::SaveAs,
        C::SaveTyped,
        C::ExportPng,
        C::ExportReport,
        C::ExportTimeline,
    ] {
        item(ui, id, true, None, out);
    }
    ui.menu_button("Slide images in", |ui| {
        let t = &mut st.prefs.export_theme;
        ui.radio_value(t, ExportTheme::AsShown, "The theme shown");
        ui.radio_value(t, ExportTheme::Light, "Light");
        ui.radio_value(t, ExportTheme::Dark, "Dark");
    });
    ui.separator();
    for id in [C::ImportConfig, C::ImportCheckpoint] {
        item(ui, id, true, None, out);
    }
    ui.separator();
    item(ui, C::Quit, true, None, out);
}

fn edit_menu(ui: &mut Ui, st: &MenuState<'_>, out: &mut Vec<Action>) {
    item(ui, C::Undo, st.can_undo, None, out);
    item(ui, C::Redo, st.can_redo, None, out);
    ui.separator();
    item(ui, C::PinBaseline, true, None, out);
    item(ui, C::ClearBaseline, st.baseline_pinned, None, out);
    ui.separator();
    item(ui, C::CopyBreakdown, true, None, out);
}

fn view_menu(ui: &mut Ui, prefs: &mut Prefs, out: &mut Vec<Action>) {
    ui.label("Theme");
    ui.radio_value(&mut prefs.theme, ThemeChoice::Dark, "Dark");
    ui.radio_value(&mut prefs.theme, ThemeChoice::Light, "Light");
    ui.separator();
    ui.label("Memory unit");
    ui.radio_value(&mut prefs.unit, MemoryUnit::GiB, "GiB (2^30 bytes)");
    ui.radio_value(&mut prefs.unit, MemoryUnit::GB, "GB (10^9 bytes)");
    ui.checkbox(
        &mut prefs.memory_zoom,
        format!(
            "Memory chart: {}",
            super::charts::composition::ZOOM.to_lowercase()
        ),
    )
    .on_hover_text(super::charts::composition::ZOOM_HOVER);
    ui.separator();
    item(
        ui,
        C::TogglePresentation,
        true,
        Some(prefs.presentation),
        out,
    );
    let controls = Some(prefs.controls_in_presentation);
    item(ui, C::ToggleControls, prefs.presentation, controls, out);
    item(ui, C::ToggleSlides, true, Some(prefs.slides), out);
}

fn presets_menu(ui: &mut Ui, out: &mut Vec<Action>) {
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
            out.push(Action::LoadPreset(i));
        }
    }
}
