//! Explained numbers (issue 7): every component's explanation states exactly the bytes the estimate
//! (and so the chart) shows, and its terms sum to them, for every bundled preset.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

#[path = "support/sample.rs"]
mod sample;

use vram_explorer::estimator::explain::{explain, per_layer};
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::presets;

/// The default scenario, training.
fn training() -> vram_explorer::scenario::Scenario {
    vram_explorer::scenario::Scenario {
        mode: vram_explorer::scenario::Mode::Training,
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn every_explanation_equals_the_chart_and_its_terms_sum() {
    let library = presets::bundled();
    assert!(library.len() >= 5);
    for p in library {
        let s = p.scenario().expect("bundled preset parses");
        let e = estimate(&s);
        for c in Component::ALL {
            let x = explain(&s, &e, c);
            let shown = e.memory.peak.get(c).get();
            assert!(
                close(x.value.get(), shown),
                "{} {c:?}: {} vs {shown}",
                p.id,
                x.value.get()
            );
            let sum: f64 = x.terms.iter().map(|(_, b)| b.get()).sum();
            assert!(close(sum, shown), "{} {c:?}: terms {sum} vs {shown}", p.id);
            assert!(!x.formula.is_empty() && !x.source.is_empty() && !x.assumption.is_empty());
            assert!(x.filled.contains('='), "{} {c:?}: {}", p.id, x.filled);
        }
    }
}

#[test]
fn the_megatron_profile_names_korthikanti_and_the_closed_form() {
    let Some(s) = presets::bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| {
            s.implementation.profile == vram_explorer::scenario::Profile::Megatron
                && s.mode == vram_explorer::scenario::Mode::Training
        })
    else {
        return;
    };
    let e = estimate(&s);
    let x = explain(&s, &e, Component::Activations);
    assert!(x.source.contains("Korthikanti"), "{}", x.source);
    assert!(x.formula.contains("34 + 5as/h"), "{}", x.formula);
}

#[test]
fn the_per_layer_view_matches_the_estimate() {
    let s = presets::bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| s.mode == vram_explorer::scenario::Mode::Training)
        .expect("a training preset");
    let e = estimate(&s);
    let (layers, rows) = per_layer(&s, &e);
    assert!(layers >= 1.0);
    assert_eq!(rows.len(), 6);
    assert!(close(
        rows[0].per_layer.get(),
        e.memory.per_layer.weights.get()
    ));
    assert!(close(
        rows[1].stage.get(),
        e.memory.per_layer.attention_activations.get() * layers
    ));
}

/// Every term is recomputed: no remainder the named terms leave (adapters) or over-count.
fn recomputed(x: &vram_explorer::estimator::explain::Explanation) -> bool {
    !x.terms
        .iter()
        .any(|(n, _)| n.contains("LoRA") || n.contains("not live"))
}

#[test]
fn model_states_are_recomputed_not_back_filled() {
    // Without adapters, ZeRO's Ψ × bytes ÷ N_d reproduces the estimator's model states exactly: no
    // remainder term.
    for p in presets::bundled() {
        let s = p.scenario().expect("bundled preset parses");
        if s.peft.method != vram_explorer::scenario::PeftMethod::Full {
            continue;
        }
        let e = estimate(&s);
        for c in [
            Component::Weights,
            Component::MasterWeights,
            Component::OptimizerStates,
        ] {
            let x = explain(&s, &e, c);
            assert!(recomputed(&x), "{} {c:?}: {:?}", p.id, x.terms);
        }
    }
}

