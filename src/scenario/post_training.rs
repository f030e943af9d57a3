//! Post-training with several models (issue 15 item 4): DPO, GRPO and PPO, as TRL 1.16 runs them
//! (docs/frameworks/trl-rl.md). Training only; `algorithm: Off` (the default) is plain training.

use serde::{Deserialize, Serialize};

/// The post-training algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RlAlgorithm {
    /// Plain (pre-/fine-) training: one model.
    #[default]
    Off,
    /// Direct Preference Optimization (Rafailov et al. 2023, arXiv:2305.18290), TRL `DPOTrainer`:
    /// each prompt's chosen and rejected completions are one batch of 2 × `workload.micro_batch`
    /// sequences (`trl/trainer/dpo_trainer.py` `DataCollatorForPreference`: `torch.cat` of chosen and
    /// rejected), scored by the policy (with autograd) and then by the frozen reference (no grad).
    Dpo,
    /// Group Relative Policy Optimization (Shao et al. 2024, arXiv:2402.03300 §4), TRL
    /// `GRPOTrainer`: the policy generates `num_generations` completions per prompt
    /// (`workload.micro_batch` counts completions, TRL's `per_device_train_batch_size`), the
    /// reference scores them when `beta` ≠ 0, then the policy trains on them.
    Grpo,
    /// Proximal Policy Optimization for language models (Ouyang et al. 2022 arXiv:2203.02155 §3.5):
    /// GRPO's phases plus a reward model and a trained value model (critic) of the policy's shape.
    Ppo,
}

impl RlAlgorithm {
    pub const ALL: [RlAlgorithm; 4] = [
        RlAlgorithm::Off,
        RlAlgorithm::Dpo,
        RlAlgorithm::Grpo,
        RlAlgorithm::Ppo,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            RlAlgorithm::Off => "Off (one model)",
            RlAlgorithm::Dpo => "DPO (policy + reference)",
            RlAlgorithm::Grpo => "GRPO (generate, score, train)",
            RlAlgorithm::Ppo => "PPO (+ reward model, critic)",
        }
    }

    /// Whether the step generates its completions (GRPO, PPO).
    pub const fn generates(self) -> bool {
        matches!(self, RlAlgorithm::Grpo | RlAlgorithm::Ppo)
    }
}

/// Where the reference policy's log-probabilities come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reference {
    /// Scored every step: a frozen copy of the policy in the policy's weight type for full
    /// fine-tuning (`create_model_from_path(..., dtype=model.dtype)`), the base with its adapters
    /// disabled under LoRA (no second copy: `use_adapter(model, None)`).
    #[default]
    Scored,
    /// No reference: GRPO with `beta = 0.0`, TRL 1.16's default (`grpo_config.py` `beta`).
    Off,
    /// DPO `precompute_ref_log_probs=True`: scored once before training, then freed.
    Precomputed,
}

impl Reference {
    pub const ALL: [Reference; 3] = [Reference::Scored, Reference::Off, Reference::Precomputed];

    pub const fn label(self) -> &'static str {
        match self {
            Reference::Scored => "Scored every step",
            Reference::Off => "None (GRPO beta = 0)",
            Reference::Precomputed => "Precomputed (DPO)",
        }
    }
}

/// What generates the completions of GRPO / PPO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rollout {
    /// The policy's own `generate` (TRL `use_vllm=False`): a KV cache of the generation batch,
    /// freed before training.
    #[default]
    HfGenerate,
    /// vLLM in the training process (`vllm_mode="colocate"`): it takes
    /// `rollout_gpu_memory_utilization` of the GPU for its weights and KV cache.
    VllmColocate,
    /// vLLM on other GPUs (`vllm_mode="server"`): nothing on the training GPUs.
    Separate,
}

impl Rollout {
    pub const ALL: [Rollout; 3] = [
        Rollout::HfGenerate,
        Rollout::VllmColocate,
        Rollout::Separate,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Rollout::HfGenerate => "Policy generate (HF)",
            Rollout::VllmColocate => "vLLM co-located",
            Rollout::Separate => "vLLM on other GPUs",
        }
    }
}

