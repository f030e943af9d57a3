//! A serving engine sizes its KV cache at startup (vLLM, SGLang, llama.cpp): the "largest batch" is
//! the requests that cache holds at once (vLLM prints it as its maximum concurrency), and what the engine itself refuses
//! (a cache below one request, a request over its context) is said, not hidden behind "fits".

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::solver::{Solved, Target, max_fitting, max_micro_batch};
use vram_explorer::estimator::{Diagnostic, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Scenario, ServingEngine};

fn preset(id: &str) -> Scenario {
    bundled_scenario(id).expect("bundled preset")
}

fn request(s: &Scenario) -> f64 {
    f64::from(s.inference.prompt_tokens + s.inference.generated_tokens)
}

#[test]
fn vllm_and_sglang_hold_their_printed_tokens_over_one_request() {
    // Llama-3.1-8B on one H100: vLLM prints 433,664 tokens; a request is 7,680 + 512 = 8,192
    // tokens: 52 at once (vLLM's own "Maximum concurrency … 52.94x"). Qwen2.5-7B on SGLang on a
    // 4090: 41,236 tokens over 3,584 + 512 = 4,096: 10.
    for (id, expected) in [
        ("llama3.1-8b-vllm-h100-8k", 52),
        ("qwen2.5-7b-sglang-rtx4090", 10),
    ] {
        let s = preset(id);
        let f = estimate(&s).engine.expect("engine figures");
        assert_eq!(max_micro_batch(&s), Solved::Found(expected), "{id}");
        assert_eq!((f.tokens / request(&s)).floor() as u64, expected, "{id}");
    }
}

#[test]
fn the_engines_request_cap_bounds_the_answer() {
    let mut s = preset("llama3.1-8b-vllm-h100-8k");
    if let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine {
        v.max_num_seqs = 16;
    } else {
        panic!("a vLLM preset");
    }
    assert_eq!(max_micro_batch(&s), Solved::Found(16));
}

#[test]
fn llamacpp_answers_in_slots_of_its_context() {
    // -c 65,536, a request of 32,000 + 512 tokens: two slots of 32,768 cells hold one each; three
    // slots of GGML_PAD(21,845, 256) = 22,016 cells do not.
    let mut s = preset("llama31-8b-q4km-llamacpp-12gb");
    assert_eq!(max_micro_batch(&s), Solved::Found(2));
    // A request of 4,096 tokens: 17 slots, each GGML_PAD(65,536 / 17 = 3,855, 256) = 4,096 cells
    // (llama.cpp pads each slot up, so the cache grows to 69,632 cells); 18 slots get 3,840.
    (s.inference.prompt_tokens, s.inference.generated_tokens) = (3_584, 512);
    assert_eq!(max_micro_batch(&s), Solved::Found(17));
    // One token more: a slot needs 4,352 cells, GGML_PAD(65,536 / 15, 256) = 4,608; 16 get 4,096.
    s.inference.prompt_tokens = 3_585;
    assert_eq!(max_micro_batch(&s), Solved::Found(15));
}

#[test]
fn outside_a_serving_engine_the_batch_is_bisected_on_the_peak() {
    let s = preset("llama3-70b-zero3-8xh100");
    let Solved::Found(b) = max_fitting(&s, Target::MicroBatch) else {
        panic!("a batch fits and the next does not");
    };
    let mut at = s.clone();
    at.workload.micro_batch = u32::try_from(b).unwrap();
    assert!(estimate(&at).memory.fits);
    at.workload.micro_batch += 1;
    assert!(!estimate(&at).memory.fits);
}

#[test]
fn a_request_over_the_engines_context_is_a_warning() {
    let mut s = preset("llama3.1-8b-vllm-h100-8k");
    let e = estimate(&s);
    assert!(
        !e.diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
    // max_model_len 8,192: a 20,000-token prompt is rejected by vLLM.
    s.inference.prompt_tokens = 20_000;
    let e = estimate(&s);
    assert!(
        e.diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
    // llama.cpp: one slot of 65,536 cells holds 32,512 tokens; four slots of 16,384 do not.
    let mut l = preset("llama31-8b-q4km-llamacpp-12gb");
    assert!(
        !estimate(&l)
            .diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
    if let Some(ServingEngine::LlamaCpp(c)) = &mut l.inference.engine {
        c.n_parallel = 4;
    }
    assert!(
        estimate(&l)
            .diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
}

#[test]
fn a_kv_cache_below_one_request_does_not_fit() {
    // vLLM refuses to start when one max_model_len request does not fit its KV cache: a 1M-token
    // max_model_len on one H100 with an 8B model.
    let mut s = preset("llama3.1-8b-vllm-h100-8k");
    if let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine {
        v.max_model_len = 1_000_000;
    }
    let e = estimate(&s);
    assert!(e.engine.expect("figures").too_small);
    assert!(!e.memory.fits);
    assert!(e.diagnostics.contains(Diagnostic::EngineWouldNotStart));
    assert_eq!(max_micro_batch(&s), Solved::NoneFits);
}

#[test]
fn the_longest_prompt_is_the_engines_limit_less_the_generated_tokens() {
    // vLLM max_model_len 8,192, SGLang context_length 32,768, llama.cpp -c 65,536 on one slot; each
    // preset generates 512 tokens.
    for (id, expected) in [
        ("llama3.1-8b-vllm-h100-8k", 7_680),
        ("qwen2.5-7b-sglang-rtx4090", 32_256),
        ("llama31-8b-q4km-llamacpp-12gb", 65_024),
    ] {
        let s = preset(id);
        assert_eq!(s.inference.generated_tokens, 512, "{id}");
        assert_eq!(
            max_fitting(&s, Target::Context),
            Solved::Found(expected),
            "{id}"
        );
    }
    // Two llama.cpp slots halve each slot's cells.
    let mut l = preset("llama31-8b-q4km-llamacpp-12gb");
    if let Some(ServingEngine::LlamaCpp(c)) = &mut l.inference.engine {
        c.n_parallel = 2;
    }
    assert_eq!(
        max_fitting(&l, Target::Context),
        Solved::Found(32_768 - 512)
    );
    // vLLM with max_model_len from the request (0): the context is bisected on the peak, and the
    // answer is a prompt at which the engine still starts.
    let mut v = preset("llama3.1-8b-vllm-h100-8k");
    if let Some(ServingEngine::Vllm(x)) = &mut v.inference.engine {
        x.max_model_len = 0;
    }
    let Solved::Found(p) = max_fitting(&v, Target::Context) else {
        panic!("a context fits")
    };
    v.inference.prompt_tokens = u32::try_from(p).unwrap();
    assert!(estimate(&v).memory.fits);
    v.inference.prompt_tokens += 1;
    assert!(!estimate(&v).memory.fits);
}