#[test]
fn pipeline_stages_and_zero_stages_are_reconstructed() {
    use vram_explorer::scenario::{Mode, ZeroStage};
    let base = presets::bundled_scenario("llama3-8b-full-finetune-h100").expect("preset");
    for mode in [Mode::Training, Mode::Inference] {
        for pp in [1, 2, 3, 4] {
            for zero in [
                ZeroStage::None,
                ZeroStage::Stage1,
                ZeroStage::Stage2,
                ZeroStage::Stage3,
            ] {
                let mut s = base.clone();
                s.mode = mode;
                s.parallel.pp = pp;
                s.parallel.dp = 4;
                s.strategies.zero = zero;
                let e = estimate(&s);
                for c in Component::ALL {
                    let x = explain(&s, &e, c);
                    let shown = e.memory.peak.get(c).get();
                    assert!(x.value.get().is_finite() && close(x.value.get(), shown));
                    let sum: f64 = x.terms.iter().map(|(_, b)| b.get()).sum();
                    assert!(close(sum, shown), "{mode:?} pp {pp} {zero:?} {c:?}");
                    if matches!(c, Component::Weights | Component::OptimizerStates) {
                        assert!(
                            recomputed(&x),
                            "{mode:?} pp {pp} {zero:?} {c:?}: {:?}",
                            x.terms
                        );
                    }
                }
            }
        }
    }
}

/// The explanation reads the same resolved scenario as the estimate: under FSDP HYBRID_SHARD the
/// ZeRO divisor is the DP ranks of one node (8), not the whole DP (64), and a full fine-tune's terms
/// need no remainder, let alone one called "LoRA adapters" (issue 17).
#[test]
fn explanations_use_the_hybrid_shard_divisor() {
    use vram_explorer::scenario::ZeroStage;
    let mut s = training();
    s.strategies.zero = ZeroStage::Stage3;
    s.strategies.hybrid_shard = true;
    s.parallel.dp = 64;
    s.parallel.gpus_per_node = 8;
    let e = estimate(&s);
    for c in [
        Component::Weights,
        Component::Gradients,
        Component::OptimizerStates,
    ] {
        let x = explain(&s, &e, c);
        assert!(x.filled.contains("÷ 8"), "{c:?}: {}", x.filled);
        assert!(!x.filled.contains("÷ 64"), "{c:?}: {}", x.filled);
        assert!(
            x.terms.iter().all(|(name, _)| !name.contains("LoRA")),
            "{c:?}: {:?}",
            x.terms
        );
    }
}

/// A BF16 training step under the torchtune profile (its recipes' `dtype: bf16`).
fn torchtune_bf16() -> vram_explorer::scenario::Scenario {
    use vram_explorer::scenario::{Dtype, PrecisionMode, Profile};
    let mut s = training();
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.implementation.profile = Profile::Torchtune;
    s
}

/// torchtune's activation offloading keeps one layer's saved tensors on the GPU: the explanation
/// names one checkpointed input (e·b·s·h), as the estimate counts, not one per layer with the
/// rest filed under "stage extras".
#[test]
fn activation_offloading_explains_one_layer_on_the_gpu() {
    use vram_explorer::scenario::{Checkpointing, Scenario};
    let mut s = torchtune_bf16();
    s.strategies.checkpointing = Checkpointing::Full;
    // Long enough that the peak is at the loss, where the saved activations are live.
    s.workload.micro_batch = 4;
    s.workload.seq_len = 32_768;
    let t = &s.model.transformer;
    let input = 2.0
        * f64::from(s.workload.micro_batch)
        * f64::from(s.workload.seq_len)
        * f64::from(t.hidden);
    let layers = t.layers;
    let term = |s: &Scenario| {
        let x = explain(s, &estimate(s), Component::Activations);
        x.terms
            .iter()
            .find(|(name, _)| name.contains("checkpointed layer input"))
            .map(|(name, b)| (name.clone(), b.get()))
            .unwrap_or_else(|| panic!("no checkpointed-input term: {:?}", x.terms))
    };
    let (name, bytes) = term(&s);
    assert!(name.starts_with(&format!("{layers} ×")), "{name}");
    assert!(close(bytes, f64::from(layers) * input), "{name}: {bytes}");
    s.implementation.torchtune.activation_offloading = true;
    let (name, bytes) = term(&s);
    assert!(name.starts_with("1 ×"), "{name}");
    assert!(close(bytes, input), "{name}: {bytes} vs {input}");
}

