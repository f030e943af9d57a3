//! vLLM V1 and SGLang chunk long prompts by themselves: with no chunk set
//! (`inference.features.prefill_chunk_tokens` 0) a prompt runs in chunks of the engine's own size
//! (vLLM's resolved `max_num_batched_tokens`, SGLang's `chunked_prefill_size`), so a long prompt's
//! prefill intermediates are one chunk's, not one whole-prompt forward's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Scenario, ServingEngine, Sglang, Vllm, VllmVersion};

fn prefill_transient(s: &Scenario) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(Phase::Prefill)
        .expect("a prefill")
        .get(Component::Transient)
        .get()
}

/// The Nemotron-H 128K preset (one 130,048-token prompt on an H100) served by vLLM 0.34: its
/// default budget on an 80 GB H100 is 8,192 tokens a step, so the prefill holds one 8,192-token
/// chunk's intermediates, as the same scenario with that chunk set does, and the job fits.
#[test]
fn vllm_prefills_a_long_prompt_in_its_own_chunks() {
    let mut s = bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    let whole = prefill_transient(&s);
    s.inference.engine = Some(ServingEngine::Vllm(Vllm {
        version: VllmVersion::V1_34,
        ..Vllm::default()
    }));
    let engine = prefill_transient(&s);
    let mut set = s.clone();
    set.inference.features.prefill_chunk_tokens = 8192;
    assert_eq!(engine, prefill_transient(&set));
    assert!(engine < whole / 10.0, "{engine} vs {whole}");
    assert!(estimate(&s).memory.fits);
    // A chunk the user sets is kept.
    set.inference.features.prefill_chunk_tokens = 4096;
    assert!(prefill_transient(&set) < engine);
}

/// SGLang's chunk on an H100 80 GB is its tier's 8,192 (sglang.md §3), or the one given.
#[test]
fn sglang_prefills_in_its_chunked_prefill_size() {
    let mut s = bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    let sglang = |chunk: u32| {
        ServingEngine::Sglang(Sglang {
            chunked_prefill_size: chunk,
            ..Sglang::default()
        })
    };
    s.inference.engine = Some(sglang(0));
    let engine = prefill_transient(&s);
    s.inference.engine = Some(sglang(8192));
    assert_eq!(engine, prefill_transient(&s));
    s.inference.engine = Some(sglang(2048));
    assert!(prefill_transient(&s) < engine);
}

/// Hugging Face `generate` has no chunk of its own: one forward over the prompt.
#[test]
fn generate_runs_the_prompt_whole() {
    let mut s = bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    s.inference.engine = Some(ServingEngine::HfGenerate);
    let whole = prefill_transient(&s);
    s.inference.features.prefill_chunk_tokens = 130_048;
    assert_eq!(whole, prefill_transient(&s));
}
