//! Family-aware controls and units (issue 16): a CNN or a recommender shows images or samples, no
//! sequence length, prompt or attention kernel; a transformer keeps them.

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
use vram_explorer::scenario::Mode;

fn harness(preset: &str, mode: Option<Mode>) -> Harness<'static, ExplorerApp> {
    let mut app = ExplorerApp::default();
    let mut s = vram_explorer::presets::bundled_scenario(preset).expect("bundled preset");
    if let Some(m) = mode {
        s.mode = m;
    }
    *app.scenario_mut() = s;
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn batch_value(h: &Harness<'_, ExplorerApp>) -> String {
    h.get_all_by_label("Micro-batch")
        .find(|n| n.accesskit_node().role() == Role::SpinButton)
        .and_then(|n| n.accesskit_node().value())
        .unwrap_or_default()
}

#[test]
fn cnn_and_recommender_controls_speak_their_units() {
    for (preset, unit) in [
        ("resnet50-batch32", "images"),
        ("recommender-hbm-a100", "samples"),
    ] {
        for mode in [Mode::Training, Mode::Inference] {
            let h = harness(preset, Some(mode));
            let what = format!("{preset} {mode:?}");
            assert!(
                batch_value(&h).ends_with(unit),
                "{what}: {}",
                batch_value(&h)
            );
            for absent in ["Sequence length", "Prompt", "Generated", "Attention kernel"] {
                assert!(h.query_by_label(absent).is_none(), "{what}: {absent} shown");
            }
            h.get_by_label_contains(&format!(" {unit}/s"));
            let seq: Vec<String> = h
                .query_all_by_label_contains("sequences")
                .map(|n| n.accesskit_node().value().unwrap_or_default())
                .collect();
            assert!(seq.is_empty(), "{what}: {seq:?}");
            assert!(
                h.query_by_label_contains("tokens/s").is_none(),
                "{what}: tokens/s"
            );
            let node = h.get_by_label_contains("Largest batch that fits: ");
            let largest = node.accesskit_node().value().unwrap_or_default();
            let one = unit.trim_end_matches('s');
            assert!(
                largest.contains(one) || largest.contains("none"),
                "{what}: {largest}"
            );
        }
    }
}

#[test]
fn a_transformer_keeps_its_sequence_controls() {
    let h = harness("llama3-8b-full-finetune-h100", Some(Mode::Training));
    assert!(batch_value(&h).ends_with("seq"), "{}", batch_value(&h));
    h.get_by_role_and_label(Role::Slider, "Sequence length");
    h.get_by_role_and_label(Role::ComboBox, "Attention kernel");
    h.get_by_label_contains(" tokens/s");
}
