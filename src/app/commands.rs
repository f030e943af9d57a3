//! What the app can be asked to do: the menu and keyboard commands (named by the UI's command
//! table, [`crate::ui::commands`]) and the ones that carry data (a path, a preset).

use std::path::PathBuf;

use crate::ui::commands::{Action, CommandId};

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
    ToggleSlides,
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
    /// The step timeline (CSV + JSON) and, with a measurement loaded, the comparison (Markdown).
    ExportTimeline,
    ExportTimelinePath(PathBuf),
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

impl From<Action> for Command {
    /// What the app does for a UI action (the table of labels and shortcuts is in `ui::commands`).
    fn from(action: Action) -> Self {
        match action {
            Action::Run(id) => Command::from(id),
            Action::OpenPath(path) => Command::OpenPath(path),
            Action::LoadPreset(index) => Command::LoadPreset(index),
        }
    }
}

impl From<CommandId> for Command {
    fn from(id: CommandId) -> Self {
        match id {
            CommandId::New => Command::New,
            CommandId::Open => Command::Open,
            CommandId::OpenTyped => Command::OpenTyped,
            CommandId::Save => Command::Save,
            CommandId::SaveAs => Command::SaveAs,
            CommandId::SaveTyped => Command::SaveTyped,
            CommandId::ExportPng => Command::ExportPng,
            CommandId::ExportReport => Command::ExportReport,
            CommandId::ExportTimeline => Command::ExportTimeline,
            CommandId::ImportConfig => Command::ImportConfig,
            CommandId::ImportCheckpoint => Command::ImportCheckpoint,
            CommandId::ClearRecent => Command::ClearRecent,
            CommandId::Quit => Command::Quit,
            CommandId::Undo => Command::Undo,
            CommandId::Redo => Command::Redo,
            CommandId::PinBaseline => Command::PinBaseline,
            CommandId::ClearBaseline => Command::ClearBaseline,
            CommandId::CopyBreakdown => Command::CopyBreakdown,
            CommandId::TogglePresentation => Command::TogglePresentation,
            CommandId::ToggleControls => Command::ToggleControls,
            CommandId::ToggleSlides => Command::ToggleSlides,
            CommandId::About => Command::About,
            CommandId::Sources => Command::Sources,
            CommandId::Claims => Command::Claims,
        }
    }
}