/// Which framework runs the step, and so what its offload settings move between phases
/// (docs/frameworks/verl-openrlhf.md). The phases are the same; what is resident in each differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RlFramework {
    /// TRL 1.16: every training state stays on the GPU; only a co-located vLLM sleeps
    /// (`vllm_enable_sleep_mode`).
    #[default]
    Trl,
    /// verl 0.6.1 hybrid engine (FSDP workers, `verl/workers/fsdp_workers.py`): the actor's
    /// `param_offload` / `optimizer_offload` move its FSDP shards to the host outside the phases
    /// that use them; the reference is always host-resident (FSDP `CPUOffload(offload_params=True)`
    /// is forced for it, `_build_model_optimizer`); `free_cache_engine` sleeps the rollout.
    Verl,
    /// OpenRLHF 0.11.0 with `--train.colocate_all` (`--colocate_all_models` before 0.9): DeepSpeed
    /// actors and vLLM on the same GPUs; `--ds.enable_sleep` moves optimizer states, FP32 master
    /// weights and gradients to the host outside training (`offload_deepspeed_states`);
    /// `--ref.offload` keeps the reference's ZeRO-3 shards on the host; `--vllm.enable_sleep`
    /// sleeps the rollout (`sleep(level=1)`: its weights go to the host and come back).
    OpenRlhf,
}

impl RlFramework {
    pub const ALL: [RlFramework; 3] = [RlFramework::Trl, RlFramework::Verl, RlFramework::OpenRlhf];

    pub const fn label(self) -> &'static str {
        match self {
            RlFramework::Trl => "TRL",
            RlFramework::Verl => "verl (hybrid engine, FSDP)",
            RlFramework::OpenRlhf => "OpenRLHF (colocate_all, DeepSpeed)",
        }
    }
}

/// The post-training section of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PostTraining {
    pub algorithm: RlAlgorithm,
    /// Tokens of each sequence's prompt; the rest of `workload.seq_len` is the completion (what GRPO
    /// generates and scores). Valid: 0 ..= seq_len − 1 (clamped).
    pub prompt_tokens: u32,
    /// GRPO / PPO completions per prompt (TRL `num_generations`, default 8). Memory depends on the
    /// completions per GPU (`workload.micro_batch`); this sets how many prompts they come from.
    pub num_generations: u32,
    pub reference: Reference,
    pub rollout: Rollout,
    /// `vllm_gpu_memory_utilization` of a co-located vLLM (TRL default 0.3): the fraction of the
    /// GPU's memory vLLM reserves for its weights, activations and KV cache.
    pub rollout_gpu_memory_utilization: f64,
    /// `vllm_enable_sleep_mode`: vLLM releases its weights and KV cache while the policy trains
    /// (`llm.sleep(level=2)`, `trl/generation/vllm_generation.py`), so the reservation is only held
    /// during generation.
    pub rollout_sleep: bool,
    /// Which framework runs the step (what the three settings below mean).
    pub framework: RlFramework,
    /// verl `actor_rollout_ref.actor.fsdp_config.param_offload` (also the critic's): the FSDP
    /// parameter shards (weights and FP32 master) live on the host and are loaded for scoring
    /// (`compute_log_prob`) and training (`update_actor`), offloaded after each
    /// (`verl/utils/fsdp_utils.py` `offload_fsdp_model_to_cpu` / `load_fsdp_model_to_gpu`).
    /// verl only.
    pub param_offload: bool,
    /// verl `actor.fsdp_config.optimizer_offload` (`offload_fsdp_optimizer`: Adam's states on the
    /// host except in `update_actor`); OpenRLHF `--ds.enable_sleep` (optimizer states, FP32 master
    /// weights and gradients on the host except in `fit`). Not TRL.
    pub optimizer_offload: bool,
    /// OpenRLHF `--ref.offload`: the reference's ZeRO-3 shards on the host, streamed in per
    /// forward. verl always does this (no setting); not TRL.
    pub ref_offload: bool,
}

impl Default for PostTraining {
    fn default() -> Self {
        PostTraining {
            algorithm: RlAlgorithm::Off,
            prompt_tokens: 512,
            num_generations: 8,
            reference: Reference::Scored,
            rollout: Rollout::HfGenerate,
            rollout_gpu_memory_utilization: 0.3,
            rollout_sleep: false,
            framework: RlFramework::Trl,
            param_offload: false,
            optimizer_offload: false,
            ref_offload: false,
        }
    }
}
