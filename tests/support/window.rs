//! Shared by the window tests that measure rectangles from the accessibility tree:
//! `#[path = "support/window.rs"] mod window;`.
#![allow(dead_code)]

use egui::Rect;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::Scenario;

/// The real window at `size` pixels, one frame run.
pub fn harness(app: ExplorerApp, size: (f32, f32)) -> Harness<'static, ExplorerApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(size.0, size.1))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

/// The default app, in presentation mode or not, with `edit` applied to its scenario.
pub fn app(presentation: bool, edit: impl FnOnce(&mut Scenario)) -> ExplorerApp {
    let mut app = ExplorerApp::default();
    app.prefs_mut().presentation = presentation;
    edit(app.scenario_mut());
    app
}

/// The screen rectangle of the node labelled `label`.
pub fn rect(h: &Harness<'_, ExplorerApp>, label: &str) -> Rect {
    h.get_by_label(label).rect()
}

/// `inner` lies inside `outer` (1 px of rounding allowed).
pub fn inside(outer: Rect, inner: Rect) -> bool {
    outer.expand(1.0).contains_rect(inner)
}
