//! The saved session (issue 18 item 3): its own versioned file, read section by section, never lost
//! silently, clamped instead of trusted, written atomically; "Discard changes" discards, and a
//! preset from the environment starts without another file's path.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]
#![cfg(feature = "gui")]

use std::path::{Path, PathBuf};

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::commands::Command;
use vram_explorer::app::session::{self, FILE_NAME, Session};
use vram_explorer::app::{Automation, ExplorerApp, Startup};
use vram_explorer::ui::notice::Level;
use vram_explorer::ui::{SweepAxis, ThemeChoice};

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("vram-session-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
    fn file(&self) -> PathBuf {
        self.0.join(FILE_NAME)
    }
    fn write(&self, text: &str) {
        std::fs::write(self.file(), text).expect("write session");
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(dir: &Path) -> ExplorerApp {
    ExplorerApp::new(Startup {
        session_dir: Some(dir.to_path_buf()),
        ..Startup::default()
    })
}

fn errors(app: &ExplorerApp) -> Vec<String> {
    app.notices()
        .iter()
        .filter(|n| n.level == Level::Error)
        .map(|n| n.text.clone())
        .collect()
}

/// A session with something in every section.
fn sample() -> Session {
    let mut s = Session::default();
    s.saved.workload.micro_batch = 6;
    s.scenario = s.saved.clone();
    s.path = Some(PathBuf::from("/home/user/mine.ron"));
    s.baseline = Some(Default::default());
    s.prefs.theme = ThemeChoice::Light;
    s.prefs.sweep_axis = SweepAxis::Tp;
    s.recent = vec![
        PathBuf::from("/home/user/mine.ron"),
        PathBuf::from("/tmp/b.ron"),
    ];
    s
}

#[test]
fn a_session_round_trips_through_its_file() {
    let dir = TempDir::new("round-trip");
    session::save(&dir.0, &sample()).expect("saved");
    let app = start(&dir.0);
    assert_eq!(app.session(), &sample());
    assert!(app.notices().is_empty(), "{:?}", app.notices());
    let text = std::fs::read_to_string(dir.file()).expect("file");
    assert!(text.contains("version: 1"), "{text}");
    // Atomic write: only the file itself, no temporary left beside it.
    let entries = std::fs::read_dir(&dir.0).expect("dir").count();
    assert_eq!(entries, 1);
}

#[test]
fn a_garbage_session_is_said_and_kept_aside_not_overwritten() {
    let dir = TempDir::new("garbage");
    std::fs::write(dir.0.join("session.ron.bad"), "older bad one").expect("write");
    dir.write("\u{1}\u{2} this is not a session");
    let mut app = start(&dir.0);
    assert_eq!(app.session(), &Session::default());
    let errs = errors(&app);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("session.ron.bad.1"), "{}", errs[0]);
    let older = std::fs::read_to_string(dir.0.join("session.ron.bad")).expect("kept");
    assert_eq!(older, "older bad one");
    let kept = std::fs::read_to_string(dir.0.join("session.ron.bad.1")).expect("set aside");
    assert!(kept.contains("this is not a session"));
    // Quitting writes a fresh session; the set-aside files stay as they were.
    app.save_session().expect("saved");
    assert!(dir.file().exists());
    assert!(dir.0.join("session.ron.bad.1").exists());
}

#[test]
fn a_truncated_session_keeps_its_readable_sections() {
    let dir = TempDir::new("truncated");
    let text = session::to_text(&sample());
    let cut = text.find("scenario:").expect("scenario section") + 200;
    dir.write(&text[..cut]);
    let app = start(&dir.0);
    let s = app.session();
    assert_eq!(s.recent, sample().recent);
    assert_eq!(s.prefs, sample().prefs);
    // The scenario is lost, and with it its path: Save must not overwrite mine.ron with defaults.
    assert_eq!(s.path, None);
    let errs = errors(&app);
    assert!(errs.iter().any(|e| e.contains("scenario")), "{errs:?}");
    assert!(dir.0.join("session.ron.bad").exists());
    assert!(!dir.file().exists());
}

#[test]
fn a_session_from_a_newer_version_is_said_and_kept_aside() {
    let dir = TempDir::new("future");
    let text = session::to_text(&sample()).replacen("version: 1", "version: 99", 1);
    dir.write(&text);
    let app = start(&dir.0);
    let errs = errors(&app);
    assert!(errs.iter().any(|e| e.contains("newer version")), "{errs:?}");
    assert!(dir.0.join("session.ron.bad").exists());
}

#[test]
fn out_of_range_values_are_clamped_with_a_notice_naming_them() {
    let dir = TempDir::new("range");
    let mut bad = sample();
    bad.saved.model.transformer.heads = u32::MAX;
    bad.saved.timing.compute_efficiency = f64::NAN;
    dir.write(&session::to_text(&bad));
    let app = start(&dir.0);
    let heads = app.scenario().model.transformer.heads;
    assert!(heads <= 65_536, "{heads} heads");
    assert!(app.scenario().timing.compute_efficiency.is_finite());
    assert_eq!(app.scenario(), &app.session().saved, "not marked dirty");
    // Drawn, the window shows the clamped value and the controls agree with it (nothing changes).
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1200.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    assert!(h.query_by_label_contains("4294967295").is_none());
    let app = h.state();
    assert_eq!(app.scenario().model.transformer.heads, heads);
    assert!(!app.is_dirty());
    let errs = errors(app);
    assert!(
        errs.iter()
            .any(|e| e.contains("model.transformer.heads")
                && e.contains("timing.compute_efficiency")),
        "{errs:?}"
    );
}

#[test]
fn the_old_session_in_eframe_storage_is_migrated_and_validated() {
    let dir = TempDir::new("legacy");
    let mut old = sample();
    old.saved.model.transformer.heads = u32::MAX;
    let legacy = ron::to_string(&old).expect("old format");
    let app = ExplorerApp::new(Startup {
        session_dir: Some(dir.0.clone()),
        legacy: Some(legacy),
        ..Startup::default()
    });
    assert_eq!(app.session().recent, old.recent);
    assert!(app.scenario().model.transformer.heads <= 65_536);
    // Once the session file exists, the old key is ignored.
    session::save(&dir.0, &Session::default()).expect("saved");
    let again = ExplorerApp::new(Startup {
        session_dir: Some(dir.0.clone()),
        legacy: Some(ron::to_string(&old).expect("old format")),
        ..Startup::default()
    });
    assert!(again.session().recent.is_empty());
}

#[test]
fn a_preset_from_the_environment_starts_without_the_last_files_path() {
    let dir = TempDir::new("preset");
    session::save(&dir.0, &sample()).expect("saved");
    let app = ExplorerApp::new(Startup {
        session_dir: Some(dir.0.clone()),
        automation: Automation {
            preset: Some("gpt3-175b-zero3-a100".to_owned()),
            ..Automation::default()
        },
        ..Startup::default()
    });
    assert_eq!(app.session().path, None, "Save would overwrite mine.ron");
    assert_ne!(app.scenario(), &sample().saved);
    assert_eq!(app.session().recent, sample().recent);
}

#[test]
fn discard_changes_on_quit_discards() {
    let dir = TempDir::new("discard");
    session::save(&dir.0, &sample()).expect("saved");
    let mut app = start(&dir.0);
    app.scenario_mut().workload.micro_batch = 30;
    app.request(Command::Quit);
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1200.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h.get_by_label("Discard changes").click();
    h.run();
    h.state_mut().save_session().expect("saved");
    let back = start(&dir.0);
    assert_eq!(back.scenario().workload.micro_batch, 6);
}
