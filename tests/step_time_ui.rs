//! The roofline chart's step-time view, driven headless: the header toggle (found by label) shows
//! the parts of the step with their times, the best layouts for the GPU budget arrive from the
//! worker thread, "Apply #1" writes one into the scenario as one edit, and Undo takes it back.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::commands::Command;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::ui::layout_state;

#[path = "support/window.rs"]
mod window;
use window::{app, harness};

fn seventy_b() -> vram_explorer::app::ExplorerApp {
    app(false, |s| {
        *s = bundled_scenario("llama3-70b-zero3-8xh100").unwrap();
    })
}

#[test]
fn the_step_time_view_shows_the_parts_and_applies_the_best_layout() {
    let mut h = harness(seventy_b(), (1280.0, 800.0));
    assert!(h.query_by_label("Matrix multiplies").is_none());
    h.get_by_label("Step time").click();
    // The layout search starts on a worker thread and its spinner repaints while it runs: step,
    // not `run` (which waits for the window to settle).
    h.run_steps(3);
    assert!(h.query_by_label("Matrix multiplies").is_some());
    assert!(
        h.query_by_label("Recompute").is_some(),
        "the preset recomputes"
    );
    let total = h.state().scenario().clone();
    let step = vram_explorer::estimator::estimate(&total)
        .performance
        .step
        .total_s;
    let text = format!("Total {}", vram_explorer::units::fmt_seconds(step));
    assert!(
        h.query_by_label_contains(&text).is_some(),
        "the totals line says {text}"
    );
    // The search runs on a worker thread: wait for its answer (bounded).
    let mut waited = 0;
    while h.query_by_label("Apply #1").is_none() && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        h.run();
        waited += 1;
    }
    let result = layout_state::with(&h.ctx, |s| s.result.clone()).expect("searched");
    let best = result.best[0];
    let before = h.state().scenario().clone();
    assert!(!best.is_applied_in(&before));
    h.get_by_label("Apply #1").click();
    h.run();
    h.run();
    assert!(best.is_applied_in(h.state().scenario()));
    assert!(
        h.query_by_label("current").is_some(),
        "the applied layout is marked"
    );
    h.state_mut().request(Command::Undo);
    h.run();
    h.run();
    assert_eq!(h.state().scenario(), &before);
    h.get_by_label("Roofline").click();
    h.run();
    assert!(h.query_by_label("Matrix multiplies").is_none());
}

#[test]
fn inference_shows_first_token_and_decode_without_a_search() {
    let mut h = harness(app(false, |_| {}), (1280.0, 800.0));
    assert!(h.query_by_label("Decode").is_none());
    h.get_by_label("Step time").click();
    h.run();
    assert!(h.query_by_label("Prefill").is_some());
    assert!(h.query_by_label("Decode").is_some());
    assert!(h.query_by_label_contains("Fastest layouts").is_none());
    assert!(layout_state::with(&h.ctx, |s| s.requests.is_empty() && !s.running));
}

/// The Timing group's "Elementwise kernels" combo, picked by label: a Hugging Face training step
/// runs eager PyTorch's kernels under `Auto`; "Fused" makes the step faster by what they cost, and
/// the step-time view's totals line follows.
#[test]
fn the_elementwise_kernels_are_picked_in_the_timing_group() {
    use vram_explorer::scenario::{ElementwiseKernels, Profile};
    let mut h = window::training(|s| s.implementation.profile = Profile::HuggingFace);
    let step = |h: &egui_kittest::Harness<'_, vram_explorer::app::ExplorerApp>| {
        vram_explorer::estimator::estimate(h.state().scenario())
            .performance
            .step
            .total_s
    };
    // Close the groups open by default so that the Timing group's controls are on screen.
    for open in ["Strategies", "Parallelism", "Hardware"] {
        h.get_by_label(open).click();
        h.run();
    }
    h.get_by_label("Timing").click();
    h.run();
    let eager = step(&h);
    window::choose(&mut h, "Elementwise kernels", "Fused");
    assert_eq!(
        h.state().scenario().timing.parts.elementwise,
        ElementwiseKernels::Fused
    );
    let fused = step(&h);
    assert!(fused < eager, "fused {fused} s, eager {eager} s");
    // The step-time view's totals line shows the new step (its layout search runs on a worker
    // thread and repaints while it runs: step, not `run`).
    h.get_by_label("Step time").click();
    h.run_steps(3);
    let shown = format!("Total {}", vram_explorer::units::fmt_seconds(fused));
    assert!(
        h.query_by_label_contains(&shown).is_some(),
        "the totals line says {shown}"
    );
    // The bar names the kernels it timed.
    assert!(h.query_by_label("Elementwise and loss").is_some());
    assert!(h.query_by_label("Eager elementwise and loss").is_none());
    // (Set directly: a combo box picked while the view's layout search repaints is flaky.)
    h.state_mut().scenario_mut().timing.parts.elementwise = ElementwiseKernels::Eager;
    h.run_steps(3);
    assert!(h.query_by_label("Eager elementwise and loss").is_some());
}

