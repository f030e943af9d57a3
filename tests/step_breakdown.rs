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

/// Megatron's sequence parallelism all-gathers each column-parallel linear's input again in
/// backward (it saved the input sharded): one all-reduce's bytes per dense layer more than the four
/// of tensor parallelism alone. PyTorch's DTensor saves the gathered input: nothing added there.
#[test]
fn megatron_sequence_parallel_gathers_the_linear_inputs_again_in_backward() {
    use vram_explorer::scenario::Profile;
    let mut s = seventy_b();
    s.strategies.checkpointing = Checkpointing::Selective;
    (s.parallel.tp, s.parallel.dp, s.strategies.zero) = (8, 1, Default::default());
    s.parallel.sequence_parallel = true;
    let tp = |s: &Scenario| estimate(s).performance.communication;
    for (profile, per_layer) in [(Profile::Megatron, 5), (Profile::HuggingFace, 4)] {
        s.implementation.profile = profile;
        let with = tp(&s);
        let layers = with.tp_allreduces / per_layer;
        assert_eq!(with.tp_allreduces, per_layer * layers, "{profile:?}");
        assert_eq!(layers, s.model.transformer.layers, "{profile:?}");
        s.parallel.sequence_parallel = false;
        let without = tp(&s);
        s.parallel.sequence_parallel = true;
        assert_eq!(without.tp_allreduces, 4 * layers, "{profile:?}");
        let ratio = with.tp_time_s / without.tp_time_s;
        let want = f64::from(per_layer) / 4.0;
        assert!(
            (ratio - want).abs() < 1e-9,
            "{profile:?}: {ratio} vs {want}"
        );
    }
    // A mixture's routed experts do not re-gather (their linears are `is_expert`; the token
    // dispatcher gathers): only the attention's QKV input, half an all-reduce per layer; and its
    // MoE sub-layer has no TP collectives (the dispatcher carries its tokens): 2 + ½ per layer.
    let mut moe = bundled_scenario("mixtral-8x7b-inference-2xh100").unwrap();
    moe.mode = vram_explorer::scenario::Mode::Training;
    moe.strategies.checkpointing = Checkpointing::Selective;
    moe.implementation.profile = Profile::Megatron;
    (moe.parallel.tp, moe.model.moe.ep) = (2, 1);
    moe.parallel.sequence_parallel = true;
    let with = tp(&moe);
    moe.parallel.sequence_parallel = false;
    let without = tp(&moe);
    let ratio = with.tp_time_s / without.tp_time_s;
    assert!((ratio - 2.5 / 2.0).abs() < 1e-9, "{ratio}");
    assert_eq!(2 * with.tp_allreduces, 5 * moe.model.transformer.layers);
}

/// Under LoRA every base matrix is frozen: backward computes its input gradient and no weight
/// gradient, so the matrix multiplies run 2 passes instead of 3, plus the adapters' own small
/// GEMMs (rank 8 on q and v here: a few per mille of the layer's). Before, the parts model charged
/// LoRA the full fine-tune's 3 passes (torchtune's published LoRA row −20.8 %).
#[test]
fn lora_runs_two_passes_of_the_frozen_matrices() {
    use vram_explorer::scenario::PeftMethod;
    let gemm = |s: &Scenario| {
        parts_of(s)
            .iter()
            .find(|(p, _)| *p == StepPart::Gemm)
            .map(|(_, t)| *t)
            .unwrap()
    };
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let full = gemm(&s);
    s.peft.method = PeftMethod::Lora;
    let lora = gemm(&s);
    let ratio = lora / full;
    assert!(
        (2.0 / 3.0..2.0 / 3.0 + 0.01).contains(&ratio),
        "LoRA GEMMs {lora} s, full {full} s: ratio {ratio}"
    );
}

/// A token runs through its top-k experts' adapters only: LoRA on the experts of a mixture costs
/// the same GEMM time at 8 or 32 experts of top-2 (the base GEMMs too; only the router's h × E
/// grows), where counting every stored expert's adapters would charge 32 experts four times the
/// adapter work of 8.
#[test]
fn lora_on_experts_runs_the_routed_experts_adapters_only() {
    use vram_explorer::scenario::{LoraTargets, PeftMethod};
    let gemm = |experts: u32, method: PeftMethod| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.model.moe.experts = experts;
        s.model.moe.top_k = 2;
        s.peft.method = method;
        s.peft.rank = 512;
        s.peft.targets = LoraTargets {
            gate: true,
            up: true,
            down: true,
            ..LoraTargets::default()
        };
        parts_of(&s)
            .iter()
            .find(|(p, _)| *p == StepPart::Gemm)
            .map(|(_, t)| *t)
            .unwrap()
    };
    let adapters = |e: u32| gemm(e, PeftMethod::Lora) - gemm(e, PeftMethod::Full) * 2.0 / 3.0;
    let (eight, thirty_two) = (adapters(8), adapters(32));
    assert!(
        eight > 0.02 * gemm(8, PeftMethod::Lora),
        "adapters {eight} s"
    );
    assert!(
        (thirty_two / eight - 1.0).abs() < 0.05,
        "adapters at 32 experts {thirty_two} s, at 8 {eight} s"
    );
}
