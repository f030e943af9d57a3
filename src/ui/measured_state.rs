//! The measurement loaded beside the estimate, kept in egui's context data for the session (a
//! view input like the baseline, not part of the scenario file), and the requests the panel makes
//! of the app (open a file, apply a calibration), which the app runs after the frame
//! (`app/measured.rs`): the UI never touches files or the document itself.

use std::path::PathBuf;
use std::sync::Arc;

use crate::measured::Measurement;
use crate::measured::compare::Change;

/// A loaded measurement and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// File path or "pasted text".
    pub source: String,
    pub measurement: Measurement,
}

/// What the panel asks the app to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Pick a file with the native dialog.
    Pick,
    /// Read this file.
    Path(PathBuf),
    /// Apply these overhead changes to the scenario (one undoable edit).
    Calibrate(Vec<Change>),
}

/// The panel's state.
#[derive(Clone, Debug, Default)]
pub struct State {
    pub loaded: Option<Arc<Loaded>>,
    /// The typed path and the pasted text being edited.
    pub path: String,
    pub paste: String,
    pub paste_open: bool,
    /// The last error, shown in the panel until the next load.
    pub error: Option<String>,
    pub requests: Vec<Request>,
    /// The memory chart shows the timeline rather than the composition.
    pub timeline: bool,
    /// The app has looked at `VRAM_EXPLORER_MEASURED` (once per window).
    pub env_checked: bool,
    /// The file being read on a worker thread (its name), if any.
    pub loading: Option<String>,
    /// Counts loads started: a worker whose load was superseded drops its result.
    pub load_generation: u64,
}

/// What the panel edits during a frame (the worker thread never writes these).
#[derive(Debug, Default)]
pub struct Draft {
    pub path: String,
    pub paste: String,
    pub paste_open: bool,
}

impl State {
    /// Takes the panel's edits out for the frame (no copy of the strings).
    pub fn take_draft(&mut self) -> Draft {
        Draft {
            path: std::mem::take(&mut self.path),
            paste: std::mem::take(&mut self.paste),
            paste_open: self.paste_open,
        }
    }

    /// Puts the frame's edits back.
    pub fn put_draft(&mut self, d: Draft) {
        self.path = d.path;
        self.paste = d.paste;
        self.paste_open = d.paste_open;
    }
}

fn id() -> egui::Id {
    egui::Id::unique("vram_explorer_measured_state")
}

/// Runs `f` on the state (never draw inside `f`: the context is locked).
pub fn with<R>(ctx: &egui::Context, f: impl FnOnce(&mut State) -> R) -> R {
    ctx.data_mut(|d| f(d.get_temp_mut_or_default::<State>(id())))
}

/// The loaded measurement, if any (a cheap clone).
pub fn loaded(ctx: &egui::Context) -> Option<Arc<Loaded>> {
    with(ctx, |s| s.loaded.clone())
}

/// Replaces the loaded measurement (or records the error).
pub fn set(ctx: &egui::Context, result: Result<Loaded, String>) {
    with(ctx, |s| match result {
        Ok(l) => {
            s.loaded = Some(Arc::new(l));
            s.error = None;
            s.timeline = true;
        }
        Err(e) => s.error = Some(e),
    });
}
