//! What the user can ask the app to do, and the shortcuts (shown in the menus, handled in one place).

use std::path::PathBuf;

use egui::{Key, KeyboardShortcut, Modifiers};

/// A side effect requested during a frame and run once after it.
#[must_use]
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Start from the default scenario.
    New,
    /// Ask for a file with the native dialog (or the typed-path prompt when there is none).
    Open,
    /// Ask for a path to open by typing it.
    OpenTyped,
    OpenPath(PathBuf),
    /// Load the bundled preset with this index in `presets::bundled()`.
    LoadPreset(usize),
    Save,
    SaveAs,
    /// Ask for a path to save to by typing it.
    SaveTyped,
    SavePath(PathBuf),
    ClearRecent,
    Undo,
    Redo,
    /// Pin the current scenario as the comparison baseline.
    PinBaseline,
    ClearBaseline,
    TogglePresentation,
    ToggleControls,
    /// Save a PNG of the window.
    ExportPng,
    ExportPngPath(PathBuf),
    /// Import a model shape from a Hugging Face `config.json`.
    ImportConfig,
    ImportConfigPath(PathBuf),
    /// Count parameters from a `.safetensors` file or a sharded index.
    ImportCheckpoint,
    ImportCheckpointPath(PathBuf),
    /// The memory breakdown as CSV on the clipboard (paste into a spreadsheet or slide).
    CopyBreakdown,
    /// Markdown report + CSVs.
    ExportReport,
    ExportReportPath(PathBuf),
    About,
    Sources,
    /// Open the seed article's claims window (each claim with a button that loads its scenario).
    Claims,
    /// Load the bundled preset with this id (`presets::bundled_scenario`), e.g. from the claims window.
    LoadPresetId(&'static str),
    Quit,
}

impl Command {
    /// Whether running it throws the current document away (so unsaved changes need a confirmation).
    pub fn discards_document(&self) -> bool {
        matches!(
            self,
            Command::New
                | Command::OpenPath(_)
                | Command::LoadPreset(_)
                | Command::LoadPresetId(_)
                | Command::Quit
        )
    }
}

const CMD: Modifiers = Modifiers::COMMAND;
const CMD_SHIFT: Modifiers = Modifiers {
    shift: true,
    ..Modifiers::COMMAND
};

pub const NEW: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::N);
pub const OPEN: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::O);
pub const SAVE: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::S);
pub const SAVE_AS: KeyboardShortcut = KeyboardShortcut::new(CMD_SHIFT, Key::S);
pub const UNDO: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::Z);
pub const REDO: KeyboardShortcut = KeyboardShortcut::new(CMD_SHIFT, Key::Z);
pub const REDO_ALT: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::Y);
pub const PIN: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::B);
pub const PRESENT: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F5);
pub const CONTROLS: KeyboardShortcut = KeyboardShortcut::new(Modifiers::NONE, Key::F4);
pub const QUIT: KeyboardShortcut = KeyboardShortcut::new(CMD, Key::Q);

/// Shortcuts in match order: the more specific (with Shift) before the plainer ones.
const SHORTCUTS: [(KeyboardShortcut, fn() -> Command); 11] = [
    (SAVE_AS, || Command::SaveAs),
    (REDO, || Command::Redo),
    (REDO_ALT, || Command::Redo),
    (NEW, || Command::New),
    (OPEN, || Command::Open),
    (SAVE, || Command::Save),
    (UNDO, || Command::Undo),
    (PIN, || Command::PinBaseline),
    (PRESENT, || Command::TogglePresentation),
    (CONTROLS, || Command::ToggleControls),
    (QUIT, || Command::Quit),
];

/// Consumes the shortcut keys pressed this frame.
pub fn from_shortcuts(ctx: &egui::Context, out: &mut Vec<Command>) {
    ctx.input_mut(|i| {
        for (shortcut, make) in SHORTCUTS {
            if i.consume_shortcut(&shortcut) {
                out.push(make());
            }
        }
    });
}
