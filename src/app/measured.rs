//! The measured-run panel's requests (`ui::measured_state`), run after the frame: open a
//! measurement file (native dialog, typed path, a dropped file, or `VRAM_EXPLORER_MEASURED=path`
//! at start), and apply a calibration to the scenario as one edit the undo history records.

use std::path::{Path, PathBuf};

use super::files::{Picked, pick_file};
use crate::measured;
use crate::scenario::Scenario;
use crate::ui::measured_state::{self, Loaded, Request};

/// Whether a dropped file is a measurement rather than a scenario.
pub fn is_measurement(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(ext.as_str(), "pickle" | "pkl" | "csv" | "log" | "txt")
}

/// Reads `path` into the panel (or its error, path last).
pub fn load(ctx: &egui::Context, path: &Path) {
    let result = measured::load(path)
        .map(|measurement| Loaded {
            source: path.display().to_string(),
            measurement,
        })
        .map_err(|e| format!("{e}: {}", path.display()));
    measured_state::set(ctx, result);
    ctx.request_repaint();
}

/// Runs the panel's requests; `scenario` is the document (a calibration edits it in place, and the
/// history records the change as one step).
pub fn run(ctx: &egui::Context, scenario: &mut Scenario, current: Option<&Path>) {
    let first = !measured_state::with(ctx, |s| std::mem::replace(&mut s.env_checked, true));
    if first && let Some(p) = from_env() {
        load(ctx, &p);
    }
    let requests = measured_state::with(ctx, |s| std::mem::take(&mut s.requests));
    for r in requests {
        match r {
            Request::Pick => {
                let filter = "Measurement (snapshot, log, CSV)";
                match pick_file(
                    current,
                    "Load measurement",
                    filter,
                    &["pickle", "pkl", "csv", "log", "txt"],
                ) {
                    Picked::Path(p) => load(ctx, &p),
                    Picked::Cancelled => {}
                    Picked::Unavailable => measured_state::set(
                        ctx,
                        Err("no file dialog here: type the path and press Load path".to_owned()),
                    ),
                }
            }
            Request::Path(p) => load(ctx, &p),
            Request::Calibrate(changes) => {
                measured::compare::apply(&changes, scenario);
                ctx.request_repaint();
            }
        }
    }
}

/// `VRAM_EXPLORER_MEASURED=path`: the measurement to load at start (README screenshots).
fn from_env() -> Option<PathBuf> {
    std::env::var("VRAM_EXPLORER_MEASURED")
        .ok()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
