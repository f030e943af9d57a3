//! Layers with one sub-layer (a hybrid's attention-only, MLP-only and Mamba layers: Nemotron-H,
//! pure Mamba models) save only what that sub-layer and its own pre-norm save under the fused
//! kernels' rules. Before, an MLP-only layer was also charged an attention block and a second norm,
//! an attention-only layer a second norm, and a model made only of Mamba layers (one layer kind, so
//! "uniform") took the transformer rules with the mixer's inner width as an MLP.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

#[path = "support/saved.rs"]
mod saved;

use saved::forward_activations;
use vram_explorer::estimator::estimate;
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{
    Attention, AttentionKernel, BlockKernels, DenseMlp, Dtype, FfnKind, Fp8Recipe, GpuChoice,
    LayerRun, Mamba, Mixer, Mlp, Mode, PatternPart, PeftMethod, PrecisionMode, Profile, Scenario,
};

/// A small Llama-like decoder, one training micro-batch, no checkpointing.
fn base(profile: Profile, precision: PrecisionMode, compute: Dtype) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    t.layers = 8;
    t.hidden = 1024;
    t.heads = 16;
    t.kv_heads = 4;
    t.ffn = 2816;
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = 32_000;
    s.workload.micro_batch = 2;
    s.workload.seq_len = 512;
    s.precision.mode = precision;
    s.precision.compute = compute;
    s.implementation.profile = profile;
    s
}

fn attention_only() -> LayerRun {
    LayerRun {
        count: 1,
        mixer: Mixer::Attention(Attention::default()),
        mlp: Mlp::None,
        norms: 1,
    }
}

fn mlp_only() -> LayerRun {
    LayerRun {
        count: 1,
        mixer: Mixer::None,
        mlp: Mlp::Dense(DenseMlp::default()),
        norms: 1,
    }
}

/// Each decoder layer written as its two sub-layers (attention-only, then MLP-only, one pre-norm
/// each, as Nemotron-H writes its blocks) saves exactly what the whole layers save, in every
/// precision, with and without dropout and LoRA, under the Hugging Face, Megatron and torchtune
/// rules.
#[test]
fn split_sub_layers_save_what_whole_layers_save() {
    for profile in [
        Profile::HuggingFace,
        Profile::Megatron,
        Profile::Torchtune,
        Profile::LitGpt,
    ] {
        for (precision, compute) in [
            (PrecisionMode::Uniform, Dtype::Fp32),
            (PrecisionMode::Uniform, Dtype::Bf16),
            (PrecisionMode::Amp, Dtype::Bf16),
        ] {
            for (dropout, lora) in [(false, false), (true, false), (false, true), (true, true)] {
                for kernel in [AttentionKernel::Flash, AttentionKernel::Materialized] {
                    let mut whole = base(profile, precision, compute);
                    whole.workload.dropout = dropout;
                    whole.strategies.attention = kernel;
                    if lora {
                        whole.peft.method = PeftMethod::Lora;
                    }
                    let mut split = whole.clone();
                    split.model.pattern = vec![PatternPart {
                        repeat: 8,
                        layers: vec![attention_only(), mlp_only()],
                    }];
                    let (a, b) = (forward_activations(&whole), forward_activations(&split));
                    let case = format!(
                        "{profile:?} {precision:?} {compute:?} dropout {dropout} LoRA {lora} {kernel:?}"
                    );
                    assert!(a > 0.0, "{case}");
                    assert!(
                        ((b - a) / a).abs() < 1e-12,
                        "{case}: whole layers {a} B, split {b} B ({:+.2} %)",
                        100.0 * (b / a - 1.0)
                    );
                }
            }
        }
    }
}

/// A model made only of Mamba-2 layers (no MLP, one pre-norm each) saves, per layer, the fused
/// kernel's mixer tensors (docs/model.md "Blocks": zxbcdt, out_x, rstd and out_proj's input) and one
/// Hugging Face RMSNorm, nothing of an MLP.
fn pure_mamba(profile: Profile) -> Scenario {
    pure_mamba_in(profile, PrecisionMode::Uniform)
}

fn pure_mamba_in(profile: Profile, precision: PrecisionMode) -> Scenario {
    let mut s = base(profile, precision, Dtype::Bf16);
    s.model.transformer.heads = 1;
    s.model.transformer.kv_heads = 1;
    let mamba = Mamba {
        d_state: 128,
        expand: 2,
        n_groups: 8,
        head_dim: 64,
        ..Mamba::default()
    };
    s.model.pattern = vec![PatternPart {
        repeat: 8,
        layers: vec![LayerRun {
            count: 1,
            mixer: Mixer::Mamba(mamba),
            mlp: Mlp::None,
            norms: 1,
        }],
    }];
    s
}

