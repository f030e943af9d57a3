//! The window's Framework group (issue 12): the profile, and the Hugging Face settings that change
//! the peak, driven headless through AccessKit as a user would.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]
#![cfg(feature = "gui")]

#[path = "support/window.rs"]
mod window;
use window::choose;

use egui::accesskit::Role;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use vram_explorer::app::ExplorerApp;
use vram_explorer::scenario::{HfTrainer, PeftMethod, Profile};

/// The weights per GPU at the peak of the window's scenario.
fn weights(h: &Harness<'_, ExplorerApp>) -> f64 {
    vram_explorer::estimator::estimate(h.state().scenario())
        .memory
        .peak
        .get(vram_explorer::estimator::Component::Weights)
        .get()
}

fn peak(h: &Harness<'_, ExplorerApp>) -> f64 {
    vram_explorer::estimator::estimate(h.state().scenario())
        .memory
        .tensor_peak
        .get()
}

#[test]
fn the_trl_trainer_is_picked_in_the_framework_group_and_drops_the_logits() {
    let mut h = window::training(|s| s.peft.method = PeftMethod::Qlora);
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    choose(&mut h, "Trainer", "TRL SFTTrainer");
    assert_eq!(
        h.state().scenario().implementation.hf.trainer,
        HfTrainer::TrlSft
    );
    assert!(peak(&h) < before, "fused head: {before} -> {}", peak(&h));
    // QLoRA shows bitsandbytes' own settings; another framework hides the Hugging Face ones.
    h.get_by_role_and_label(Role::ComboBox, "bitsandbytes");
    choose(&mut h, "Framework", "Megatron-Core");
    assert_eq!(
        h.state().scenario().implementation.profile,
        Profile::Megatron
    );
    assert!(h.query_by_label("Trainer").is_none());
}

/// FSDP2 picked under "ZeRO implementation" at ZeRO-3 on 8 GPUs: its unsharded units raise the
/// peak over the ZeRO paper's rule, and its own toggle appears; turning reshard after forward off
/// raises it again.
#[test]
fn fsdp2_is_picked_in_the_framework_group_and_changes_the_estimate() {
    use vram_explorer::scenario::{Sharding, ZeroStage};
    let mut h = window::training(|s| {
        s.strategies.zero = ZeroStage::Stage3;
        s.parallel.dp = 8;
    });
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    assert!(h.query_by_label("Reshard after forward").is_none());
    choose(&mut h, "ZeRO implementation", "PyTorch FSDP2");
    assert_eq!(
        h.state().scenario().implementation.sharding,
        Sharding::Fsdp2
    );
    let fsdp2 = peak(&h);
    assert!(fsdp2 > before, "unsharded units: {before} -> {fsdp2}");
    h.get_by_role_and_label(Role::CheckBox, "Reshard after forward")
        .click_accesskit();
    h.run();
    assert!(
        !h.state()
            .scenario()
            .implementation
            .fsdp
            .reshard_after_forward
    );
    assert!(peak(&h) > fsdp2, "every unit kept: {fsdp2} -> {}", peak(&h));
}

/// torchtitan's per-op selective checkpointing is picked in the Strategies group by its label;
/// the saved activations land between full checkpointing and none, and the combo shows the pick.
#[test]
fn per_op_checkpointing_is_picked_by_label() {
    use vram_explorer::estimator::{Component, Phase, estimate};
    use vram_explorer::scenario::Checkpointing;
    let mut h = window::training(|_| {});
    let acts = |h: &Harness<'_, ExplorerApp>, c: Checkpointing| {
        let mut s = h.state().scenario().clone();
        s.strategies.checkpointing = c;
        estimate(&s)
            .memory
            .phases
            .get(Phase::Forward)
            .map_or(0.0, |b| b.get(Component::Activations).get())
    };
    choose(&mut h, "Checkpointing", "Per-op (torchtitan)");
    assert_eq!(
        h.state().scenario().strategies.checkpointing,
        Checkpointing::PerOp
    );
    let (none, per_op, full) = (
        acts(&h, Checkpointing::None),
        acts(&h, Checkpointing::PerOp),
        acts(&h, Checkpointing::Full),
    );
    assert!(full < per_op && per_op < none, "{full} {per_op} {none}");
    // The closed combo box shows the pick.
    assert!(h.query_by_label("Per-op (torchtitan)").is_some());
}

