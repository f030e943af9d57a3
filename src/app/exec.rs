//! Running commands and the dialogs they open.

use std::path::{Path, PathBuf};

use super::files::{self, Picked};
use super::{Command, Dialog, ExplorerApp, PathPurpose};
use crate::presets;
use crate::scenario::Scenario;
use crate::ui::claims;
use crate::ui::notice::{self, Answer, Notice};

/// Recent files kept.
const RECENT: usize = 8;

impl ExplorerApp {
    pub(super) fn execute(&mut self, ctx: &egui::Context, command: Command) {
        if command.discards_document() && self.is_dirty() {
            self.dialog = Dialog::Confirm(command);
            return;
        }
        self.run(ctx, command);
    }

    /// Runs a command without asking about unsaved changes.
    fn run(&mut self, ctx: &egui::Context, command: Command) {
        let s = &mut self.session;
        match command {
            Command::New => self.replace(Scenario::default(), None),
            Command::Open => {
                let picked = files::pick_open(s.path.as_deref());
                self.picked(picked, PathPurpose::Open, Command::OpenPath);
            }
            Command::OpenTyped => self.prompt(PathPurpose::Open),
            Command::OpenPath(path) => self.open(&path),
            Command::LoadPreset(i) => self.load_preset(i),
            Command::LoadPresetId(id) => {
                match presets::bundled()
                    .iter()
                    .position(|p| p.id.eq_ignore_ascii_case(id) || p.name.eq_ignore_ascii_case(id))
                {
                    Some(i) => self.load_preset(i),
                    None => self.notices.push(Notice::error(format!(
                        "No bundled preset is called “{id}”."
                    ))),
                }
            }
            Command::Save => match s.path.clone() {
                Some(p) => self.save(p),
                None => self.run(ctx, Command::SaveAs),
            },
            Command::SaveAs => {
                let name = files::suggested_name(&s.scenario.name, "ron");
                let picked = files::pick_save(s.path.as_deref(), &name, "ron", "Scenario (RON)");
                self.picked(picked, PathPurpose::Save, Command::SavePath);
            }
            Command::SaveTyped => self.prompt(PathPurpose::Save),
            Command::SavePath(p) => self.save(p),
            Command::ClearRecent => s.recent.clear(),
            Command::Undo => {
                self.history.undo(&mut s.scenario);
            }
            Command::Redo => {
                self.history.redo(&mut s.scenario);
            }
            Command::PinBaseline => {
                s.baseline = Some(s.scenario.clone());
                self.notices.push(Notice::info(format!(
                    "Pinned “{}” as the baseline: the headline and charts now compare against it.",
                    s.scenario.name
                )));
            }
            Command::ClearBaseline => s.baseline = None,
            Command::TogglePresentation => s.prefs.presentation = !s.prefs.presentation,
            Command::ToggleSlides => {
                s.prefs.slides = !s.prefs.slides;
                s.prefs.presentation |= s.prefs.slides;
            }
            Command::ToggleControls => {
                s.prefs.controls_in_presentation = !s.prefs.controls_in_presentation;
            }
            Command::About => self.dialog = Dialog::About,
            Command::Sources => self.dialog = Dialog::Sources,
            Command::Claims => self.claims_open = true,
            Command::Quit => {
                self.quit_confirmed = true;
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
            other => self.run_transfer(ctx, other),
        }
    }

    /// Imports and exports.
    fn run_transfer(&mut self, ctx: &egui::Context, command: Command) {
        let s = &self.session;
        let name = |ext| files::suggested_name(&s.scenario.name, ext);
        match command {
            Command::ExportPng => {
                let picked = files::pick_save(s.path.as_deref(), &name("png"), "png", "PNG image");
                self.picked(picked, PathPurpose::Png, Command::ExportPngPath);
            }
            Command::ExportPngPath(p) => self.shot.export(ctx, p),
            Command::ImportConfig => {
                let picked = files::pick_file(None, "Import config.json", "HF config", &["json"]);
                self.picked(picked, PathPurpose::Config, Command::ImportConfigPath);
            }
            Command::ImportConfigPath(p) => self.import_config(&p),
            Command::ImportCheckpoint => {
                let exts = ["safetensors", "json"];
                let picked = files::pick_file(None, "Count parameters", "safetensors", &exts);
                self.picked(
                    picked,
                    PathPurpose::Checkpoint,
                    Command::ImportCheckpointPath,
                );
            }
            Command::ImportCheckpointPath(p) => self.import_checkpoint(&p),
            Command::ExportReport => {
                let picked = files::pick_save(s.path.as_deref(), &name("md"), "md", "Markdown");
                self.picked(picked, PathPurpose::Report, Command::ExportReportPath);
            }
            Command::ExportReportPath(p) => self.export_report(p),
            Command::ExportTimeline => {
                let picked = files::pick_save(s.path.as_deref(), &name("csv"), "csv", "CSV");
                self.picked(picked, PathPurpose::Timeline, Command::ExportTimelinePath);
            }
            Command::ExportTimelinePath(p) => self.export_timeline(ctx, &p),
            Command::CopyBreakdown => {
                ctx.copy_text(crate::report::breakdown_csv(&crate::estimator::estimate(
                    &s.scenario,
                )));
                self.notices
                    .push(Notice::info("Copied the memory breakdown as CSV."));
            }
            _ => {}
        }
    }

    /// Queues `then(path)`, or asks for a typed path when there is no dialog.
    fn picked(&mut self, picked: Picked, purpose: PathPurpose, then: fn(PathBuf) -> Command) {
        match picked {
            Picked::Path(p) => self.pending.push(then(p)),
            Picked::Cancelled => self.after_save = None,
            Picked::Unavailable => self.prompt(purpose),
        }
    }

    fn prompt(&mut self, purpose: PathPurpose) {
        let text = match (purpose, &self.session.path) {
            (PathPurpose::Save, Some(p)) => p.display().to_string(),
            _ => String::new(),
        };
        self.dialog = Dialog::Path { purpose, text };
    }

    /// Makes `scenario` the document (undoable: the history sees the change).
    fn replace(&mut self, scenario: Scenario, path: Option<PathBuf>) {
        let s = &mut self.session;
        s.saved = scenario.clone();
        s.scenario = scenario;
        s.path = path;
    }

    /// Opens a file; on failure the current scenario stays and a notice says what and where.
    pub(super) fn open(&mut self, path: &Path) {
        match presets::load(path) {
            Ok(scenario) => {
                self.replace(scenario, Some(path.to_path_buf()));
                self.remember(path);
                self.notices.retain(|n| n.level != notice::Level::Error);
            }
            Err(e) => self
                .notices
                .push(Notice::error(format!("Could not open the scenario: {e}"))),
        }
    }

    fn load_preset(&mut self, index: usize) {
        let Some(preset) = presets::bundled().get(index) else {
            return;
        };
        match preset.scenario() {
            Ok(scenario) => self.replace(scenario, None),
            Err(e) => self.notices.push(Notice::error(format!(
                "The bundled preset “{}” does not parse: {e}",
                preset.id
            ))),
        }
    }

    fn save(&mut self, path: PathBuf) {
        let path = files::with_extension(path, "ron");
        let s = &mut self.session;
        match presets::save(&path, &s.scenario) {
            Ok(()) => {
                s.saved = s.scenario.clone();
                s.path = Some(path.clone());
                self.remember(&path);
                self.notices
                    .push(Notice::info(format!("Saved: {}", path.display())));
                // "Save first": now do what the user asked for.
                if let Some(next) = self.after_save.take() {
                    self.pending.push(next);
                }
            }
            Err(e) => {
                self.after_save = None;
                self.notices.push(Notice::error(format!(
                    "Could not save; the scenario is still here, unsaved: {e}"
                )));
            }
        }
    }

    fn remember(&mut self, path: &Path) {
        let recent = &mut self.session.recent;
        recent.retain(|p| p != path);
        recent.insert(0, path.to_path_buf());
        recent.truncate(RECENT);
    }

    /// The seed article's claims (non-modal, resizable); a "Load scenario" click queues the preset
    /// through the same undoable, unsaved-changes-aware path as the Presets menu.
    pub(super) fn claims_window(&mut self, ctx: &egui::Context) {
        let theme = self.session.prefs.theme;
        let mut load = None;
        egui::Window::new("Seed article claims")
            .open(&mut self.claims_open)
            .resizable(true)
            .default_size([900.0, 700.0])
            .show(ctx, |ui| {
                load = claims::claims_ui(ui, claims::results(), theme)
            });
        if let Some(id) = load {
            self.pending.push(Command::LoadPresetId(id));
        }
    }

    pub(super) fn dialogs(&mut self, ctx: &egui::Context) {
        match &mut self.dialog {
            Dialog::None => {}
            Dialog::Path { purpose, text } => {
                let title = match purpose {
                    PathPurpose::Open => "Open scenario",
                    PathPurpose::Save => "Save scenario",
                    PathPurpose::Png => "Export PNG",
                    PathPurpose::Config => "Import config.json",
                    PathPurpose::Checkpoint => "Count parameters from safetensors",
                    PathPurpose::Report => "Export report",
                    PathPurpose::Timeline => "Export timeline",
                };
                let purpose = *purpose;
                match notice::path_prompt(ctx, title, text) {
                    Answer::Ok => {
                        let path = PathBuf::from(text.trim());
                        self.dialog = Dialog::None;
                        self.pending.push(match purpose {
                            PathPurpose::Open => Command::OpenPath(path),
                            PathPurpose::Save => Command::SavePath(path),
                            PathPurpose::Png => Command::ExportPngPath(path),
                            PathPurpose::Config => Command::ImportConfigPath(path),
                            PathPurpose::Checkpoint => Command::ImportCheckpointPath(path),
                            PathPurpose::Report => Command::ExportReportPath(path),
                            PathPurpose::Timeline => Command::ExportTimelinePath(path),
                        });
                    }
                    Answer::Cancel => {
                        self.dialog = Dialog::None;
                        self.after_save = None;
                    }
                    Answer::Pending | Answer::Alternative => {}
                }
            }
            Dialog::Confirm(command) => {
                let action = match command {
                    Command::Quit => "Quit",
                    Command::New => "Start a new scenario",
                    _ => "Open another scenario",
                };
                let command = command.clone();
                let name = self.session.scenario.name.clone();
                match notice::confirm_discard(ctx, &name, action) {
                    Answer::Ok => {
                        self.dialog = Dialog::None;
                        self.run(ctx, command);
                    }
                    Answer::Alternative => {
                        self.dialog = Dialog::None;
                        self.after_save = Some(command);
                        self.pending.push(Command::Save);
                    }
                    Answer::Cancel => self.dialog = Dialog::None,
                    Answer::Pending => {}
                }
            }
            Dialog::About => {
                if notice::info_dialog(ctx, "About VRAM Explorer", notice::ABOUT) {
                    self.dialog = Dialog::None;
                }
            }
            Dialog::Sources => {
                if notice::info_dialog(ctx, "Where the formulas come from", notice::SOURCES) {
                    self.dialog = Dialog::None;
                }
            }
        }
    }
}
