//! Session persistence and title tests.

use super::*;

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
