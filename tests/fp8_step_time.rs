//! An FP8 training recipe runs the linear layers' GEMMs at the GPU's FP8 rate (issue 13: "FP8
//! speeds up the GEMMs only (attention and elementwise work stay 16-bit)"). Before, a recipe
//! changed the memory (FP8 weight copies, amax histories) and left the step at the 16-bit rate.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::breakdown::StepPart;
use vram_explorer::hardware::GpuId;
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Fp8Recipe, GpuChoice, Mode, Profile, Scenario};

#[path = "support/step_part.rs"]
mod step_part;
use step_part::part;

fn seventy_b() -> Scenario {
    bundled_scenario("llama3-70b-zero3-8xh100").unwrap()
}

#[test]
fn an_fp8_recipe_speeds_up_the_gemms_only() {
    for recipe in [
        Fp8Recipe::TeDelayed,
        Fp8Recipe::TeCurrent,
        Fp8Recipe::DeepSeekBlockwise,
    ] {
        let bf16 = seventy_b();
        let mut fp8 = bf16.clone();
        fp8.precision.fp8_recipe = recipe;
        let (g16, g8) = (part(&bf16, StepPart::Gemm), part(&fp8, StepPart::Gemm));
        // H100 SXM: 1,979 against 989 TFLOP/s dense. Less than 2×: a GEMM is a shorter kernel at
        // the FP8 rate, lower on the size curve, and the LM head stays 16-bit.
        assert!(
            g8 < 0.7 * g16 && g8 > 0.5 * g16,
            "{recipe:?}: {g8} vs {g16}"
        );
        let (a, b) = (
            part(&bf16, StepPart::Attention),
            part(&fp8, StepPart::Attention),
        );
        assert!(
            (a - b).abs() <= 1e-12 * a,
            "{recipe:?} attention: {b} vs {a}"
        );
        // The elementwise work stays 16-bit and gains the casts (torchao's float8 roofline,
        // `parts::fp8_casts`), per linear of the Hugging Face model (separate q, k, v, gate, up):
        // per layer (h 8192, q 8192, kv 1024, f 28672, TP 1, 4,096 tokens) inputs 5h + q + f =
        // 77,824 and gradients 2h + q + 2kv + 2f = 83,968 elements per token at 4 B, the weight
        // shard (h(q + 2kv) + qh + 3hf = 855,638,016 elements) at 6 B, over 21 kernels of ≥ 100 MB
        // (90 % of 3.35 TB/s), 80 layers.
        let bytes = 4096.0 * (77_824.0 + 83_968.0) * 4.0 + 855_638_016.0 * 6.0;
        assert_casts(&bf16, &fp8, 80.0 * bytes / (3.35e12 * 0.9));
        assert!(estimate(&fp8).performance.step.total_s < estimate(&bf16).performance.step.total_s);
    }
}

/// The casts `fp8` adds to `bf16`'s elementwise part, against `expected` seconds.
fn assert_casts(bf16: &Scenario, fp8: &Scenario, expected: f64) {
    // Fused or eager, whichever the profile runs.
    let ew = |s: &Scenario| part(s, StepPart::Elementwise) + part(s, StepPart::EagerElementwise);
    let (ew16, ew8) = (ew(bf16), ew(fp8));
    assert!(
        ((ew8 - ew16) / expected - 1.0).abs() < 1e-9,
        "{} s of casts, expected {expected}",
        ew8 - ew16
    );
}

/// Megatron-Core's fused QKV and MLP-up cast the hidden state once each, and under tensor and
/// sequence parallelism every cast runs on the rank's shard: TP 2 with SP, per token inputs
/// 2h/2 + (q + f)/2 = 26,624 and gradients 2h/2 + (q + 2kv + 2f)/2 = 41,984 elements at 4 B, the
/// weight shard 427,819,008 elements at 6 B, over 12 kernels.
#[test]
fn fused_linears_cast_their_shards_under_tensor_parallelism() {
    let mut bf16 = seventy_b();
    megatron_tp2_sp(&mut bf16);
    let mut fp8 = bf16.clone();
    fp8.precision.fp8_recipe = Fp8Recipe::TeCurrent;
    let bytes = 4096.0 * (26_624.0 + 41_984.0) * 4.0 + 427_819_008.0 * 6.0;
    assert_casts(&bf16, &fp8, 80.0 * bytes / (3.35e12 * 0.9));
}

