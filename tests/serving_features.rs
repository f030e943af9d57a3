//! Serving features (issue 15 items 2–3): speculative decoding, prefix caching, chunked prefill,
//! n sequences per prompt, KV and weight offload. Each has a test vector from its source (the
//! formula of the paper or engine, worked by hand below) and a test that shows its effect; the
//! properties: off = today's numbers exactly, prefix sharing never raises KV, more draft tokens
//! never lower memory.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking; the vectors are exact"
)]

use vram_explorer::estimator::memory::serving::expected_tokens_per_step;
use vram_explorer::estimator::{Component, Estimate, Phase, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::presets;
use vram_explorer::scenario::{GpuChoice, InferenceFeatures, Mode, Scenario, SpeculativeMethod};

/// Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096, 32 / 8 heads of
/// 128, FFN 14336, vocabulary 128256) in BF16 on one H100: KV 2 · 32 · 8 · 128 · 2 B = 131,072 B
/// per token.
fn llama8b() -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        gpu: GpuChoice::Catalog(GpuId::H100Sxm),
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = 32;
    t.hidden = 4096;
    t.heads = 32;
    t.kv_heads = 8;
    t.head_dim = 128;
    t.ffn = 14336;
    t.vocab = 128_256;
    s.inference.prompt_tokens = 4096;
    s.inference.generated_tokens = 512;
    s
}

const KV_PER_TOKEN: f64 = 131_072.0;

/// 32 requests in flight, paged KV of 16-token blocks, every request at full length (φ = 1).
fn served() -> Scenario {
    let mut s = llama8b();
    s.inference.dynamic_batching = true;
    s.inference.concurrent_requests = 32;
    s.inference.kv_block_tokens = 16;
    s.inference.mean_length_fraction = 1.0;
    s
}

fn kv(e: &Estimate) -> f64 {
    e.memory.peak.get(Component::KvCache).get()
}

fn phase(e: &Estimate, p: Phase, c: Component) -> f64 {
    e.memory.phases.get(p).map_or(0.0, |b| b.get(c).get())
}

#[test]
fn neutral_settings_are_todays_numbers_on_every_inference_preset() {
    for p in presets::bundled() {
        let (id, s) = (p.id, p.scenario().unwrap());
        if s.mode != Mode::Inference || s.inference.features != InferenceFeatures::default() {
            continue;
        }
        let before = estimate(&s);
        let mut t = s.clone();
        // Values that change nothing: no method (its k unused), the chunk the engine takes by
        // itself (vLLM V1's and SGLang's), else one as long as the prompt.
        t.inference.features.speculative.num_speculative_tokens = 9;
        let own = vram_explorer::estimator::engines::prefill_chunk::default_prefill_chunk(
            &s.inference,
            &s.gpu,
            s.parallel.tp,
        );
        t.inference.features.prefill_chunk_tokens = if own > 0 {
            own
        } else {
            s.inference.prompt_tokens
        };
        let after = estimate(&t);
        assert_eq!(before.memory, after.memory, "{id}");
        assert_eq!(
            before.performance.throughput.tpot_s, after.performance.throughput.tpot_s,
            "{id}"
        );
        assert_eq!(
            before.performance.step.total_s, after.performance.step.total_s,
            "{id}"
        );
    }
}

/// vLLM automatic prefix caching (full blocks only): π = 0.5 of a 4,096-token prompt is 2,048
/// tokens = 128 full blocks, stored once; each request keeps its other 2,048 prompt tokens and its
/// 512 generated ones. 2,048 + 32 × (2,048 + 512) = 83,968 tokens instead of 32 × 4,608 = 147,456.
#[test]
fn prefix_caching_stores_the_shared_blocks_once() {
    let base = estimate(&served());
    assert_eq!(kv(&base), 147_456.0 * KV_PER_TOKEN);
    let mut s = served();
    s.inference.features.shared_prefix_fraction = 0.5;
    let e = estimate(&s);
    assert_eq!(kv(&e), 83_968.0 * KV_PER_TOKEN);
    // A prefix of 1,000 tokens hashes 62 full blocks (992 tokens); the partial block is private.
    s.inference.features.shared_prefix_fraction = 1000.0 / 4096.0;
    let e = estimate(&s);
    assert_eq!(kv(&e), (992.0 + 32.0 * (3104.0 + 512.0)) * KV_PER_TOKEN);
    // Prefill skips the cached tokens: TTFT falls, and more requests fit.
    assert_eq!(e.performance.throughput.serving.prefix_hit_tokens, 992.0);
    assert!(e.performance.throughput.ttft_s < base.performance.throughput.ttft_s);
    assert!(
        e.performance.throughput.max_concurrent_requests
            > base.performance.throughput.max_concurrent_requests
    );
}

