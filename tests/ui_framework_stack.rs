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
use vram_explorer::estimator::{Component, MemoryEstimate, Phase, estimate};
use vram_explorer::scenario::{Mode, Profile, Scenario, Sharding, ZeroStage};

#[path = "support/window.rs"]
mod window;

/// A training scenario under `profile` in a `height`-point-tall window, the Framework group open.
fn framework_group(profile: Profile, height: f32) -> Harness<'static, ExplorerApp> {
    sharded_framework_group(profile, height, |_| {})
}

/// [`framework_group`] with `more` applied to the scenario (a ZeRO implementation, say).
fn sharded_framework_group(
    profile: Profile,
    height: f32,
    more: impl FnOnce(&mut Scenario),
) -> Harness<'static, ExplorerApp> {
    let app = window::app(false, |s| {
        s.mode = Mode::Training;
        s.implementation.profile = profile;
        more(s);
    });
    let mut h = window::harness(app, (1600.0, height));
    h.get_by_label("Framework").click();
    h.run();
    h
}

/// A torchtune training scenario with the Framework group open.
fn torchtune_framework_group() -> Harness<'static, ExplorerApp> {
    framework_group(Profile::Torchtune, 2400.0)
}

#[test]
fn the_framework_selector_sets_the_profile() {
    let mut h = framework_group(Profile::HuggingFace, 1400.0);
    assert!(h.query_by_label("LM-head chunk").is_none());
    h.get_all_by_label("Framework").last().unwrap().click();
    h.run();
    h.get_by_label("LitGPT").click();
    h.run();
    assert_eq!(h.state().scenario().implementation.profile, Profile::LitGpt);
    assert!(h.get_all_by_label_contains("LM-head chunk").count() > 0);
}

/// Clicks the control labelled `label` in the torchtune group: the memory estimate before and
/// after, and the scenario after.
fn toggle_torchtune(label: &str) -> (MemoryEstimate, MemoryEstimate, Scenario) {
    let mut h = torchtune_framework_group();
    let before = estimate(h.state().scenario()).memory;
    h.get_by_label(label).click();
    h.run();
    let after = h.state().scenario().clone();
    (before, estimate(&after).memory, after)
}

/// The saved activations at the end of the forward.
fn forward_saved(m: &MemoryEstimate) -> f64 {
    m.phases
        .get(Phase::Forward)
        .unwrap()
        .get(Component::Activations)
        .get()
}

/// torchtune's `compile` toggle: found by its label under the torchtune profile, it sets
/// `implementation.torchtune.compile` and the loss's saved tensors change as the estimate says
/// (16-bit logits: the compiled loss keeps 2·b·s·V of chunks instead of a 4·b·s·V log-softmax).
#[test]
fn torchtunes_compile_toggle_reaches_the_estimate() {
    let (before, after, s) = toggle_torchtune("Compile (torchtune)");
    assert!(s.implementation.torchtune.compile);
    assert!(forward_saved(&after) < forward_saved(&before));
}

/// `implementation.torchtune.legacy_loss`, toggled by its label: torchtune 0.1's recipe keeps its
/// FP32 logits through backward, so the peak rises by 4·b·s·V.
#[test]
fn torchtunes_legacy_loss_toggle_reaches_the_estimate() {
    let (before, after, s) = toggle_torchtune("torchtune 0.1 loss");
    assert!(s.implementation.torchtune.legacy_loss);
    assert!(after.tensor_peak.get() > before.tensor_peak.get());
}

/// `implementation.torchtune.legacy_rms_norm`, toggled by its label: torchtune before 0.5 cast the
/// normalised x back to BF16 before the scale, so a BF16 full fine-tune saves less.
#[test]
fn torchtunes_legacy_rms_norm_toggle_reaches_the_estimate() {
    let (before, after, s) = toggle_torchtune("RMSNorm before 0.5");
    assert!(s.implementation.torchtune.legacy_rms_norm);
    assert!(forward_saved(&after) < forward_saved(&before));
}

/// Llama-3-8B training under `profile`, ZeRO-3 through `sharding` over 8 GPUs, the Framework
/// group open.
fn zero3_over_eight(profile: Profile, sharding: Sharding) -> Harness<'static, ExplorerApp> {
    sharded_framework_group(profile, 2400.0, |s| {
        s.strategies.zero = ZeroStage::Stage3;
        s.implementation.sharding = sharding;
        s.parallel.dp = 8;
    })
}

/// One phase's bytes.
fn phase_total(m: &MemoryEstimate, ph: Phase) -> f64 {
    m.phases.get(ph).unwrap().total().get()
}

/// DeepSpeed's stage-3 reuse distance is set in the Framework group: typing 0 into
/// "stage3_max_reuse_distance" releases every parameter after use, so Llama-3-8B at DP 8 no longer
/// keeps its head gathered from forward to backward and the backward holds less.
#[test]
fn deepspeeds_reuse_distance_reaches_the_estimate() {
    let mut h = zero3_over_eight(Profile::HuggingFace, Sharding::DeepSpeed);
    let before = estimate(h.state().scenario()).memory;
    window::type_into(&mut h, "stage3_max_reuse_distance", "0");
    h.key_press(egui::Key::Enter);
    h.run();
    let s = h.state().scenario().clone();
    assert_eq!(s.implementation.deepspeed.stage3_max_reuse_distance, 0.0);
    let after = estimate(&s).memory;
    assert!(phase_total(&after, Phase::Backward) < phase_total(&before, Phase::Backward));
}

/// FSDP2's "Root resharded after forward" toggle (torch ≥ 2.8 with the root's
/// `reshard_after_forward=True` explicit): under torchtune, whose loop computes the loss after the
/// model's forward, it sets `implementation.fsdp.root_reshard_after_forward` and the forward's
/// peak falls: the embedding and head are sharded again at the loss.
#[test]
fn fsdp_root_resharding_toggle_reaches_the_estimate() {
    let mut h = zero3_over_eight(Profile::Torchtune, Sharding::Fsdp2);
    let before = estimate(h.state().scenario()).memory;
    h.get_by_label("Root resharded after forward").click();
    h.run();
    let s = h.state().scenario().clone();
    assert!(s.implementation.fsdp.root_reshard_after_forward);
    let after = estimate(&s).memory;
    assert!(phase_total(&after, Phase::Forward) < phase_total(&before, Phase::Forward));
}
