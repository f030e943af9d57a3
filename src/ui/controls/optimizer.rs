//! Optimizer controls: what the optimizer keeps per parameter (training only).

use egui::Ui;

use crate::scenario::{EightBitLibrary, Fp8Recipe, OptimizerKind, Scenario};
use crate::ui::widgets::{Choice, choice, opt, real_slider, toggle};

const OPTIMIZERS: [Choice<OptimizerKind>; 9] = [
    opt(OptimizerKind::Sgd, "SGD", "No state."),
    opt(
        OptimizerKind::SgdMomentum,
        "SGD + momentum",
        "One buffer per parameter.",
    ),
    opt(
        OptimizerKind::Adam,
        "Adam",
        "Two moments per parameter (8 bytes in FP32).",
    ),
    opt(
        OptimizerKind::AdamW,
        "AdamW",
        "Two moments per parameter (8 bytes in FP32), decoupled weight decay.",
    ),
    opt(
        OptimizerKind::Adam8bit,
        "8-bit Adam",
        "Two 8-bit moments with block scales (~2 bytes per parameter): bitsandbytes' or torchao's.",
    ),
    opt(
        OptimizerKind::Adafactor,
        "Adafactor",
        "Factored second moment, no first moment: tiny state.",
    ),
    opt(
        OptimizerKind::Lion,
        "Lion",
        "One momentum buffer per parameter; the update is its sign (Chen et al. 2023).",
    ),
    opt(
        OptimizerKind::Muon,
        "Muon",
        "One momentum buffer per hidden matrix, orthogonalised by Newton-Schulz at the step; AdamW for embeddings, head, norms and biases.",
    ),
    opt(
        OptimizerKind::StateBytes,
        "Other (state bytes)",
        "Any other optimizer, given as its state bytes per trainable parameter.",
    ),
];

const EIGHT_BIT_LIBRARIES: [Choice<EightBitLibrary>; 2] = [
    opt(
        EightBitLibrary::Bitsandbytes,
        "bitsandbytes",
        "bitsandbytes AdamW8bit: one kernel updates each parameter and its states in place, no step temporaries.",
    ),
    opt(
        EightBitLibrary::Torchao,
        "torchao",
        "torchao AdamW8bit (0.6.1): a compiled step per parameter holding three FP32 buffers of its size (12 B an element, measured): the largest tensor's at the step.",
    ),
];

const FP8_RECIPES: [Choice<Fp8Recipe>; 4] = [
    opt(Fp8Recipe::None, "None", "No FP8 GEMMs."),
    opt(
        Fp8Recipe::TeDelayed,
        "TE delayed scaling",
        "Transformer Engine: FP8 copy and transpose of every layer weight (2 B/param) and a 1024-long amax history per FP8 tensor.",
    ),
    opt(
        Fp8Recipe::TeCurrent,
        "TE current scaling",
        "Transformer Engine per-tensor current scaling: FP8 copy and transpose of every layer weight, no amax history.",
    ),
    opt(
        Fp8Recipe::DeepSeekBlockwise,
        "DeepSeek-V3 block-wise",
        "FP8 weights with 128x128 block scales, BF16 Adam moments, FP32 master weights and gradients (DeepSeek-V3 report 3.3).",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    choice(
        ui,
        &mut s.precision.fp8_recipe,
        &FP8_RECIPES,
        "FP8 recipe",
        "FP8 training: what its GEMMs keep beside the weights (training only).",
    );
    let o = &mut s.optimizer;
    choice(
        ui,
        &mut o.kind,
        &OPTIMIZERS,
        "Optimizer",
        "What the optimizer keeps per parameter (training only).",
    );
    if o.kind == OptimizerKind::Adam8bit {
        choice(
            ui,
            &mut o.eight_bit_library,
            &EIGHT_BIT_LIBRARIES,
            "8-bit library",
            "Whose 8-bit Adam: the states are alike, the step's temporaries are not.",
        );
    }
    if o.kind == OptimizerKind::StateBytes {
        real_slider(
            ui,
            &mut o.state_bytes_per_param,
            0.0..=64.0,
            "Optimizer state",
            "B/param",
            "Bytes of optimizer state per trainable parameter (8 = two FP32 moments, 4 = one FP32 buffer, 2 = two BF16 moments).",
        );
    }
    toggle(
        ui,
        &mut o.foreach,
        "foreach / fused step",
        "PyTorch's default multi-tensor step: faster, but holds parameter-sized temporaries at the \
         step. Off under DeepSpeed ZeRO: DeepSpeed's FusedAdam, no temporaries.",
    );
}
