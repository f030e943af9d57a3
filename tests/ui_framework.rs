//! The window's Framework group (issue 12): the profile, and the Hugging Face settings that change
//! the peak, driven headless through AccessKit as a user would.

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
use vram_explorer::scenario::{HfTrainer, Mode, PeftMethod, Profile};

fn harness() -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    let s = app.scenario_mut();
    s.mode = Mode::Training;
    s.peft.method = PeftMethod::Qlora;
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
    h.get_all_by_label(option)
        .find(|n| n.accesskit_node().role() != Role::Label)
        .expect("option in the open combo box")
        .click_accesskit();
    h.run();
}

fn peak(h: &Harness<'_, ExplorerApp>) -> f64 {
    vram_explorer::estimator::estimate(h.state().scenario())
        .memory
        .tensor_peak
        .get()
}

#[test]
fn the_trl_trainer_is_picked_in_the_framework_group_and_drops_the_logits() {
    let mut h = harness();
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    choose(&mut h, "Trainer", "TRL SFTTrainer");
    assert_eq!(
        h.state().scenario().implementation.hf.trainer,
        HfTrainer::TrlSft
    );
    assert!(peak(&h) < before, "fused head: {before} -> {}", peak(&h));
    // QLoRA shows bitsandbytes' own settings; another framework hides the Hugging Face ones.
    h.get_by_role_and_label(Role::ComboBox, "bitsandbytes");
    choose(&mut h, "Framework", "Megatron-Core");
    assert_eq!(
        h.state().scenario().implementation.profile,
        Profile::Megatron
    );
    assert!(h.query_by_label("Trainer").is_none());
}
