//! A mixture-of-experts model trained the way people run it: under ZeRO-3 / FSDP with expert
//! parallelism and activation checkpointing. The late-backward rule for MoE layers
//! (`memory::blocks::backward`, measured on one CPU process without checkpointing) once charged
//! every later layer's whole gradient under ZeRO-3 (86.7 GiB where the shards are 10.9 GiB) and
//! every earlier layer's full activations under checkpointing; ZeRO-3 and FSDP gathered every
//! expert of a block where a GPU holds only its expert-parallel rank's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, MemoryEstimate, Phase, estimate};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::*;

/// Mixtral-8x7B (46.7 B parameters, eight experts of 3 · 4096 · 14336 per layer) as a BF16
/// full fine-tune of one 1024-token sequence, Hugging Face profile.
fn mixtral_training() -> Scenario {
    let mut s = bundled_scenario("mixtral-8x7b-inference-2xh100").unwrap();
    s.mode = Mode::Training;
    s.parallel.dp = 1;
    s.model.moe.ep = 1;
    s.workload.micro_batch = 1;
    s.workload.seq_len = 1024;
    s
}

fn get(m: &MemoryEstimate, phase: Phase, c: Component) -> f64 {
    m.phases.get(phase).unwrap().get(c).get()
}

#[test]
fn zero3_keeps_gradient_shards_through_a_moe_backward() {
    let mut s = mixtral_training();
    s.parallel.dp = 8;
    s.strategies.zero = ZeroStage::Stage3;
    let m = estimate(&s).memory;
    let shards = m.params.total * 2.0 / 8.0;
    for phase in [Phase::Backward, Phase::OptimizerStep] {
        let g = get(&m, phase, Component::Gradients);
        assert!(g <= shards * 1.001, "{phase:?}: {g} > {shards}");
    }
}

#[test]
fn checkpointed_moe_backward_holds_checkpoints_and_one_layer() {
    let mut s = mixtral_training();
    s.workload.micro_batch = 8;
    s.workload.seq_len = 4096;
    let full = estimate(&s).memory;
    s.strategies.checkpointing = Checkpointing::Full;
    let ckpt = estimate(&s).memory;
    let one_layer = get(&full, Phase::Forward, Component::Activations) / 32.0;
    let bound = get(&ckpt, Phase::Forward, Component::Activations) + one_layer;
    let held = get(&ckpt, Phase::Backward, Component::Activations);
    assert!(held <= bound, "{held} > {bound}");
}

/// FSDP2 holds two blocks' unsharded parameters at once inside a block in forward (the current
/// unit and its all-gather buffer, kept until the next copy-out; measured, docs/frameworks/fsdp.md
/// "Inside the blocks"): with expert parallel 8 each holds one expert of eight, 7/8 of the routed
/// weights fewer per unit.
#[test]
fn fsdp_gathers_only_the_rank_experts() {
    let mut s = mixtral_training();
    s.parallel.dp = 8;
    s.strategies.zero = ZeroStage::Stage3;
    s.implementation.sharding = Sharding::Fsdp2;
    s.strategies.checkpointing = Checkpointing::Full;
    let transient = |ep: u32| {
        let mut s = s.clone();
        s.model.moe.ep = ep;
        get(&estimate(&s).memory, Phase::Forward, Component::Transient)
    };
    let routed = 8.0 * 3.0 * 4096.0 * 14336.0;
    let fewer = 2.0 * routed * 7.0 / 8.0 * 2.0;
    let (all, eighth) = (transient(1), transient(8));
    assert!(
        ((all - eighth) / fewer - 1.0).abs() < 1e-9,
        "{all} - {eighth} vs {fewer}"
    );
}

