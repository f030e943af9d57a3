//! The serving-features group (issue 15 items 2–3): an inference scenario shows it, its controls
//! are found by label, choosing a draft model reveals the draft's dimensions, and what the user
//! sets reaches the scenario and the estimate.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::estimator::estimate;
use vram_explorer::scenario::{Mode, SpeculativeMethod};

fn harness(mode: Mode, dynamic: bool) -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    app.scenario_mut().mode = mode;
    app.scenario_mut().inference.dynamic_batching = dynamic;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 2400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn open(h: &mut Harness<'_, ExplorerApp>) {
    h.get_by_label("Serving features").click();
    h.run();
    h.run();
}

#[test]
fn the_group_is_for_inference_only() {
    let h = harness(Mode::Training, false);
    assert!(h.query_by_label("Serving features").is_none());
    let mut h = harness(Mode::Inference, false);
    open(&mut h);
    for label in [
        "Prefill chunk",
        "Sequences per prompt",
        "KV offloaded",
        "Weights offloaded",
    ] {
        assert!(
            h.query_all_by_label_contains(label).next().is_some(),
            "{label}"
        );
    }
    // Prefix caching needs dynamic batching.
    assert!(
        h.query_all_by_label_contains("Shared prefix")
            .next()
            .is_none()
    );
    let mut h = harness(Mode::Inference, true);
    open(&mut h);
    assert!(
        h.query_all_by_label_contains("Shared prefix")
            .next()
            .is_some()
    );
}

#[test]
fn choosing_a_draft_model_shows_its_settings_and_adds_its_weights() {
    let mut h = harness(Mode::Inference, false);
    open(&mut h);
    assert!(
        h.query_all_by_label_contains("Draft layers")
            .next()
            .is_none()
    );
    let before = estimate(h.state().scenario()).memory.gpu_total.get();
    h.get_by_label("Speculative decoding").click();
    h.run();
    h.get_by_label("Draft model").click();
    h.run();
    h.run();
    assert_eq!(
        h.state().scenario().inference.features.speculative.method,
        SpeculativeMethod::DraftModel
    );
    assert!(
        h.query_all_by_label_contains("Draft layers")
            .next()
            .is_some()
    );
    assert!(
        h.query_all_by_label_contains("Acceptance rate")
            .next()
            .is_some()
    );
    let after = estimate(h.state().scenario()).memory.gpu_total.get();
    // Llama-3.2-1B's 1.236 B BF16 parameters and its KV cache.
    assert!(after > before + 2.4e9, "{before} → {after}");
}
