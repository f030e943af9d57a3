//! The eframe application: the session (document, baseline, view preferences), undo history,
//! notices and commands. The only place that opens dialogs or touches files.

mod clamp;
pub mod commands;
pub mod env;
mod exec;
mod files;
mod history;
mod layout_search;
mod measured;
mod persist;
pub mod session;
mod shot;
mod shot_save;
mod start;
mod transfer;

use std::path::PathBuf;

use crate::estimator::estimate;
use crate::estimator::solver::FitCache;
use crate::scenario::Scenario;
use crate::ui::notice::Notice;
use crate::ui::{self, Prefs};
use commands::Command;
pub use env::Automation;
use history::History;
use persist::{Persist, Tick};
pub use session::Session;
pub use start::{Startup, run};

/// eframe app id: window geometry in eframe's storage, the session file beside it
/// (`~/.local/share/vram-explorer` on Linux).
pub const APP_ID: &str = "vram-explorer";
const TITLE: &str = "VRAM Explorer";

/// A modal dialog in progress.
#[derive(Clone, Debug, PartialEq)]
enum Dialog {
    None,
    /// Typed-path prompt (no native dialog, or asked for).
    Path {
        purpose: PathPurpose,
        text: String,
    },
    /// Unsaved changes: run the command only after the user agrees.
    Confirm(Command),
    About,
    Sources,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathPurpose {
    Open,
    Save,
    Png,
    Config,
    Checkpoint,
    Report,
    Timeline,
}

pub struct ExplorerApp {
    session: Session,
    history: History,
    notices: Vec<Notice>,
    dialog: Dialog,
    /// Scratch copy the sweep, solver and comparison mutate (cloned into, never reallocated).
    scratch: Scenario,
    /// Prefs the theme was last applied for.
    applied: Option<Prefs>,
    pending: Vec<Command>,
    /// "Save first" in the unsaved-changes dialog: the command to run once the save succeeds
    /// (dropped when the save fails or its dialog is cancelled).
    after_save: Option<Command>,
    title: String,
    quit_confirmed: bool,
    shot: shot::Shots,
    /// Make-it-fit suggestions, memoized on the scenario.
    fit: FitCache,
    /// The seed article's claims window is shown.
    claims_open: bool,
    /// Where and when the session file is written.
    persist: Persist,
}

impl Default for ExplorerApp {
    /// A fresh app that reads and writes no session (tests, benchmarks).
    fn default() -> Self {
        Self::with_session(Session::default())
    }
}

impl ExplorerApp {
    /// An app holding `session`, reading and writing no session file.
    pub fn with_session(session: Session) -> Self {
        ExplorerApp {
            history: History::new(&session.scenario),
            scratch: session.scenario.clone(),
            session,
            notices: Vec::new(),
            dialog: Dialog::None,
            applied: None,
            pending: Vec::new(),
            after_save: None,
            title: String::new(),
            quit_confirmed: false,
            shot: shot::Shots::default(),
            fit: FitCache::default(),
            claims_open: false,
            persist: Persist::default(),
        }
    }

    /// The session as the app holds it (the file keeps the part [`session::to_text`] writes).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Writes the session file now if it changed (what quitting does). Errors also become a notice.
    pub fn save_session(&mut self) -> Result<(), String> {
        let result = self.persist.flush(&self.session);
        if let Err(e) = &result {
            self.notices.push(Notice::error(e.clone()));
        }
        result
    }

    pub fn scenario(&self) -> &Scenario {
        &self.session.scenario
    }
    pub fn scenario_mut(&mut self) -> &mut Scenario {
        &mut self.session.scenario
    }
    pub fn prefs(&self) -> &Prefs {
        &self.session.prefs
    }
    pub fn prefs_mut(&mut self) -> &mut Prefs {
        &mut self.session.prefs
    }
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }
    /// Queues a command to run at the end of the next frame (what menus and shortcuts do).
    pub fn request(&mut self, command: Command) {
        self.pending.push(command);
    }
    /// Unsaved changes: the scenario differs from the one last opened or saved.
    pub fn is_dirty(&self) -> bool {
        self.session.scenario != self.session.saved
    }