/// On a projector (presentation, 1280 × 720) a step of nine parts fits its cell: the text shrinks
/// (not below 18 px) and the smallest parts share a row, instead of the cell growing, which took
/// the height from the memory chart above (its plot fell to 69 points, capacity label clipped).
/// The memory plot keeps the height it has with the roofline view, and the last row lies on
/// screen.
#[test]
fn the_step_time_view_fits_its_cell_on_a_projector() {
    let preset = bundled_scenario("llama3-8b-128k-cp8-64xh100").unwrap();
    let plot_height = |step_view: bool| {
        let mut h = harness(app(true, |s| *s = preset.clone()), (1280.0, 720.0));
        layout_state::with(&h.ctx, |s| s.step_view = step_view);
        h.run_steps(8);
        let plot = h.get_by_label("Plot: Memory").rect();
        if step_view {
            // The step's merged row ("3 smaller"; the legend's reads "5 smaller: 2.16 GiB").
            let merged = h.query_all_by_label_contains(" smaller").find(|n| {
                n.accesskit_node()
                    .value()
                    .is_some_and(|t| t.ends_with(" smaller"))
            });
            let last = merged
                .unwrap_or_else(|| h.get_by_label("Input copy"))
                .rect();
            assert!(last.bottom() <= 720.0, "{last:?}");
        }
        plot.height()
    };
    let (roofline, step) = (plot_height(false), plot_height(true));
    assert!(
        step >= 0.95 * roofline && step > 100.0,
        "memory plot {step} with the step-time view, {roofline} without"
    );
}

/// With the optimizer offloaded the step has a part for the host's update, and the Timing group's
/// "Host optimizer bandwidth" sets it: twice the bandwidth, half the part, as the chart shows.
#[test]
fn the_hosts_optimizer_update_is_a_part_its_bandwidth_set_under_timing() {
    let mut h = harness(seventy_b(), (1600.0, 1400.0));
    h.get_by_label("Step time").click();
    h.run_steps(3);
    assert!(h.query_by_label("Optimizer step on the host").is_some());
    let host = |h: &egui_kittest::Harness<'_, vram_explorer::app::ExplorerApp>| {
        vram_explorer::estimator::estimate(h.state().scenario())
            .performance
            .step
            .host_optimizer_s
    };
    let before = host(&h);
    let shown = |s: f64| format!("{} ·", vram_explorer::units::fmt_seconds(s));
    assert!(
        h.query_by_label_contains(&shown(before)).is_some(),
        "the chart shows {}",
        shown(before)
    );
    // Close the groups open by default so that the Timing group's controls are on screen.
    for open in ["Strategies", "Parallelism", "Hardware"] {
        h.get_by_label(open).click();
        h.run_steps(2);
    }
    h.get_by_label("Timing").click();
    h.run_steps(2);
    window::type_into(&mut h, "Host optimizer bandwidth", "176");
    h.key_press(egui::Key::Enter);
    h.run_steps(3);
    assert_eq!(h.state().scenario().timing.host_optimizer_gb_s, 176.0);
    let after = host(&h);
    assert!(
        (after - before / 2.0).abs() < 1e-9 * before,
        "{after} vs {before}"
    );
    assert!(
        h.query_by_label_contains(&shown(after)).is_some(),
        "the chart shows {}",
        shown(after)
    );
}
