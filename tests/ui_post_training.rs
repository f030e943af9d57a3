//! The window's Post-training group (issue 15 item 4): the algorithm, the reference and the rollout,
//! driven headless through AccessKit as a user would; each model shows as its own component.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::scenario::{Mode, RlAlgorithm, Rollout};

fn harness() -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    app.scenario_mut().mode = Mode::Training;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 2400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn choose(h: &mut Harness<'_, ExplorerApp>, combo: &str, option: &str) {
    h.get_by_role_and_label(Role::ComboBox, combo)
        .click_accesskit();
    h.run();
    h.run();
    h.get_all_by_label(option)
        .find(|n| n.accesskit_node().role() != Role::Label)
        .expect("option in the open combo box")
        .click_accesskit();
    h.run();
}

#[test]
fn dpo_then_grpo_with_a_colocated_vllm_are_picked_in_the_post_training_group() {
    let mut h = harness();
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
}
