//! The window's timeline and measured-run panel, driven headless: the memory chart's header toggle
//! switches to the timeline (found by label), a typed path loads a snapshot, the calibration is one
//! edit that Undo takes back, pasted text becomes a light measurement, and a hostile file shows an
//! error instead of a measurement.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::kittest::Queryable;
use vram_explorer::app::commands::Command;
use vram_explorer::ui::measured_state;

#[path = "support/window.rs"]
mod window;
use window::{app, harness, inside, rect};

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn type_path(h: &mut egui_kittest::Harness<'_, vram_explorer::app::ExplorerApp>, path: &str) {
    measured_state::with(&h.ctx, |s| s.path = path.to_owned());
    h.run();
    h.get_by_label("Load path").click();
    h.run();
    h.run();
}

#[test]
fn the_header_toggle_switches_to_the_timeline_and_back() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    assert!(h.query_by_label("Plot: Timeline").is_none());
    h.get_by_label("Timeline").click();
    h.run();
    let plot = rect(&h, "Plot: Timeline");
    assert!(
        inside(plot, rect(&h, "Marker: Timeline")),
        "the peak is inside the plot"
    );
    assert!(h.query_by_label("Plot: Memory").is_none());
    h.get_by_label("Composition").click();
    h.run();
    assert!(h.query_by_label("Plot: Memory").is_some());
}

#[test]
fn a_snapshot_loads_and_calibrates_as_one_undoable_edit() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    type_path(&mut h, &data("snapshots/training_step.pickle"));
    let loaded = measured_state::loaded(&h.ctx).expect("loaded");
    assert!(matches!(
        loaded.measurement,
        vram_explorer::measured::Measurement::Snapshot(_)
    ));
    assert!(
        h.query_by_label("Plot: Timeline").is_some(),
        "loading shows the timeline"
    );
    let before = h.state().scenario().overheads.allocator_reserve_fraction;
    h.get_by_label("Calibrate from measurement").click();
    h.run();
    h.run();
    let after = h.state().scenario().overheads.allocator_reserve_fraction;
    assert!(
        (after - 7_340_032.0 / 76_546_048.0).abs() < 1e-12,
        "{before} → {after}"
    );
    assert_eq!(h.state().scenario().overheads.workspace_mib, 1.0);
    h.state_mut().request(Command::Undo);
    h.run();
    h.run();
    assert_eq!(
        h.state().scenario().overheads.allocator_reserve_fraction,
        before
    );
}

#[test]
fn pasted_numbers_become_a_measured_marker() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    h.get_by_label("Paste…").click();
    h.run();
    measured_state::with(&h.ctx, |s| {
        s.paste = "max_memory_allocated: 12.0 GiB\n".to_owned()
    });
    h.run();
    h.get_by_label("Use pasted").click();
    h.run();
    let l = measured_state::loaded(&h.ctx).expect("parsed");
    assert_eq!(l.source, "pasted text");
    h.get_by_label("Composition").click();
    h.run();
    assert!(h.query_by_label("Plot: Memory").is_some());
}

#[test]
fn a_hostile_file_is_an_error_not_a_measurement() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    let bad = data("snapshots/deep_nesting.pickle");
    type_path(&mut h, &bad);
    assert!(measured_state::loaded(&h.ctx).is_none());
    let err = measured_state::with(&h.ctx, |s| s.error.clone()).unwrap();
    assert!(
        err.contains("nested deeper") && err.ends_with(&bad),
        "{err}"
    );
}
