//! The layer pattern editor (issue 14 §5), driven by label through AccessKit.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

use egui_kittest::Harness;
use egui_kittest::kittest::{NodeT, Queryable};
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::{Mixer, Mlp, Mode, pattern_layers};

fn harness(app: ExplorerApp) -> Harness<'static, ExplorerApp> {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 2400.0))
        .build_ui_state(|ui, app: &mut ExplorerApp| app.ui(ui), app);
    h.run();
    h
}

fn peak(h: &Harness<'_, ExplorerApp>) -> f64 {
    let node = h.get_by_label_contains("Peak per GPU:");
    let n = node.accesskit_node();
    let s = n.label().or_else(|| n.value()).unwrap_or_default();
    let start = s
        .find("Peak per GPU:")
        .map_or(0, |i| i + "Peak per GPU:".len());
    s[start..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect::<String>()
        .parse()
        .unwrap_or(f64::NAN)
}

fn click(h: &mut Harness<'_, ExplorerApp>, label: &str) {
    h.get_by_label(label).click_accesskit();
    h.run();
}

#[test]
fn a_local_global_pattern_shrinks_a_long_context_kv_cache() {
    let mut app = ExplorerApp::default();
    let s = app.scenario_mut();
    s.mode = Mode::Inference;
    s.inference.prompt_tokens = 65_536;
    s.inference.generated_tokens = 128;
    let mut h = harness(app);
    let flat = peak(&h);
    click(&mut h, "Use a layer pattern");
    h.get_by_label("Layer pattern: 32 layers");
    // The same layers as a one-run pattern: the same estimate.
    assert!((peak(&h) - flat).abs() < 1e-9, "{} vs {flat}", peak(&h));
    click(&mut h, "5 local : 1 global");
    let pattern = &h.state().scenario().model.pattern;
    assert_eq!(pattern_layers(pattern), 32);
    let windows: Vec<u32> = pattern
        .iter()
        .flat_map(|p| p.layers.iter())
        .filter_map(|r| match &r.mixer {
            Mixer::Attention(a) => Some(a.window),
            _ => None,
        })
        .collect();
    assert!(
        windows.contains(&1024) && windows.contains(&0),
        "{windows:?}"
    );
    let local = peak(&h);
    assert!(local < flat * 0.8, "peak {flat} -> {local}");
    click(&mut h, "Back to uniform");
    assert!(h.state().scenario().model.pattern.is_empty());
    assert!((peak(&h) - flat).abs() < 1e-9);
}

#[test]
fn every_second_layer_moe_keeps_the_layer_count() {
    let mut app = ExplorerApp::default();
    app.scenario_mut().model.moe.experts = 8;
    let mut h = harness(app);
    click(&mut h, "Use a layer pattern");
    click(&mut h, "MoE every 2nd layer");
    let pattern = &h.state().scenario().model.pattern;
    assert_eq!(pattern_layers(pattern), 32);
    let moe: u64 = pattern
        .iter()
        .map(|p| {
            u64::from(p.repeat)
                * p.layers
                    .iter()
                    .filter(|r| r.mlp == Mlp::Moe)
                    .map(|r| u64::from(r.count))
                    .sum::<u64>()
        })
        .sum();
    assert_eq!(moe, 16);
}

fn set_slider(h: &mut Harness<'_, ExplorerApp>, label: &str, value: f64) {
    h.get_by_role_and_label(egui::accesskit::Role::Slider, label)
        .set_value_accesskit(value);
    h.run();
}

fn preset_app(id: &str) -> ExplorerApp {
    let mut app = ExplorerApp::default();
    *app.scenario_mut() = vram_explorer::presets::bundled_scenario(id).expect("bundled preset");
    app
}

/// A vision-language model shows how many images each sequence carries; more images, a larger
/// vision-tower working set. A text-only model has no such control.
#[test]
fn images_per_sequence_drives_the_vision_tower() {
    let mut h = harness(preset_app("qwen2.5-vl-7b-images-l40s"));
    let four = peak(&h);
    set_slider(&mut h, "Images per sequence", 16.0);
    let images = h
        .state()
        .scenario()
        .model
        .towers
        .iter()
        .find_map(|t| match t {
            vram_explorer::scenario::Tower::Vision(v) => Some(v.images),
            vram_explorer::scenario::Tower::Encoder(_) => None,
        });
    assert_eq!(images, Some(16));
    let sixteen = peak(&h);
    assert!(sixteen > four, "peak {four} -> {sixteen}");
    let plain = harness(ExplorerApp::default());
    assert!(plain.query_by_label("Images per sequence").is_none());
    assert!(plain.query_by_label("Encoder input length").is_none());
}

/// An encoder-decoder model shows the positions its encoder reads; fewer frames, a smaller
/// cross-attention cache and a lower peak.
#[test]
fn encoder_input_length_drives_the_cross_attention_cache() {
    let mut h = harness(preset_app("whisper-large-v3-inference-rtx4090"));
    let full = peak(&h);
    set_slider(&mut h, "Encoder input length", 500.0);
    let len = h
        .state()
        .scenario()
        .model
        .towers
        .iter()
        .find_map(|t| match t {
            vram_explorer::scenario::Tower::Encoder(e) => Some(e.input_len),
            vram_explorer::scenario::Tower::Vision(_) => None,
        });
    assert_eq!(len, Some(500));
    let short = peak(&h);
    assert!(short < full, "peak {full} -> {short}");
}
