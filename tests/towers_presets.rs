//! The tower presets hold their published parameter counts and the cross-attention cache rule.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::presets::bundled_scenario;

/// openai/whisper-large-v3: 1,543,490,560 parameters (`WhisperForConditionalGeneration`,
/// transformers 5.25.0 on the meta device: tests/data/hf/params.json; the model card's "1550 M").
#[test]
fn whisper_large_v3_has_its_parameter_count_and_a_fixed_cross_cache() {
    let s = bundled_scenario("whisper-large-v3-inference-rtx4090").unwrap();
    let e = estimate(&s);
    assert_eq!(e.model.params.total, 1_543_490_560.0);
    // Decode at the last token: 16 sequences × 32 layers × K and V × 1,280 × 2 B over the
    // 1,500 encoder frames (fixed) and the 4 + 444 decoder tokens.
    let kv = e
        .memory
        .phases
        .get(Phase::Decode)
        .unwrap()
        .get(Component::KvCache)
        .get();
    let per_position = 16.0 * 32.0 * 2.0 * 1280.0 * 2.0;
    assert_eq!(kv, per_position * (1500.0 + 448.0));
}

/// A tower number outside its range is refused by `check` naming the field (it was accepted and
/// silently clamped by the estimator: 10⁸ images per sequence, 10⁸ encoder layers).
#[test]
fn an_out_of_range_tower_number_is_an_error_naming_it() {
    for (text, field) in [
        (
            "(version: 1, model: (towers: [Vision((images: 100000000))]))",
            "model.towers.count",
        ),
        (
            "(version: 1, model: (towers: [Encoder((layers: 99999999))]))",
            "model.towers.count",
        ),
        (
            "(version: 1, model: (towers: [Vision((hidden: 4294967295))]))",
            "model.towers.dims",
        ),
    ] {
        let err = vram_explorer::presets::from_ron_str(text)
            .expect_err(text)
            .to_string();
        assert!(err.contains(field), "{text}: {err}");
    }
}

/// Serving concurrency counts each request's cross-attention cache (2 × 1,500 frames × 1,280 × 32
/// layers × 2 B ≈ 246 MB beside its own self-attention cache): the requests that fit on the
/// 24 GB card leave room for every one's cross cache, and a shorter encoder input lets more fit.
#[test]
fn whisper_serving_concurrency_counts_the_cross_cache_per_request() {
    let mut s = bundled_scenario("whisper-large-v3-inference-rtx4090").unwrap();
    s.inference.dynamic_batching = true;
    s.inference.concurrent_requests = 4;
    let full = estimate(&s).performance.throughput.max_concurrent_requests;
    let cross_per_request = 32.0 * 2.0 * 1500.0 * 1280.0 * 2.0;
    assert!(full > 0);
    assert!(
        f64::from(full) * cross_per_request < 24e9,
        "{full} requests × {cross_per_request} B of cross cache exceed the card"
    );
    if let vram_explorer::scenario::Tower::Encoder(e) = &mut s.model.towers[0] {
        e.input_len = 10;
    }
    let short = estimate(&s).performance.throughput.max_concurrent_requests;
    assert!(short > 4 * full, "{full} -> {short}");
}
