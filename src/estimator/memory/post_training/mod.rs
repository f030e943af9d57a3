//! Post-training with several models (issue 15 item 4): the policy's training phases (computed by
//! `memory::training` with DPO's doubled batch, `Ctx::of`) gain the other models and the phases a
//! step alternates. Derived from TRL 1.16 (`trl/trainer/dpo_trainer.py`, `grpo_trainer.py`) and
//! measured on CPU (tests/data/measured/trl-rl-cpu-steps.json, docs/frameworks/trl-rl.md):
//!
//! - **DPO** `_compute_loss`: the policy forward (autograd; saved set kept), then the reference
//!   forward under `torch.no_grad()` *while the policy's saved set is alive* (the scoring phase),
//!   then the loss, backward and optimizer step. A full fine-tune's reference is a second copy
//!   (`create_model_from_path(..., dtype=model.dtype)`); under PEFT it is the base with the adapters
//!   disabled (`use_adapter(model, None)`), no copy.
//! - **GRPO** `_generate_and_score_completions`: generation by the policy (`unwrapped_model.generate`,
//!   no autograd; gradients already freed by `zero_grad(set_to_none=True)`), then the reference
//!   scores the completions in chunks of `per_device_train_batch_size` when `beta` ≠ 0 (before the
//!   training forward: no saved set alive), then the policy trains.
//! - **PPO**: GRPO's phases plus a frozen reward model and a trained critic of the policy's shape
//!   (Ouyang et al. 2022 §3.5; the critic's states are those of the policy).
//!
//! Which models are resident in which phase is a setting (`post_training.rollout`,
//! `rollout_sleep`, and per framework `param_offload`, `optimizer_offload`, `ref_offload`:
//! `residency`).

mod phases;
pub mod residency;

pub use phases::apply;
