//! Environment-driven automation (README screenshots, the CI smoke run, tests), applied on top of
//! the app once it is built:
//!
//! - `VRAM_EXPLORER_SCREENSHOT=out.png`: render a few frames, save the PNG and exit; such a run
//!   neither reads nor writes the saved session or the window geometry.
//! - `VRAM_EXPLORER_PRESENTATION=1`, `VRAM_EXPLORER_THEME=light`, `VRAM_EXPLORER_WINDOW=1280x800`.
//! - `VRAM_EXPLORER_EXPORT_THEME=light|dark`: the theme of the exported slide images.
//! - `VRAM_EXPLORER_SLIDE=<n>`: presentation slides, showing chart n (from 1).
//! - `VRAM_EXPLORER_PRESET=<bundled id>`: start with that preset, without any file's path (so Save
//!   asks where instead of overwriting the file the last session had open); or
//!   `VRAM_EXPLORER_PRESET=<path to a scenario file>`: start with that file open (Save writes it).
//! - `VRAM_EXPLORER_BASELINE=<bundled id>`: pinned for comparison.
//! - `VRAM_EXPLORER_SESSION_DIR=<dir>`: where `session.ron` lives (default: the app's data directory).

use std::path::PathBuf;

use super::session::Session;
use crate::presets;
use crate::ui::notice::Notice;
use crate::ui::{ExportTheme, ThemeChoice};

/// What the environment asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Automation {
    /// Automated screenshot target; the app exits after writing it.
    pub screenshot: Option<PathBuf>,
    pub presentation: bool,
    /// Slides, showing this chart (from 1).
    pub slide: Option<usize>,
    pub light: bool,
    /// The theme of exported slide images (File ▸ Slide images in).
    pub export_theme: Option<ExportTheme>,
    /// Bundled preset id, or a scenario file's path, to start with.
    pub preset: Option<String>,
    /// Bundled preset id pinned as the baseline.
    pub baseline: Option<String>,
    /// Window size in logical points.
    pub window: Option<[f32; 2]>,
    /// Directory of the session file, overriding the app's data directory.
    pub session_dir: Option<PathBuf>,
}

impl Automation {
    pub fn from_env() -> Self {
        Automation {
            screenshot: var("VRAM_EXPLORER_SCREENSHOT").map(PathBuf::from),
            presentation: var("VRAM_EXPLORER_PRESENTATION").as_deref() == Some("1"),
            slide: var("VRAM_EXPLORER_SLIDE").and_then(|t| t.trim().parse().ok()),
            light: var("VRAM_EXPLORER_THEME").as_deref() == Some("light"),
            export_theme: match var("VRAM_EXPLORER_EXPORT_THEME").as_deref() {
                Some("light") => Some(ExportTheme::Light),
                Some("dark") => Some(ExportTheme::Dark),
                _ => None,
            },
            preset: var("VRAM_EXPLORER_PRESET"),
            baseline: var("VRAM_EXPLORER_BASELINE"),
            window: var("VRAM_EXPLORER_WINDOW").and_then(|t| window_size(&t)),
            session_dir: var("VRAM_EXPLORER_SESSION_DIR").map(PathBuf::from),
        }
    }

    /// Whether this run is an automated screenshot.
    pub fn automated(&self) -> bool {
        self.screenshot.is_some()
    }

    /// Applies the overrides to a session built from the saved one; problems become notices.
    pub fn apply(&self, session: &mut Session, notices: &mut Vec<Notice>) {
        if self.presentation {
            session.prefs.presentation = true;
        }
        if self.light {
            session.prefs.theme = ThemeChoice::Light;
        }
        if let Some(t) = self.export_theme {
            session.prefs.export_theme = t;
        }
        if let Some(n) = self.slide {
            session.prefs.presentation = true;
            session.prefs.slides = true;
            session.prefs.slide = n.saturating_sub(1);
        }
        if let Some(id) = &self.preset {
            match start_with(id) {
                Ok((s, path)) => {
                    session.saved = s.clone();
                    session.scenario = s;
                    session.path = path;
                }
                Err(n) => notices.push(n),
            }
        }
        if let Some(id) = &self.baseline {
            match presets::bundled_scenario(id) {
                Some(s) => session.baseline = Some(s),
                None => notices.push(unknown(id, "bundled preset")),
            }
        }
    }
}

/// A bundled preset by id, else the scenario file at that path, with its absolute path (the
/// session keeps it for Save, and a later run may start in another directory). Not added to the
/// recent files: File ▸ Open does that for files a user picks.
fn start_with(id: &str) -> Result<(crate::scenario::Scenario, Option<PathBuf>), Notice> {
    if let Some(s) = presets::bundled_scenario(id) {
        return Ok((s, None));
    }
    let path = std::path::absolute(id).unwrap_or_else(|_| PathBuf::from(id));
    if !path.is_file() {
        return Err(unknown(id, "bundled preset or scenario file"));
    }
    match presets::load(&path) {
        Ok(s) => Ok((s, Some(path))),
        Err(e) => {
            eprintln!("vram-explorer: could not open the scenario: {e}");
            // The error names the file (escaped) already.
            Err(Notice::error(format!("Could not open the scenario: {e}")))
        }
    }
}

/// `what` (e.g. "bundled preset") is not called `id`.
fn unknown(id: &str, what: &str) -> Notice {
    eprintln!("vram-explorer: no {what} named {id}");
    Notice::error(format!("No {what} is called “{id}”."))
}

/// `WIDTHxHEIGHT` in logical points, at least 320 × 240.
fn window_size(text: &str) -> Option<[f32; 2]> {
    let (w, h) = text.split_once('x')?;
    let (w, h) = (w.trim().parse::<f32>().ok()?, h.trim().parse::<f32>().ok()?);
    (w >= 320.0 && h >= 240.0 && w.is_finite() && h.is_finite()).then_some([w, h])
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preset_variable_takes_a_bundled_id_or_a_scenario_file() {
        let (s, path) = start_with("llama3-70b-zero3-8xh100").unwrap();
        assert_eq!(path, None);
        assert_eq!(s.model.transformer.layers, 80);
        let dir = std::env::temp_dir().join(format!("vram-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("mine.ron");
        let mut mine = s.clone();
        mine.workload.seq_len = 1234;
        presets::save(&file, &mine).unwrap();
        let (loaded, path) = start_with(file.to_str().unwrap()).unwrap();
        assert_eq!(loaded.workload.seq_len, 1234);
        assert_eq!(path.as_deref(), Some(file.as_path()));
        assert!(path.unwrap().is_absolute());
        std::fs::write(&file, "(version: 2, mode: Sideways)").unwrap();
        assert!(start_with(file.to_str().unwrap()).is_err());
        assert!(start_with(dir.join("absent.ron").to_str().unwrap()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn window_size_parses_and_refuses_tiny_or_bad_sizes() {
        assert_eq!(window_size("1280x800"), Some([1280.0, 800.0]));
        assert_eq!(window_size("100x100"), None);
        assert_eq!(window_size("NaNx800"), None);
        assert_eq!(window_size("wide"), None);
    }
}
