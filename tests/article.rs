//! The seed article's remaining mechanisms (issue 8): block-compressed inputs, input pipeline,
//! embedding lookups, liveness-based buffer reuse, CNN traffic against batch size.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::estimator::article::edge_reuse::{activation_plan, model_plan};
use vram_explorer::estimator::article::embedding_lookup::{
    LookupBound, compare_techs, lookup_time, row_bytes_read,
};
use vram_explorer::estimator::article::input_pipeline::{gpu_input_bytes, input_transfer};
use vram_explorer::estimator::article::textures::{image_bytes, saving_vs_rgba8};
use vram_explorer::estimator::article::{cnn_bandwidth, input_pipeline};
use vram_explorer::estimator::estimate;
use vram_explorer::hardware::MemoryTech;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Dtype, ImageEncoding, InputKind, Scenario};

fn preset(id: &str) -> Scenario {
    bundled_scenario(id).unwrap_or_else(|| panic!("{id}"))
}

fn images(encoding: ImageEncoding) -> Scenario {
    let mut s = preset("resnet50-batch32");
    s.input.kind = InputKind::Images;
    s.input.encoding = encoding;
    s
}

#[test]
fn bc7_inputs_are_a_quarter_of_rgba8_and_bc1_an_eighth() {
    let rgba = gpu_input_bytes(&images(ImageEncoding::Rgba8)).get();
    let bc7 = gpu_input_bytes(&images(ImageEncoding::Bc7)).get();
    let bc1 = gpu_input_bytes(&images(ImageEncoding::Bc1)).get();
    assert_eq!(rgba, 32.0 * 224.0 * 224.0 * 4.0);
    assert_eq!(bc7 * 4.0, rgba);
    assert_eq!(bc1 * 8.0, rgba);
    assert_eq!(saving_vs_rgba8(ImageEncoding::Bc7, 3, Dtype::Fp32), 0.75);
    assert_eq!(saving_vs_rgba8(ImageEncoding::Bc1, 3, Dtype::Fp32), 0.875);
    // An FP32 RGB tensor is 3× RGBA8; sides round up to whole 4×4 blocks.
    assert_eq!(
        image_bytes(224, 224, ImageEncoding::Tensor, 3, Dtype::Fp32),
        3.0 * image_bytes(224, 224, ImageEncoding::Rgba8, 3, Dtype::Fp32)
    );
    assert_eq!(image_bytes(1, 1, ImageEncoding::Bc7, 3, Dtype::Fp32), 16.0);
}

#[test]
fn prefetched_batches_add_whole_batches_and_only_pinned_prefetch_hides_copies() {
    let mut s = images(ImageEncoding::Tensor);
    let one = input_transfer(&s, 1.0);
    assert_eq!(one.gpu_resident, one.batch_bytes);
    assert_eq!(one.hidden_share, 0.0);
    s.input.gpu_prefetch_batches = 2;
    let three = input_transfer(&s, 1.0);
    assert_eq!(three.gpu_resident.get(), 3.0 * one.batch_bytes.get());
    assert_eq!(three.gpu_prefetch.get(), 2.0 * one.batch_bytes.get());
    assert_eq!(three.hidden_share, 1.0, "1 s of compute hides a ms copy");
    let short = input_transfer(&s, three.transfer_s * 0.7);
    assert!((short.hidden_share - 0.7).abs() < 1e-12);
    assert!((short.exposed_s - 0.3 * three.transfer_s).abs() < 1e-12);
    // Pageable memory: slower by the pageable fraction, and never overlapped (Harris 2012).
    s.timing.pinned_host_memory = false;
    let pageable = input_transfer(&s, 1.0);
    assert_eq!(pageable.hidden_share, 0.0);
    let speedup = pageable.transfer_s / three.transfer_s;
    assert!((speedup - 1.0 / s.timing.pageable_fraction).abs() < 1e-9);
    // Tokens: 16 bytes per token by default.
    let t = preset("bert-base-fp32");
    let tok = input_transfer(&t, 0.0);
    assert_eq!(tok.sample_bytes.get(), 16.0 * f64::from(t.workload.seq_len));
    assert!(input_pipeline::host_to_device(&t) > 0.0);
}

#[test]
fn lookup_time_falls_with_latency_when_latency_bound_and_not_when_bandwidth_bound() {
    let (accesses, row, bw) = (26.0 * 2048.0, 512.0, 2.0e12);
    let slow = lookup_time(accesses, row, Some(400.0), 26.0, bw);
    let fast = lookup_time(accesses, row, Some(200.0), 26.0, bw);
    assert_eq!(slow.bound, LookupBound::Latency);
    assert!(fast.time_s < slow.time_s);
    assert!((slow.time_s.unwrap_or(0.0) / fast.time_s.unwrap_or(1.0) - 2.0).abs() < 1e-9);
    // With enough accesses in flight (Little's law) the bytes set the time, whatever the latency.
    let need = slow.saturating_in_flight.unwrap_or(0.0);
    assert!((need - bw * 400e-9 / row).abs() < 1e-6);
    let a = lookup_time(accesses, row, Some(400.0), need * 2.0, bw);
    let b = lookup_time(accesses, row, Some(200.0), need * 2.0, bw);
    assert_eq!(
        (a.bound, b.bound),
        (LookupBound::Bandwidth, LookupBound::Bandwidth)
    );
    assert_eq!(a.time_s, b.time_s);
    assert_eq!(lookup_time(1.0, 1.0, None, 1.0, bw).time_s, None);
    assert_eq!(row_bytes_read(100.0), 128.0);
}

