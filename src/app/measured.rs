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

/// Reads `path` into the panel on a worker thread: the panel says "Loading…" with the file's name
/// meanwhile, the window stays responsive, and the result (or its error, path last) arrives with a
/// repaint. A load started later supersedes this one.
pub fn load(ctx: &egui::Context, path: &Path) {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let generation = measured_state::with(ctx, |s| {
        s.load_generation += 1;
        s.loading = Some(name);
        s.error = None;
        s.load_generation
    });
    let (ctx, path) = (ctx.clone(), path.to_path_buf());
    let spawned = std::thread::Builder::new()
        .name("measured-load".to_owned())
        .spawn({
            let (ctx, path) = (ctx.clone(), path.clone());
            move || finish(&ctx, generation, read(&path))
        });
    if spawned.is_err() {
        // No thread to be had: read here.
        finish(&ctx, generation, read(&path));
    }
}

/// Reads `path` now (the start-up measurement of `VRAM_EXPLORER_MEASURED`, so that a screenshot
/// taken a few frames later has it).
pub fn load_now(ctx: &egui::Context, path: &Path) {
    let generation = measured_state::with(ctx, |s| {
        s.load_generation += 1;
        s.load_generation
    });
    finish(ctx, generation, read(path));
}

fn read(path: &Path) -> Result<Loaded, String> {
    measured::load(path)
        .map(|measurement| Loaded {
            source: path.display().to_string(),
            measurement,
        })
        .map_err(|e| format!("{e}: {}", path.display()))
}

/// Hands a result to the panel unless a later load superseded it.
fn finish(ctx: &egui::Context, generation: u64, result: Result<Loaded, String>) {
    let current = measured_state::with(ctx, |s| {
        let current = s.load_generation == generation;
        if current {
            s.loading = None;
        }
        current
    });
    if current {
        measured_state::set(ctx, result);
    }
    ctx.request_repaint();
}

/// Runs the panel's requests; `scenario` is the document (a calibration edits it in place, and the
/// history records the change as one step).
pub fn run(ctx: &egui::Context, scenario: &mut Scenario, current: Option<&Path>) {
    let first = !measured_state::with(ctx, |s| std::mem::replace(&mut s.env_checked, true));
    if first && let Some(p) = from_env() {
        load_now(ctx, &p);
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

impl super::ExplorerApp {
    /// Writes the step timeline beside `path` as `<name>.csv` and `<name>.json` (with the measured
    /// snapshot's timeline when one is loaded) and, with a measurement loaded,
    /// `<name>-comparison.md`; each file atomically (temp file + rename).
    pub(super) fn export_timeline(&mut self, ctx: &egui::Context, path: &Path) {
        use crate::cli::{compare as report, timeline as export};
        use crate::measured::Measurement;
        use crate::ui::notice::Notice;
        let s = &self.session.scenario;
        let est = crate::estimator::estimate(s);
        let t = crate::estimator::timeline::build(s, &est);
        let loaded = measured_state::loaded(ctx);
        let snapshot = match loaded.as_deref().map(|l| &l.measurement) {
            Some(Measurement::Snapshot(m)) => Some(m.as_ref()),
            _ => None,
        };
        let csv = path.with_extension("csv");
        let stem = csv.with_extension("");
        let mut files = vec![
            (csv.clone(), export::csv(&t)),
            (
                csv.with_extension("json"),
                export::json(s, "app", &t, snapshot),
            ),
        ];
        if let Some(l) = loaded.as_deref() {
            files.push((
                PathBuf::from(format!("{}-comparison.md", stem.display())),
                report::markdown(s, &est, &l.measurement, &l.source),
            ));
        }
        for (file, text) in &files {
            if let Err(e) = crate::presets::write_atomically(file, text.as_bytes()) {
                let msg = format!("Could not write the timeline ({e}): {}", file.display());
                return self.notices.push(Notice::error(msg));
            }
        }
        let what = if files.len() > 2 {
            "the timeline (CSV, JSON) and the comparison (Markdown)"
        } else {
            "the timeline (CSV, JSON)"
        };
        self.notices
            .push(Notice::info(format!("Exported {what}: {}", csv.display())));
    }
}
