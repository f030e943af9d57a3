//! Which states of a trained model (the policy, PPO's critic) are on the GPU outside its own
//! training phases, per framework (docs/frameworks/verl-openrlhf.md). Inside them every state is
//! resident in all three frameworks (verl `update_actor` loads what was offloaded; OpenRLHF
//! `_run_sleep` calls `reload_states` before `fit`).
//!
//! - **TRL 1.16**: nothing moves; gradients are freed (`zero_grad(set_to_none=True)`).
//! - **verl 0.6.1** (`verl/workers/fsdp_workers.py`): `param_offload` moves the FSDP parameter
//!   shards (`offload_fsdp_model_to_cpu`: each handle's `flat_param` to the CPU) after the state
//!   dict is handed to the rollout (`rollout_mode`), after `compute_log_prob` and after
//!   `update_actor`; they are loaded (`load_fsdp_model_to_gpu`) for `compute_log_prob` and
//!   `update_actor`. `optimizer_offload` moves Adam's states (`offload_fsdp_optimizer`) after
//!   `update_actor` and at `init_model`; only `update_actor` loads them. `dp_actor.py`
//!   `update_policy` ends with `zero_grad()`: no gradients outside training.
//! - **OpenRLHF 0.11.0**: `--ds.enable_sleep` calls `offload_deepspeed_states`
//!   (`openrlhf/utils/deepspeed/deepspeed_utils.py`) at start-up and after each `fit`
//!   (`openrlhf/trainer/ppo_trainer.py` `_run_sleep`): `optim_states`, `hp_params` (FP32 master),
//!   `contiguous_grad_buffer` and `lp_grads` go to pinned host memory; `lp_params` (the 16-bit
//!   ZeRO-3 weight shards) stay, so generation's weight sync and scoring run on the GPU.

use crate::scenario::{PostTraining, RlFramework, Rollout};

/// A phase of the step outside the trained model's own training.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Between {
    /// The rollout engine generates (the policy only hands over its weights).
    Generation,
    /// The policy's own no-grad forward (old log-probabilities; verl `compute_log_prob`).
    Scoring,
    /// Another model works: the critic while the policy scores or trains (PPO).
    Idle,
}

/// Which model states are on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resident {
    /// The 16-bit weights (or the only copy of them).
    pub weights: bool,
    /// FP32 master weights.
    pub master: bool,
    /// Optimizer states.
    pub optimizer: bool,
}

impl Resident {
    const ALL: Resident = Resident {
        weights: true,
        master: true,
        optimizer: true,
    };

    /// What of the bytes `(weights, master, optimizer)` is on the GPU.
    pub fn bytes(self, weights: f64, master: f64, optimizer: f64) -> (f64, f64, f64) {
        let on = |b: bool, x: f64| if b { x } else { 0.0 };
        (
            on(self.weights, weights),
            on(self.master, master),
            on(self.optimizer, optimizer),
        )
    }
}

/// The trained model's resident states in phase `at` under the settings `p`.
pub fn resident(p: &PostTraining, at: Between) -> Resident {
    match p.framework {
        RlFramework::Trl => Resident::ALL,
        RlFramework::Verl => {
            // The policy's own generate needs its weights; verl's hybrid engine hands them to
            // the rollout and offloads them before generating.
            let params = match at {
                Between::Scoring => true,
                Between::Generation => !p.param_offload || p.rollout == Rollout::HfGenerate,
                Between::Idle => !p.param_offload,
            };
            Resident {
                weights: params,
                master: params,
                optimizer: !p.optimizer_offload,
            }
        }
        RlFramework::OpenRlhf => Resident {
            weights: true,
            master: !p.optimizer_offload,
            optimizer: !p.optimizer_offload,
        },
    }
}

/// Whether the reference's weights are on the GPU between its forwards: verl forces
/// `CPUOffload(offload_params=True)` (FSDP1) / `CPUOffloadPolicy` (FSDP2) on every non-actor
/// model (`fsdp_workers.py` `_build_model_optimizer`: "We force reference policy to use
/// CPUOffload to save memory"); OpenRLHF with `--ref.offload` (a ZeRO-3 eval config with
/// `offload_param` on the CPU, `openrlhf/trainer/ray/launcher.py`). Each forward streams the
/// shards in a unit at a time; that unit's gathered copy is not counted.
///
/// verl's reward model is built the same way (`RewardModelWorker._build_model`:
/// `cpu_offload=CPUOffload(offload_params=True)`), so under verl neither frozen model is resident.
pub fn reference_on_gpu(p: &PostTraining) -> bool {
    match p.framework {
        RlFramework::Trl => true,
        RlFramework::Verl => false,
        RlFramework::OpenRlhf => !p.ref_offload,
    }
}
