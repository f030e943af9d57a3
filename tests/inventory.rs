//! The tensor inventory: the groups of a stage add up to the stage's parameters, carry their own
//! storage, trainability and sharding, and the model states read from them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::estimator::memory::inventory::{Inventory, Role, stage_params};
use vram_explorer::estimator::memory::peft::Ext;
use vram_explorer::estimator::memory::states::model_states;
use vram_explorer::estimator::{Diagnostics, estimate, model};
use vram_explorer::presets::bundled;
use vram_explorer::scenario::{
    Mode, OptimizerKind, PeftMethod, PrecisionMode, Scenario, WeightFormat, ZeroStage,
};

fn inventory(s: &Scenario, layers: f64, first: bool, last: bool) -> (Inventory, Ctx, Ext) {
    let mut d = Diagnostics::default();
    let m = model::resolve(&s.model, &mut d);
    let x = Ext::new(s, &m);
    let c = x.base_ctx(Ctx::new(s, &m, &mut d));
    (Inventory::stage(&c, &x, &m, layers, first, last), c, x)
}

#[test]
fn groups_add_up_to_the_stage_parameters_for_every_preset() {
    for p in bundled() {
        let s = &p.scenario().expect("bundled presets parse");
        let mut d = Diagnostics::default();
        let m = model::resolve(&s.model, &mut d);
        let layers = f64::from(m.layers);
        let (inv, c, _) = inventory(s, layers, true, true);
        let expected = if m.family == vram_explorer::scenario::ModelFamily::Transformer {
            // The towers (vision, encoder) live on the first stage beside the layers.
            stage_params(&c, &m, layers, true, true) + m.towers.params
        } else {
            m.params.total / c.tp
        };
        let got = inv.base_elems();
        assert!(
            (got - expected).abs() <= 1e-9 * expected.max(1.0),
            "{}: groups {got} vs stage {expected}",
            p.id
        );
    }
}

#[test]
fn a_lora_base_is_frozen_and_its_adapters_train_in_fp32() {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.peft.method = PeftMethod::Lora;
    let (inv, _, _) = inventory(&s, 32.0, true, true);
    let adapters: Vec<_> = inv
        .groups()
        .iter()
        .filter(|g| g.role == Role::Adapters)
        .collect();
    assert_eq!(adapters.len(), 1);
    let a = adapters[0];
    assert!(a.trainable && a.weight_bytes == 4.0 && a.grad_bytes == 4.0);
    assert!(
        inv.groups()
            .iter()
            .filter(|g| g.role != Role::Adapters)
            .all(|g| !g.trainable)
    );
    // Llama-3-8B, r = 8 on q and v: 32 · 8 · ((4096 + 4096) + (4096 + 1024)) = 3,407,872.
    assert_eq!(a.elems, 3_407_872.0);
}

#[test]
fn quantised_matrices_carry_their_format_and_vectors_do_not() {
    let mut s = Scenario::default();
    s.quantization.weights = WeightFormat::GgufQ8_0;
    let (inv, c, _) = inventory(&s, 32.0, true, true);
    for g in inv.groups() {
        match g.role {
            Role::Matrices => assert_eq!(g.weight_bytes, 34.0 / 32.0),
            _ => assert_eq!(g.weight_bytes, c.e_weights, "{:?}", g.role),
        }
    }
}

#[test]
fn routed_experts_are_sharded_over_the_expert_data_parallel_group() {
    let mut s = bundled()
        .iter()
        .filter_map(|p| p.scenario().ok())
        .find(|s| s.model.moe.experts > 0)
        .expect("a mixture-of-experts preset");
    s.mode = Mode::Training;
    s.parallel.dp = 8;
    s.model.moe.ep = 4;
    s.strategies.zero = ZeroStage::Stage3;
    let (inv, _, _) = inventory(&s, 1.0, false, false);
    let experts = inv.groups().iter().find(|g| g.role == Role::Experts);
    let dense = inv.groups().iter().find(|g| g.role == Role::Matrices);
    assert_eq!(experts.map(|g| g.zero_dp), Some(2.0));
    assert_eq!(dense.map(|g| g.zero_dp), Some(8.0));
}

#[test]
fn model_states_are_the_sum_of_each_groups_states() {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.precision.mode = PrecisionMode::MasterWeights;
    s.optimizer.kind = OptimizerKind::AdamW;
    s.parallel.dp = 4;
    s.strategies.zero = ZeroStage::Stage2;
    let mut d = Diagnostics::default();
    let m = model::resolve(&s.model, &mut d);
    let (inv, c, x) = inventory(&s, 32.0, true, true);
    let all = model_states(&c, &m, &inv, x.optimizer);
    let mut sum = [0.0; 4];
    for i in 0..inv.groups().len() {
        let one = model_states(&c, &m, &inv.only(i), x.optimizer);
        for (acc, v) in sum
            .iter_mut()
            .zip([one.weights, one.master, one.grads, one.optimizer])
        {
            *acc += v;
        }
    }
    for (a, b) in sum
        .iter()
        .zip([all.weights, all.master, all.grads, all.optimizer])
    {
        assert!((a - b).abs() <= 1e-6 * b.max(1.0), "{a} vs {b}");
    }
    // And the estimate reports them (one stage, no offload).
    let e = estimate(&s);
    let w = e
        .memory
        .peak
        .get(vram_explorer::estimator::Component::Weights)
        .get();
    assert!(
        (w - all.weights).abs() <= 1e-6 * w,
        "{w} vs {}",
        all.weights
    );
}
