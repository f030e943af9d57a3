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
    h.step();
    h.get_by_label("Load path").click();
    h.step();
    // The file is read on a worker thread; the panel shows a spinner meanwhile (so `step`, not
    // `run`, which waits for the window to stop repainting).
    let start = std::time::Instant::now();
    while measured_state::with(&h.ctx, |s| s.loading.is_some()) {
        assert!(start.elapsed().as_secs() < 20, "still loading");
        std::thread::sleep(std::time::Duration::from_millis(5));
        h.step();
    }
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
fn the_panel_says_which_file_is_loading_and_the_window_keeps_drawing() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    measured_state::with(&h.ctx, |s| s.loading = Some("big_run.pickle".to_owned()));
    h.step();
    h.step();
    h.get_by_label("Loading… big_run.pickle");
    // A real load clears it and brings the measurement.
    type_path(&mut h, &data("snapshots/real_cs336_transformer.pickle"));
    assert!(h.query_by_label("Loading… big_run.pickle").is_none());
    assert!(measured_state::loaded(&h.ctx).is_some());
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
    assert!(err.contains("not a dict") && err.ends_with(&bad), "{err}");
}

#[test]
fn file_export_writes_the_timeline_and_the_comparison() {
    let dir = std::env::temp_dir().join(format!("vram-timeline-export-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    type_path(&mut h, &data("snapshots/real_cs336_transformer.pickle"));
    h.get_by_label("File").click();
    h.run();
    h.get_by_label("Export timeline and comparison…").click();
    // No file dialog under test (no portal): the window asks for a typed path instead.
    h.run();
    h.run();
    let target = dir.join("step.csv");
    h.get_by_label("File path")
        .type_text(target.to_str().unwrap());
    h.run();
    h.get_by_label("OK").click();
    h.run();
    h.run();
    let csv = std::fs::read_to_string(&target).unwrap();
    assert!(csv.lines().count() > 10, "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("step.json")).unwrap()).unwrap();
    assert!(
        json["measured"]["allocated_peak_bytes"].as_f64().unwrap() > 1e10,
        "{json}"
    );
    let md = std::fs::read_to_string(dir.join("step-comparison.md")).unwrap();
    assert!(md.contains("snapshot allocated peak"), "{md}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_panel_takes_the_height_it_needs_below_the_chart_at_any_width() {
    // Narrow windows wrap the panel's controls; a loaded measurement adds its result rows. The
    // chart above is sized with the height the panel measured, so the rows sit below the plot
    // and inside the window, none clipped.
    for width in [760.0, 1000.0, 1280.0, 1600.0] {
        let mut h = harness(app(false, |_| {}), (width, 800.0));
        type_path(&mut h, &data("snapshots/training_step.pickle"));
        let plot = rect(&h, "Plot: Timeline");
        let calibrate = rect(&h, "Calibrate from measurement");
        let load = rect(&h, "Load measurement…");
        let window = egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(width, 800.0));
        for (what, r) in [("calibrate", calibrate), ("load", load)] {
            assert!(
                inside(window, r),
                "{width}: {what} {r:?} outside the window"
            );
            assert!(
                r.top() >= plot.bottom() - 1.0,
                "{width}: {what} {r:?} over the plot {plot:?}"
            );
        }
    }
}
