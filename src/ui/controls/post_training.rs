//! Post-training with several models: DPO, GRPO, PPO (docs/frameworks/trl-rl.md).

use egui::Ui;

use crate::scenario::{Reference, RlAlgorithm, RlFramework, Rollout, Scenario};
use crate::ui::widgets::{Choice, choice, int_slider, opt, real_slider, toggle};

const ALGORITHMS: [Choice<RlAlgorithm>; 4] = [
    opt(RlAlgorithm::Off, "Off", "Plain training: one model."),
    opt(
        RlAlgorithm::Dpo,
        "DPO",
        "TRL DPOTrainer: chosen and rejected completions of each prompt in one batch (2 × micro-batch sequences), then the frozen reference scores them while the policy's saved activations are alive.",
    ),
    opt(
        RlAlgorithm::Grpo,
        "GRPO",
        "TRL GRPOTrainer: the policy generates num_generations completions per prompt (micro-batch counts completions), the reference scores them when beta ≠ 0, then the policy trains.",
    ),
    opt(
        RlAlgorithm::Ppo,
        "PPO",
        "GRPO's phases plus a frozen reward model and a trained critic (value model) of the policy's shape.",
    ),
];

const REFERENCES: [Choice<Reference>; 3] = [
    opt(
        Reference::Scored,
        "Scored every step",
        "A frozen copy of the policy (full fine-tuning) or the base with its adapters disabled (LoRA: no copy).",
    ),
    opt(
        Reference::Off,
        "None (beta = 0)",
        "GRPO's default in TRL 1.16: no reference model, no scoring pass.",
    ),
    opt(
        Reference::Precomputed,
        "Precomputed",
        "DPO precompute_ref_log_probs: scored once before training, not held while training.",
    ),
];

const ROLLOUTS: [Choice<Rollout>; 3] = [
    opt(
        Rollout::HfGenerate,
        "Policy generate",
        "The policy's own generate (use_vllm=False): a KV cache of the generation batch, freed before training.",
    ),
    opt(
        Rollout::VllmColocate,
        "vLLM co-located",
        "vLLM in the training process (vllm_mode=\"colocate\"): it reserves its GPU-memory fraction for weights and KV cache.",
    ),
    opt(
        Rollout::Separate,
        "vLLM on other GPUs",
        "vllm_mode=\"server\": generation runs elsewhere, nothing on these GPUs.",
    ),
];

const FRAMEWORKS: [Choice<RlFramework>; 3] = [
    opt(
        RlFramework::Trl,
        "TRL",
        "TRL 1.16: every training state stays on the GPU; only a co-located vLLM can sleep.",
    ),
    opt(
        RlFramework::Verl,
        "verl",
        "verl 0.6.1 hybrid engine (FSDP): param_offload / optimizer_offload move the actor's shards to the host outside the phases that use them; the reference is always on the host.",
    ),
    opt(
        RlFramework::OpenRlhf,
        "OpenRLHF",
        "OpenRLHF 0.11.0 --train.colocate_all: --ds.enable_sleep moves optimizer states, master weights and gradients to the host outside training; --ref.offload keeps the reference there.",
    ),
];

/// The framework and its offload settings (docs/frameworks/verl-openrlhf.md).
fn offloads(ui: &mut Ui, p: &mut crate::scenario::PostTraining) {
    choice(
        ui,
        &mut p.framework,
        &FRAMEWORKS,
        "Framework",
        "Which framework runs the step: what is resident in each phase, and what is copied over the host link between them.",
    );
    if p.framework == RlFramework::Verl {
        toggle(
            ui,
            &mut p.param_offload,
            "Parameter offload",
            "verl actor fsdp_config.param_offload: the FSDP shards on the host during generation, loaded for scoring and training.",
        );
    }
    if p.framework != RlFramework::Trl {
        toggle(
            ui,
            &mut p.optimizer_offload,
            "Optimizer offload",
            "verl optimizer_offload / OpenRLHF --ds.enable_sleep: optimizer states (OpenRLHF: and master weights, gradients) on the host outside training.",
        );
    }
    if p.framework == RlFramework::OpenRlhf {
        toggle(
            ui,
            &mut p.ref_offload,
            "Reference offload",
            "OpenRLHF --ref.offload: the reference's ZeRO-3 shards on the host, streamed in per forward.",
        );
    }
}

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let seq = s.workload.seq_len;
    let p = &mut s.post_training;
    choice(
        ui,
        &mut p.algorithm,
        &ALGORITHMS,
        "Algorithm",
        "Post-training with several models (training only). Every model's share shows in the composition chart.",
    );
    if p.algorithm == RlAlgorithm::Off {
        return;
    }
    choice(
        ui,
        &mut p.reference,
        &REFERENCES,
        "Reference",
        "Where the reference policy's log-probabilities come from.",
    );
    offloads(ui, p);
    int_slider(
        ui,
        &mut p.prompt_tokens,
        0..=seq.saturating_sub(1).max(1),
        true,
        "Prompt tokens",
        "tokens",
        "Tokens of each sequence's prompt; the rest of the sequence length is the completion.",
    );
    if !p.algorithm.generates() {
        return;
    }
    int_slider(
        ui,
        &mut p.num_generations,
        1..=256,
        true,
        "Generations per prompt",
        "",
        "TRL num_generations (group size). Memory follows the completions per GPU (micro-batch).",
    );
    choice(
        ui,
        &mut p.rollout,
        &ROLLOUTS,
        "Rollout",
        "What generates the completions.",
    );
    if p.rollout == Rollout::VllmColocate {
        real_slider(
            ui,
            &mut p.rollout_gpu_memory_utilization,
            0.05..=0.95,
            "vLLM GPU memory",
            "fraction",
            "vllm_gpu_memory_utilization (TRL default 0.3): vLLM's reservation for its weights, activations and KV cache.",
        );
        toggle(
            ui,
            &mut p.rollout_sleep,
            "vLLM sleep mode",
            "TRL vllm_enable_sleep_mode / verl free_cache_engine / OpenRLHF --vllm.enable_sleep: vLLM releases its reservation while the policy trains.",
        );
    }
}
