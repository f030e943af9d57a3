//! The window's framework selector (issue 12): picking LitGPT sets `implementation.profile` and
//! shows LitGPT's own setting.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::{Mode, Profile};

#[test]
fn the_framework_selector_sets_the_profile() {
    let mut app = ExplorerApp::default();
    app.scenario_mut().mode = Mode::Training;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h.get_by_label("Framework").click();
    h.run();
    assert!(h.query_by_label("LM-head chunk").is_none());
    h.get_all_by_label("Framework").last().unwrap().click();
    h.run();
    h.get_by_label("LitGPT").click();
    h.run();
    assert_eq!(h.state().scenario().implementation.profile, Profile::LitGpt);
    assert!(h.get_all_by_label_contains("LM-head chunk").count() > 0);
}
