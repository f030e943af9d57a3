//! Optimizer controls: what the optimizer keeps per parameter (training only).

use egui::Ui;

use crate::scenario::{OptimizerKind, Scenario};
use crate::ui::widgets::{Choice, choice, opt, toggle};

const OPTIMIZERS: [Choice<OptimizerKind>; 6] = [
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
        "bitsandbytes: two 8-bit moments with block scales (~2 bytes per parameter).",
    ),
    opt(
        OptimizerKind::Adafactor,
        "Adafactor",
        "Factored second moment, no first moment: tiny state.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let o = &mut s.optimizer;
    choice(
        ui,
        &mut o.kind,
        &OPTIMIZERS,
        "Optimizer",
        "What the optimizer keeps per parameter (training only).",
    );
    toggle(
        ui,
        &mut o.foreach,
        "foreach / fused step",
        "PyTorch's default multi-tensor step: faster, but holds parameter-sized temporaries at the step.",
    );
}
