//! Megatron-LM under `--bf16` accumulates and reduces gradients in FP32
//! (`megatron/training/arguments.py` at d98e8a6, l. 1204–1217: `accumulate_allreduce_grads_in_fp32`
//! is set unless `--grad-reduce-in-bf16`); under `--fp16` it does not. The memory holds a 4-byte
//! gradient per parameter, and the distributed optimizer's reduction moves FP32 gradients
//! (reduce-scatter) and BF16 weights (all-gather). docs/frameworks/megatron-core.md.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Estimate, estimate};
use vram_explorer::scenario::{Dtype, Mode, PrecisionMode, Profile, Scenario, ZeroStage};

fn megatron(edit: impl FnOnce(&mut Scenario)) -> Estimate {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.implementation.profile = Profile::Megatron;
    s.precision.mode = PrecisionMode::MasterWeights;
    s.precision.compute = Dtype::Bf16;
    s.parallel.dp = 8;
    s.strategies.zero = ZeroStage::Stage1;
    edit(&mut s);
    estimate(&s)
}

fn grads(e: &Estimate) -> f64 {
    e.memory.peak.get(Component::Gradients).get()
}

/// The transient buffers at the optimizer step.
fn step_transient(e: &Estimate) -> f64 {
    e.memory
        .phases
        .get(vram_explorer::estimator::Phase::OptimizerStep)
        .expect("a step")
        .get(Component::Transient)
        .get()
}

fn weights(e: &Estimate) -> f64 {
    e.memory.peak.get(Component::Weights).get()
}

#[test]
fn bf16_master_weight_training_keeps_fp32_gradients_under_megatron() {
    let e = megatron(|_| {});
    // Weights BF16, gradients FP32: twice the bytes, unsharded under the distributed optimizer.
    assert!((grads(&e) / weights(&e) - 2.0).abs() < 1e-9);
    let flag = megatron(|s| s.implementation.megatron_grad_reduce_in_bf16 = true);
    assert!((grads(&flag) / weights(&flag) - 1.0).abs() < 1e-9);
    assert!(flag.memory.tensor_peak.get() < e.memory.tensor_peak.get());
}

#[test]
fn fp16_custom_and_other_profiles_keep_the_modes_types() {
    let fp16 = megatron(|s| s.precision.compute = Dtype::Fp16);
    assert!((grads(&fp16) / weights(&fp16) - 1.0).abs() < 1e-9);
    let hf = megatron(|s| s.implementation.profile = Profile::HuggingFace);
    assert!((grads(&hf) / weights(&hf) - 1.0).abs() < 1e-9);
    // Custom types are the user's own: BF16 gradients stay BF16.
    let custom = megatron(|s| {
        s.precision.mode = PrecisionMode::Custom;
        s.precision.weights = Dtype::Bf16;
        s.precision.gradients = Dtype::Bf16;
    });
    assert!((grads(&custom) / weights(&custom) - 1.0).abs() < 1e-9);
}

/// The distributed optimizer reduce-scatters FP32 gradients and all-gathers BF16 weights: the
/// data-parallel bytes are (4 + 2) / 2 a parameter where the flag makes them 2; without a
/// sharded optimizer the FP32 gradients are all-reduced whole (4).
#[test]
fn the_data_parallel_reduction_moves_each_half_in_its_own_type() {
    let dp = |e: &Estimate| e.performance.communication.dp_bytes.get();
    let (fp32, bf16) = (
        megatron(|_| {}),
        megatron(|s| s.implementation.megatron_grad_reduce_in_bf16 = true),
    );
    assert!(dp(&bf16) > 0.0);
    assert!(
        (dp(&fp32) / dp(&bf16) - 1.5).abs() < 1e-9,
        "{}",
        dp(&fp32) / dp(&bf16)
    );
    let unsharded = |flag: bool| {
        megatron(|s| {
            s.strategies.zero = ZeroStage::None;
            s.implementation.megatron_grad_reduce_in_bf16 = flag;
        })
    };
    let ratio = dp(&unsharded(false)) / dp(&unsharded(true));
    assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
    assert!(fp32.performance.communication.dp_time_s > bf16.performance.communication.dp_time_s);
}