#[test]
fn an_fp8_recipe_without_fp8_tensor_cores_keeps_the_16_bit_rate() {
    let mut bf16 = seventy_b();
    bf16.gpu = GpuChoice::Catalog(GpuId::A100Sxm80);
    let mut fp8 = bf16.clone();
    fp8.precision.fp8_recipe = Fp8Recipe::TeDelayed;
    let (a, b) = (estimate(&bf16), estimate(&fp8));
    assert_eq!(a.performance.step.total_s, b.performance.step.total_s);
}

#[test]
fn inference_ignores_a_training_recipe() {
    let mut s = bundled_scenario("llama2-70b-inference-gqa-2xa100").unwrap();
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    assert_eq!(s.mode, Mode::Inference);
    let before = estimate(&s).performance.step.total_s;
    s.precision.fp8_recipe = Fp8Recipe::TeDelayed;
    assert_eq!(estimate(&s).performance.step.total_s, before);
}

/// vLLM 0.34 `Fp8LinearMethod`: FP8 checkpoints run W8A8 FP8 GEMMs where the GPU has FP8 tensor
/// cores and weight-only Marlin (16-bit math) where it has not.
#[test]
fn fp8_weights_serve_at_the_fp8_rate_where_the_gpu_has_one() {
    let mut s = bundled_scenario("llama3.1-70b-fp8-vllm-4xh100-tp4").unwrap();
    assert_eq!(s.mode, Mode::Inference);
    let ttft = |s: &Scenario| estimate(s).performance.throughput.ttft_s;
    let fp8 = ttft(&s);
    s.quantization.weights = vram_explorer::scenario::WeightFormat::AsPrecision;
    let bf16 = ttft(&s);
    // The prefill is compute-bound: half the time at twice the rate, less the unchanged
    // communication.
    assert!(fp8 < 0.6 * bf16 && fp8 > 0.45 * bf16, "{fp8} vs {bf16}");
    s.quantization.weights = vram_explorer::scenario::WeightFormat::Fp8;
    s.gpu = GpuChoice::Catalog(GpuId::A100Sxm80);
    let marlin = ttft(&s);
    s.quantization.weights = vram_explorer::scenario::WeightFormat::AsPrecision;
    let a100_bf16 = ttft(&s);
    assert!(
        (marlin - a100_bf16).abs() <= 1e-9 * a100_bf16,
        "{marlin} vs {a100_bf16}"
    );
}

/// Under gradient accumulation Megatron-Core's Transformer Engine linears cast their weights on
/// the step's first micro-batch only (`set_is_first_microbatch`, TE's FP8 weight cache), while
/// torchao's `Float8Linear` (the Hugging Face / torchtitan path) recasts them in every forward:
/// with 4 micro-batches the first pays 4 × the activations' casts and 1 × the weights', the second
/// 4 × both (the same shapes as `fused_linears_cast_their_shards_under_tensor_parallelism` and
/// `an_fp8_recipe_speeds_up_the_gemms_only`).
#[test]
fn transformer_engine_casts_its_weights_once_per_step() {
    let bw = 3.35e12 * 0.9;
    let mut bf16 = seventy_b();
    bf16.workload.grad_accum_steps = 4;
    let mut fp8 = bf16.clone();
    fp8.precision.fp8_recipe = Fp8Recipe::TeCurrent;
    let (acts, weights) = (4096.0 * (77_824.0 + 83_968.0) * 4.0, 855_638_016.0 * 6.0);
    assert_casts(&bf16, &fp8, 80.0 * 4.0 * (acts + weights) / bw);

    megatron_tp2_sp(&mut bf16);
    let mut fp8 = bf16.clone();
    fp8.precision.fp8_recipe = Fp8Recipe::TeCurrent;
    let (acts, weights) = (4096.0 * (26_624.0 + 41_984.0) * 4.0, 427_819_008.0 * 6.0);
    assert_casts(&bf16, &fp8, 80.0 * (4.0 * acts + weights) / bw);
}

/// Megatron-Core's fused linears on 8 GPUs as TP 2 × DP 4 with sequence parallelism.
fn megatron_tp2_sp(s: &mut Scenario) {
    s.implementation.profile = Profile::Megatron;
    s.parallel.tp = 2;
    s.parallel.dp = 4;
    s.parallel.sequence_parallel = true;
}
