//! The step time by part (issue 13: "the window shows the step-time breakdown"): a view of the
//! estimate, so its parts must add up to the step time it explains, for every bundled preset and
//! for the mechanisms that add a part (recomputation, a pipeline bubble, exposed communication).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::estimator::performance::parts::search::{SearchOptions, search};
use vram_explorer::presets::{bundled, bundled_scenario};
use vram_explorer::scenario::{Checkpointing, Mode, Scenario};

fn parts_of(s: &Scenario) -> Vec<(StepPart, f64)> {
    step_breakdown(&estimate(s).performance).parts().to_vec()
}

#[test]
fn the_parts_add_up_to_the_step_time_of_every_bundled_preset() {
    for p in bundled() {
        let s = bundled_scenario(p.id).unwrap();
        let e = estimate(&s);
        let b = step_breakdown(&e.performance);
        let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
        let total = e.performance.step.total_s;
        assert!(
            (sum - total).abs() <= 1e-9 * total.max(1e-12),
            "{}: parts {sum} s vs step {total} s ({:?})",
            p.id,
            b.parts()
        );
        assert!(b.parts().iter().all(|(_, t)| *t > 0.0 && t.is_finite()));
        let names: Vec<StepPart> = b.parts().iter().map(|(p, _)| *p).collect();
        if s.mode == Mode::Training {
            assert!(!names.contains(&StepPart::Decode), "{}", p.id);
        } else {
            assert!(names.contains(&StepPart::Prefill), "{}: {names:?}", p.id);
        }
    }
}

fn seventy_b() -> Scenario {
    bundled_scenario("llama3-70b-zero3-8xh100").unwrap()
}

#[test]
fn recomputation_and_the_bubble_appear_when_they_cost_time() {
    let mut s = seventy_b();
    s.strategies.checkpointing = Checkpointing::None;
    let none = parts_of(&s);
    assert!(none.iter().all(|(p, _)| *p != StepPart::Recompute));
    s.strategies.checkpointing = Checkpointing::Full;
    let full = parts_of(&s);
    let recompute = full
        .iter()
        .find(|(p, _)| *p == StepPart::Recompute)
        .unwrap()
        .1;
    let gemm = full.iter().find(|(p, _)| *p == StepPart::Gemm).unwrap().1;
    // Full recomputation runs the layers' forward again: a third of forward + backward GEMMs.
    assert!(
        recompute > 0.25 * gemm && recompute < 0.5 * gemm,
        "{recompute} vs {gemm}"
    );
    assert!(full.iter().all(|(p, _)| *p != StepPart::Bubble));
    s.parallel.pp = 4;
    s.parallel.dp = 2;
    s.workload.grad_accum_steps = 4;
    let piped = parts_of(&s);
    assert!(
        piped.iter().any(|(p, _)| *p == StepPart::Bubble),
        "{piped:?}"
    );
}

#[test]
fn the_best_layout_applies_to_the_scenario_and_is_then_current() {
    let base = seventy_b();
    let o = SearchOptions::for_scenario(&base, 0, 0, 3);
    assert_eq!(o.gpus, 8);
    let r = search(&base, &o);
    let best = r.best.first().expect("a layout fits 8 H100s");
    let mut s = base.clone();
    assert!(!best.is_applied_in(&s) || best.step_s <= estimate(&s).performance.step.total_s);
    best.apply_to(&mut s);
    assert!(best.is_applied_in(&s));
    assert_eq!(s.parallel.gpus(), u64::from(best.gpus));
    // What the search timed is what the scenario now estimates.
    let e = estimate(&s);
    assert_eq!(e.performance.step.total_s, best.step_s);
    assert!(e.memory.fits);
    assert!(
        best.summary()
            .starts_with(&format!("TP {} · PP {}", best.tp, best.pp))
    );
}

/// Issue 15 item 4: a post-training step's rollout is part of its step time.
mod post_training {
    use super::*;
    use vram_explorer::scenario::{Reference, RlAlgorithm, Rollout};

    fn grpo() -> Scenario {
        bundled_scenario("qwen2.5-7b-grpo-vllm-colocate-8xh100").unwrap()
    }

    fn part(s: &Scenario, which: StepPart) -> f64 {
        parts_of(s)
            .iter()
            .find(|(p, _)| *p == which)
            .map_or(0.0, |(_, t)| *t)
    }

