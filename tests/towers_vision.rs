//! The vision tower beside the language model (`scenario::VisionTower`, `images` per sequence):
//! its weights always count, its activations and FLOPs only when it encodes images, and they scale
//! with the images (derived rules, `estimator::memory::towers`, `performance::towers`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Estimate, Phase, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::*;

fn with_images(mode: Mode, images: u32) -> Scenario {
    let mut s = bundled_scenario("qwen2.5-vl-7b-images-l40s").unwrap();
    s.mode = mode;
    s.workload.seq_len = 6208;
    for t in &mut s.model.towers {
        if let Tower::Vision(v) = t {
            v.images = images;
        }
    }
    s
}

fn get(e: &Estimate, ph: Phase, c: Component) -> f64 {
    e.memory.phases.get(ph).unwrap().get(c).get()
}

#[test]
fn images_add_activations_in_proportion_and_no_weights() {
    let [e0, e1, e2] = [0, 1, 2].map(|n| estimate(&with_images(Mode::Training, n)));
    let acts = |e: &Estimate| get(e, Phase::Forward, Component::Activations);
    let one = acts(&e1) - acts(&e0);
    assert!(one > 0.0);
    assert!(((acts(&e2) - acts(&e0)) - 2.0 * one).abs() <= 1e-6 * one);
    assert_eq!(
        get(&e0, Phase::Forward, Component::Weights),
        get(&e2, Phase::Forward, Component::Weights)
    );
    // The tower's weights count with or without images (8,292,166,656 parameters in all).
    assert_eq!(e0.model.params.total, 8_292_166_656.0);
}

#[test]
fn images_add_forward_flops_once_per_image() {
    let [f0, f1, f2] = [0, 1, 2].map(|n| {
        estimate(&with_images(Mode::Training, n))
            .performance
            .model_flops
    });
    let one = f1 - f0;
    // One 1,008² image is 5,184 patches through 32 layers of width 1,280: order 10¹³ FLOPs with
    // the backward (3 × forward).
    assert!(one > 1e12 && one < 1e15, "{one}");
    assert!(((f2 - f0) - 2.0 * one).abs() <= 1e-6 * one);
}

#[test]
fn the_vision_pass_can_set_the_prefill_peak() {
    let mut s = with_images(Mode::Inference, 0);
    s.inference.prompt_tokens = 16;
    let text = estimate(&s);
    for t in &mut s.model.towers {
        if let Tower::Vision(v) = t {
            v.images = 8;
        }
    }
    let images = estimate(&s);
    let pre = |e: &Estimate| e.memory.phases.get(Phase::Prefill).unwrap().total().get();
    assert!(pre(&images) > pre(&text));
}
