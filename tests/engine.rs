//! Serving engines are their own notion (issue 17): a file that names none keeps its old meaning
//! (the engine of its training profile's code base), and naming one changes only what the engine
//! decides (here: whether the cache grows by copying).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use vram_explorer::estimator::{Phase, estimate};
use vram_explorer::scenario::{Mode, Profile, Scenario, ServingEngine};

fn decode_transient(s: &Scenario) -> f64 {
    let e = estimate(s);
    e.memory
        .phases
        .get(Phase::Decode)
        .expect("decode phase")
        .get(vram_explorer::estimator::Component::Transient)
        .get()
}

fn long_decode() -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    s.inference.prompt_tokens = 32_768;
    s.inference.generated_tokens = 16;
    s.workload.micro_batch = 4;
    s
}

#[test]
fn an_unnamed_engine_follows_the_profile() {
    for profile in [Profile::HuggingFace, Profile::Megatron] {
        let mut unnamed = long_decode();
        unnamed.implementation.profile = profile;
        let mut named = unnamed.clone();
        named.inference.engine = Some(ServingEngine::following(profile));
        assert_eq!(
            estimate(&unnamed).memory.gpu_total,
            estimate(&named).memory.gpu_total
        );
    }
}

#[test]
fn a_preallocated_cache_does_not_copy_when_it_grows() {
    let mut hf = long_decode();
    hf.inference.engine = Some(ServingEngine::HfGenerate);
    let mut pre = hf.clone();
    pre.inference.engine = Some(ServingEngine::Preallocated);
    // Llama-3-8B: one layer's V of 4 sequences × 32,783 tokens × 8 KV heads × 128 × 2 B.
    let one_v = 4.0 * (32_768.0 + 16.0 - 1.0) * 8.0 * 128.0 * 2.0;
    let (a, b) = (decode_transient(&hf), decode_transient(&pre));
    assert!(a > b, "{a} vs {b}");
    assert!(a >= one_v, "{a} < {one_v}");
}