/// ZeRO-2/3 are not Megatron's DDP buffer: Megatron-FSDP's gradients take the parameters' type
/// (`--megatron-fsdp-main-grads-dtype auto`), so BF16 stays BF16.
#[test]
fn zero_3_keeps_the_modes_gradient_type() {
    for z in [ZeroStage::Stage2, ZeroStage::Stage3] {
        let e = megatron(|s| s.strategies.zero = z);
        let flag = megatron(|s| {
            s.strategies.zero = z;
            s.implementation.megatron_grad_reduce_in_bf16 = true;
        });
        assert!(grads(&e) > 0.0);
        assert_eq!(grads(&e), grads(&flag), "{z:?}");
    }
    // ZeRO-3 shards weights and gradients alike: equal bytes when both are BF16.
    let e = megatron(|s| s.strategies.zero = ZeroStage::Stage3);
    assert!((grads(&e) / weights(&e) - 1.0).abs() < 1e-9);
}

/// ZeRO-3's reduce-scatter carries the gradients and its two all-gathers the copies the forward
/// computes with: under autocast (FP32 gradients, BF16 compute copies) (4 + 2 · 2) / 2 = 4 bytes a
/// parameter in all-reduce equivalents, against plain FP32's (4 + 2 · 4) / 2 = 6.
#[test]
fn zero_3_gathers_the_compute_copies() {
    let at = |mode: PrecisionMode, compute: Dtype| {
        megatron(|s| {
            s.implementation.profile = Profile::HuggingFace;
            s.strategies.zero = ZeroStage::Stage3;
            s.precision.mode = mode;
            s.precision.compute = compute;
        })
        .performance
        .communication
        .dp_bytes
        .get()
    };
    let amp = at(PrecisionMode::Amp, Dtype::Bf16);
    let fp32 = at(PrecisionMode::Uniform, Dtype::Fp32);
    assert!(amp > 0.0);
    assert!((amp / fp32 - 4.0 / 6.0).abs() < 1e-9, "{}", amp / fp32);
}

/// LoRA reduces its adapters' gradients in the adapters' own type, as the memory model keeps them:
/// FP32 under PEFT whatever the base's precision (`autocast_adapter_dtype`), the model's BF16
/// under torchtune. Data-parallel bytes per trainable parameter: 4 and 2.
#[test]
fn lora_reduces_its_adapters_in_their_own_type() {
    use vram_explorer::scenario::PeftMethod;
    let per_trainable = |profile: Profile, mode: PrecisionMode| {
        let e = megatron(|s| {
            s.implementation.profile = profile;
            s.precision.mode = mode;
            s.strategies.zero = ZeroStage::None;
            s.peft.method = PeftMethod::Lora;
        });
        let trainable = e.memory.params.trainable;
        assert!(trainable > 0.0 && trainable < e.memory.params.total / 10.0);
        e.performance.communication.dp_bytes.get() / trainable
    };
    let peft = per_trainable(Profile::HuggingFace, PrecisionMode::MasterWeights);
    assert!((peft - 4.0).abs() < 1e-9, "{peft}");
    let torchtune = per_trainable(Profile::Torchtune, PrecisionMode::Uniform);
    assert!((torchtune - 2.0).abs() < 1e-9, "{torchtune}");
}

/// Megatron's mixed-precision optimizer steps its FP32 master parameters with
/// `main_grad.float()` (`megatron/core/optimizer/optimizer.py` `_copy_model_grads_to_main_grads`;
/// the distributed optimizer's shard, `distrib_optimizer.py`): a copy of every gradient in FP32 at
/// the step when the buffer is 16-bit (`--fp16`, or `--grad-reduce-in-bf16`), the buffer itself
/// (no copy) when it is FP32 (`--bf16`'s default).
#[test]
fn sixteen_bit_gradient_buffers_are_copied_to_fp32_for_the_step() {
    let single = |edit: fn(&mut Scenario)| {
        megatron(|s| {
            s.parallel.dp = 1;
            s.strategies.zero = ZeroStage::None;
            s.optimizer.kind = vram_explorer::scenario::OptimizerKind::Sgd;
            edit(s);
        })
    };
    // Plain SGD's own temporaries are small and the same in every case: the difference is the copy.
    let fp32_buffer = single(|_| {});
    let base = step_transient(&fp32_buffer);
    let fp16 = single(|s| s.precision.compute = Dtype::Fp16);
    let params = weights(&fp16) / 2.0;
    assert!(base < 1e-5 * params, "{base}");
    let near = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-5;
    assert!(near(step_transient(&fp16) - base, 4.0 * params));
    let flag = single(|s| s.implementation.megatron_grad_reduce_in_bf16 = true);
    assert!(near(step_transient(&flag) - base, 4.0 * params));
    // The distributed optimizer copies its shard.
    let sharded = megatron(|s| {
        s.precision.compute = Dtype::Fp16;
        s.optimizer.kind = vram_explorer::scenario::OptimizerKind::Sgd;
    });
    assert!(near(step_transient(&sharded) - base, 4.0 * params / 8.0));
}