    /// The whole window's contents for one frame (also what the UI tests drive).
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.apply_theme(&ctx);
        let mut actions = Vec::new();
        ui::commands::from_shortcuts(&ctx, &mut actions);
        self.pending.extend(actions.into_iter().map(Command::from));
        self.dropped_files(&ctx);
        self.menu_bar(ui);
        self.panels(ui);
        self.claims_window(&ctx);
        self.dialogs(&ctx);
        measured::run(
            &ctx,
            &mut self.session.scenario,
            self.session.path.as_deref(),
        );
        layout_search::run(&ctx, &mut self.session.scenario);
        let dragging = ctx.dragged_id().is_some();
        self.history.observe(&self.session.scenario, dragging);
        let commands = std::mem::take(&mut self.pending);
        if !commands.is_empty() {
            // What a command changed is drawn in the next frame.
            ctx.request_repaint();
        }
        for command in commands {
            self.execute(&ctx, command);
        }
        // An export switches zoom and theme for its 2× capture, and puts them back.
        self.shot.frame(&ctx, &mut self.session, &mut self.notices);
        // Style changes take effect from the next frame: apply them now, so that the next frame
        // is laid out with them (F5 must not lay out the desk's panel with presentation fonts).
        self.apply_theme(&ctx);
        match self.persist.tick(&self.session, std::time::Instant::now()) {
            Tick::Clean | Tick::Wrote(Ok(())) => {}
            Tick::Waiting(after) => ctx.request_repaint_after(after),
            Tick::Wrote(Err(e)) => self.notices.push(Notice::error(e)),
        }
    }

    /// Applies theme and text sizes when the prefs changed since they were last applied.
    fn apply_theme(&mut self, ctx: &egui::Context) {
        if self.applied.as_ref() != Some(&self.session.prefs) {
            ui::theme::apply(ctx, &self.session.prefs);
            self.applied = Some(self.session.prefs.clone());
            ctx.request_repaint();
        }
    }

    fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        });
        for path in dropped {
            if measured::is_measurement(&path) {
                measured::load(ctx, &path);
            } else {
                self.pending.push(Command::OpenPath(path));
            }
        }
    }

    fn menu_bar(&mut self, ui: &mut egui::Ui) {
        let s = &mut self.session;
        let state = ui::menu::MenuState {
            prefs: &mut s.prefs,
            recent: &s.recent,
            can_undo: self.history.can_undo(&s.scenario),
            can_redo: self.history.can_redo(),
            baseline_pinned: s.baseline.is_some(),
        };
        let mut actions = Vec::new();
        egui::Panel::top("menu").show(ui, |ui| ui::menu::ui(ui, state, &mut actions));
        self.pending.extend(actions.into_iter().map(Command::from));
    }

    /// The controls and the central area, both drawn from one estimate computed here, once per
    /// frame. An edit in the controls shows in the charts from the next frame, which is requested.
    fn panels(&mut self, ui: &mut egui::Ui) {
        let s = &mut self.session;
        let est = estimate(&s.scenario);
        #[cfg(test)]
        tests::count_estimate();
        let show_controls = !s.prefs.presentation || s.prefs.controls_in_presentation;
        if show_controls {
            // Each mode keeps its own width: the large fonts of presentation mode widen its
            // panel, and that width must not stay when F5 goes back to the desk.
            let (id, width) = if s.prefs.presentation {
                ("controls_presentation", 460.0)
            } else {
                ("controls", 360.0)
            };
            let panel = egui::Panel::left(id)
                .resizable(true)
                .default_size(width)
                .show(ui, |ui| {
                    ui::controls::ui(ui, &mut s.scenario, &est, &s.prefs)
                });
            let rect = panel.response.rect;
            ui::a11y::rect_node(ui.ctx(), ui::a11y::Part::Panel, "Controls", rect);
            // Edits only come with input: then draw one more frame, with the new estimate.
            if ui.input(|i| i.pointer.any_down() || !i.events.is_empty()) {
                ui.ctx().request_repaint();
            }
        }
        let notices = &mut self.notices;
        let exporting = self.shot.busy();
        let scratch = &mut self.scratch;
        let fit = &mut self.fit;
        let adopt = egui::CentralPanel::default_margins()
            .show(ui, |ui| {
                // Notices stay out of an export's pictures (and come back after it).
                if !exporting {
                    ui::notice::notices_ui(ui.ctx(), ui.max_rect(), &s.prefs, notices);
                }
                let base = s.baseline.as_ref();
                ui::layout::central(ui, &mut s.prefs, &s.scenario, &est, base, scratch, fit)
            })
            .inner;
        if let Some(scenario) = adopt {
            s.scenario = scenario;
            ui.ctx().request_repaint();
        }
    }

    /// The window title: file or scenario name, and a mark for unsaved changes.
    fn window_title(&self) -> String {
        let s = &self.session;
        let name = s.path.as_ref().and_then(|p| p.file_name()).map_or_else(
            || s.scenario.name.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
        let dirty = if self.is_dirty() { "● " } else { "" };
        format!("{dirty}{name} — {TITLE}")
    }
}

impl eframe::App for ExplorerApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        if ctx.input(|i| i.viewport().close_requested()) && !self.quit_confirmed && self.is_dirty()
        {
            ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
            self.dialog = Dialog::Confirm(Command::Quit);
        }
        self.ui(ui);
        let title = self.window_title();
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
    }

    /// An automated screenshot (and any export while it captures) ignores the pointer: Xvfb parks
    /// it mid-screen, where it would hover a chart and put a tooltip into the picture.
    fn raw_input_hook(&mut self, _ctx: &egui::Context, raw_input: &mut egui::RawInput) {
        if self.shot.busy() {
            // Nor is anything hovered while an export captures the window.
            raw_input.events.push(egui::Event::PointerGone);
        }
        if self.shot.automated() || self.shot.busy() {
            raw_input.events.retain(|e| {
                !matches!(
                    e,
                    egui::Event::PointerMoved(_)
                        | egui::Event::MouseMoved(_)
                        | egui::Event::PointerButton { .. }
                )
            });
        }
    }

    /// Called on quit (and every 30 s): the session file is written here and from [`Self::ui`], never
    /// into eframe's storage; the old key there is emptied so it is migrated only once.
    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        if self.persist.enabled() {
            storage.set_string(eframe::APP_KEY, String::new());
            if let Err(e) = self.save_session() {
                eprintln!("vram-explorer: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests;
