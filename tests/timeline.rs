//! The step's timeline (`estimator::timeline`) agrees with the estimate's phase peaks exactly: over
//! every bundled preset and 600 seeded random valid scenarios, the largest point of each phase has
//! the same tensor bytes as that phase in `MemoryEstimate::phases`, and the largest point overall
//! equals `tensor_peak`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; the shared sampler is long"
)]

#[path = "support/sample.rs"]
mod sample;

use vram_explorer::estimator::timeline::{self, Step, Timeline};
use vram_explorer::estimator::{Component, Estimate, Phase, estimate};
use vram_explorer::presets::bundled;
use vram_explorer::scenario::{Mode, Scenario};

fn check(name: &str, s: &Scenario) -> (Estimate, Timeline) {
    let est = estimate(s);
    let tl = timeline::build(s, &est);
    for p in Phase::ALL {
        let want = est.memory.phases.get(p).map(|b| b.tensor_total().get());
        let got = tl.phase_max(p).map(|x| x.bytes.tensor_total().get());
        assert_eq!(got, want, "{name}: phase {p:?}");
    }
    for (i, pt) in tl.points.iter().enumerate() {
        for (c, b) in pt.bytes.iter() {
            assert!(
                b.get().is_finite() && b.get() >= 0.0,
                "{name}: point {i} {c:?} = {b:?}"
            );
        }
    }
    let peak = tl.peak.map(|i| tl.points[i].bytes.tensor_total().get());
    if tl.points.is_empty() {
        assert!(
            est.memory.peak_phase.is_none(),
            "{name}: no points but a peak phase"
        );
    } else {
        assert_eq!(
            peak,
            Some(est.memory.tensor_peak.get()),
            "{name}: overall peak"
        );
    }
    // Within each micro-batch drawn, phases appear once each, in the estimate's order; only the
    // last holds the optimizer step. A post-training run's rollout phases sit where the run has
    // them (generation and scoring before the step; DPO's scoring after the loss): each at most
    // once per micro-batch.
    let spans = tl.phase_spans();
    let rollout = [Phase::Generation as usize, Phase::Scoring as usize];
    for (mb, a, b) in tl.micro_batch_spans() {
        let all: Vec<usize> = spans
            .iter()
            .filter(|(_, s, e)| *s >= a && *e <= b)
            .map(|(p, _, _)| *p as usize)
            .collect();
        for r in rollout {
            assert!(
                all.iter().filter(|p| **p == r).count() <= 1,
                "{name}: {spans:?}"
            );
        }
        let order: Vec<usize> = all.into_iter().filter(|p| !rollout.contains(p)).collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(order, sorted, "{name}: phases out of order {spans:?}");
        let opt = order.contains(&(Phase::OptimizerStep as usize));
        assert!(
            !opt || mb == tl.micro_batches,
            "{name}: optimizer in micro-batch {mb}"
        );
    }
    (est, tl)
}

#[test]
fn every_preset_agrees_with_its_phase_peaks_exactly() {
    for p in bundled() {
        let s = p.scenario().unwrap();
        check(p.id, &s);
    }
}

#[test]
fn random_scenarios_agree_with_their_phase_peaks_exactly() {
    let mut rng = sample::Rng::new(0x713E_114E);
    for i in 0..600 {
        let s = sample::scenario(&mut rng);
        check(&format!("sample {i}"), &s);
    }
}

#[test]
fn training_walks_the_layers_forward_and_back() {
    let s = vram_explorer::presets::bundled_scenario("llama3-8b-full-finetune-h100")
        .or_else(|| {
            bundled()
                .iter()
                .find_map(|p| p.scenario().ok().filter(|s| s.mode == Mode::Training))
        })
        .unwrap();
    let (est, tl) = check("training", &s);
    let fwd: Vec<f64> = tl
        .points
        .iter()
        .filter(|p| matches!(p.step, Step::ForwardLayer(_)))
        .map(|p| p.bytes.get(Component::Activations).get())
        .collect();
    assert_eq!(fwd.len() as u32, tl.layers.min(256), "one point per layer");
    assert!(
        fwd.windows(2).all(|w| w[0] <= w[1]),
        "saved activations grow through forward"
    );
    assert!(fwd[fwd.len() - 1] > fwd[0]);
    let bwd: Vec<&timeline::Point> = tl
        .points
        .iter()
        .filter(|p| matches!(p.step, Step::BackwardLayer(_)))
        .collect();
    assert_eq!(bwd.len(), fwd.len());
    let last = bwd[bwd.len() - 1].bytes;
    assert!(
        last.get(Component::Activations).get()
            < bwd[0].bytes.get(Component::Activations).get().max(1.0)
    );
    assert_eq!(tl.points.last().unwrap().step, Step::OptimizerStep);
    assert!(est.memory.tensor_peak.get() > 0.0);
}