/// LoRA on every linear of GLM-4.5-Air (46 layers, hidden 4096, 96 heads × 128 over 8 KV heads;
/// layer 0 a dense MLP of 10,944, the other 45 a mixture of 128 routed experts and one shared
/// expert of 1,408): adapters at each layer's own widths (they were all sized at the dense FFN,
/// 3× too many), and under expert parallelism a GPU holds its own experts' adapters.
#[test]
fn lora_adapters_take_each_layers_own_widths() {
    let mut s = bundled_scenario("glm-4.5-air-inference-4xh100").unwrap();
    s.mode = Mode::Training;
    s.parallel.tp = 1;
    s.parallel.dp = 8;
    s.peft.method = PeftMethod::Lora;
    s.peft.rank = 16;
    s.peft.targets = LoraTargets::ALL_LINEAR;
    let r = 16.0;
    let (h, q, kv) = (4096.0, 96.0 * 128.0, 8.0 * 128.0);
    let attention = 46.0 * r * ((h + q) + 2.0 * (h + kv) + (q + h));
    let dense = 3.0 * r * (h + 10944.0);
    let experts = 45.0 * (128.0 + 1.0) * 3.0 * r * (h + 1408.0);
    let expected = attention + dense + experts;
    let m = estimate(&s).memory;
    assert!(
        (m.params.trainable / expected - 1.0).abs() < 1e-9,
        "{} vs {expected}",
        m.params.trainable
    );
    // FP32 AdamW moments of the adapters a GPU holds: with EP 8 the routed experts' ÷ 8.
    let states = |ep: u32| {
        let mut s = s.clone();
        s.model.moe.ep = ep;
        get(
            &estimate(&s).memory,
            Phase::OptimizerStep,
            Component::OptimizerStates,
        )
    };
    let routed = 45.0 * 128.0 * 3.0 * r * (h + 1408.0);
    // The time model's optimizer reads and writes the same adapters: fewer with EP 8.
    let optimizer_bytes = |ep: u32| {
        let mut s = s.clone();
        s.model.moe.ep = ep;
        estimate(&s).performance.optimizer.unwrap().bytes.get()
    };
    assert!(optimizer_bytes(8) < 0.3 * optimizer_bytes(1));
    let fewer = states(1) - states(8);
    assert!(
        (fewer / (routed * 7.0 / 8.0 * 8.0) - 1.0).abs() < 1e-6,
        "{fewer}"
    );
}

/// ZeRO-Offload copies each reduced gradient bucket to the host as backward produces it, also on
/// one GPU: a MoE backward does not pile up the later layers' gradients (it showed 88.5 GiB for
/// Mixtral under ZeRO-3 with the optimizer and parameters on the CPU).
#[test]
fn zero_offload_keeps_moe_gradients_off_the_gpu() {
    let g = deepspeed_stage3_backward_gradients(OffloadTarget::Cpu);
    assert!(g < ONE_LAYER_GRADIENTS, "{g}");
}

/// At most one Mixtral layer's BF16 gradients: 46.7 B / 32 layers × 2 B = 2.7 GiB.
const ONE_LAYER_GRADIENTS: f64 = 2.0 * 46.7e9 / 32.0;

/// Gradient bytes at backward of [`mixtral_training`] under DeepSpeed stage 3 on one GPU, its
/// optimizer and parameters offloaded to `offload`.
fn deepspeed_stage3_backward_gradients(offload: OffloadTarget) -> f64 {
    let mut s = mixtral_training();
    s.strategies.zero = ZeroStage::Stage3;
    s.implementation.sharding = Sharding::DeepSpeed;
    s.strategies.offload_optimizer = offload;
    s.strategies.offload_params = offload;
    get(&estimate(&s).memory, Phase::Backward, Component::Gradients)
}

/// DeepSpeed partitions an expert parameter group's master copy over the expert-data-parallel
/// group (DP / ep; `stage_1_and_2.py` `real_dp_process_group`), under stage 1 as under stage 2:
/// an FP32 Mixtral over DP 8 with EP 8 holds the same master partition either way (stage 1
/// divided every group by DP: 3.4 GiB where it is 21.7 GiB).
#[test]
fn deepspeed_stage1_partitions_experts_over_dp_over_ep() {
    let master = |zero: ZeroStage| {
        let mut s = mixtral_training();
        s.parallel.dp = 8;
        s.model.moe.ep = 8;
        s.precision.mode = PrecisionMode::Uniform;
        s.precision.compute = vram_explorer::tensor::Dtype::Fp32;
        s.strategies.zero = zero;
        s.implementation.sharding = Sharding::DeepSpeed;
        get(
            &estimate(&s).memory,
            Phase::OptimizerStep,
            Component::MasterWeights,
        )
    };
    let (one, two) = (master(ZeroStage::Stage1), master(ZeroStage::Stage2));
    assert!(two > 20.0 * 2f64.powi(30), "{two}");
    assert!((one / two - 1.0).abs() < 1e-9, "{one} vs {two}");
}

