//! The window's Post-training group (issue 15 item 4): the algorithm, the reference and the rollout,
//! driven headless through AccessKit as a user would; each model shows as its own component.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking; absent components are exact zeros"
)]
#![cfg(feature = "gui")]

#[path = "support/window.rs"]
mod window;
use window::choose;

use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;
use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::scenario::{RlAlgorithm, RlFramework, Rollout};

#[test]
fn dpo_then_grpo_with_a_colocated_vllm_are_picked_in_the_post_training_group() {
    let mut h = window::training(|_| {});
    h.get_by_label("Post-training").click();
    h.run();
    choose(&mut h, "Algorithm", "DPO");
    let s = h.state().scenario().clone();
    assert_eq!(s.post_training.algorithm, RlAlgorithm::Dpo);
    let e = estimate(&s);
    // Full fine-tuning: the reference is a second copy of the weights, in every training phase.
    let fwd = e.memory.phases.get(Phase::Forward).unwrap();
    assert_eq!(
        fwd.get(Component::ReferenceModel),
        fwd.get(Component::Weights)
    );
    assert!(e.memory.phases.get(Phase::Scoring).is_some());
    h.state_mut().scenario_mut().post_training.algorithm = RlAlgorithm::Grpo;
    h.run();
    choose(&mut h, "Rollout", "vLLM co-located");
    let s = h.state().scenario().clone();
    assert_eq!(s.post_training.rollout, Rollout::VllmColocate);
    let e = estimate(&s);
    assert!(e.memory.peak.get(Component::RolloutEngine).get() > 0.0);
    assert!(e.memory.phases.get(Phase::Generation).is_some());
    // The rollout's settings are shown only for vLLM.
    h.get_by_label("vLLM sleep mode");
    // The step now generates and scores: the headline's saturation says it is the training phase's.
    h.run();
    assert!(h.query_by_label_contains("Compute saturation").is_none());
    h.get_by_label_contains("Training-phase saturation");
}

#[test]
fn a_plain_training_step_keeps_its_compute_saturation() {
    let h = window::training(|_| {});
    h.get_by_label_contains("Compute saturation");
    assert!(
        h.query_by_label_contains("Training-phase saturation")
            .is_none()
    );
}

#[test]
fn verl_with_its_offloads_is_picked_in_the_post_training_group() {
    let mut h = window::training(|_| {});
    h.get_by_label("Post-training").click();
    h.run();
    choose(&mut h, "Algorithm", "GRPO");
    // The offload switches belong to a framework: none under TRL.
    assert!(h.query_by_label("Parameter offload").is_none());
    choose(&mut h, "Framework", "verl");
    choose(&mut h, "Rollout", "vLLM co-located");
    h.get_by_role_and_label(Role::CheckBox, "Parameter offload")
        .click_accesskit();
    h.run();
    h.get_by_role_and_label(Role::CheckBox, "Optimizer offload")
        .click_accesskit();
    h.run();
    let s = h.state().scenario().clone();
    let p = &s.post_training;
    assert_eq!(p.framework, RlFramework::Verl);
    assert!(p.param_offload && p.optimizer_offload);
    // Generation holds no policy state: verl offloads the shards before vLLM generates.
    let e = estimate(&s);
    let g = e.memory.phases.get(Phase::Generation).unwrap();
    assert_eq!(g.get(Component::Weights).get(), 0.0);
    assert_eq!(g.get(Component::OptimizerStates).get(), 0.0);
    // OpenRLHF has no parameter offload; it has the reference's.
    choose(&mut h, "Framework", "OpenRLHF");
    assert!(h.query_by_label("Parameter offload").is_none());
    h.get_by_label("Reference offload");
}
