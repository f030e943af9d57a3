//! The step-time parts model's constants (timing.parts; docs/time-model.md), under Timing.

use egui::Ui;

use crate::scenario::{ElementwiseKernels, Scenario};
use crate::ui::widgets::{choice, opt, percent_slider, real_slider, toggle};

/// Sliders for `timing.parts`: each constant with its source in the hover text.
pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.timing.parts;
    ui.label("Step-time parts (transformer training)");
    percent_slider(
        ui,
        &mut p.gemm_efficiency,
        0.05..=1.0,
        "GEMM share (A100 class)",
        "Share of the tensor-core kernels' benchmark rates (calculon's GEMM efficiency curve, the \
         flash attention shares below) a whole training step reaches on GPUs below 600 TFLOP/s \
         (16-bit). Fitted to Narayanan et al. 2021 Table 1.",
    );
    percent_slider(
        ui,
        &mut p.gemm_efficiency_hopper,
        0.05..=1.0,
        "GEMM share (H100 class)",
        "The same for GPUs from 600 TFLOP/s (16-bit), on a measured Hopper GEMM curve \
         (tilelang's H800 sweep). Fitted to Megatron-Core r0.8's H100 weak-scaling table.",
    );
    percent_slider(
        ui,
        &mut p.flash_forward_efficiency,
        0.05..=1.0,
        "Flash attention forward",
        "Fused attention forward, share of the 16-bit peak as a lone kernel (FlashAttention-2: \
         50–73 % on A100); the GEMM share above applies on top.",
    );
    percent_slider(
        ui,
        &mut p.flash_backward_efficiency,
        0.05..=1.0,
        "Flash attention backward",
        "Fused attention backward, share of the 16-bit peak (FlashAttention-2 §4.1).",
    );
    percent_slider(
        ui,
        &mut p.tp_overlap,
        0.0..=1.0,
        "TP comm overlap",
        "Share of tensor-parallel collectives hidden behind GEMMs (Megatron-Core --tp-comm-overlap; \
         0 for Megatron-LM 2021).",
    );
    percent_slider(
        ui,
        &mut p.pp_overlap,
        0.0..=1.0,
        "PP send overlap",
        "Share of pipeline point-to-point sends hidden behind compute.",
    );
    elementwise_ui(ui, s);
    launch_ui(ui, s);
    weight_only_ui(ui, s);
}

/// Fused or eager memory-bound kernels in a training step's layers (`parts::elementwise`).
fn elementwise_ui(ui: &mut Ui, s: &mut Scenario) {
    let options = [
        opt(
            ElementwiseKernels::Auto,
            ElementwiseKernels::Auto.label(),
            "Megatron-Core and torchtune with compile run fused kernels; Hugging Face, LitGPT and \
             eager torchtune run eager PyTorch's.",
        ),
        opt(
            ElementwiseKernels::Fused,
            ElementwiseKernels::Fused.label(),
            "One kernel per norm, bias-dropout-add and activation (Megatron's fused kernels, \
             torch.compile; Liger's or Unsloth's when they patch the layers: pick it by hand).",
        ),
        opt(
            ElementwiseKernels::Eager,
            ElementwiseKernels::Eager.label(),
            "Every op of an RMSNorm, the rotary embedding and SwiGLU a kernel of its own, with FP32 \
             upcasts: about 3.3× the bytes of a fused Llama layer's forward, and 2.29× that again \
             in backward (measured op by op).",
        ),
    ];
    choice(
        ui,
        &mut s.timing.parts.elementwise,
        &options,
        "Elementwise kernels",
        "Whether the layers' norms, rotary embedding and activation run fused or as eager \
         PyTorch's separate kernels; timed by the bytes they move (docs/time-model.md).",
    );
}

/// How fast a PyTorch decode reads weight-only quantized matrices
/// (`estimator::performance::weight_only`).
fn weight_only_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.timing.parts;
    ui.label("Weight-only quantized decode (PyTorch)");
    percent_slider(
        ui,
        &mut p.int8_weight_only_read,
        0.05..=1.0,
        "INT8 weight read",
        "Share of BF16's read bandwidth a decode reaches on INT8 weight-only matrices in PyTorch \
         (torchao int8wo: 0.79-0.80 on A100 and H100). Serving engines are not slowed.",
    );
    percent_slider(
        ui,
        &mut p.int4_weight_only_read,
        0.05..=1.0,
        "INT4 weight read",
        "The same for INT4 group-wise weights (torchao int4wo-64, tinygemm: 0.53 on A100 and \
         H100).",
    );
}

/// The fixed overhead of an inference forward (`estimator::performance::launch`).
fn launch_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.timing.parts;
    ui.label("Fixed overhead per forward (inference)");
    real_slider(
        ui,
        &mut p.kernel_floor_us,
        0.0..=100.0,
        "Kernel floor",
        "µs",
        "GPU time of every kernel beyond its bytes and FLOPs (launch, ramp-up, tail). Vidur's A100 \
         profile of Llama-2-7B at one token: GEMVs take 5.1 µs + bytes ÷ 1.64 TB/s, norms and \
         activations 2–7 µs.",
    );
    real_slider(
        ui,
        &mut p.eager_op_us,
        0.0..=100.0,
        "Eager op issue",
        "µs",
        "Host time to issue one op from Python in eager PyTorch: a step lasts at least ops × this. \
         Measured here (Transformers 5.24, torch 2.15, CPU); your host's CPU decides the real figure.",
    );
    real_slider(
        ui,
        &mut p.generate_step_us,
        0.0..=5000.0,
        "generate loop",
        "µs",
        "Hugging Face generate's own time per token outside the forward (input preparation, logits \
         processors, stopping checks). Measured as above.",
    );
    toggle(
        ui,
        &mut p.cuda_graphs,
        "CUDA graphs (HF / static cache)",
        "Hugging Face generate or a preallocated cache replays each forward from a CUDA graph \
         (torch.compile mode=\"reduce-overhead\", gpt-fast): no op issued from Python, fused \
         kernels. vLLM and SGLang follow enforce_eager / disable_cuda_graph.",
    );
}
