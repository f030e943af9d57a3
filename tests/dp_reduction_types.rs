//! The data-parallel reduction in the types it moves (docs/time-model.md, "DP gradients"): under
//! ZeRO the reduce-scatter carries the gradients' type and the all-gathers the weights', and a
//! reduce-scatter nothing hides is its own share of those bytes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Estimate, estimate};
use vram_explorer::scenario::{Dtype, Mode, PrecisionMode, Scenario, Sharding, ZeroStage};

/// FSDP2 under a pipeline (torchtitan's layout) defers its reduce-scatters to the end of backward,
/// where nothing hides them on the first stage: all of the reduce-scatter is exposed, of the
/// all-gather what overlap leaves. Under autocast (FP32 reduce, BF16 gathers) the reduce-scatter is 4 of the 6
/// bytes a parameter moves; with BF16 throughout, half.
#[test]
fn a_deferred_reduce_scatter_is_exposed_in_its_own_type() {
    let run = |mode: PrecisionMode| -> Estimate {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.implementation.sharding = Sharding::Fsdp2;
        s.strategies.zero = ZeroStage::Stage3;
        s.parallel.dp = 8;
        s.parallel.pp = 2;
        s.workload.grad_accum_steps = 4;
        s.precision.mode = mode;
        s.precision.compute = Dtype::Bf16;
        s.timing.comm_overlap = 1.0;
        estimate(&s)
    };
    let exposed = |e: &Estimate| {
        let c = &e.performance.communication;
        assert!(c.dp_time_s > 0.0);
        c.dp_exposed_s / c.dp_time_s
    };
    // The all-gather's exposed part x (the overlap tax on hidden collectives) is the same in both.
    let bf16 = exposed(&run(PrecisionMode::Uniform));
    let x = 2.0 * bf16 - 1.0;
    assert!((0.0..0.5).contains(&x), "{bf16}");
    let amp = exposed(&run(PrecisionMode::Amp));
    assert!((amp - (4.0 + 2.0 * x) / 6.0).abs() < 1e-9, "{amp} {x}");
}

/// With the optimizer on the host, LoRA sends its adapters' gradients down and their updated
/// weights up in the adapters' own type (PEFT: FP32 both ways), 8 bytes a trainable parameter.
#[test]
fn an_offloaded_lora_update_moves_its_adapters_in_their_type() {
    use vram_explorer::scenario::{OffloadTarget, PeftMethod};
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.peft.method = PeftMethod::Lora;
    s.precision.mode = PrecisionMode::MasterWeights;
    s.strategies.offload_optimizer = OffloadTarget::Cpu;
    let e = estimate(&s);
    let trainable = e.memory.params.trainable;
    assert!(trainable > 0.0 && trainable < e.memory.params.total / 10.0);
    let per = e.performance.offload.host_bytes.get() / trainable;
    assert!((per - 8.0).abs() < 1e-9, "{per}");
}
