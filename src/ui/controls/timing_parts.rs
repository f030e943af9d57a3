//! The step-time parts model's constants (timing.parts; docs/time-model.md), under Timing.

use egui::Ui;

use crate::scenario::Scenario;
use crate::ui::widgets::percent_slider;

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
}
