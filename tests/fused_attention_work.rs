//! What an attention kernel computes, per layer kind (`performance::score_kernel`): a fused kernel
//! skips the blocks above a causal diagonal (half of full attention's work); a banded one
//! (FlashAttention-2, Transformer Engine, the serving engines) also skips what lies outside a
//! window's band, which is computed whole once the sequence is longer than the window, while PyTorch
//! SDPA scores an explicit window mask's every key; a scan (Mamba) has no masked blocks at all.
//! Before, the time model halved every layer kind's core, so a windowed layer at 16× its window got
//! half the work it does and a Mamba scan half its FLOPs; and the materialised softmax moved every
//! layer's scores with the model's head count, Mamba layers included. The model-FLOP count (MFU)
//! keeps every key whatever the kernel.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::flops;
use vram_explorer::estimator::performance::score_kernel::ScoreKernel;
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::{
    Attention, AttentionKernel, DenseMlp, FfnKind, FlashAttn, GpuChoice, LayerRun, Mamba, Mixer,
    Mlp, Mode, PatternPart, Profile, Scenario, ServingEngine, Vllm,
};

const SEQ: u32 = 4096;
const WINDOW: u32 = 256;

/// A small decoder whose eight layers all have the given mixer, trained with a flash kernel.
fn decoder(mixer: Mixer, mlp: Mlp) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        gpu: GpuChoice::Catalog(GpuId::H100Sxm),
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (8, 1024, 16, 4, 2816);
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = 32_000;
    s.workload.micro_batch = 1;
    s.workload.seq_len = SEQ;
    s.strategies.attention = AttentionKernel::Flash;
    s.model.pattern = vec![PatternPart {
        repeat: 8,
        layers: vec![LayerRun {
            count: 1,
            mixer,
            mlp,
            norms: 2,
        }],
    }];
    s
}

fn attention(window: u32) -> Mixer {
    Mixer::Attention(Attention {
        window,
        ..Attention::default()
    })
}

fn attention_seconds(s: &Scenario) -> f64 {
    estimate(s)
        .performance
        .parts
        .expect("a transformer with a known peak has parts")
        .attention_s
}

fn megatron(mut s: Scenario) -> Scenario {
    s.implementation.profile = Profile::Megatron;
    s
}

/// Under a banded kernel (Megatron-Core's Transformer Engine) full causal attention does s/2 keys
/// per query, a window w ≪ s does w − w²/2s: at s = 4096 and w = 256 the windowed layer does
/// 248/2048 of the full layer's work (it was 128/2048).
#[test]
fn a_windowed_layer_computes_its_whole_band() {
    let dense = || Mlp::Dense(DenseMlp::default());
    let full = attention_seconds(&megatron(decoder(attention(0), dense())));
    let windowed = attention_seconds(&megatron(decoder(attention(WINDOW), dense())));
    let (s, w) = (f64::from(SEQ), f64::from(WINDOW));
    let expected = (w - w * w / (2.0 * s)) / (s / 2.0);
    assert!(full > 0.0);
    assert!(
        (windowed / full / expected - 1.0).abs() < 1e-9,
        "windowed/full = {}, expected {expected}",
        windowed / full
    );
}

/// Hugging Face's default SDPA hands a windowed layer an explicit mask, and the masked backends
/// score every key: s keys against a full layer's s/2.
#[test]
fn sdpa_scores_a_windowed_layer_whole() {
    let dense = || Mlp::Dense(DenseMlp::default());
    let full = attention_seconds(&decoder(attention(0), dense()));
    let windowed = attention_seconds(&decoder(attention(WINDOW), dense()));
    assert!((windowed / full - 2.0).abs() < 1e-9, "{windowed} vs {full}");
}

/// A window at least as long as the sequence is full causal attention.
#[test]
fn a_window_longer_than_the_sequence_changes_nothing() {
    let dense = || Mlp::Dense(DenseMlp::default());
    let full = attention_seconds(&decoder(attention(0), dense()));
    let wide = attention_seconds(&decoder(attention(SEQ), dense()));
    assert!((wide / full - 1.0).abs() < 1e-9, "{wide} vs {full}");
}

