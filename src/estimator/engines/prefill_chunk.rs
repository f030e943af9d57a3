//! The tokens an engine's prefill forward takes at most when the scenario sets no chunk
//! (`inference.features.prefill_chunk_tokens` 0): the engine chunks long prompts by itself, so a
//! prompt longer than its chunk never runs as one forward.

use crate::scenario::{GpuChoice, Inference, ServingEngine};

/// The engine's own prefill chunk, 0 when it has none (Hugging Face `generate`, a preallocated
/// cache; llama.cpp's ubatch is sized by its own planner):
/// - vLLM V1 always schedules chunked prefill at `max_num_batched_tokens` as resolved
///   ([`super::vllm::prefill_chunk`]); V0 only above 32,768 tokens of `max_model_len`.
/// - SGLang chunks at `chunked_prefill_size` as resolved ([`super::sglang::prefill_chunk`]).
pub fn default_prefill_chunk(i: &Inference, gpu: &GpuChoice, tp: u32) -> u32 {
    let tokens = match i.engine.as_ref() {
        Some(ServingEngine::Vllm(v)) => super::vllm::prefill_chunk(v, gpu, i),
        Some(ServingEngine::Sglang(s)) => super::sglang::prefill_chunk(s, gpu, f64::from(tp)),
        _ => 0.0,
    };
    // Whole tokens; the engines' defaults and the clamped settings are far below u32::MAX.
    tokens.clamp(0.0, f64::from(u32::MAX)) as u32
}
