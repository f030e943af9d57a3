//! The models of a post-training run beside the policy (docs/frameworks/trl-rl.md).

use super::parts::Parts;
use crate::estimator::Component;
use crate::units::Bytes;

const SOURCE: &str =
    "TRL 1.16 trl/trainer/dpo_trainer.py, grpo_trainer.py (docs/frameworks/trl-rl.md)";

/// The reference model, reward model, critic or rollout engine at the peak.
pub(super) fn model(c: Component, value: Bytes) -> Parts {
    let (formula, term, assumption) = match c {
        Component::ReferenceModel => (
            "reference = Ψ × e_w (a frozen copy of the policy in its weight type)",
            "frozen reference weights",
            "Full fine-tuning keeps a second copy; under LoRA the reference is the base with its \
             adapters disabled (no copy); precomputed or beta = 0: none. verl keeps it on the host \
             (always), OpenRLHF with --ref.offload (docs/frameworks/verl-openrlhf.md): none.",
        ),
        Component::RewardModel => (
            "reward model = Ψ × e_w (frozen, the policy's shape)",
            "reward model weights",
            "PPO's reward model is assumed to have the policy's shape and weight type. verl keeps \
             it on the host (docs/frameworks/verl-openrlhf.md).",
        ),
        Component::Critic => (
            "critic = Ψ × (e_w + e_g + e_opt) (trained like the policy)",
            "value model weights, gradients, optimizer states",
            "PPO's value model is assumed to have the policy's shape, trained with the same optimizer. \
             verl and OpenRLHF train it in a phase of its own: beside the policy it holds only what \
             their offload settings keep (docs/frameworks/verl-openrlhf.md).",
        ),
        _ => (
            "rollout engine = gpu_memory_utilization × GPU capacity",
            "vLLM reservation (weights, activations, KV cache)",
            "A co-located vLLM reserves its fraction at start-up; with sleep mode it is released \
             while the policy trains.",
        ),
    };
    Parts {
        formula: formula.to_owned(),
        lead: String::new(),
        terms: vec![(term.to_owned(), value)],
        source: SOURCE,
        assumption,
        rest: "",
    }
}