    #[test]
    fn generation_and_scoring_are_parts_that_add_up_for_every_rollout_and_algorithm() {
        for algorithm in [RlAlgorithm::Grpo, RlAlgorithm::Ppo, RlAlgorithm::Dpo] {
            for rollout in Rollout::ALL {
                let mut s = grpo();
                s.post_training.algorithm = algorithm;
                s.post_training.rollout = rollout;
                s.post_training.reference = Reference::Scored;
                let e = estimate(&s);
                let b = step_breakdown(&e.performance);
                let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
                let st = e.performance.step;
                assert!(
                    (sum - st.total_s).abs() <= 1e-9 * st.total_s,
                    "{algorithm:?} {rollout:?}"
                );
                let names: Vec<StepPart> = b.parts().iter().map(|(p, _)| *p).collect();
                assert_eq!(
                    names.contains(&StepPart::RolloutGeneration),
                    algorithm.generates(),
                    "{algorithm:?} {rollout:?}: {names:?}"
                );
                assert!(
                    names.contains(&StepPart::Scoring),
                    "{algorithm:?} {rollout:?}"
                );
                assert_eq!(
                    names.first(),
                    Some(&if algorithm.generates() {
                        StepPart::RolloutGeneration
                    } else {
                        StepPart::Scoring
                    })
                );
            }
        }
    }

    #[test]
    fn generation_time_grows_with_num_generations_at_a_fixed_number_of_prompts() {
        for rollout in Rollout::ALL {
            let at = |g: u32| {
                let mut s = grpo();
                s.post_training.rollout = rollout;
                s.post_training.num_generations = g;
                // Two prompts per GPU: TRL's per_device_train_batch_size counts completions.
                s.workload.micro_batch = 2 * g;
                estimate(&s).performance.step.rollout_generation_s
            };
            let (four, eight, sixteen) = (at(4), at(8), at(16));
            assert!(
                four > 0.0 && eight > four && sixteen > eight,
                "{rollout:?}: {four} {eight} {sixteen}"
            );
            // Decode is memory-bound at these batches: twice the completions cost less than twice the time.
            assert!(eight < 2.0 * four, "{rollout:?}");
        }
    }

    #[test]
    fn the_generation_is_the_inference_models_request_batch() {
        // 8 completions of 512 + 1,024 tokens by HF generate = the inference estimate of that batch.
        let mut s = grpo();
        s.post_training.rollout = Rollout::HfGenerate;
        let rl = estimate(&s).performance.step.rollout_generation_s;
        let mut inf = s.clone();
        inf.mode = Mode::Inference;
        inf.post_training = Default::default();
        inf.inference.prompt_tokens = 512;
        inf.inference.generated_tokens = 1024;
        inf.inference.dynamic_batching = false;
        inf.inference.engine = Some(vram_explorer::scenario::ServingEngine::HfGenerate);
        inf.workload.micro_batch = 8;
        let served = estimate(&inf).performance.step.total_s;
        assert!((rl - served).abs() <= 1e-9 * served, "{rl} vs {served}");
        // Accumulation: one generation batch of micro-batch × accumulation completions per step.
        s.workload.grad_accum_steps = 4;
        let four = estimate(&s).performance.step.rollout_generation_s;
        assert!(four > rl && four < 4.0 * rl, "{four} vs {rl}");
    }

    #[test]
    fn grpo_with_beta_zero_and_hf_generate_has_no_scoring_time() {
        let mut s = grpo();
        s.post_training.rollout = Rollout::HfGenerate;
        s.post_training.reference = Reference::Off;
        assert_eq!(estimate(&s).performance.step.scoring_s, 0.0);
        assert_eq!(part(&s, StepPart::Scoring), 0.0);
        // A scored reference is one forward; PPO adds the reward model and the critic's values.
        s.post_training.reference = Reference::Scored;
        let one = part(&s, StepPart::Scoring);
        assert!(one > 0.0);
        s.post_training.algorithm = RlAlgorithm::Ppo;
        let ppo = part(&s, StepPart::Scoring);
        assert!((ppo - 3.0 * one).abs() <= 1e-9 * ppo, "{ppo} vs 3 × {one}");
        // DPO's precomputed reference log-probs cost nothing per step.
        let mut dpo = bundled_scenario("llama3.1-8b-dpo-8xh100").unwrap();
        assert!(part(&dpo, StepPart::Scoring) > 0.0);
        dpo.post_training.reference = Reference::Precomputed;
        assert_eq!(part(&dpo, StepPart::Scoring), 0.0);
        assert_eq!(part(&dpo, StepPart::RolloutGeneration), 0.0);
    }

    #[test]
    fn plain_training_has_no_rollout_parts() {
        let mut s = grpo();
        s.post_training.algorithm = RlAlgorithm::Off;
        let st = estimate(&s).performance.step;
        assert_eq!((st.rollout_generation_s, st.scoring_s), (0.0, 0.0));
    }
}
