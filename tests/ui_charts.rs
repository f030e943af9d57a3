//! Charts that never hide their own point (issue 16): zoom to the bars, off-GPU bytes on their own
//! panel, a click on a segment pins its explanation, a roofline that holds every point and says
//! when a peak is not sourced. Rectangles come from the accessibility tree ("Marker: …", "Plot: …").

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::app::commands::Command;
use vram_explorer::scenario::Mode;

#[path = "support/window.rs"]
mod window;
use window::{app, harness, inside, rect};

#[test]
fn zoom_to_the_bars_makes_a_small_scenario_readable() {
    // 16.5 GiB of the 79.2 GiB an H100 lets a process allocate: a short bar unless zoomed.
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    let before = rect(&h, "Marker: Memory").height();
    let plot = rect(&h, "Plot: Memory").height();
    assert!(before < 0.3 * plot, "bar {before} of {plot}");
    h.get_by_label("Zoom to the bars").click();
    h.run();
    assert!(h.state().prefs().memory_zoom);
    let after = rect(&h, "Marker: Memory").height();
    assert!(after > 0.8 * plot, "zoomed bar {after} of {plot}");
}

#[test]
fn off_gpu_bytes_are_on_their_own_panel() {
    use vram_explorer::scenario::OffloadTarget;
    let mut h = harness(
        app(false, |s| {
            s.mode = Mode::Training;
            s.strategies.offload_optimizer = OffloadTarget::Cpu;
            s.strategies.offload_params = OffloadTarget::Cpu;
        }),
        (1600.0, 1000.0),
    );
    h.run();
    let gpu_plot = rect(&h, "Plot: Memory");
    let off = rect(&h, "Marker: Off-GPU");
    let off_plot = rect(&h, "Plot: Off-GPU");
    assert!(
        !gpu_plot.intersects(off),
        "off-GPU bar {off:?} on the GPU axis {gpu_plot:?}"
    );
    assert!(inside(off_plot, off));
    // On its own scale the bar nearly fills its panel, which names it and its value above it
    // (its own axis's labels said nothing more and were clipped in the narrow panel).
    assert!(
        off.height() > 0.8 * off_plot.height(),
        "{off:?} in {off_plot:?}"
    );
    let est = vram_explorer::estimator::estimate(h.state().scenario());
    let o = est.memory.offloaded;
    let value = h
        .state()
        .prefs()
        .unit
        .format(o.host + o.nvme + o.second_tier);
    let heading = rect(&h, "Off-GPU");
    let shown = rect(&h, &value);
    assert!(heading.bottom() <= off_plot.top() + 1.0 && shown.bottom() <= off_plot.top() + 1.0);
    assert!(heading.center().x > off_plot.left() && heading.center().x < off_plot.right());
}

#[test]
fn clicking_a_bar_segment_pins_its_explanation() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    assert!(h.query_by_label_contains("Formula —").is_none());
    // The bottom of the peak bar is the weights.
    let bar = rect(&h, "Marker: Memory");
    let at = egui::pos2(bar.center().x, bar.bottom() - 3.0);
    h.input_mut().events.push(egui::Event::PointerMoved(at));
    h.run();
    for pressed in [true, false] {
        h.input_mut().events.push(egui::Event::PointerButton {
            pos: at,
            button: egui::PointerButton::Primary,
            pressed,
            modifiers: egui::Modifiers::NONE,
        });
        h.step();
    }
    h.run();
    h.get_by_label_contains("Formula —");
    assert!(h.query_all_by_label_contains("Weights").count() >= 2);
}

#[test]
fn the_roofline_shows_every_point_and_says_when_a_peak_is_not_sourced() {
    // A 32k-token prompt puts the prefill far right of 10^4 FLOP/B.
    let h = harness(
        app(false, |s| s.inference.prompt_tokens = 32_768),
        (1600.0, 1000.0),
    );
    let node = h.get_by_label_contains("Prefill:");
    let prefill = node.accesskit_node().value().unwrap_or_default();
    let ai: f64 = prefill
        .trim_start_matches("Prefill: ")
        .split(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(ai > 1e4, "{prefill}");
    let chart = rect(&h, "Chart: Roofline");
    let legend = rect(&h, "Legend: Roofline");
    for point in ["Marker: Roofline Prefill", "Marker: Roofline Decode"] {
        let marker = rect(&h, point);
        assert!(
            inside(chart, marker),
            "{point} {marker:?} outside {chart:?}"
        );
        assert!(!legend.intersects(marker), "{point} under the legend");
    }
    // BERT-tiny on a Snapdragon 865: the catalog has no sourced compute peak for it.
    let mut h = harness(ExplorerApp::default(), (1600.0, 1000.0));
    h.state_mut()
        .request(Command::LoadPresetId("bert-tiny-snapdragon865"));
    h.run();
    h.get_by_label_contains("no sourced");
    let zero: Vec<String> = h
        .query_all_by_label_contains(" 0 TFLOP/s")
        .map(|n| {
            format!(
                "{:?}",
                n.accesskit_node().label().or(n.accesskit_node().value())
            )
        })
        .collect();
    assert!(zero.is_empty(), "{zero:?}");
}

#[test]
fn picking_a_pipeline_stage_shows_its_phases_and_the_limiting_one_stays_marked() {
    use vram_explorer::estimator::estimate;
    use vram_explorer::presets::bundled_scenario;
    let s = bundled_scenario("zero-3d-parallel-cluster").expect("preset");
    let m = estimate(&s).memory;
    let stage = |i: u32| *m.stage_class(i).expect("stage");
    let (first, last) = (stage(0), stage(7));
    let mut h = harness(app(false, |sc| *sc = s.clone()), (1280.0, 800.0));
    // The limiting stage is named in the picker and marked over its bar.
    h.get_by_label("stage 1 (first) · limiting");
    let limiting = rect(&h, "Marker: Limiting stage");
    let before = rect(&h, "Marker: Memory").height();
    h.get_by_label("stage 8 (last)").click();
    h.run();
    assert_eq!(h.state().prefs().memory_stage, Some(7));
    // The peak phase's bar is now the last stage's: its height scales with that stage's peak.
    let after = rect(&h, "Marker: Memory").height();
    let ratio = last.peak.total().get() / first.peak.total().get();
    assert!(ratio < 0.8, "{ratio}");
    assert!(
        (f64::from(after / before) - ratio).abs() < 0.02,
        "bar {after} / {before}, peaks {ratio}"
    );
    // The limiting stage keeps its bar and its mark.
    assert!((rect(&h, "Marker: Limiting stage").height() - limiting.height()).abs() < 0.5);
    // Picking the limiting stage again follows the limiting one.
    h.get_by_label("stage 1 (first) · limiting").click();
    h.run();
    assert_eq!(h.state().prefs().memory_stage, None);
    assert!((rect(&h, "Marker: Memory").height() - before).abs() < 0.5);
}
