//! Session, title and per-frame tests.

use std::cell::Cell;

use super::*;

thread_local! {
    /// `estimate` calls made by [`ExplorerApp::panels`] on this thread.
    static ESTIMATES: Cell<usize> = const { Cell::new(0) };
}

pub(super) fn count_estimate() {
    ESTIMATES.with(|c| c.set(c.get() + 1));
}

#[test]
fn the_estimate_is_computed_once_per_frame() {
    let mut h = egui_kittest::Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_ui_state(
            |ui, app: &mut ExplorerApp| app.ui(ui),
            ExplorerApp::default(),
        );
    h.run();
    ESTIMATES.with(|c| c.set(0));
    for _ in 0..3 {
        h.state_mut().scenario_mut().workload.micro_batch += 1;
        h.step();
    }
    assert_eq!(ESTIMATES.with(Cell::get), 3);
}

#[test]
fn session_round_trips_through_persistence() {
    let mut session = Session::default();
    session.scenario.workload.micro_batch = 12;
    session.baseline = Some(Scenario::default());
    session.prefs.presentation = true;
    session.recent.push(PathBuf::from("presets/example.ron"));
    let text = ron::to_string(&session).expect("serializes");
    let back: Session = ron::from_str(&text).expect("parses");
    assert_eq!(back, session);
}

#[test]
fn title_marks_unsaved_changes() {
    let mut app = ExplorerApp::default();
    assert!(!app.window_title().starts_with('●'));
    app.scenario_mut().parallel.tp = 2;
    assert!(app.window_title().starts_with('●'));
    assert!(app.window_title().ends_with("VRAM Explorer"));
}