/// DTensor's loss parallel is a toggle of the Hugging Face framework under tensor parallelism: on,
/// the decomposed log-softmax's FP32 temporaries raise the peak at the loss.
#[test]
fn dtensor_loss_parallel_is_a_framework_toggle() {
    let mut h = window::training(|s| {
        s.parallel.tp = 2;
        s.parallel.sequence_parallel = true;
        s.strategies.checkpointing = vram_explorer::scenario::Checkpointing::Full;
        s.workload.micro_batch = 8;
    });
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    h.get_by_role_and_label(Role::CheckBox, "DTensor loss parallel")
        .click_accesskit();
    h.run();
    assert!(h.state().scenario().implementation.loss_parallel);
    assert!(peak(&h) > before, "loss parallel: {before} -> {}", peak(&h));
}

/// Megatron's own layers are a toggle of the Megatron framework: on, attention is materialised and
/// its score input sits in Megatron's global buffer, so the training peak rises.
#[test]
fn megatron_local_layers_are_a_framework_toggle() {
    let mut h = window::training(|s| {
        s.implementation.profile = Profile::Megatron;
        s.workload.seq_len = 2048;
    });
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    h.get_by_role_and_label(Role::CheckBox, "Megatron's own layers")
        .click_accesskit();
    h.run();
    let i = &h.state().scenario().implementation;
    assert!(i.megatron_local_layers);
    assert!(peak(&h) > before, "local layers: {before} -> {}", peak(&h));
}

/// Megatron's MoE token dispatcher is a choice of the Megatron framework, shown for a mixture of
/// experts: all-to-all at EP 4 holds no global gather buffer, so the peak falls, and the note that
/// all-gather was assumed goes away.
#[test]
fn the_megatron_moe_dispatcher_is_picked_in_the_framework_group() {
    use vram_explorer::estimator::{Diagnostic, estimate};
    use vram_explorer::scenario::MoeDispatcher;
    let mut h = window::training(|s| {
        s.implementation.profile = Profile::Megatron;
        s.model.moe.experts = 8;
        s.model.moe.top_k = 2;
        s.model.moe.ep = 4;
        s.parallel.dp = 4;
    });
    h.get_by_label("Framework").click();
    h.run();
    let noted = |h: &Harness<'_, ExplorerApp>| {
        estimate(h.state().scenario())
            .diagnostics
            .contains(Diagnostic::MegatronAllGatherDispatcher)
    };
    assert!(noted(&h));
    let before = peak(&h);
    choose(&mut h, "MoE token dispatcher", "All-to-all");
    assert_eq!(
        h.state().scenario().implementation.megatron_moe_dispatcher,
        MoeDispatcher::AllToAll
    );
    assert!(peak(&h) < before, "all-to-all: {before} -> {}", peak(&h));
    assert!(!noted(&h));
    // A dense model has no dispatcher to pick.
    h.state_mut().scenario_mut().model.moe.experts = 0;
    h.run();
    assert!(h.query_by_label("MoE token dispatcher").is_none());
}