/// What the fused Mamba-2 kernel saves per layer of [`pure_mamba`] in BF16 (docs/blocks-measured.md
/// "What fused GPU kernels save"): zxbcdt (2·inner + 2·groups·state + heads), out_x and out_proj's
/// input (inner each), and the FP32 rstd per token.
fn fused_mamba2_saved() -> f64 {
    let (bs, h) = (2.0 * 512.0, 1024.0);
    let inner = 2.0 * h;
    let (groups, state, heads) = (8.0, 128.0, inner / 64.0);
    let zxbcdt = 2.0 * inner + 2.0 * groups * state + heads;
    2.0 * bs * (zxbcdt + 2.0 * inner) + 4.0 * bs
}

#[test]
fn a_pure_mamba_model_saves_its_mixer_and_one_norm() {
    let e = estimate(&pure_mamba(Profile::HuggingFace));
    let (bs, h) = (2.0 * 512.0, 1024.0);
    let mixer = fused_mamba2_saved();
    // Hugging Face RMSNorm in BF16: FP32 input copy, FP32 rstd, normalised x and output (2 B each).
    let norm = (4.0 + 2.0) * bs * h + 4.0 * bs + 2.0 * bs * h;
    let p = &e.memory.per_layer;
    assert_eq!(p.mlp_activations.get(), 0.0);
    assert_eq!(p.attention_activations.get(), mixer);
    assert_eq!(p.norm_activations.get(), norm);
}

/// A pure Mamba-2 model's FLOPs per token are its mixer's: the in and out projections and the scan
/// and convolution (`performance::flops::mixer_core_flops`), no attention or MLP of the flat
/// dimensions (before: the flat formulas with `transformer.ffn` as a SwiGLU MLP).
#[test]
fn a_pure_mamba_model_costs_its_mixer_flops() {
    let e = estimate(&pure_mamba(Profile::HuggingFace));
    let h = 1024.0;
    let inner = 2.0 * h;
    let (groups, state, heads, d_conv) = (8.0, 128.0, inner / 64.0, 4.0);
    let in_proj = h * (2.0 * inner + 2.0 * groups * state + heads);
    let out_proj = inner * h;
    let scan = 9.0 * inner * state + 2.0 * (inner + 2.0 * groups * state) * d_conv;
    let flops =
        vram_explorer::estimator::performance::flops::layer_flops_per_token(&e.model, 512.0);
    assert_eq!(flops, 2.0 * (in_proj + out_proj) + scan);
}

/// Under autocast each linear reading a norm's output saves its own 16-bit copy: a Mamba layer's
/// pre-norm feeds one (`in_proj`), not attention's three (Q, K, V). Hugging Face RMSNorm under
/// autocast: FP32 input, FP32 rstd, FP32 normalised x (autocast runs the norm in FP32) and one
/// BF16 copy for `in_proj`.
#[test]
fn a_mamba_pre_norm_feeds_one_linear() {
    let e = estimate(&pure_mamba_in(Profile::HuggingFace, PrecisionMode::Amp));
    let (bs, h) = (2.0 * 512.0, 1024.0);
    let norm = (4.0 + 4.0) * bs * h + 4.0 * bs + 2.0 * bs * h;
    assert_eq!(e.memory.per_layer.norm_activations.get(), norm);
}

/// Tensor parallelism reduces once per sub-layer in forward and backward (and in the recomputed
/// forward): the split decoder reduces as often as the whole one, in training and inference.
#[test]
fn split_sub_layers_reduce_as_often_as_whole_layers() {
    for mode in [Mode::Training, Mode::Inference] {
        let mut whole = base(Profile::Megatron, PrecisionMode::MasterWeights, Dtype::Bf16);
        whole.mode = mode;
        whole.parallel.tp = 2;
        let mut split = whole.clone();
        split.model.pattern = vec![PatternPart {
            repeat: 8,
            layers: vec![attention_only(), mlp_only()],
        }];
        let (a, b) = (estimate(&whole).performance, estimate(&split).performance);
        assert!(a.step.communication_s > 0.0, "{mode:?}");
        assert_eq!(
            a.communication.tp_allreduces, b.communication.tp_allreduces,
            "{mode:?}"
        );
        let rel = (b.step.communication_s / a.step.communication_s - 1.0).abs();
        assert!(
            rel < 1e-12,
            "{mode:?}: {} s vs {} s",
            a.step.communication_s,
            b.step.communication_s
        );
    }
}