fn mamba() -> Mixer {
    Mixer::Mamba(Mamba {
        d_state: 128,
        expand: 2,
        n_groups: 8,
        head_dim: 64,
        ..Mamba::default()
    })
}

/// The selective scan is not causally masked: the fused work is its whole FLOP count, and a
/// Mamba layer has no softmax scores.
#[test]
fn a_scan_is_not_halved_and_has_no_scores() {
    let e = estimate(&decoder(mamba(), Mlp::None));
    let m = &e.model;
    let seq = f64::from(SEQ);
    let core = flops::attention_flops_per_token(m, seq);
    assert!(core > 0.0);
    for kernel in [
        ScoreKernel::Materialised,
        ScoreKernel::CausalOnly,
        ScoreKernel::Banded,
    ] {
        assert_eq!(flops::executed_attention_flops(m, seq, kernel, true), core);
    }
    assert_eq!(flops::softmax_scores_per_token(m, seq), 0.0);
}

/// A hybrid with one attention layer in eight moves one attention layer's scores per eight layers
/// (it moved eight); a flat model moves heads × keys in every layer.
#[test]
fn softmax_scores_count_only_attention_layers() {
    let mut s = decoder(mamba(), Mlp::None);
    s.model.pattern = vec![PatternPart {
        repeat: 1,
        layers: vec![
            LayerRun {
                count: 7,
                mixer: mamba(),
                mlp: Mlp::None,
                norms: 1,
            },
            LayerRun {
                count: 1,
                mixer: attention(0),
                mlp: Mlp::None,
                norms: 1,
            },
        ],
    }];
    let seq = f64::from(SEQ);
    let hybrid = estimate(&s);
    assert_eq!(
        flops::softmax_scores_per_token(&hybrid.model, seq),
        seq * 16.0 / 8.0
    );
    let flat = estimate(&decoder(attention(0), Mlp::Dense(DenseMlp::default())));
    assert_eq!(
        flops::softmax_scores_per_token(&flat.model, seq),
        seq * 16.0
    );
}

fn inference(kernel: AttentionKernel) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    s.inference.prompt_tokens = 8192;
    s.workload.micro_batch = 1;
    s.strategies.attention = kernel;
    s
}

/// The model-FLOP count (MFU's numerator) keeps every key whatever the kernel; the hardware count
/// is what the kernel executes.
#[test]
fn inference_model_flops_do_not_depend_on_the_kernel() {
    let (fused, materialised) = (
        estimate(&inference(AttentionKernel::Flash)).performance,
        estimate(&inference(AttentionKernel::Materialized)).performance,
    );
    assert_eq!(fused.model_flops, materialised.model_flops);
    assert_eq!(materialised.hardware_flops, materialised.model_flops);
    assert!(fused.hardware_flops < fused.model_flops);
}

/// vLLM and SGLang run their own fused kernels whatever `strategies.attention` says (a
/// post-training rollout copies the policy's training strategies).
#[test]
fn a_vllm_prefill_is_fused_whatever_the_strategy() {
    let prefill = |kernel| {
        let mut s = inference(kernel);
        s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
        estimate(&s).performance.prefill.expect("a prefill").flops
    };
    assert_eq!(
        prefill(AttentionKernel::Materialized),
        prefill(AttentionKernel::Flash)
    );
}

/// The prefill's hardware FLOPs of a llama.cpp preset with its flash attention and ubatch set.
fn llamacpp_flops(preset: &str, fa: FlashAttn, ubatch: u32) -> (f64, Scenario) {
    let mut s = vram_explorer::presets::bundled_scenario(preset).unwrap();
    let Some(ServingEngine::LlamaCpp(l)) = s.inference.engine.as_mut() else {
        panic!("a llama.cpp preset")
    };
    l.flash_attn = fa;
    (l.n_ubatch, l.n_batch) = (ubatch, ubatch.max(l.n_batch));
    (estimate(&s).performance.hardware_flops, s)
}

/// Per prompt token and layer, 4 · q FLOPs per key scored.
fn per_key(s: &Scenario) -> f64 {
    let m = estimate(s).model;
    let q = f64::from(m.heads) * f64::from(m.head_dim);
    f64::from(s.inference.prompt_tokens) * f64::from(m.layers) * 4.0 * q
}

