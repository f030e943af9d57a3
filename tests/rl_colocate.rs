//! verl and OpenRLHF co-located layouts (issue 15 item 4; docs/frameworks/verl-openrlhf.md): which
//! states each phase holds on the GPU under `param_offload` / `optimizer_offload` / `ref_offload`
//! and the rollout's sleep, and the host-link copies they add to the step time. The vectors are
//! derived by hand from verl 0.6.1 `verl/workers/fsdp_workers.py` and OpenRLHF 0.11.0
//! `openrlhf/utils/deepspeed/deepspeed_utils.py` (the call sites are in the doc).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking; absent components are exact zeros"
)]

use vram_explorer::estimator::performance::phase_swap;
use vram_explorer::estimator::{Component, Diagnostic, Estimate, Phase, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{
    PeftMethod, PrecisionMode, Reference, RlAlgorithm, RlFramework, Rollout, Scenario, ZeroStage,
};

const VERL: &str = "qwen2.5-7b-grpo-verl-colocate-8xh100";
const TRL: &str = "qwen2.5-7b-grpo-vllm-colocate-8xh100";
/// H100 SXM5's host link: PCIe 5.0 x16, 64 GB/s per direction (`hardware/gpus.rs` `PCIE5`),
/// pinned (`timing.pinned_host_memory` defaults to true).
const HOST_BW: f64 = 64e9;

fn verl(param: bool, optimizer: bool) -> Scenario {
    let mut s = bundled_scenario(VERL).unwrap();
    s.post_training.param_offload = param;
    s.post_training.optimizer_offload = optimizer;
    s
}

fn get(e: &Estimate, p: Phase, c: Component) -> f64 {
    e.memory.phases.get(p).unwrap().get(c).get()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

const TRAINING: [Phase; 4] = [
    Phase::Forward,
    Phase::LossBackward,
    Phase::Backward,
    Phase::OptimizerStep,
];

#[test]
fn verl_preset_phases_hold_what_verl_keeps_on_the_gpu() {
    let e = estimate(&verl(false, false));
    let p = e.memory.params.total;
    // FSDP FULL_SHARD over 8 GPUs of FP32 shards (precision Amp), Adam's two FP32 moments.
    let w = 4.0 * p / 8.0;
    assert!(close(get(&e, Phase::OptimizerStep, Component::Weights), w));
    let o = get(&e, Phase::OptimizerStep, Component::OptimizerStates);
    assert!((o - 8.0 * p / 8.0).abs() < 1e3, "{o}");
    // vLLM reserves gpu_memory_utilization × the memory a process can allocate (79.19 GiB).
    let vllm = 0.6 * vram_explorer::hardware::usable(vram_explorer::hardware::GpuId::H100Sxm).get();
    // Generation: the shard, Adam's states and vLLM's reservation; no gradients (`zero_grad()` at
    // the end of `update_policy`), no reference (host-resident).
    assert_eq!(get(&e, Phase::Generation, Component::Weights), w);
    assert_eq!(get(&e, Phase::Generation, Component::OptimizerStates), o);
    assert_eq!(get(&e, Phase::Generation, Component::Gradients), 0.0);
    assert_eq!(get(&e, Phase::Generation, Component::RolloutEngine), vllm);
    // free_cache_engine: vLLM sleeps through scoring and training; the reference is never resident.
    for ph in TRAINING
        .into_iter()
        .chain([Phase::Scoring, Phase::Generation])
    {
        assert_eq!(get(&e, ph, Component::ReferenceModel), 0.0, "{ph:?}");
        if ph != Phase::Generation {
            assert_eq!(get(&e, ph, Component::RolloutEngine), 0.0, "{ph:?}");
        }
    }
    assert_eq!(e.memory.peak_phase, Some(Phase::Generation));
    assert!(close(
        e.memory.tensor_peak.get(),
        w + o + vllm + get(&e, Phase::Generation, Component::Transient)
    ));
}

#[test]
fn verl_offloads_drop_the_states_from_generation_and_scoring_only() {
    let base = estimate(&verl(false, false));
    let both = estimate(&verl(true, true));
    let w = get(&base, Phase::OptimizerStep, Component::Weights);
    // `rollout_mode` offloads the shard after handing the state dict to vLLM; Adam's states were
    // offloaded after the last `update_actor`.
    assert_eq!(get(&both, Phase::Generation, Component::Weights), 0.0);
    assert_eq!(
        get(&both, Phase::Generation, Component::OptimizerStates),
        0.0
    );
    assert_eq!(
        both.memory
            .phases
            .get(Phase::Generation)
            .unwrap()
            .tensor_total()
            .get(),
        0.6 * vram_explorer::hardware::usable(vram_explorer::hardware::GpuId::H100Sxm).get()
    );
    // `compute_log_prob` loads the shard (not Adam's states) for the old log-probabilities.
    assert_eq!(get(&both, Phase::Scoring, Component::Weights), w);
    assert_eq!(get(&both, Phase::Scoring, Component::OptimizerStates), 0.0);
    // `update_actor` loads everything: the training phases are unchanged.
    for ph in TRAINING {
        assert_eq!(
            both.memory.phases.get(ph),
            base.memory.phases.get(ph),
            "{ph:?}"
        );
    }
}

#[test]
fn verl_host_link_copies_per_step_by_hand() {
    let base = estimate(&verl(false, false));
    let p = base.memory.params.total;
    let w = get(&base, Phase::OptimizerStep, Component::Weights);
    let o = get(&base, Phase::OptimizerStep, Component::OptimizerStates);
    // The reference's BF16 shard (2 B × P / 8) streamed in for each of the 20 scoring chunks.
    let reference = 2.0 * p / 8.0 * 20.0;
    let s = verl(false, false);
    assert!(close(phase_swap::bytes(&s, &base.memory), reference));
    assert!(close(
        base.performance.step.phase_swap_s,
        reference / HOST_BW
    ));
    // param_offload: the FP32 shard in and out for `rollout_mode`, `compute_log_prob` and
    // `update_actor`; optimizer_offload: Adam's states in and out for `update_actor`.
    let s = verl(true, true);
    let e = estimate(&s);
    let want = reference + 2.0 * w * 3.0 + 2.0 * o;
    assert!(close(phase_swap::bytes(&s, &e.memory), want));
    assert!(close(e.performance.step.phase_swap_s, want / HOST_BW));
    // It is a part of the step time.
    let st = e.performance.step;
    let diff = st.total_s - base.performance.step.total_s;
    assert!(close(diff, (want - reference) / HOST_BW), "{diff}");
}

fn openrlhf(from: &str) -> Scenario {
    let mut s = bundled_scenario(from).unwrap();
    s.post_training.framework = RlFramework::OpenRlhf;
    s
}

#[test]
fn openrlhf_sleep_keeps_the_16_bit_weights_and_moves_master_optimizer_and_gradients() {
    // The TRL preset's layout (ZeRO-3, BF16 weights with FP32 master and Adam) under OpenRLHF.
    let mut s = openrlhf(TRL);
    s.post_training.reference = Reference::Scored;
    let on_gpu = estimate(&s);
    s.post_training.optimizer_offload = true; // --ds.enable_sleep
    s.post_training.ref_offload = true; // --ref.offload
    s.post_training.rollout_sleep = true; // --vllm.enable_sleep
    let e = estimate(&s);
    let [w, m, g, o] = [
        Component::Weights,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
    ]
    .map(|c| get(&on_gpu, Phase::OptimizerStep, c));
    assert!(m > 0.0 && g > 0.0);
    for ph in [Phase::Generation, Phase::Scoring] {
        assert_eq!(get(&e, ph, Component::Weights), w, "{ph:?}");
        assert_eq!(get(&e, ph, Component::MasterWeights), 0.0, "{ph:?}");
        assert_eq!(get(&e, ph, Component::OptimizerStates), 0.0, "{ph:?}");
        assert_eq!(get(&e, ph, Component::ReferenceModel), 0.0, "{ph:?}");
    }
    // Without --ref.offload the reference is the policy's weight shard, as in TRL.
    assert_eq!(get(&on_gpu, Phase::Forward, Component::ReferenceModel), w);
    // Host link: m + o + g in and out per fit; the reference's BF16 shard per scoring chunk (1);
    // vLLM sleep level 1: its BF16 weights (TP 1) out and back.
    let p = e.memory.params.total;
    let want = 2.0 * (m + o + g) + 2.0 * p / 8.0 + 2.0 * 2.0 * p;
    assert!(close(phase_swap::bytes(&s, &e.memory), want));
    assert!(close(e.performance.step.phase_swap_s, want / HOST_BW));
}

#[test]
fn ppo_critic_outside_its_own_training() {
    let mut s = verl(true, true);
    s.post_training.algorithm = RlAlgorithm::Ppo;
    let e = estimate(&s);
    // verl trains the critic in `update_critic` and offloads it after: nothing of it stays; its
    // reward model is host-resident (`RewardModelWorker`: CPUOffload forced).
    for ph in TRAINING
        .into_iter()
        .chain([Phase::Scoring, Phase::Generation])
    {
        assert_eq!(get(&e, ph, Component::Critic), 0.0, "{ph:?}");
        assert_eq!(get(&e, ph, Component::RewardModel), 0.0, "{ph:?}");
    }
    // Host link: the actor's and the critic's FP32 shards (w + m, m = 0 under Amp) twice per use —
    // actor: rollout_mode, compute_log_prob, update_actor; critic: compute_values, update_critic —
    // Adam's states in and out for both, and the reference's and reward model's BF16 shards per
    // scoring chunk (20).
    let [w, m, o] = [
        Component::Weights,
        Component::MasterWeights,
        Component::OptimizerStates,
    ]
    .map(|c| get(&estimate(&verl(false, false)), Phase::OptimizerStep, c));
    let shard = 2.0 * e.memory.params.total / 8.0 * 20.0;
    let want = 2.0 * (w + m) * 5.0 + 2.0 * o * 2.0 + 2.0 * shard;
    assert!(close(phase_swap::bytes(&s, &e.memory), want));
    // OpenRLHF with --ds.enable_sleep keeps the critic's 16-bit weights only.
    let mut s = openrlhf(TRL);
    s.post_training.algorithm = RlAlgorithm::Ppo;
    s.post_training.optimizer_offload = true;
    let e = estimate(&s);
    let w = get(&e, Phase::OptimizerStep, Component::Weights);
    assert_eq!(get(&e, Phase::Generation, Component::Critic), w);
    // TRL keeps every state of it.
    let mut s = bundled_scenario(TRL).unwrap();
    s.post_training.algorithm = RlAlgorithm::Ppo;
    let e = estimate(&s);
    let all: f64 = [
        Component::Weights,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
    ]
    .iter()
    .map(|c| get(&e, Phase::OptimizerStep, *c))
    .sum();
    assert!(close(get(&e, Phase::Generation, Component::Critic), all));
}

#[test]
fn settings_a_framework_does_not_have_are_reported_and_ignored() {
    let mut s = bundled_scenario(TRL).unwrap();
    let plain = estimate(&s);
    s.post_training.param_offload = true;
    s.post_training.optimizer_offload = true;
    let e = estimate(&s);
    assert!(
        e.diagnostics
            .contains(Diagnostic::PostTrainingSettingsIgnored)
    );
    assert_eq!(e.memory.phases, plain.memory.phases);
    assert_eq!(e.performance.step.phase_swap_s, 0.0);
    // OpenRLHF has no parameter offload of the trained models.
    let mut s = openrlhf(TRL);
    s.post_training.param_offload = true;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::PostTrainingSettingsIgnored)
    );
}

