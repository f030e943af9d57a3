//! The memory chart of a llama.cpp CPU build (`-dev none`): no GPU holds anything, so the bar is the
//! host's buffers as llama.cpp prints them (model, KV cache / recurrent state, compute), drawn
//! without a capacity line (the host's RAM is not a scenario input) and with their values beside it.

use egui::{RichText, Ui};

use super::composition::Column;
use crate::estimator::engines::llamacpp::Buffers;
use crate::estimator::{Breakdown, Component};
use crate::report::llamacpp::host_names;
use crate::ui::{Prefs, theme};
use crate::units::Bytes;

/// The one bar: the host buffers as the components they are.
pub(super) fn columns(b: &Buffers) -> Vec<Column> {
    let mut parts = Breakdown::default();
    parts.set(Component::Weights, Bytes(b.host_model as f64));
    parts.set(Component::KvCache, Bytes(b.host_kv as f64));
    parts.set(Component::Transient, Bytes(b.host_compute as f64));
    vec![Column {
        label: "host buffers (llama.cpp -dev none)".to_owned(),
        short: "host".to_owned(),
        peak: false,
        limiting: false,
        parts,
    }]
}

/// The legend: each buffer under llama.cpp's name for it, and the total, in text of `font` points.
pub(super) fn legend(ui: &mut Ui, prefs: &Prefs, b: &Buffers, font: f32) {
    let u = prefs.unit;
    let (model_name, compute_name) = host_names(b);
    if !prefs.presentation {
        ui.label(RichText::new(format!("Host buffers ({})", u.label())).strong())
            .on_hover_text(
                "A CPU build (-dev none) keeps every buffer in host memory: llama.cpp's load log \
                 prints these three. No GPU is used, so there is no GPU capacity to hold them to.",
            );
    }
    let kv = if b.rs.layers > 0 { "KV + RS" } else { "KV" };
    let mut rows = [
        (
            Component::Transient,
            format!("{compute_name} compute"),
            b.host_compute,
        ),
        (Component::KvCache, format!("CPU {kv}"), b.host_kv),
        (
            Component::Weights,
            format!("{model_name} model"),
            b.host_model,
        ),
    ];
    // Top of the stack first, as the bars are stacked (`Component::ALL` order from the bottom).
    let rank = |c: Component| Component::ALL.iter().position(|x| *x == c);
    rows.sort_by_key(|(c, ..)| std::cmp::Reverse(rank(*c)));
    for (c, name, bytes) in rows {
        let size = ui.text_style_height(&egui::TextStyle::Body) * 0.8;
        ui.horizontal(|ui| {
            let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
            ui.painter()
                .rect_filled(rect, 2.0, theme::component_on(c, prefs.theme));
            let text = format!("{name}: {}", u.format(Bytes(bytes as f64)));
            ui.label(RichText::new(text).size(font));
        });
    }
    let total = Bytes(b.host_total() as f64);
    ui.label(
        RichText::new(format!("Host memory: {}", u.format(total)))
            .size(font)
            .strong(),
    );
}
