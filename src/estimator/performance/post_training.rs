//! A post-training step's rollout in time (issue 15 item 4): the completions' generation and the
//! scoring forwards that run before (GRPO, PPO) or beside (DPO) the policy's training step. Both
//! are timed by the inference model (`inference.rs`: prefill, then one decode step per generated
//! token) on a string-free copy of the scenario set to the rollout's batch, so the rollout runs on
//! the same roofline, collectives and offload as a served request; nothing here is a second time
//! model. What runs when follows TRL 1.16 (docs/frameworks/trl-rl.md):
//!
//! - **Generation** (GRPO, PPO): one generation batch of `micro_batch × grad_accum` completions
//!   per GPU per optimizer step (`steps_per_generation` defaults to the accumulation steps,
//!   `trl/trainer/grpo_config.py` `__post_init__`), `prompt_tokens` of prompt and
//!   `seq_len − prompt_tokens` generated (`min_new_tokens = max_completion_length`: no early EOS).
//!   HF `generate` (`use_vllm=False`) is a static batch with every prompt repeated
//!   `num_generations` times (`RepeatSampler`); co-located vLLM generates the repeated prompts with
//!   `n = 1` under continuous batching (`trl/generation/vllm_generation.py` line 663: "vLLM on each
//!   GPU generates only 1 in colocate mode"); a vLLM server takes the unique prompts with
//!   `n = num_generations` (same file, lines 602–618), so the prompt is prefilled once per group.
//!   The server is assumed to be the same GPU type and tensor-parallel degree as the policy, one
//!   replica per data-parallel rank; TRL waits for it (no asynchronous rollout).
//! - **Scoring**: one forward with every position's log-probabilities per scoring model over the
//!   step's sequences, in chunks of `per_device_train_batch_size` (`grpo_trainer.py`
//!   `_get_per_token_logps_and_entropies`; DPO: `2 × micro_batch` sequences per micro-batch,
//!   `dpo_trainer.py` `_compute_loss`). Scoring models: the reference when scored each step, the
//!   policy itself after a vLLM rollout (`vllm_importance_sampling_correction`, the memory side's
//!   `post_training::phases::scores`), and for PPO the reward model and the critic's values
//!   (Ouyang et al. 2022 arXiv:2203.02155 §3.5; advantages need V of every rollout token,
//!   Schulman et al. 2017 arXiv:1707.06347 §5).

use super::Bound;
use super::inference;
use super::inputs::Inputs;
use crate::estimator::MemoryEstimate;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{
    Mode, Reference, RlAlgorithm, Rollout, Sampling, Scenario, ServingEngine, Vllm,
};

/// The rollout's share of one post-training step on one GPU, seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RolloutTime {
    /// Generating the step's completions (0 for DPO and outside post-training).
    pub generation_s: f64,
    /// What bounds the generation (decode: usually memory).
    pub generation_bound: Bound,
    /// The scoring models' forwards over the step's sequences.
    pub scoring_s: f64,
    /// What bounds one scoring forward (a prefill: compute, unless the chunk is small).
    pub scoring_bound: Bound,
}

/// The forwards of models other than the trained policy that score each step's sequences.
pub fn scoring_models(s: &Scenario) -> u32 {
    let p = &s.post_training;
    if s.mode != Mode::Training || p.algorithm == RlAlgorithm::Off {
        return 0;
    }
    let reference = u32::from(p.reference == Reference::Scored);
    let old_policy = u32::from(p.algorithm.generates() && p.rollout != Rollout::HfGenerate);
    let ppo = if p.algorithm == RlAlgorithm::Ppo {
        2
    } else {
        0
    };
    reference + old_policy + ppo
}

/// The rollout time of a resolved post-training scenario (zero outside one). Allocation-free: the
/// copies have empty strings.
pub fn rollout(s: &Scenario, m: &ResolvedModel, mem: &MemoryEstimate, i: &Inputs) -> RolloutTime {
    let p = &s.post_training;
    if s.mode != Mode::Training || p.algorithm == RlAlgorithm::Off {
        return RolloutTime::default();
    }
    let accum = s.workload.grad_accum_steps.max(1);
    let micro = s.workload.micro_batch.max(1);
    let mut out = RolloutTime::default();
    if p.algorithm.generates() {
        let g = generation_scenario(s, micro.saturating_mul(accum));
        let r = inference::inference(&g, m, mem, i);
        out.generation_s = r.total_s;
        out.generation_bound = r.decode.unwrap_or(r.prefill).bound;
    }
    let models = scoring_models(s);
    if models > 0 {
        let pairs = if p.algorithm == RlAlgorithm::Dpo {
            2
        } else {
            1
        };
        let f = forward_scenario(s, micro.saturating_mul(pairs));
        let chunk = inference::inference(&f, m, mem, i);
        out.scoring_s = f64::from(models) * f64::from(accum) * chunk.total_s;
        out.scoring_bound = chunk.prefill.bound;
    }
    out
}

/// The rollout engine's request batch: `completions` of `prompt_tokens` + the completion.
fn generation_scenario(s: &Scenario, completions: u32) -> Scenario {
    let p = &s.post_training;
    let mut g = super::compare::light_copy(s);
    g.mode = Mode::Inference;
    let inf = &mut g.inference;
    inf.prompt_tokens = p.prompt_tokens.max(1);
    inf.generated_tokens = s.workload.seq_len.saturating_sub(p.prompt_tokens).max(1);
    inf.all_logits = false;
    inf.mean_length_fraction = 1.0;
    inf.features = Default::default();
    let n = p.num_generations.max(1);
    match p.rollout {
        Rollout::HfGenerate => {
            inf.engine = Some(ServingEngine::HfGenerate);
            inf.dynamic_batching = false;
            g.workload.micro_batch = completions;
        }
        Rollout::VllmColocate => {
            // The engine arguments TRL passes (`vllm_generation.py` `LLM(...)`, `grpo_trainer.py`
            // line 1124): they set vLLM's memory, not this time.
            inf.engine = Some(ServingEngine::Vllm(Vllm {
                gpu_memory_utilization: Some(p.rollout_gpu_memory_utilization),
                max_num_seqs: completions,
                max_num_batched_tokens: 4096,
                ..Vllm::default()
            }));
            inf.dynamic_batching = true;
            inf.concurrent_requests = completions;
        }
        Rollout::Separate => {
            inf.engine = Some(ServingEngine::Vllm(Default::default()));
            inf.dynamic_batching = true;
            inf.concurrent_requests = completions.div_ceil(n);
            inf.features.sequences_per_prompt = n;
            inf.features.sampling = Sampling::Parallel;
        }
    }
    g
}

/// One scoring chunk: a no-grad forward of `sequences` whole sequences with every position's
/// logits (a prefill without decode).
fn forward_scenario(s: &Scenario, sequences: u32) -> Scenario {
    let mut f = super::compare::light_copy(s);
    f.mode = Mode::Inference;
    let inf = &mut f.inference;
    inf.prompt_tokens = s.workload.seq_len.max(1);
    inf.generated_tokens = 0;
    inf.all_logits = true;
    inf.dynamic_batching = false;
    inf.engine = Some(ServingEngine::HfGenerate);
    inf.features = Default::default();
    f.workload.micro_batch = sequences;
    f
}
