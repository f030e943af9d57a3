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
    // The headline's concurrency says the same: none (it printed the pool over one request).
    assert_eq!(e.performance.throughput.max_concurrent_requests, 0);
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

#[test]
fn sglang_starts_with_a_pool_below_its_context_and_caps_requests_at_it() {
    // Qwen2.5-7B on a 4090 with --context-length 65536: the 41,493-token pool is shorter than the
    // context, which SGLang 0.5.23 only warns about (managers/tp_worker.py get_worker_info); it
    // caps requests at max_req_len = min(65,535, 41,492) and the scheduler at max_req_len − 1.
    let mut s = preset("qwen2.5-7b-sglang-rtx4090");
    if let Some(ServingEngine::Sglang(g)) = &mut s.inference.engine {
        g.context_length = 65_536;
    }
    let e = estimate(&s);
    let f = e.engine.expect("figures");
    assert_eq!((f.tokens, f.max_model_len), (41_493.0, 65_536.0));
    assert!(!f.too_small);
    assert!(e.memory.fits);
    assert!(!e.diagnostics.contains(Diagnostic::EngineWouldNotStart));
    assert!(e.diagnostics.contains(Diagnostic::EnginePoolBelowContext));
    // The scenario's 4,096-token request is served: 10 at once, as at --context-length 32768.
    assert!(
        !e.diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
    assert_eq!(max_micro_batch(&s), Solved::Found(10));
    // The longest prompt beside 512 generated tokens: 41,493 − 2 − 512.
    assert_eq!(max_fitting(&s, Target::Context), Solved::Found(40_979));
    // A 45,000-token request is over the pool's cap (not over context_len).
    s.inference.prompt_tokens = 44_488;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::RequestLongerThanEngineContext)
    );
    // It would not start only with a pool below 2 tokens ("Not enough memory", or
    // max_running_requests = pool // 2 = 0): --max-total-tokens 1.
    if let Some(ServingEngine::Sglang(g)) = &mut s.inference.engine {
        g.max_total_tokens = 1;
    }
    let e = estimate(&s);
    assert!(e.engine.expect("figures").too_small);
    assert!(!e.memory.fits);
    assert!(e.diagnostics.contains(Diagnostic::EngineWouldNotStart));
    assert!(!e.diagnostics.contains(Diagnostic::EnginePoolBelowContext));
}

#[test]
fn vllm_and_sglang_refuse_tp_that_does_not_divide_the_heads() {
    // Llama-3.1-70B (64 heads, 8 KV heads) at TP 3: vLLM raises "Total number of attention heads
    // (64) must be divisible by tensor parallel size (3)"; SGLang's attention asserts it.
    let mut s = preset("llama3.1-70b-fp8-vllm-4xh100-tp4");
    let e = estimate(&s);
    assert!(
        !e.diagnostics
            .contains(Diagnostic::EngineNeedsTpDividingHeads)
    );
    s.parallel.tp = 3;
    let e = estimate(&s);
    assert!(
        e.diagnostics
            .contains(Diagnostic::EngineNeedsTpDividingHeads)
    );
    assert_eq!(
        Diagnostic::EngineNeedsTpDividingHeads.severity(),
        vram_explorer::estimator::Severity::Error
    );
    // The engine's pages take ⌈8 / 3⌉ = 3 KV heads a rank, the memory and time models' rule:
    // one token's bytes agree (80 layers × 2 × 3 × 128 × 2 B = 122,880).
    let f = e.engine.expect("figures");
    assert_eq!(f.block_bytes / f.block_tokens, 122_880.0);
    assert_eq!(e.performance.throughput.kv_bytes_per_token.get(), 122_880.0);
    // SGLang the same.
    s.inference.engine = Some(ServingEngine::Sglang(
        vram_explorer::scenario::Sglang::default(),
    ));
    let e = estimate(&s);
    assert!(
        e.diagnostics
            .contains(Diagnostic::EngineNeedsTpDividingHeads)
    );
    assert_eq!(e.engine.expect("figures").block_bytes, 122_880.0);
    // KV heads replicated (TP 16 over 8 KV heads) is a layout both serve: no error.
    s.parallel.tp = 16;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::EngineNeedsTpDividingHeads)
    );
    // Outside the engines (Hugging Face generate) the layout is only a warning.
    s.parallel.tp = 3;
    s.inference.engine = None;
    let d = estimate(&s).diagnostics;
    assert!(!d.contains(Diagnostic::EngineNeedsTpDividingHeads));
    assert!(d.contains(Diagnostic::TpDoesNotDivideHeads));
}

/// vLLM 0.34's extensible cache at its default utilization (1.0) sizes the cache from the free
/// memory after warmup less its margin, max(1 GiB, 0.75 × the activation peak)
/// (`v1/worker/extensible_kv_cache.py` `measure_kv_cache_bytes`): free memory lacks the CUDA
/// context too, so the GPU is left with the margin free (less than one block more), and the
/// printed budget adds up with the held-back term.
#[test]
fn vllm_034_leaves_its_margin_free() {
    let mut s = preset("llama3.1-8b-vllm-h100-8k");
    if let Some(ServingEngine::Vllm(v)) = &mut s.inference.engine {
        v.gpu_memory_utilization = None;
    }
    let e = estimate(&s);
    let f = e.engine.expect("figures");
    let margin = (1024.0_f64.powi(3)).max(0.75 * f.activation_peak.get());
    let free = e.memory.headroom.get();
    assert!(
        free >= margin - 1.0 && free < margin + f.block_bytes,
        "{free} vs {margin}"
    );
    let terms = f.requested.get()
        - f.weights.get()
        - f.activation_peak.get()
        - f.non_torch.get()
        - f.cudagraph.get()
        - f.held_back.get();
    assert!(
        (terms - f.kv_budget.get()).abs() < 1.0,
        "{terms} vs {:?}",
        f.kv_budget
    );
}