#[test]
fn prefix_sharing_never_raises_kv() {
    for block in [0, 1, 16, 64] {
        for phi in [0.01, 0.3, 1.0] {
            let mut last = f64::INFINITY;
            for i in 0..=20 {
                let mut s = served();
                s.inference.kv_block_tokens = block;
                s.inference.mean_length_fraction = phi;
                s.inference.features.shared_prefix_fraction = f64::from(i) / 20.0;
                let k = kv(&estimate(&s));
                assert!(k <= last, "block {block}, φ {phi}, π {}: {k} > {last}", i);
                last = k;
            }
        }
    }
}

/// Leviathan et al. 2023 Eq. 1 and the draft model's memory: Llama-3.2-1B (1.236 B parameters,
/// 16 layers, 8 KV heads of 64) adds 2.472 GB of BF16 weights, 2 · 16 · 8 · 64 · 2 = 32,768 B of
/// KV per token, and k lookahead slots per sequence in the target's cache.
#[test]
fn a_draft_model_adds_its_weights_its_kv_and_the_lookahead() {
    let mut s = llama8b();
    s.workload.micro_batch = 2;
    let base = estimate(&s);
    s.inference.features.speculative.method = SpeculativeMethod::DraftModel;
    s.inference.features.speculative.num_speculative_tokens = 4;
    s.inference.features.speculative.acceptance_rate = 0.8;
    let e = estimate(&s);
    let w = |e: &Estimate, p| phase(e, p, Component::Weights);
    assert_eq!(
        w(&e, Phase::Decode) - w(&base, Phase::Decode),
        1.236e9 * 2.0
    );
    let tokens = 2.0 * (4096.0 + 512.0 + 4.0);
    assert_eq!(
        phase(&e, Phase::Decode, Component::KvCache),
        tokens * (KV_PER_TOKEN + 32_768.0)
    );
    let serving = e.performance.throughput.serving;
    assert!((serving.tokens_per_step - 3.3616).abs() < 1e-12);
    assert_eq!(serving.tokens_per_step, expected_tokens_per_step(0.8, 4.0));
    // Memory-bound decode at batch 2: 4 draft steps (1.2 B) and one verify (8 B) per 3.36 tokens.
    let (t0, t1) = (
        base.performance.throughput.tpot_s,
        e.performance.throughput.tpot_s,
    );
    assert!(t1 < 0.6 * t0, "TPOT {t1} vs {t0}");
    // α = 0: every step yields one token and pays the drafts on top.
    s.inference.features.speculative.acceptance_rate = 0.0;
    assert!(estimate(&s).performance.throughput.tpot_s > t0);
}

#[test]
fn more_draft_tokens_never_lower_memory() {
    for method in [
        SpeculativeMethod::DraftModel,
        SpeculativeMethod::Mtp,
        SpeculativeMethod::Eagle,
    ] {
        for dynamic in [false, true] {
            let mut last = 0.0;
            for k in 1..=16 {
                let mut s = if dynamic { served() } else { llama8b() };
                s.inference.features.speculative.method = method;
                s.inference.features.speculative.num_speculative_tokens = k;
                let t = estimate(&s).memory.gpu_total.get();
                assert!(t >= last, "{method:?} k {k}: {t} < {last}");
                last = t;
            }
        }
    }
}