/// Over a quantized base, the autocast copies left are the head's: expert parallelism (which stores
/// fewer experts) must not turn the other GPUs' experts into kept copies. GLM-4.5-Air QLoRA under
/// AMP at TP 2 over DP 8: the forward's transient rose from 2.4 GiB at EP 1 to 26.9 GiB at EP 2.
#[test]
fn expert_parallelism_adds_no_autocast_copies_over_a_quantized_base() {
    let transient = |ep: u32| {
        let mut s = bundled_scenario("glm-4.5-air-inference-4xh100").unwrap();
        s.mode = Mode::Training;
        s.parallel.tp = 2;
        s.parallel.dp = 8;
        s.model.moe.ep = ep;
        s.peft.method = PeftMethod::Qlora;
        s.precision.mode = PrecisionMode::Amp;
        s.strategies.checkpointing = Checkpointing::Full;
        let m = estimate(&s).memory;
        let t = get(&m, Phase::Forward, Component::Transient);
        (t, m.tensor_peak.get())
    };
    let (t1, p1) = transient(1);
    for ep in [2, 8] {
        let (t, p) = transient(ep);
        assert!(t <= t1 * 1.01, "EP {ep}: {t} > {t1}");
        assert!(p <= p1, "EP {ep}: peak {p} > {p1}");
    }
}

/// q, k, v and o adapters only on attention layers: Nemotron-H-8B has 4 attention layers among
/// 24 Mamba-2 and 24 MLP-only ones (the MLP-only layers were counted as attention).
#[test]
fn attention_adapters_only_on_attention_layers() {
    let mut s = bundled_scenario("nemotron-h-8b-128k-h100").unwrap();
    s.mode = Mode::Training;
    s.peft.method = PeftMethod::Lora;
    s.peft.rank = 8;
    s.peft.targets = LoraTargets {
        k: true,
        o: true,
        ..LoraTargets::default()
    };
    // 32 heads × 128 over 8 KV heads, hidden 4096.
    let (h, q, kv) = (4096.0, 4096.0, 1024.0);
    let expected = 4.0 * 8.0 * ((h + q) + 2.0 * (h + kv) + (q + h));
    let trainable = estimate(&s).memory.params.trainable;
    assert!(
        (trainable / expected - 1.0).abs() < 1e-9,
        "{trainable} vs {expected}"
    );
}

/// DeepSpeed stage 3 copies each gradient into its partition buffer (counted whole), also on one
/// GPU without offload: the late-backward rule must not count the later layers' gradients again.
#[test]
fn deepspeed_stage3_counts_gradients_once_on_one_gpu() {
    let g = deepspeed_stage3_backward_gradients(OffloadTarget::None);
    assert!(g < ONE_LAYER_GRADIENTS, "{g}");
}

/// The step's data-parallel gradient reduction carries a GPU's own experts only, over their
/// expert-data-parallel group: with EP 8 over DP 8 each GPU holds one expert of eight per layer and
/// is that group's only member, so none of the routed gradients is sent (all of them at EP 1).
#[test]
fn a_gpu_reduces_only_its_own_experts_gradients() {
    let dp_bytes = |ep: u32| {
        let mut s = mixtral_training();
        s.parallel.dp = 8;
        s.model.moe.ep = ep;
        estimate(&s).performance.communication.dp_bytes.get()
    };
    let routed = 32.0 * 8.0 * 3.0 * 4096.0 * 14336.0;
    let (all, own) = (dp_bytes(1), dp_bytes(8));
    // BF16 gradients (the preset's uniform BF16).
    let fewer = routed * 2.0;
    assert!(
        ((all - own) / fewer - 1.0).abs() < 1e-6,
        "{all} - {own} vs {fewer}"
    );
    // Under ZeRO-1 the optimizer's share is the same either way (E / DP experts' states per GPU:
    // all over DP, or one over DP / ep = 1); without ZeRO a GPU updates only its own experts.
    let optimizer = |ep: u32, zero: ZeroStage| {
        let mut s = mixtral_training();
        s.parallel.dp = 8;
        s.model.moe.ep = ep;
        s.strategies.zero = zero;
        estimate(&s).performance.optimizer.unwrap().bytes.get()
    };
    let (one, eight) = (
        optimizer(1, ZeroStage::Stage1),
        optimizer(8, ZeroStage::Stage1),
    );
    assert!((eight / one - 1.0).abs() < 1e-9, "{one} vs {eight}");
    assert!(optimizer(8, ZeroStage::None) < 0.3 * optimizer(1, ZeroStage::None));
}