/// Expert tensor parallelism is a slider of the mixture-of-experts group: at TP 2, ETP 1 keeps
/// every expert whole on each GPU, so the weights per GPU rise.
#[test]
fn expert_tensor_parallelism_is_a_slider_of_the_experts_group() {
    let mut h = window::training(|s| {
        s.implementation.profile = Profile::Megatron;
        s.model.moe.experts = 8;
        s.parallel.tp = 2;
        s.parallel.sequence_parallel = true;
    });
    h.get_by_label("Mixture of experts").click();
    h.run();
    let before = weights(&h);
    h.get_by_role_and_label(Role::Slider, "Expert TP")
        .set_value_accesskit(1.0);
    h.run();
    assert_eq!(h.state().scenario().model.moe.etp, 1);
    assert!(weights(&h) > before, "ETP 1: {before} -> {}", weights(&h));
    // Not read in inference (serving engines split every expert over TP): not shown there.
    h.state_mut().scenario_mut().mode = vram_explorer::scenario::Mode::Inference;
    h.run();
    assert!(h.query_by_label("Expert TP").is_none());
}

/// DeepSpeed AutoTP is a framework toggle in inference: on, the embeddings and the head stay whole
/// on every GPU, so the weights per GPU rise at TP 4.
#[test]
fn deepspeed_auto_tp_is_an_inference_toggle() {
    let mut h = window::harness(
        window::app(false, |s| {
            s.mode = vram_explorer::scenario::Mode::Inference;
            s.parallel.tp = 4;
        }),
        (1600.0, 1800.0),
    );
    h.run();
    h.get_by_label("Framework").click();
    h.run();
    let before = weights(&h);
    h.get_by_role_and_label(Role::CheckBox, "DeepSpeed AutoTP")
        .click_accesskit();
    h.run();
    assert!(h.state().scenario().implementation.auto_tp);
    assert!(weights(&h) > before, "AutoTP: {before} -> {}", weights(&h));
}

/// torchtune's RoPE cache is picked by builder in the Framework group: under LoRA at Llama 3.1's
/// 131,072 positions "One shared" (the Llama 3.1 / 3.2 builders) drops a cache per layer but one.
#[test]
fn torchtune_rope_cache_is_picked_by_builder() {
    use vram_explorer::scenario::RopeCache;
    let mut h = window::training(|s| {
        s.implementation.profile = Profile::Torchtune;
        s.peft.method = PeftMethod::Lora;
        s.model.transformer.max_positions = 131_072;
    });
    h.get_by_label("Framework").click();
    h.run();
    let before = peak(&h);
    choose(&mut h, "RoPE cache", "One shared");
    assert_eq!(
        h.state().scenario().implementation.torchtune.rope_cache,
        RopeCache::Shared
    );
    let t = &h.state().scenario().model.transformer;
    let cache = 4.0 * (131_072.0 * f64::from(t.head_dim()) + f64::from(t.head_dim()) / 2.0);
    let layers = f64::from(t.layers);
    assert_eq!(before - peak(&h), (layers - 1.0) * cache);
}

/// Megatron's `--grad-reduce-in-bf16` is a toggle of the Megatron framework: on, the FP32
/// `main_grad` buffer Megatron keeps under `--bf16` becomes BF16 and the gradients per GPU halve.
#[test]
fn megatron_bf16_gradient_reduction_is_a_framework_toggle() {
    use vram_explorer::scenario::{Dtype, PrecisionMode};
    let mut h = window::training(|s| {
        s.implementation.profile = Profile::Megatron;
        s.precision.mode = PrecisionMode::MasterWeights;
        s.precision.compute = Dtype::Bf16;
    });
    h.get_by_label("Framework").click();
    h.run();
    let grads = |h: &Harness<'_, ExplorerApp>| {
        vram_explorer::estimator::estimate(h.state().scenario())
            .memory
            .peak
            .get(vram_explorer::estimator::Component::Gradients)
            .get()
    };
    let fp32 = grads(&h);
    h.get_by_role_and_label(Role::CheckBox, "Reduce gradients in BF16")
        .click_accesskit();
    h.run();
    assert!(
        h.state()
            .scenario()
            .implementation
            .megatron_grad_reduce_in_bf16
    );
    let bf16 = grads(&h);
    assert!(
        bf16 > 0.0 && (fp32 / bf16 - 2.0).abs() < 1e-9,
        "{fp32} -> {bf16}"
    );
}