/// An EAGLE head / MTP module is one target-shaped layer (218.1 M parameters for Llama-3.1-8B) and
/// a 2h × h projection with two norms (33.6 M): 251.7 M, with one layer of KV per token.
#[test]
fn an_eagle_head_is_one_layer_and_a_projection() {
    let mut s = llama8b();
    let base = estimate(&s);
    s.inference.features.speculative.method = SpeculativeMethod::Eagle;
    s.inference.features.speculative.num_speculative_tokens = 1;
    let e = estimate(&s);
    let per_layer = e.memory.params.per_layer;
    let h = 4096.0;
    let extra = phase(&e, Phase::Decode, Component::Weights)
        - phase(&base, Phase::Decode, Component::Weights);
    assert_eq!(extra, (per_layer + 2.0 * h * h + 2.0 * h) * 2.0);
    assert_eq!(
        phase(&e, Phase::Decode, Component::KvCache),
        (4096.0 + 512.0 + 1.0) * (KV_PER_TOKEN + KV_PER_TOKEN / 32.0)
    );
}

/// Chunked prefill (vLLM V1, chunk = `max_num_batched_tokens`): the prefill holds one chunk's
/// activations (here all-position logits: 512 × 128,256 × 2 B instead of 4,096 × …), and TTFT is
/// ⌈4,096 / 512⌉ = 8 chunks, each re-reading the weights.
#[test]
fn chunked_prefill_bounds_the_prefill_peak_and_counts_chunks() {
    let mut s = llama8b();
    s.inference.all_logits = true;
    let base = estimate(&s);
    s.inference.features.prefill_chunk_tokens = 512;
    let e = estimate(&s);
    let tr = |e: &Estimate| phase(e, Phase::Prefill, Component::Transient);
    assert!(tr(&e) < 0.2 * tr(&base), "{} vs {}", tr(&e), tr(&base));
    assert_eq!(e.performance.throughput.serving.prefill_chunks, 8.0);
    assert!(e.performance.throughput.ttft_s >= base.performance.throughput.ttft_s);
    // Tiny chunks turn the prefill memory-bound: 64 weight reads of 16 GB.
    s.inference.features.prefill_chunk_tokens = 64;
    let tiny = estimate(&s);
    assert!(tiny.performance.throughput.ttft_s > 2.0 * base.performance.throughput.ttft_s);
}

/// n sequences per prompt: Hugging Face `generate` expands the batch × n before the prefill (each
/// copy its own cache), so n = 4 at batch 1 is batch 4; a paged engine shares the prompt's full
/// blocks: 32 × (4,096 + 4 × 512) tokens instead of 32 × 4 × 4,608.
#[test]
fn sequences_per_prompt_replicate_in_hf_and_share_in_paged_engines() {
    let mut s = llama8b();
    s.inference.features.sequences_per_prompt = 4;
    let mut b4 = llama8b();
    b4.workload.micro_batch = 4;
    assert_eq!(estimate(&s).memory, estimate(&b4).memory);
    let mut s = served();
    s.inference.features.sequences_per_prompt = 4;
    let e = estimate(&s);
    assert_eq!(kv(&e), 32.0 * (4096.0 + 4.0 * 512.0) * KV_PER_TOKEN);
    assert_eq!(e.performance.throughput.serving.decode_sequences, 128.0);
}

#[test]
fn offloaded_kv_and_weights_leave_the_gpu_and_cost_host_link_time() {
    let base = estimate(&served());
    let mut s = served();
    s.inference.features.kv_offload_fraction = 0.25;
    let e = estimate(&s);
    assert_eq!(kv(&e), 0.75 * kv(&base));
    assert!(e.performance.offload.host_bytes.get() > 0.0);
    assert!(e.performance.throughput.tpot_s > base.performance.throughput.tpot_s);
    let mut s = served();
    s.inference.features.weights_offload_fraction = 0.5;
    let e = estimate(&s);
    let w = |e: &Estimate| e.memory.peak.get(Component::Weights).get();
    assert_eq!(w(&e), 0.5 * w(&base));
    assert!(e.performance.throughput.tpot_s > base.performance.throughput.tpot_s);
    assert_eq!(InferenceFeatures::default().weights_offload_fraction, 0.0);
}