/// The copy is traffic too: the step writes the FP32 copy (4 B a parameter) and reads it in place
/// of the 16-bit gradient, so a 16-bit buffer's optimizer phase moves 8 B a parameter more than
/// its update alone (`performance/work.rs` `megatron_grad_copy`). AdamW over an FP32 master:
/// `--bf16` reads and writes weights 2, master 4 and moments 8 B and reads a 4-byte gradient,
/// 2 · 14 + 4 = 32 B; `--grad-reduce-in-bf16` 2 · 14 + 2 + 8 = 38 B.
#[test]
fn the_step_copy_is_timed_as_optimizer_traffic() {
    let optimizer_bytes = |e: &Estimate| e.performance.optimizer.expect("a step").bytes.get();
    let fp32 = megatron(|_| {});
    let flag = megatron(|s| s.implementation.megatron_grad_reduce_in_bf16 = true);
    let ratio = optimizer_bytes(&flag) / optimizer_bytes(&fp32);
    assert!((ratio - 38.0 / 32.0).abs() < 1e-9, "{ratio}");
    // Other frameworks step on the 16-bit gradient itself: 2 · 14 + 2 = 30 B.
    let hf = |flag: bool| {
        optimizer_bytes(&megatron(|s| {
            s.implementation.profile = Profile::HuggingFace;
            s.implementation.megatron_grad_reduce_in_bf16 = flag;
        }))
    };
    assert!((hf(false) / optimizer_bytes(&fp32) - 30.0 / 32.0).abs() < 1e-9);
}

/// Megatron's CPU offload (`--optimizer-cpu-offload`, `cpu_offloading/hybrid_optimizer.py`) steps
/// pinned FP32 host copies of the distributed optimizer's shard, each with an FP32 host gradient;
/// the data-parallel `main_grad` buffer stays on the GPU. At DP 8 under `--bf16`: the GPU keeps
/// the whole 4-byte gradient per parameter, the host holds (4 master + 8 moments + 4 gradient) / 8.
#[test]
fn cpu_offload_keeps_the_gradient_buffer_on_the_gpu() {
    let e = megatron(|s| {
        s.strategies.offload_optimizer = vram_explorer::scenario::OffloadTarget::Cpu;
    });
    let params = weights(&e) / 2.0;
    assert!(
        (grads(&e) / params - 4.0).abs() < 1e-6,
        "{}",
        grads(&e) / params
    );
    let host = e.memory.offloaded.host.get();
    assert!(
        (host / params - 16.0 / 8.0).abs() < 1e-6,
        "{}",
        host / params
    );
    // Elsewhere (the generic ZeRO-Offload rule) the gradients move with the states.
    let hf = megatron(|s| {
        s.implementation.profile = Profile::HuggingFace;
        s.strategies.offload_optimizer = vram_explorer::scenario::OffloadTarget::Cpu;
    });
    assert!(grads(&hf) < 1e-9 * params);
}

/// Under DeepSpeed's (or PyTorch FSDP's) sharding the step is theirs: Megatron's FP32 copy is not
/// added to what `frameworks/deepspeed.rs` counts for DeepSpeed's own cast.
#[test]
fn the_step_copy_is_megatrons_own_optimizers() {
    let step_transient = |profile: Profile| {
        let e = megatron(|s| {
            s.implementation.profile = profile;
            s.implementation.sharding = vram_explorer::scenario::Sharding::DeepSpeed;
            s.precision.compute = Dtype::Fp16;
            s.strategies.zero = ZeroStage::Stage3;
        });
        step_transient(&e)
    };
    let (megatron, hf) = (
        step_transient(Profile::Megatron),
        step_transient(Profile::HuggingFace),
    );
    assert!((megatron / hf - 1.0).abs() < 1e-9, "{megatron} vs {hf}");
}
