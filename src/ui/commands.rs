//! The command table: every menu command's label, hover text and shortcuts, in one place that both
//! the menus ([`super::menu`]) and the shortcut handler ([`from_shortcuts`]) read. The UI only names
//! what was asked for ([`Action`]); the app decides what that does (`crate::app::commands`).

use std::path::PathBuf;

use egui::{Key, KeyboardShortcut, Modifiers};

/// A command the menus or the keyboard can ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandId {
    New,
    Open,
    OpenTyped,
    Save,
    SaveAs,
    SaveTyped,
    ExportPng,
    ExportReport,
    ExportTimeline,
    ImportConfig,
    ImportCheckpoint,
    ClearRecent,
    Quit,
    Undo,
    Redo,
    PinBaseline,
    ClearBaseline,
    CopyBreakdown,
    TogglePresentation,
    ToggleControls,
    ToggleSlides,
    About,
    Sources,
    Claims,
}

/// What the UI asks the app for this frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Run(CommandId),
    /// A file from the recent list.
    OpenPath(PathBuf),
    /// The bundled preset with this index in `presets::bundled()`.
    LoadPreset(usize),
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub id: CommandId,
    /// Menu label (sentence case; "…" when it opens a dialog).
    pub label: &'static str,
    pub hover: &'static str,
    /// The first is shown in the menu; all of them work.
    pub shortcuts: &'static [KeyboardShortcut],
}

const CMD: Modifiers = Modifiers::COMMAND;
const CMD_SHIFT: Modifiers = Modifiers {
    shift: true,
    ..Modifiers::COMMAND
};
const fn key(modifiers: Modifiers, key: Key) -> KeyboardShortcut {
    KeyboardShortcut::new(modifiers, key)
}

const fn entry(
    id: CommandId,
    label: &'static str,
    hover: &'static str,
    shortcuts: &'static [KeyboardShortcut],
) -> Entry {
    Entry {
        id,
        label,
        hover,
        shortcuts,
    }
}

use CommandId as C;

/// Every command, in menu order.
#[rustfmt::skip]
pub const TABLE: &[Entry] = &[
    entry(C::New, "New", "Start from the default scenario.", &[key(CMD, Key::N)]),
    entry(C::Open, "Open…", "Open a scenario file (.ron).", &[key(CMD, Key::O)]),
    entry(C::OpenTyped, "Open path…", "Open a scenario by typing its path.", &[]),
    entry(C::Save, "Save", "Save the scenario to its file (asks where when it has none).", &[key(CMD, Key::S)]),
    entry(C::SaveAs, "Save as…", "Save the scenario to a new file.", &[key(CMD_SHIFT, Key::S)]),
    entry(C::SaveTyped, "Save to path…", "Save the scenario by typing a path.", &[]),
    entry(C::ExportPng, "Export PNG for slides…", "The window as shown, and beside it the window without the controls, each chart at 2× (in the theme File ▸ Slide images in picks) and a one-page summary (Markdown and a self-contained HTML).", &[]),
    entry(C::ExportReport, "Export report (Markdown + CSV)…", "A Markdown report with CSV tables beside it.", &[]),
    entry(C::ExportTimeline, "Export timeline and comparison…", "The step's memory timeline as CSV and JSON (with the measured run when one is loaded) and, with a measurement, the comparison as Markdown.", &[]),
    entry(C::ImportConfig, "Import model config.json…", "Take the model's shape from a Hugging Face config.json.", &[]),
    entry(C::ImportCheckpoint, "Count parameters from safetensors…", "Count the parameters of a .safetensors file or a sharded index.", &[]),
    entry(C::ClearRecent, "Clear recent files", "Forget the recent files list.", &[]),
    entry(C::Quit, "Quit", "Close the window (asks about unsaved changes).", &[key(CMD, Key::Q)]),
    entry(C::Undo, "Undo", "Undo the last change to the scenario.", &[key(CMD, Key::Z)]),
    entry(C::Redo, "Redo", "Redo what was undone.", &[key(CMD_SHIFT, Key::Z), key(CMD, Key::Y)]),
    entry(C::PinBaseline, "Pin as baseline", "Compare everything against the scenario as it is now.", &[key(CMD, Key::B)]),
    entry(C::ClearBaseline, "Clear baseline", "Stop comparing against the pinned scenario.", &[]),
    entry(C::CopyBreakdown, "Copy breakdown as CSV", "The memory breakdown on the clipboard, for a spreadsheet.", &[]),
    entry(C::TogglePresentation, "Presentation mode", "Large fonts and the charts first, for a projector.", &[key(Modifiers::NONE, Key::F5)]),
    entry(C::ToggleControls, "Controls in presentation", "Show the controls panel in presentation mode.", &[key(Modifiers::NONE, Key::F4)]),
    entry(C::ToggleSlides, "Slides", "Presentation, one chart at a time under the headline; the left and right arrow keys move.", &[key(Modifiers::NONE, Key::F6)]),
    entry(C::About, "About VRAM Explorer", "What this program is.", &[]),
    entry(C::Sources, "Where the formulas come from", "The papers and documents behind every formula.", &[]),
    entry(C::Claims, "Seed article claims…", "Each claim of the seed article, checked against the estimate.", &[]),
];

/// The table's row for `id` (every id has one: tested).
pub fn get(id: CommandId) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.id == id)
}

/// Consumes the shortcut keys pressed this frame. Shortcuts with Shift are tried first, so
/// Cmd+Shift+S is not taken as Cmd+S.
pub fn from_shortcuts(ctx: &egui::Context, out: &mut Vec<Action>) {
    ctx.input_mut(|i| {
        for shift in [true, false] {
            for e in TABLE {
                for s in e.shortcuts.iter().filter(|s| s.modifiers.shift == shift) {
                    if i.consume_shortcut(s) {
                        out.push(Action::Run(e.id));
                    }
                }
            }
        }
    });
}