/// The explanation names the draft's weights and KV and the offloaded share, and its named terms
/// account for the whole value (no remainder term).
#[test]
fn the_explanation_names_the_draft_and_the_offloaded_share() {
    use vram_explorer::estimator::explain::explain;
    let mut s = served();
    let x = &mut s.inference.features;
    x.speculative.method = SpeculativeMethod::DraftModel;
    x.shared_prefix_fraction = 0.25;
    x.sequences_per_prompt = 2;
    x.kv_offload_fraction = 0.5;
    x.weights_offload_fraction = 0.25;
    let e = estimate(&s);
    for (c, named) in [(Component::Weights, 2), (Component::KvCache, 2)] {
        let x = explain(&s, &e, c);
        println!("{}: {}", x.title, x.filled);
        assert!(
            x.terms.iter().any(|t| t.0.contains("draft model")),
            "{:?}",
            x.terms
        );
        assert!(x.filled.contains("offloaded to the host"), "{}", x.filled);
        let sum: f64 = x.terms.iter().map(|t| t.1.get()).sum();
        assert!((sum - x.value.get()).abs() <= 1e-9 * x.value.get());
        assert!(x.terms.len() >= named, "{:?}", x.terms);
        assert!(
            !x.terms
                .iter()
                .any(|t| t.0.contains("not live") || t.0.contains("torch.cat")),
            "{:?}",
            x.terms
        );
    }
}

/// vLLM's `--speculative-config` fills the speculative settings, and an EAGLE head's layer is
/// paged with the target's: 32 + 1 layers per block, so the printed token capacity falls by the
/// budget's loss (the head's weights) and by 32/33.
#[test]
fn vllm_speculative_config_is_read_and_the_eagle_layer_is_paged() {
    use vram_explorer::scenario::engine_args::parse;
    let cmd = r#"vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 --gpu-memory-utilization 0.9 --speculative-config '{"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}'"#;
    let a = parse(cmd).unwrap();
    let spec = a.speculative.unwrap();
    assert_eq!(spec.method, SpeculativeMethod::Eagle);
    assert_eq!(spec.num_speculative_tokens, 3);
    let ngram = r#"vllm serve m --speculative-config '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}'"#;
    let a = parse(ngram).unwrap();
    assert!(a.speculative.is_none());
    assert_eq!(a.not_modelled.len(), 1, "{:?}", a.not_modelled);
    let base = presets::bundled_scenario("llama3.1-8b-vllm-h100-8k").unwrap();
    let mut s = base.clone();
    parse(cmd).unwrap().apply(&mut s);
    assert_eq!(
        s.inference.features.speculative.method,
        SpeculativeMethod::Eagle
    );
    let f0 = estimate(&base).engine.unwrap();
    let f1 = estimate(&s).engine.unwrap();
    assert_eq!(f1.block_bytes, f0.block_bytes * 33.0 / 32.0);
    assert!(f1.kv_budget.get() < f0.kv_budget.get());
    println!("tokens {} → {}", f0.tokens, f1.tokens);
    assert!(f1.tokens < f0.tokens * 32.0 / 33.0);
}

/// Beam search in Hugging Face `generate` also reorders the cache each step (`index_select` of a
/// layer's K, then V, at the full context): a higher decode peak than n parallel samples' `cat` copy.
#[test]
fn beam_search_reorders_the_cache() {
    use vram_explorer::scenario::Sampling;
    let mut s = llama8b();
    s.inference.features.sequences_per_prompt = 4;
    let samples = estimate(&s);
    s.inference.features.sampling = Sampling::Beam;
    let beams = estimate(&s);
    let t = |e: &Estimate| phase(e, Phase::Decode, Component::Transient);
    assert!(t(&beams) > t(&samples), "{} <= {}", t(&beams), t(&samples));
    assert_eq!(kv(&beams), kv(&samples));
}
