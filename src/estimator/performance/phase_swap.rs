//! The host-link copies a post-training step makes between its phases (issue 15 item 4): what verl
//! and OpenRLHF offload outside the phases that use it comes back and goes out again every step
//! (`memory::post_training::residency` says what is resident where; docs/frameworks/
//! verl-openrlhf.md has the call sites). Timed at the scenario's host link per direction
//! (`Inputs::host_bw`: the GPU's `host_link`, `gpu.host_link_gb_s`, × the pageable fraction unless
//! `timing.pinned_host_memory`), not overlapped: both frameworks synchronise around each move
//! (verl `aggressive_empty_cache(force_sync=True)` in `rollout_mode`; OpenRLHF
//! `offload_deepspeed_states` ends with `torch.cuda.synchronize()`).
//!
//! Bytes per GPU per optimizer step (w, m, g, o: the policy's weights, FP32 master, gradients and
//! optimizer states on one GPU; a PPO critic counted as the policy's shape, as on the memory side):
//!
//! - **verl 0.6.1** `param_offload`: one load and one offload of w + m per use — `rollout_mode`
//!   (co-located rollout: the state dict is read, then offloaded), `compute_log_prob` (when the
//!   policy re-scores, and again as the reference under LoRA), `update_actor`; PPO's critic twice more (`compute_values`,
//!   `update_critic`). `optimizer_offload`: o in and out once (`update_actor`; the critic's
//!   `update_critic`). The reference (always host-resident) streams w in per scoring forward, one
//!   per micro-batch chunk (FSDP `CPUOffload` copies each unit's shard to the GPU in its forward);
//!   so does PPO's reward model (`RewardModelWorker`, also forced to `CPUOffload`).
//! - **OpenRLHF 0.11.0** `--ds.enable_sleep`: m + o + g in (`reload_states`) and out
//!   (`offload_states`) once per `fit`, for the actor and PPO's critic. `--ref.offload`: w per
//!   scoring forward, as verl's reference. `--vllm.enable_sleep`: vLLM's `sleep(level=1)` moves its
//!   weights (the model in the compute type ÷ TP) to the host and back
//!   (`openrlhf/trainer/ray/vllm_engine.py` `sleep(self, level=1)`); verl (vLLM ≥ 0.8.5:
//!   `VLLM_SLEEP_LEVEL = 2`, `verl/third_party/vllm/__init__.py`) and TRL (`sleep(level=2)`) discard
//!   them and receive the trainer's in the weight sync, which is not timed (as for TRL).
//! - **TRL**: nothing moves.

use super::inputs::Inputs;
use crate::estimator::{Component, MemoryEstimate, Phase};
use crate::scenario::{Mode, PeftMethod, Reference, RlAlgorithm, RlFramework, Rollout, Scenario};

/// Host-link bytes per GPU per optimizer step of the post-training settings of `s` (0 outside
/// post-training and under TRL).
pub fn bytes(s: &Scenario, mem: &MemoryEstimate) -> f64 {
    let p = &s.post_training;
    if s.mode != Mode::Training || p.algorithm == RlAlgorithm::Off {
        return 0.0;
    }
    // The policy's states on one GPU: the optimizer step holds all of them.
    let Some(step) = mem.phases.get(Phase::OptimizerStep) else {
        return 0.0;
    };
    let [w, m, g, o] = [
        Component::Weights,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
    ]
    .map(|c| step.get(c).get());
    let ppo = p.algorithm == RlAlgorithm::Ppo;
    let trained = if ppo { 2.0 } else { 1.0 };
    let chunks = f64::from(s.workload.grad_accum_steps.max(1));
    let tp = f64::from(s.parallel.tp.max(1));
    // The model in the compute type ÷ TP: a reference in bf16 (verl's ref worker, OpenRLHF's
    // `bf16` eval config) or vLLM's copy of the weights.
    let model = mem.params.total * s.precision.compute.bytes() / tp;
    // The reference's shard over the data-parallel ranks (FSDP / ZeRO-3), once per scoring chunk.
    let scored = p.reference == Reference::Scored;
    let lora = s.peft.method != PeftMethod::Full;
    let shard_per_step = model / f64::from(s.parallel.dp.max(1)) * chunks;
    let reference = if scored && !lora { shard_per_step } else { 0.0 };
    let on = |b: bool, x: f64| if b { x } else { 0.0 };
    match p.framework {
        RlFramework::Trl => 0.0,
        RlFramework::Verl => {
            let generates = p.algorithm.generates();
            // Under LoRA the reference is the actor without its adapters: `compute_ref_log_prob`
            // calls `compute_log_prob`, one more load of the shards.
            let policy_uses = 1.0
                + on(generates && p.rollout == Rollout::VllmColocate, 1.0)
                + on(generates && p.rollout != Rollout::HfGenerate, 1.0)
                + on(scored && lora, 1.0);
            let critic_uses = on(ppo, 2.0);
            // PPO's reward model is host-resident like the reference (`RewardModelWorker`).
            on(p.param_offload, 2.0 * (w + m) * (policy_uses + critic_uses))
                + on(p.optimizer_offload, 2.0 * o * trained)
                + reference
                + on(ppo, shard_per_step)
        }
        RlFramework::OpenRlhf => {
            on(p.optimizer_offload, 2.0 * (m + o + g) * trained)
                + on(p.ref_offload, reference)
                + on(
                    p.rollout_sleep
                        && p.algorithm.generates()
                        && p.rollout == Rollout::VllmColocate,
                    2.0 * model,
                )
        }
    }
}

/// The copies' time per optimizer step, seconds.
pub fn seconds(s: &Scenario, mem: &MemoryEstimate, i: &Inputs) -> f64 {
    let b = bytes(s, mem);
    if b > 0.0 && i.host_bw > 0.0 {
        b / i.host_bw
    } else {
        0.0
    }
}