#[test]
fn inference_fills_the_cache_in_prefill_and_decode() {
    let s = bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| {
            s.mode == Mode::Inference
                && s.inference.generated_tokens > 40
                && s.inference.engine.is_none()
        })
        .unwrap();
    let (_, tl) = check("inference", &s);
    let kv: Vec<f64> = tl
        .points
        .iter()
        .map(|p| p.bytes.get(Component::KvCache).get())
        .collect();
    assert!(
        kv.windows(2).all(|w| w[0] <= w[1]) && kv[0] < kv[kv.len() - 1],
        "the cache grows: {kv:?}"
    );
    let decode = tl
        .points
        .iter()
        .filter(|p| p.phase == Phase::Decode)
        .count();
    assert_eq!(decode, 32, "decode is sampled at 32 tokens");
    assert!(
        matches!(tl.points.last().unwrap().step, Step::DecodeToken(n) if n == s.inference.generated_tokens)
    );
}

#[test]
fn a_serving_engine_holds_its_whole_pool_at_every_point() {
    // vLLM, SGLang and llama.cpp allocate the pool at startup: it does not fill layer by layer
    // (it did: 1.65 GiB at the vLLM preset's first prefill layer, 52.9 GiB at the last).
    for id in [
        "llama3.1-8b-vllm-h100-8k",
        "qwen2.5-7b-sglang-rtx4090",
        "llama31-8b-q4km-llamacpp-12gb",
    ] {
        let s = vram_explorer::presets::bundled_scenario(id).unwrap();
        let (est, tl) = check(id, &s);
        let pool = est.memory.peak.get(Component::KvCache).get();
        assert!(pool > 0.0, "{id}");
        for p in &tl.points {
            assert_eq!(
                p.bytes.get(Component::KvCache).get(),
                pool,
                "{id}: {:?}",
                p.step
            );
        }
    }
}

#[test]
fn pipeline_first_stage_starts_with_other_micro_batches_in_flight() {
    let mut s = bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| {
            s.mode == Mode::Training
                && s.model.family == vram_explorer::scenario::ModelFamily::Transformer
        })
        .unwrap();
    s.parallel.pp = 4;
    s.parallel.pp_microbatches = 8;
    // A flush holds at most the step's micro-batches (`pipeline_microbatches_beyond_step`).
    s.workload.grad_accum_steps = 8;
    let (est, tl) = check("pp4", &s);
    assert_eq!(est.memory.peak_stage, 0);
    assert_eq!(tl.in_flight, 4.0);
    let start = tl.points[0].bytes.get(Component::Activations).get();
    let fwd = est
        .memory
        .phases
        .get(Phase::Forward)
        .unwrap()
        .get(Component::Activations)
        .get();
    assert!((start - fwd * 0.75).abs() <= 1e-9 * fwd, "{start} vs {fwd}");
}

#[test]
fn gradient_accumulation_draws_its_micro_batches() {
    let mut s = bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| s.mode == Mode::Training && s.parallel.pp <= 1)
        .unwrap();
    for (steps, drawn) in [(1u32, vec![1u32]), (3, vec![1, 2, 3]), (8, vec![1, 8])] {
        s.workload.grad_accum_steps = steps;
        let (est, tl) = check(&format!("accumulate {steps}"), &s);
        assert_eq!(tl.micro_batches, steps);
        let mbs: Vec<u32> = tl.micro_batch_spans().iter().map(|m| m.0).collect();
        assert_eq!(mbs, drawn);
        if steps > 1 {
            // The first micro-batch's forward holds no gradients yet; the last one's holds them all.
            let grads_at = |mb: u32| {
                tl.points
                    .iter()
                    .find(|p| p.micro_batch == mb && p.step == Step::Loss)
                    .unwrap()
                    .bytes
                    .get(Component::Gradients)
                    .get()
            };
            assert_eq!(grads_at(1), 0.0);
            let g = est
                .memory
                .phases
                .get(Phase::Forward)
                .unwrap()
                .get(Component::Gradients)
                .get();
            assert!(g > 0.0);
            assert_eq!(grads_at(steps), g);
        }
    }
}
