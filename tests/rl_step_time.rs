//! The step time of a post-training run (issue 15 item 4; `estimator/performance/post_training.rs`,
//! docs/frameworks/trl-rl.md): generation and scoring are timed by the inference model on the
//! rollout's batch, so each vector below is that batch written out by hand as an inference
//! scenario (TRL 1.16: `per_device_train_batch_size × steps_per_generation` completions, HF
//! generate repeating each prompt `num_generations` times, a vLLM server prefilling each prompt
//! once with `n = num_generations`), and the step-time parts, the CLI line and the JSON report
//! all read `StepTime`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking; zero times are exact"
)]

use std::process::Command;

use serde_json::Value;
use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::estimator::performance::{Performance, StepTime};
use vram_explorer::estimator::{estimate, timeline};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{
    Mode, Reference, RlAlgorithm, Rollout, Sampling, Scenario, ServingEngine,
};

const GRPO: &str = "qwen2.5-7b-grpo-vllm-colocate-8xh100";
const DPO: &str = "llama3.1-8b-dpo-8xh100";

fn grpo() -> Scenario {
    bundled_scenario(GRPO).unwrap()
}

fn step(s: &Scenario) -> StepTime {
    estimate(s).performance.step
}

#[path = "support/step_part.rs"]
mod step_part;
use step_part::part;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// The post-training scenario's inference twin: `requests` prompts of `prompt` tokens, each
/// generating `generated` tokens, with `engine`; `n` sequences per prompt under vLLM.
fn served(s: &Scenario, engine: ServingEngine, requests: u32, n: u32) -> Performance {
    let mut inf = s.clone();
    inf.mode = Mode::Inference;
    inf.post_training = Default::default();
    inf.inference.prompt_tokens = s.post_training.prompt_tokens;
    inf.inference.generated_tokens = s.workload.seq_len - s.post_training.prompt_tokens;
    inf.inference.all_logits = false;
    inf.inference.mean_length_fraction = 1.0;
    inf.inference.features = Default::default();
    let hf = engine == ServingEngine::HfGenerate;
    inf.inference.engine = Some(engine);
    inf.inference.dynamic_batching = !hf;
    if hf {
        inf.workload.micro_batch = requests;
    } else {
        inf.inference.concurrent_requests = requests;
        inf.inference.features.sequences_per_prompt = n;
        inf.inference.features.sampling = Sampling::Parallel;
    }
    estimate(&inf).performance
}

fn vllm() -> ServingEngine {
    ServingEngine::Vllm(Default::default())
}

#[test]
fn hf_generate_is_one_prefill_and_a_decode_step_per_completion_token_of_the_repeated_batch() {
    let mut s = grpo();
    s.post_training.rollout = Rollout::HfGenerate;
    // 8 completions per GPU per micro-batch, 2 accumulation steps: one generation batch of 16
    // (steps_per_generation = gradient_accumulation_steps), 2 prompts × num_generations 8.
    s.workload.grad_accum_steps = 2;
    let rl = step(&s).rollout_generation_s;
    let p = served(&s, ServingEngine::HfGenerate, 16, 1);
    assert!(close(rl, p.step.total_s), "{rl} vs {}", p.step.total_s);
    // TP 1, PP 1: TTFT is the prefill, and 1,536 − 512 = 1,024 decode steps follow it, each
    // forward with its fixed overhead (eager ops issued from Python, `generate`'s loop).
    let (pre, dec) = (p.prefill.unwrap(), p.decode.unwrap());
    assert!(p.step.launch_s > 0.0);
    assert!(
        close(rl, pre.time_s + 1024.0 * dec.time_s + p.step.launch_s),
        "{rl}"
    );
    // The static batch is 16 sequences: every prompt is prefilled for each of its completions.
    let one = served(&s, ServingEngine::HfGenerate, 1, 1);
    assert!(close(pre.flops, 16.0 * one.prefill.unwrap().flops));
}

#[test]
fn a_vllm_server_prefills_each_prompt_once_per_group() {
    let mut s = grpo();
    s.post_training.rollout = Rollout::Separate;
    let rl = step(&s).rollout_generation_s;
    // 8 completions = 1 prompt with n = 8.
    let server = served(&s, vllm(), 1, 8);
    assert!(
        close(rl, server.step.total_s),
        "{rl} vs {}",
        server.step.total_s
    );
    // Co-located vLLM gets the 8 repeated prompts with n = 1 (TRL vllm_generation.py: "vLLM on
    // each GPU generates only 1 in colocate mode").
    s.post_training.rollout = Rollout::VllmColocate;
    let colocated = served(&s, vllm(), 8, 1);
    assert!(close(step(&s).rollout_generation_s, colocated.step.total_s));
    // The same 8 sequences decode; the server prefills 1/8 of the prompt tokens.
    let (a, b) = (server.prefill.unwrap(), colocated.prefill.unwrap());
    assert!(close(8.0 * a.flops, b.flops), "{} vs {}", a.flops, b.flops);
    assert!(close(
        server.decode.unwrap().flops,
        colocated.decode.unwrap().flops
    ));
    assert!(server.step.total_s < colocated.step.total_s);
}

