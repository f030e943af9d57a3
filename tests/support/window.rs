//! Shared by the window tests that measure rectangles from the accessibility tree:
//! `#[path = "support/window.rs"] mod window;`.
#![allow(dead_code)]

use egui::Rect;
use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::Scenario;

/// The real window at `size` pixels, run until it settles. Eight frames, not kittest's four: a
/// legend that fits its rows may shrink its text, merge its smallest rows and grow back (about six
/// frames after a switch to presentation mode).
pub fn harness(app: ExplorerApp, size: (f32, f32)) -> Harness<'static, ExplorerApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(size.0, size.1))
        .with_max_steps(8)
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

/// A tall window (1600 × 2400, every control group on screen) with the default scenario in
/// training mode and `edit` applied.
pub fn training(edit: impl FnOnce(&mut Scenario)) -> Harness<'static, ExplorerApp> {
    harness(
        app(false, |s| {
            s.mode = vram_explorer::scenario::Mode::Training;
            edit(s);
        }),
        (1600.0, 2400.0),
    )
}

/// Picks `option` in the combo box labelled `combo`, as a user clicks: open it, click the option
/// (not a label of the same text). A popup still open from the last choice is closed first.
pub fn choose(h: &mut Harness<'_, ExplorerApp>, combo: &str, option: &str) {
    h.get_by_role_and_label(Role::ComboBox, combo)
        .click_accesskit();
    h.run();
    if h.query_by_label(option).is_none() {
        h.get_by_role_and_label(Role::ComboBox, combo)
            .click_accesskit();
        h.run();
    }
    h.get_all_by_label(option)
        .find(|n| n.accesskit_node().role() != Role::Label)
        .expect("option in the open combo box")
        .click_accesskit();
    h.run();
}

/// The screen rectangle of the node labelled `label`.
pub fn rect(h: &Harness<'_, ExplorerApp>, label: &str) -> Rect {
    h.get_by_label(label).rect()
}

/// `inner` lies inside `outer` (1 px of rounding allowed).
pub fn inside(outer: Rect, inner: Rect) -> bool {
    outer.expand(1.0).contains_rect(inner)
}

/// Focuses the number field of `label` (which starts editing it) and types `text`, key by key.
pub fn type_into(h: &mut Harness<'_, ExplorerApp>, label: &str, text: &str) {
    h.get_all_by_label(label)
        .find(|n| n.accesskit_node().role() == Role::SpinButton)
        .expect("number field")
        .focus();
    h.run();
    for c in text.chars() {
        h.input_mut().events.push(egui::Event::Text(c.to_string()));
        h.run();
    }
}