#[test]
fn files_without_the_new_fields_load_as_trl() {
    let text = std::fs::read_to_string(format!("presets/{TRL}.ron")).unwrap();
    let s = vram_explorer::presets::from_ron_str(&text).unwrap();
    assert_eq!(s.post_training.framework, RlFramework::Trl);
    assert!(!s.post_training.param_offload && !s.post_training.optimizer_offload);
    let v = bundled_scenario(VERL).unwrap();
    assert_eq!(v.post_training.framework, RlFramework::Verl);
    assert!(v.post_training.rollout_sleep);
}

/// Offloading never raises a phase's GPU bytes, and never shortens the step: it only adds
/// host-link time, on a grid of algorithms, rollouts, references, precisions, ZeRO stages and
/// LoRA, for both frameworks and every subset of their settings.
#[test]
fn offloading_never_raises_a_phase_and_only_adds_host_link_time() {
    let base = bundled_scenario(VERL).unwrap();
    let mut checked = 0;
    for framework in [RlFramework::Verl, RlFramework::OpenRlhf] {
        for algorithm in [RlAlgorithm::Dpo, RlAlgorithm::Grpo, RlAlgorithm::Ppo] {
            for rollout in Rollout::ALL {
                for reference in [Reference::Scored, Reference::Off] {
                    for (mode, zero, peft) in [
                        (PrecisionMode::Amp, ZeroStage::Stage3, PeftMethod::Full),
                        (
                            PrecisionMode::MasterWeights,
                            ZeroStage::Stage3,
                            PeftMethod::Full,
                        ),
                        (
                            PrecisionMode::MasterWeights,
                            ZeroStage::Stage2,
                            PeftMethod::Full,
                        ),
                        (
                            PrecisionMode::MasterWeights,
                            ZeroStage::Stage3,
                            PeftMethod::Lora,
                        ),
                    ] {
                        let mut s = base.clone();
                        let p = &mut s.post_training;
                        (p.framework, p.algorithm, p.rollout, p.reference) =
                            (framework, algorithm, rollout, reference);
                        (p.param_offload, p.optimizer_offload, p.ref_offload) =
                            (false, false, false);
                        s.precision.mode = mode;
                        s.strategies.zero = zero;
                        s.peft.method = peft;
                        s.workload.micro_batch = 2;
                        s.workload.grad_accum_steps = 2;
                        let off = estimate(&s);
                        for flags in 1..8u8 {
                            let mut t = s.clone();
                            let q = &mut t.post_training;
                            q.param_offload = flags & 1 != 0;
                            q.optimizer_offload = flags & 2 != 0;
                            q.ref_offload = flags & 4 != 0;
                            let on = estimate(&t);
                            for ph in Phase::ALL {
                                let (a, b) = (off.memory.phases.get(ph), on.memory.phases.get(ph));
                                assert_eq!(a.is_some(), b.is_some(), "{ph:?}");
                                if let (Some(a), Some(b)) = (a, b) {
                                    assert!(
                                        b.tensor_total().get() <= a.tensor_total().get(),
                                        "{framework:?} {algorithm:?} {rollout:?} {ph:?} flags {flags}"
                                    );
                                }
                            }
                            let (x, y) = (off.performance.step, on.performance.step);
                            assert!(y.phase_swap_s >= x.phase_swap_s);
                            assert!(close(
                                y.total_s - x.total_s,
                                y.phase_swap_s - x.phase_swap_s
                            ));
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 3 * 2 * 4 * 7);
}

#[test]
fn the_step_chart_the_cli_and_the_json_report_carry_the_copies() {
    use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
    let e = estimate(&bundled_scenario(VERL).unwrap());
    let st = e.performance.step;
    assert!(st.phase_swap_s > 0.0);
    let b = step_breakdown(&e.performance);
    let part = b.parts().iter().find(|(p, _)| *p == StepPart::PhaseSwap);
    assert_eq!(part.map(|(_, t)| *t), Some(st.phase_swap_s));
    let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
    assert!(close(sum, st.total_s), "{sum} vs {}", st.total_s);
    let bin = env!("CARGO_BIN_EXE_vram-explorer");
    let o = std::process::Command::new(bin)
        .args(["report", "--preset", VERL, "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["performance"]["figures"]["step"]["phase_swap_s"].as_f64(),
        Some(st.phase_swap_s)
    );
    let p = &v["scenario"]["post_training"];
    assert_eq!(p["framework"], "verl");
    assert_eq!(p["param_offload"], false);
    let o = std::process::Command::new(bin)
        .args(["report", "--preset", VERL])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("Post-training rollout") && l.contains("offload between phases")),
        "{text}"
    );
}

#[test]
fn verl_lora_reference_is_the_actor_loaded_once_more() {
    let mut s = verl(true, false);
    s.peft.method = PeftMethod::Lora;
    let e = estimate(&s);
    let [w, m] =
        [Component::Weights, Component::MasterWeights].map(|c| get(&e, Phase::OptimizerStep, c));
    // No reference copy to stream; the shards are loaded for `rollout_mode`, the old-policy
    // `compute_log_prob`, the reference's `compute_log_prob` without adapters, and `update_actor`.
    assert_eq!(get(&e, Phase::Scoring, Component::ReferenceModel), 0.0);
    assert!(close(phase_swap::bytes(&s, &e.memory), 2.0 * (w + m) * 4.0));
}