/// The split decoder's training step takes as long as the whole one's, part by part: the same
/// GEMMs, attention, elementwise kernels (the norms and residual adds once per sub-layer) and
/// recomputation, fused (Megatron, also with FP8 casts) or eager (Hugging Face).
#[test]
fn split_sub_layers_take_as_long_as_whole_layers() {
    for (profile, compute) in [
        (Profile::Megatron, Dtype::Bf16),
        (Profile::Megatron, Dtype::Fp8E4M3),
        (Profile::HuggingFace, Dtype::Bf16),
    ] {
        for tp in [1, 2] {
            let mut whole = base(profile, PrecisionMode::MasterWeights, compute);
            whole.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
            if compute == Dtype::Fp8E4M3 {
                whole.precision.compute = Dtype::Bf16;
                whole.precision.fp8_recipe = Fp8Recipe::TeCurrent;
            }
            whole.parallel.tp = tp;
            let mut split = whole.clone();
            split.model.pattern = vec![PatternPart {
                repeat: 8,
                layers: vec![attention_only(), mlp_only()],
            }];
            let (a, b) = (estimate(&whole).performance, estimate(&split).performance);
            let (pa, pb) = (a.parts.expect("parts"), b.parts.expect("parts"));
            let case = format!("{profile:?} {compute:?} TP {tp}");
            for (what, x, y) in [
                ("GEMMs", pa.gemm_s, pb.gemm_s),
                ("attention", pa.attention_s, pb.attention_s),
                ("elementwise", pa.elementwise_s, pb.elementwise_s),
                ("step", a.step.total_s, b.step.total_s),
            ] {
                assert!(x > 0.0, "{case} {what}");
                assert!(
                    (y / x - 1.0).abs() < 1e-9,
                    "{case} {what}: whole {x} s, split {y} s"
                );
            }
        }
    }
}

/// The first stage's LoRA corrections (layer 0's first pre-norm keeps nothing when the embedding
/// is frozen; its Q, K, V adapters' masks) take off only what layer 0 counted: a model whose
/// layers have no sub-layers (a degenerate pattern the random scenarios found) saves no negative
/// bytes (it was −1.2·10¹³ B under LitGPT, −1.9 kB under the Hugging Face rules).
#[test]
fn lora_corrections_take_off_only_what_layer_zero_counted() {
    for profile in [Profile::HuggingFace, Profile::LitGpt, Profile::Torchtune] {
        let mut s = base(profile, PrecisionMode::Uniform, Dtype::Bf16);
        s.peft.method = PeftMethod::Lora;
        s.peft.lora_dropout = 0.1;
        s.workload.dropout = true;
        // A one-token vocabulary, so that the loss's tensors hide nothing.
        s.model.transformer.vocab = 1;
        s.model.pattern = vec![PatternPart {
            repeat: 4,
            layers: vec![LayerRun {
                count: 1,
                mixer: Mixer::None,
                mlp: Mlp::None,
                norms: 0,
            }],
        }];
        let acts = forward_activations(&s);
        assert!(acts >= 0.0, "{profile:?}: {acts} B");
    }
}

/// Megatron's rules count a linear's input with its block (the QKV input in the attention term):
/// a Mamba layer keeps its in-projection's input, the pre-norm's output, beside the fused kernel's
/// tensors and the norm's input and statistics.
#[test]
fn a_megatron_mamba_layer_keeps_its_in_projection_input() {
    let e = estimate(&pure_mamba(Profile::Megatron));
    let (bs, h) = (2.0 * 512.0, 1024.0);
    let mixer = fused_mamba2_saved();
    let p = &e.memory.per_layer;
    assert_eq!(p.attention_activations.get(), mixer + 2.0 * bs * h);
    // The pre-norm's input and its FP32 1/σ (RMSNorm).
    assert_eq!(p.norm_activations.get(), 2.0 * bs * h + 4.0 * bs);
}

/// With dropout a layer of one sub-layer keeps one residual dropout mask (1 byte per hidden
/// element), under the fused rules and under the measured torch reference rules alike.
#[test]
fn a_mamba_layer_keeps_one_residual_dropout_mask() {
    for kernels in [BlockKernels::Fused, BlockKernels::TorchReference] {
        for attention in [AttentionKernel::Flash, AttentionKernel::Materialized] {
            let mut s = pure_mamba(Profile::HuggingFace);
            s.workload.dropout = true;
            s.implementation.block_kernels = kernels;
            s.strategies.attention = attention;
            let e = estimate(&s);
            assert_eq!(
                e.memory.per_layer.dropout_masks.get(),
                2.0 * 512.0 * 1024.0,
                "{kernels:?} {attention:?}"
            );
            // Layers with neither sub-layer keep no mask (a random scenario's went negative: the
            // score mask taken off twice).
            s.model.pattern[0].layers[0].mixer = Mixer::None;
            assert!(forward_activations(&s) >= 0.0, "{kernels:?} {attention:?}");
        }
    }
}

/// A model of Mamba layers only has no MLP: the flat `transformer.ffn` (which a pattern's MLP
/// layers would default to) changes nothing, neither the saved tensors nor the transients nor the
/// step time (inference's prefill and decode held an MLP of that width, a training layer's
/// backward its gradients).
#[test]
fn a_pure_mamba_model_ignores_the_flat_mlp_width() {
    for mode in [Mode::Training, Mode::Inference] {
        let mut a = pure_mamba(Profile::HuggingFace);
        a.mode = mode;
        let mut b = a.clone();
        b.model.transformer.ffn = 16_384;
        let (ea, eb) = (estimate(&a), estimate(&b));
        assert_eq!(ea.memory.tensor_peak, eb.memory.tensor_peak, "{mode:?}");
        assert_eq!(ea.memory.phases, eb.memory.phases, "{mode:?}");
        assert_eq!(
            ea.performance.step.total_s, eb.performance.step.total_s,
            "{mode:?}"
        );
    }
}