/// torchtune's optimizer in backward steps each parameter as its gradient is made and frees it:
/// the gradients are explained as the one largest parameter's, as the estimate holds them, not
/// as every group's gradients with the rest taken back as "not live" (seen on random scenarios).
#[test]
fn optimizer_in_backward_explains_one_gradient() {
    let mut s = torchtune_bf16();
    s.implementation.torchtune.optimizer_in_backward = true;
    // In the layers' backward no gradient outlives its hook; with one token the peak is the step.
    for (seq, held) in [(4096, false), (1, true)] {
        s.workload.seq_len = seq;
        let e = estimate(&s);
        let x = explain(&s, &e, Component::Gradients);
        let value = e.memory.peak.get(Component::Gradients).get();
        assert_eq!(value > 0.0, held, "{seq}: {:?}", e.memory.peak_phase);
        assert!(
            x.terms.iter().all(|(n, _)| !n.starts_with("not live")),
            "{:?}",
            x.terms
        );
        if held {
            let (name, bytes) = &x.terms[0];
            assert!(
                name.contains("largest parameter's gradient"),
                "{:?}",
                x.terms
            );
            assert!(close(bytes.get(), value), "{:?} vs {value}", x.terms);
        }
    }
}

/// The model states, the KV cache and the allocator reserve are explained by what the estimate
/// holds: the named terms are the figure, with no negative "not live" remainder taking back bytes
/// they named — a draft model's weights beside a CNN, the requests' KV where vLLM or SGLang hold
/// their pool, K and V of an encoder, a closed form beside a latent cache, FSDP's pools under
/// SGLang, DeepSpeed's step copies beside a recommender (each seen on random scenarios before it
/// was fixed). Gradients are all live at the optimizer step.
#[test]
fn explanations_name_only_what_is_held() {
    use vram_explorer::estimator::Phase;
    use vram_explorer::scenario::Mode;
    let mut r = sample::Rng::new(0x0E_4A1A);
    let mut seen = [0, 0];
    for _ in 0..6000 {
        let s = sample::scenario(&mut r);
        let e = estimate(&s);
        let exact: &[Component] = if s.mode == Mode::Inference {
            seen[0] += 1;
            &[
                Component::Weights,
                Component::KvCache,
                Component::AllocatorReserve,
            ]
        } else if e.memory.peak_phase == Some(Phase::OptimizerStep) {
            seen[1] += 1;
            &[
                Component::Weights,
                Component::MasterWeights,
                Component::Gradients,
                Component::OptimizerStates,
                Component::AllocatorReserve,
            ]
        } else {
            &[
                Component::Weights,
                Component::MasterWeights,
                Component::OptimizerStates,
                Component::AllocatorReserve,
            ]
        };
        for &c in exact {
            let x = explain(&s, &e, c);
            let v = x.value.get();
            let taken: f64 = x
                .terms
                .iter()
                .filter(|(name, _)| name.starts_with("not live"))
                .map(|(_, b)| -b.get())
                .sum();
            assert!(
                taken <= 1e-6 * v.abs().max(1.0),
                "{:?} {c:?}: {v} B shown, terms {:?}",
                s.mode,
                x.terms
            );
        }
    }
    assert!(seen[0] > 1000 && seen[1] > 100, "{seen:?} scenarios");
}

/// The transient's explanation names the optimizer step's temporaries as the estimate holds them:
/// under torchtune's optimizer in backward a foreach AdamW's are one tensor's, not every
/// parameter's (the memory's `torchtune::step_temp_in_backward`).
#[test]
fn optimizer_in_backward_explains_one_tensors_step_temporaries() {
    let mut s = torchtune_bf16();
    s.implementation.torchtune.optimizer_in_backward = true;
    s.workload.seq_len = 1;
    let e = estimate(&s);
    assert_eq!(
        e.memory.peak_phase,
        Some(vram_explorer::estimator::Phase::OptimizerStep)
    );
    let x = explain(&s, &e, Component::Transient);
    let (_, temp) = x
        .terms
        .iter()
        .find(|(n, _)| n == "optimizer step temporaries")
        .expect("the step's temporaries");
    let largest = e.model.largest_tensor * 2.0;
    assert!(close(temp.get(), largest), "{temp:?} vs {largest}");
}