/// llama.cpp scores each ubatch of u prompt tokens against the cells filled so far: (s + u)/2 keys
/// per token on average. Its CPU flash kernel skips every masked key (s/2); on a GPU the flash
/// kernel trims each ubatch's triangle only from 1,024 tokens a ubatch, so at the default 512 it
/// scores as many keys as without flash attention.
#[test]
fn llamacpp_scores_the_cells_its_ubatches_filled() {
    // What skipping the masked keys saves: each ubatch's triangle, (q·u² + r²)/2 keys over the
    // prompt's q whole ubatches of u and r tokens left (u/2 per token when u divides the prompt).
    // On a GPU only ubatches of at least 1,024 tokens are trimmed (the last, partial one here
    // is not).
    let triangles = |s: &Scenario, u: f64, from: f64| {
        let p = f64::from(s.inference.prompt_tokens);
        let (q, r) = ((p / u).floor(), p % u);
        let square = |n: f64| if n >= from { n * n } else { 0.0 };
        per_key(s) * (q * square(u) + square(r)) / 2.0 / p
    };
    let cpu = "llama31-8b-q4km-llamacpp-cpu";
    let (off, s) = llamacpp_flops(cpu, FlashAttn::Off, 512);
    let (on, _) = llamacpp_flops(cpu, FlashAttn::On, 512);
    let expected = triangles(&s, 512.0, 0.0);
    assert!(
        ((off - on) / expected - 1.0).abs() < 1e-9,
        "CPU: {} vs {expected}",
        off - on
    );

    let gpu = "llama31-8b-q4km-llamacpp-12gb";
    let (off, _) = llamacpp_flops(gpu, FlashAttn::Off, 512);
    let (on, _) = llamacpp_flops(gpu, FlashAttn::On, 512);
    assert_eq!(on, off, "a 512-token ubatch is not trimmed on a GPU");
    let (off, s) = llamacpp_flops(gpu, FlashAttn::Off, 1024);
    let (on, _) = llamacpp_flops(gpu, FlashAttn::On, 1024);
    let expected = triangles(&s, 1024.0, 1024.0);
    assert!(
        ((off - on) / expected - 1.0).abs() < 1e-9,
        "GPU: {} vs {expected}",
        off - on
    );
}

/// A prefill's time counts what its kernel executes: a fused causal kernel scores s/2 keys per
/// prompt token, a materialised one all s (and masks half). Llama-3-8B (32 layers, 32 × 128 query
/// dims) with an 8,192-token prompt: the two differ by prompt · layers · 2 · prompt · q FLOPs.
#[test]
fn a_fused_prefill_skips_the_masked_scores() {
    let prefill_flops = |kernel: AttentionKernel| {
        let e = estimate(&inference(kernel));
        let m = &e.model;
        assert_eq!((m.layers, m.heads, m.head_dim), (32, 32, 128));
        e.performance.prefill.expect("a prefill").flops
    };
    let (fused, materialised) = (
        prefill_flops(AttentionKernel::Flash),
        prefill_flops(AttentionKernel::Materialized),
    );
    let p = 8192.0_f64;
    let expected = p * 32.0 * 2.0 * p * 32.0 * 128.0;
    assert!(
        ((materialised - fused) / expected - 1.0).abs() < 1e-9,
        "difference {} vs {expected}",
        materialised - fused
    );
}

/// Chunked local attention (Llama 4's `attention_chunk_size`) sees the earlier tokens of its own
/// chunk: under a banded kernel 4,096 tokens in chunks of 256 attend to 128 keys on average,
/// 128/2048 of full attention (a sliding window of the same size does 248/2048).
#[test]
fn a_chunked_layer_attends_within_its_chunk() {
    let dense = || Mlp::Dense(DenseMlp::default());
    let full = attention_seconds(&megatron(decoder(attention(0), dense())));
    let chunked = attention_seconds(&megatron(decoder(
        Mixer::Attention(Attention {
            chunk: WINDOW,
            ..Attention::default()
        }),
        dense(),
    )));
    let expected = f64::from(WINDOW) / f64::from(SEQ);
    assert!(
        (chunked / full / expected - 1.0).abs() < 1e-9,
        "chunked/full = {}, expected {expected}",
        chunked / full
    );
}
