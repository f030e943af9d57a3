//! A request's time under speculative decoding and pipeline stages: its collectives run once per
//! verify forward (k + 1 positions of every sequence), not once per generated token; its model
//! FLOPs are the model's (one position per generated token: PaLM, Chowdhery et al. 2022, App. B),
//! the rejected positions and the draft's steps hardware FLOPs only; and the communication it
//! reports is the request's, over every stage, as the step time counts it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::scenario::{Scenario, SpeculativeMethod};

/// Llama-3.1-8B on vLLM 0.34 at TP 4 (an H100 node), 8 requests of 1,024 + 512 tokens.
fn served(k: u32, acceptance: f64, pp: u32) -> Scenario {
    let mut s: Scenario = ron::from_str(
        "(version: 2, mode: Inference,
          model: (transformer: (layers: 32, hidden: 4096, heads: 32, kv_heads: 8, ffn: 14336,
                                vocab: 128256, max_positions: 131072)),
          inference: (prompt_tokens: 1024, generated_tokens: 512, dynamic_batching: true,
                      concurrent_requests: 8, engine: Some(Vllm((version: V1_34)))),
          precision: (mode: Uniform, compute: Bf16),
          parallel: (tp: 4),
          gpu: Catalog(H100Sxm))",
    )
    .expect("parses");
    s.parallel.pp = pp;
    let spec = &mut s.inference.features.speculative;
    if k > 0 {
        spec.method = SpeculativeMethod::Eagle;
        spec.num_speculative_tokens = k;
        spec.acceptance_rate = acceptance;
    }
    s
}

#[test]
fn the_request_parts_add_up_to_its_time() {
    // The reviewer's case (EAGLE, k 4, α 0.7): compute 359 + communication 365 + overhead 300 ms
    // was printed beside a step of 803 ms; the collectives were charged per generated token.
    for (k, pp) in [(0, 1), (4, 1), (4, 2), (0, 2)] {
        let p = estimate(&served(k, 0.7, pp)).performance;
        let t = &p.step;
        let parts = t.compute_phase_s + t.communication_s + t.launch_s + t.offload_s;
        assert!(
            (parts - t.total_s).abs() <= 1e-9 * t.total_s,
            "k {k}, pp {pp}: {parts} vs {}",
            t.total_s
        );
        // The JSON's communication is the step's: every stage's collectives.
        let c = &p.communication;
        assert!(
            (c.tp_time_s + c.ep_time_s - t.communication_s).abs() <= 1e-12,
            "k {k}, pp {pp}"
        );
    }
}

#[test]
fn collectives_follow_the_verify_steps() {
    // α 1: every draft accepted, 5 tokens per verify step, 512 / 5 ≈ 103 steps against 512.
    let plain = estimate(&served(0, 0.0, 1)).performance.communication;
    let spec = estimate(&served(4, 1.0, 1)).performance.communication;
    // Each verify step all-reduces 5 positions of the 8 sequences: larger, but far fewer, messages.
    assert!(spec.tp_time_s < plain.tp_time_s, "{spec:?} vs {plain:?}");
    // The latency part counts forwards: 1 prefill + 512 steps against 1 + 512 / 5.
    let ratio = spec.tp_latency_s / plain.tp_latency_s;
    assert!(
        (ratio - (1.0 + 512.0 / 5.0) / 513.0).abs() < 1e-9,
        "{ratio}"
    );
}

#[test]
fn speculation_does_not_inflate_model_flops() {
    // α 0: every draft rejected; the same 512 tokens per request, more work on the hardware.
    let plain = estimate(&served(0, 0.0, 1)).performance;
    let rejected = estimate(&served(4, 0.0, 1)).performance;
    assert!(
        (rejected.model_flops - plain.model_flops).abs() <= 1e-9 * plain.model_flops,
        "{} vs {}",
        rejected.model_flops,
        plain.model_flops
    );
    assert!(rejected.hardware_flops > 4.0 * plain.hardware_flops / 2.0);
    assert!(rejected.step.total_s > plain.step.total_s);
    assert!(rejected.throughput.mfu < plain.throughput.mfu);
    assert!(rejected.throughput.hfu >= rejected.throughput.mfu);
}