#[test]
fn technologies_compare_with_unknown_latency_shown_as_unknown() {
    let rows = compare_techs(1e6, 512.0, 64.0);
    let time = |t: MemoryTech| rows.iter().find(|r| r.0 == t).and_then(|r| r.1.time_s);
    assert!(time(MemoryTech::Hbm2).is_some() && time(MemoryTech::Gddr6x).is_some());
    assert_eq!(
        time(MemoryTech::Lpddr5),
        None,
        "LPDDR5 latency is not sourced"
    );
    assert_eq!(
        time(MemoryTech::Hbm2e),
        None,
        "HBM2e latency is not sourced"
    );
    // Latency-bound: the lower-latency GDDR6X (252 ns) beats HBM2 (300 ns).
    assert!(time(MemoryTech::Gddr6x) < time(MemoryTech::Hbm2));
}

#[test]
fn liveness_reuse_never_exceeds_the_naive_plan() {
    for layers in [0u32, 1, 2, 12, 96] {
        for (b, s, h, f, a) in [
            (1.0, 128.0, 128.0, 512.0, 2.0),
            (8.0, 512.0, 768.0, 3072.0, 12.0),
            (1.0, 4096.0, 64.0, 64.0, 64.0),
            (0.0, 0.0, 0.0, 0.0, 0.0),
        ] {
            let p = activation_plan(b, s, h, f, a, layers, 4.0);
            assert!(p.reused_bytes <= p.naive_bytes, "{layers} {b} {s}: {p:?}");
            assert!(p.reused_bytes.is_finite() && p.naive_bytes.is_finite());
        }
    }
    // More layers: the naive sum grows, the live set does not.
    let one = activation_plan(1.0, 128.0, 128.0, 512.0, 2.0, 1, 4.0);
    let many = activation_plan(1.0, 128.0, 128.0, 512.0, 2.0, 24, 4.0);
    assert!(many.naive_bytes > 10.0 * one.naive_bytes);
    assert_eq!(many.reused_bytes, one.reused_bytes);
}

#[test]
fn bert_tiny_on_snapdragon_stays_under_512_mb_with_and_without_reuse() {
    let s = preset("bert-tiny-snapdragon865");
    let e = estimate(&s);
    let p = model_plan(&e.model, 1.0, f64::from(s.inference.prompt_tokens), 4.0);
    assert!(p.reused_bytes < p.naive_bytes);
    let weights = e.model.params.total * 4.0;
    assert!(weights + p.naive_bytes < 512e6 && weights + p.reused_bytes < 512e6);
}

#[test]
fn resnet50_traffic_per_step_grows_less_than_the_batch_and_intensity_rises() {
    let (a, b, [bytes, per_s, intensity]) =
        cnn_bandwidth::batch_scaling(&preset("resnet50-batch32"), 32, 128);
    assert_eq!((a.batch, b.batch), (32, 128));
    assert!(bytes > 1.0 && bytes < 4.0, "bytes ratio {bytes}");
    assert!(intensity > 1.0, "intensity ratio {intensity}");
    assert!(per_s < 1.5, "bandwidth demand ratio {per_s}");
}

#[test]
fn image_inputs_are_counted_in_the_memory_estimate() {
    // The input batch (and prefetched batches) is GPU memory: switching RGBA8 to BC7 lowers the
    // per-GPU peak by exactly the input bytes saved.
    let rgba = images(ImageEncoding::Rgba8);
    let bc7 = images(ImageEncoding::Bc7);
    let saved = gpu_input_bytes(&rgba).get() - gpu_input_bytes(&bc7).get();
    assert!(saved > 0.0);
    let drop = estimate(&rgba).memory.tensor_peak.get() - estimate(&bc7).memory.tensor_peak.get();
    assert!(
        (drop - saved).abs() <= 1e-6 * saved,
        "drop {drop} vs saved {saved}"
    );
    let mut prefetched = rgba.clone();
    prefetched.input.gpu_prefetch_batches = 2;
    let extra =
        estimate(&prefetched).memory.tensor_peak.get() - estimate(&rgba).memory.tensor_peak.get();
    assert!((extra - 2.0 * gpu_input_bytes(&rgba).get()).abs() <= 1.0 + 1e-6 * extra);
}
