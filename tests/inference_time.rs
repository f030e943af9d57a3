//! Inference time (issue 13 item 3): weights streamed from the host sit on the critical path of
//! every forward, so TTFT and TPOT carry them and the request's total is TTFT + generated × TPOT;
//! an encoder-only model has no decode phase.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{ArchKind, GpuChoice, Mode, OffloadTarget, Scenario};

/// A Llama-2-70B-shaped decoder (80 layers, hidden 8192, 64 heads / 8 KV heads, FFN 28672) serving
/// on one A100 80 GB.
fn llama70b() -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        gpu: GpuChoice::Catalog(GpuId::A100Sxm80),
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = 80;
    t.hidden = 8192;
    t.heads = 64;
    t.kv_heads = 8;
    t.ffn = 28672;
    t.vocab = 32000;
    s.inference.prompt_tokens = 512;
    s.inference.generated_tokens = 128;
    s
}

#[test]
fn host_offloaded_weights_are_on_every_tokens_critical_path() {
    let resident = estimate(&llama70b()).performance;
    let mut s = llama70b();
    s.strategies.offload_params = OffloadTarget::Cpu;
    let p = estimate(&s).performance;
    let t = &p.throughput;
    // ~138 GB of 16-bit weights over a ~25 GB/s host link, half hidden by prefetch: seconds per
    // token, not the ~tens of milliseconds of HBM-resident weights.
    assert!(p.offload.host_bytes.get() > 0.0);
    let per_forward = p.offload.exposed_s / (1.0 + 128.0);
    println!(
        "resident: TTFT {:.3} s, TPOT {:.4} s; host-offloaded: TTFT {:.3} s, TPOT {:.3} s, request {:.1} s",
        resident.throughput.ttft_s, resident.throughput.tpot_s, t.ttft_s, t.tpot_s, p.step.total_s
    );
    assert!(per_forward > 1.0, "{per_forward} s per forward");
    assert!(
        t.tpot_s > resident.throughput.tpot_s + 0.99 * per_forward,
        "{}",
        t.tpot_s
    );
    assert!(
        t.ttft_s > resident.throughput.ttft_s + 0.99 * per_forward,
        "{}",
        t.ttft_s
    );
    // The step (one request batch) is exactly the first token plus every next one.
    let sum = t.ttft_s + 128.0 * t.tpot_s;
    assert!(
        (p.step.total_s - sum).abs() <= 1e-9 * sum,
        "{} vs {sum}",
        p.step.total_s
    );
}

#[test]
fn an_encoder_has_no_decode_phase() {
    let mut s = llama70b();
    s.model.transformer.arch = ArchKind::Encoder;
    s.model.transformer.layers = 12;
    s.model.transformer.hidden = 768;
    s.model.transformer.heads = 12;
    s.model.transformer.kv_heads = 12;
    s.model.transformer.ffn = 3072;
    let p = estimate(&s).performance;
    assert!(p.prefill.is_some());
    assert!(p.decode.is_none());
    assert_eq!(p.throughput.tpot_s, 0.0);
    assert_eq!(p.throughput.max_concurrent_requests, 0);
    assert_eq!(p.throughput.kv_bytes_per_token.get(), 0.0);
    assert!(p.throughput.ttft_s > 0.0);
    assert!((p.step.total_s - p.throughput.ttft_s).abs() <= 1e-12);
    // The same dimensions as a decoder do decode.
    s.model.transformer.arch = ArchKind::Decoder;
    let d = estimate(&s).performance;
    assert!(d.decode.is_some() && d.throughput.tpot_s > 0.0);
}
