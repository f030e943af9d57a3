//! The composition chart's legend: the current peak's components with exact values, top of the
//! stack first (the order the bars are stacked in, read from the top). Hovering a component shows
//! its explanation; clicking pins it below the legend (`super::explain`).

use egui::{RichText, Ui};

use super::explain as explained;
use crate::estimator::explain::explain;
use crate::estimator::{Component, Estimate};
use crate::scenario::Scenario;
use crate::ui::{Prefs, theme};
use crate::units::Bytes;

/// The legend with exact values of the current peak: top of the stack first.
pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, off_total: Bytes) {
    let u = prefs.unit;
    let m = &est.memory;
    ui.label(RichText::new(format!("At the peak ({})", u.label())).strong())
        .on_hover_text(
            "Per-GPU bytes of each component at the peak phase, top of the stack first. Hover a \
             component for its formula with this scenario's numbers; click to pin it in a window.",
        );
    for c in Component::ALL.iter().rev() {
        let b = m.peak.get(*c);
        if b.get() > 0.0 {
            let row = swatch_row(
                ui,
                theme::component_on(*c, prefs.theme),
                format!("{}: {}", c.label(), u.format(b)),
            )
            .on_hover_ui(|ui| {
                explained::explanation_ui(ui, &explain(scenario, est, *c), u);
                ui.label(RichText::new("Click to pin.").weak());
            });
            if row.clicked() {
                explained::toggle(ui, *c);
            }
        }
    }
    ui.separator();
    ui.label(format!("Total: {}", u.format(m.gpu_total)));
    ui.label(format!("GPU memory: {}", u.format(m.capacity)));
    if off_total.get() > 0.0 {
        swatch_row(
            ui,
            theme::offloaded_on(prefs.theme),
            format!("Off-GPU: {}", u.format(off_total)),
        )
        .on_hover_text(format!(
            "Host: {}\nNVMe: {}\nSecond tier: {}",
            u.format(m.offloaded.host),
            u.format(m.offloaded.nvme),
            u.format(m.offloaded.second_tier)
        ));
    }
    explained::panel_ui(ui, scenario, est, u);
}

/// A colour swatch and a label that wraps within the legend's width.
fn swatch_row(ui: &mut Ui, color: egui::Color32, text: String) -> egui::Response {
    let size = ui.text_style_height(&egui::TextStyle::Body) * 0.8;
    ui.horizontal(|ui| {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
        ui.painter().rect_filled(rect, 2.0, color);
        ui.add(egui::Label::new(text).wrap().sense(egui::Sense::click()))
    })
    .inner
}
