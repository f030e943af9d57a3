//! Context parallelism in the parallel group: the CP degree and the attention algorithm
//! (docs/context-parallel.md).

use egui::Ui;

use crate::scenario::{CpStyle, Parallelism};
use crate::ui::widgets::{self, Choice, choice, int_slider, opt};

const STYLES: [Choice<CpStyle>; 2] = [
    opt(
        CpStyle::Ring,
        CpStyle::Ring.label(),
        "Ring attention (Megatron-Core / TransformerEngine P2P): each rank passes its K/V chunk to the next, cp − 1 times per layer, while it computes attention on the chunk it holds. Any head count; the forward keeps the received chunks until the layer's attention ends.",
    ),
    opt(
        CpStyle::AllToAll,
        CpStyle::AllToAll.label(),
        "DeepSpeed-Ulysses: all-to-alls turn the sequence split into a head split around attention (four per layer and pass, not overlapped). Needs heads and KV heads divisible by CP.",
    ),
];

/// The CP slider and, when CP > 1, its style.
pub fn cp_ui(ui: &mut Ui, p: &mut Parallelism) {
    int_slider(
        ui,
        &mut p.cp,
        widgets::documented("parallel.cp", 1..=64),
        true,
        "Context parallel",
        "GPUs",
        "Split every sequence over GPUs (training): each holds seq_len ÷ CP tokens, so activations shrink by CP while attention still sees the whole sequence. Costs K/V exchange per layer; worth it from ~32K tokens.",
    );
    if p.cp > 1 {
        choice(
            ui,
            &mut p.cp_style,
            &STYLES,
            "Context-parallel style",
            "How the ranks exchange the sequence for attention.",
        );
    }
}
