//! The window's Optimizer group: Lion, Muon and an optimizer given as state bytes per parameter
//! are picked by label and change the optimizer states as the estimator counts them (issue 12
//! item 6), driven headless through AccessKit as a user would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

#[path = "support/window.rs"]
mod window;
use window::choose;

use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::estimator::{Component, Phase};
use vram_explorer::scenario::{Fp8Recipe, OptimizerKind};

fn states(h: &Harness<'_, ExplorerApp>) -> f64 {
    vram_explorer::estimator::estimate(h.state().scenario())
        .memory
        .phases
        .get(Phase::OptimizerStep)
        .map_or(0.0, |b| b.get(Component::OptimizerStates).get())
}

#[test]
fn lion_muon_and_given_state_bytes_are_picked_in_the_optimizer_group() {
    let mut h = window::training(|_| {});
    h.get_by_label("Optimizer").click();
    h.run();
    let adamw = states(&h);
    choose(&mut h, "Optimizer", "Lion");
    assert_eq!(h.state().scenario().optimizer.kind, OptimizerKind::Lion);
    let lion = states(&h);
    assert!(
        lion < 0.51 * adamw && lion > 0.49 * adamw,
        "{lion} vs {adamw}"
    );
    choose(&mut h, "Optimizer", "Muon");
    let muon = states(&h);
    assert!(muon > lion && muon < adamw, "{muon}");
    // The bytes-per-parameter slider appears only for the given-state optimizer.
    assert!(h.query_by_label("Optimizer state").is_none());
    choose(&mut h, "Optimizer", "Other (state bytes)");
    assert_eq!(
        h.state().scenario().optimizer.kind,
        OptimizerKind::StateBytes
    );
    assert!(h.get_all_by_label("Optimizer state").count() >= 1);
    // Default 8 B per parameter, whatever the state type (the default scenario's is 16-bit).
    let params = vram_explorer::estimator::estimate(h.state().scenario())
        .model
        .params
        .total;
    assert_eq!(states(&h), 8.0 * params);
}

#[test]
fn an_fp8_recipe_is_picked_in_the_optimizer_group() {
    let mut h = window::training(|_| {});
    h.get_by_label("Optimizer").click();
    h.run();
    choose(&mut h, "FP8 recipe", "DeepSeek-V3 block-wise");
    assert_eq!(
        h.state().scenario().precision.fp8_recipe,
        Fp8Recipe::DeepSeekBlockwise
    );
    let master = vram_explorer::estimator::estimate(h.state().scenario())
        .memory
        .phases
        .get(Phase::OptimizerStep)
        .map_or(0.0, |b| b.get(Component::MasterWeights).get());
    assert!(master > 0.0, "FP32 master weights");
}

/// 8-bit Adam's library is a choice shown for 8-bit Adam only: torchao's compiled step holds three
/// FP32 buffers of the largest tensor at the step, bitsandbytes' kernel none.
#[test]
fn the_eight_bit_library_is_picked_under_eight_bit_adam() {
    use vram_explorer::scenario::EightBitLibrary;
    let mut h = window::training(|_| {});
    h.get_by_label("Optimizer").click();
    h.run();
    assert!(h.query_by_label("8-bit library").is_none());
    choose(&mut h, "Optimizer", "8-bit Adam");
    let step = |h: &Harness<'_, ExplorerApp>| {
        vram_explorer::estimator::estimate(h.state().scenario())
            .memory
            .phases
            .get(Phase::OptimizerStep)
            .map_or(0.0, |b| b.get(Component::Transient).get())
    };
    let bnb = step(&h);
    choose(&mut h, "8-bit library", "torchao");
    assert_eq!(
        h.state().scenario().optimizer.eight_bit_library,
        EightBitLibrary::Torchao
    );
    let largest = vram_explorer::estimator::estimate(h.state().scenario())
        .model
        .largest_tensor;
    let extra = step(&h) - bnb;
    assert!(
        (extra / (12.031_25 * largest) - 1.0).abs() < 1e-9,
        "{extra}"
    );
}