#[test]
fn dpo_scores_the_reference_over_both_sequences_of_each_pair_unless_precomputed() {
    let mut dpo = bundled_scenario(DPO).unwrap();
    dpo.post_training.reference = Reference::Scored;
    let st = step(&dpo);
    assert_eq!(st.rollout_generation_s, 0.0);
    // One no-grad forward of 2 × micro-batch whole sequences with every position's logits, per
    // accumulation step.
    let mut fwd = dpo.clone();
    fwd.mode = Mode::Inference;
    fwd.post_training = Default::default();
    fwd.inference.prompt_tokens = dpo.workload.seq_len;
    fwd.inference.generated_tokens = 0;
    fwd.inference.all_logits = true;
    fwd.inference.dynamic_batching = false;
    fwd.inference.engine = Some(ServingEngine::HfGenerate);
    fwd.inference.features = Default::default();
    fwd.workload.micro_batch = 2 * dpo.workload.micro_batch;
    let accum = f64::from(dpo.workload.grad_accum_steps.max(1));
    let one = estimate(&fwd).performance.step.total_s;
    assert!(
        close(st.scoring_s, accum * one),
        "{} vs {accum} × {one}",
        st.scoring_s
    );
    dpo.post_training.reference = Reference::Precomputed;
    assert_eq!(step(&dpo).scoring_s, 0.0);
}

#[test]
fn ppo_scores_with_the_reward_model_and_the_critic_beside_the_reference() {
    let mut s = grpo();
    s.post_training.rollout = Rollout::HfGenerate;
    s.post_training.reference = Reference::Off;
    assert_eq!(step(&s).scoring_s, 0.0);
    s.post_training.reference = Reference::Scored;
    let reference = step(&s).scoring_s;
    assert!(reference > 0.0);
    s.post_training.algorithm = RlAlgorithm::Ppo;
    assert!(close(step(&s).scoring_s, 3.0 * reference));
    s.post_training.reference = Reference::Off;
    assert!(close(step(&s).scoring_s, 2.0 * reference));
    // After a vLLM rollout the policy re-scores its own completions too (importance sampling).
    s.post_training.rollout = Rollout::VllmColocate;
    assert!(close(step(&s).scoring_s, 3.0 * reference));
}

#[test]
fn more_generated_tokens_never_shorten_the_step() {
    for algorithm in [RlAlgorithm::Grpo, RlAlgorithm::Ppo] {
        for rollout in Rollout::ALL {
            let mut last = 0.0;
            for completion in [64, 256, 512, 1024, 2048] {
                let mut s = grpo();
                s.post_training.algorithm = algorithm;
                s.post_training.rollout = rollout;
                s.workload.seq_len = 512 + completion;
                let st = step(&s);
                assert!(
                    st.total_s >= last && st.rollout_generation_s > 0.0,
                    "{algorithm:?} {rollout:?} {completion}: {} < {last}",
                    st.total_s
                );
                last = st.total_s;
            }
        }
    }
}

#[test]
fn a_larger_group_never_shortens_the_step() {
    for rollout in Rollout::ALL {
        for reference in [Reference::Off, Reference::Scored] {
            let mut last = (0.0, 0.0);
            for g in [2, 4, 8, 16] {
                let mut s = grpo();
                s.post_training.rollout = rollout;
                s.post_training.reference = reference;
                s.post_training.num_generations = g;
                // Two prompts per GPU: TRL's per_device_train_batch_size counts completions.
                s.workload.micro_batch = 2 * g;
                let st = step(&s);
                assert!(
                    st.total_s > last.0 && st.rollout_generation_s > last.1,
                    "{rollout:?} {reference:?} g {g}: {st:?}"
                );
                last = (st.total_s, st.rollout_generation_s);
            }
        }
    }
}

#[test]
fn the_parts_the_timeline_and_the_json_report_read_the_same_step_time() {
    for algorithm in [RlAlgorithm::Grpo, RlAlgorithm::Ppo, RlAlgorithm::Dpo] {
        for rollout in Rollout::ALL {
            let mut s = grpo();
            s.post_training.algorithm = algorithm;
            s.post_training.rollout = rollout;
            s.post_training.reference = Reference::Scored;
            let e = estimate(&s);
            let st = e.performance.step;
            let b = step_breakdown(&e.performance);
            let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
            assert!(close(sum, st.total_s), "{algorithm:?} {rollout:?}");
            assert_eq!(
                part(&s, StepPart::RolloutGeneration),
                st.rollout_generation_s
            );
            assert_eq!(part(&s, StepPart::Scoring), st.scoring_s);
            assert_eq!(st.rollout_generation_s > 0.0, algorithm.generates());
            assert!(st.scoring_s > 0.0);
            // The memory timeline draws a phase the step spends time in (a vLLM server
            // generates on other GPUs: time on this one, no memory).
            let t = timeline::build(&s, &e);
            let has = |w: timeline::Step| t.points.iter().any(|p| p.step == w);
            assert_eq!(
                has(timeline::Step::Generation),
                st.rollout_generation_s > 0.0 && rollout != Rollout::Separate,
                "{algorithm:?} {rollout:?}"
            );
            assert!(has(timeline::Step::Scoring));
        }
    }
}

#[test]
fn the_cli_prints_and_the_json_report_carries_the_rollout() {
    let st = step(&grpo());
    let bin = env!("CARGO_BIN_EXE_vram-explorer");
    let o = Command::new(bin)
        .args(["report", "--preset", GRPO, "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = &v["performance"]["figures"]["step"];
    assert_eq!(v["schema_version"], 2);
    // serde_json's default float parser may land one ulp away from what was printed.
    let same = |key: &str, want: f64| {
        let got = j[key].as_f64().unwrap_or(f64::NAN);
        assert!(
            (got - want).abs() <= 1e-12 * want.abs(),
            "{key}: {got} vs {want}"
        );
    };
    same("rollout_generation_s", st.rollout_generation_s);
    same("scoring_s", st.scoring_s);
    same("total_s", st.total_s);
    let o = Command::new(bin)
        .args(["report", "--preset", GRPO])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("Post-training rollout") && l.contains("generation")),
        "{text}"
    );
}
