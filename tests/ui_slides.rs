//! Presentation slides (issue 16): one chart at a time under the headline, arrow keys move.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui::Rect;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;

#[test]
fn slides_show_one_chart_large_and_arrows_move() {
    let (w, hgt) = (1280.0, 720.0);
    let mut h = Harness::builder()
        .with_size(egui::vec2(w, hgt))
        .build_ui_state(
            |ui, app: &mut ExplorerApp| app.ui(ui),
            ExplorerApp::default(),
        );
    h.run();
    h.key_press(egui::Key::F6);
    h.run();
    assert!(h.state().prefs().presentation && h.state().prefs().slides);
    let viewport = Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(w, hgt));
    let first = h.get_by_label("Chart: Memory").rect();
    assert!(viewport.expand(1.0).contains_rect(first), "{first:?}");
    assert!(first.height() > 0.5 * hgt, "{first:?}");
    assert!(h.query_by_label("Chart: Roofline").is_none());
    // The headline stays: the verdict and the scenario's name.
    h.get_by_label("FITS");
    h.key_press(egui::Key::ArrowRight);
    h.run();
    let second = h.get_by_label("Chart: Roofline").rect();
    assert!(viewport.expand(1.0).contains_rect(second), "{second:?}");
    assert!(h.query_by_label("Chart: Memory").is_none());
    for _ in 0..2 {
        h.key_press(egui::Key::ArrowLeft);
        h.run();
    }
    h.get_by_label("Chart: Sensitivity");
    h.get_by_label_contains("Slide 5 of 5");
}
