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

/// The legend with exact values of the current peak: top of the stack first, in text of `font`
/// points ([`super::fitted_legend`] fits it to the plot's height). Presentation leaves out the
/// heading, the totals and the per-layer table (the chart's title, the headline and the capacity
/// line say them), so that the components fit on a projector.
pub fn ui(
    ui: &mut Ui,
    prefs: &Prefs,
    (scenario, est): (&Scenario, &Estimate),
    off_total: Bytes,
    font: f32,
) {
    let u = prefs.unit;
    let m = &est.memory;
    let mut rows: Vec<(Option<Component>, egui::Color32, String)> = Component::ALL
        .iter()
        .rev()
        .filter(|c| m.peak.get(**c).get() > 0.0)
        .map(|c| {
            let text = format!("{}: {}", c.label(), u.format(m.peak.get(*c)));
            (Some(*c), theme::component_on(*c, prefs.theme), text)
        })
        .collect();
    if off_total.get() > 0.0 {
        let text = format!("Off-GPU: {}", u.format(off_total));
        rows.push((None, theme::offloaded_on(prefs.theme), text));
    }
    if !prefs.presentation {
        // Pipeline parallel: the peak is the limiting stage's, whichever stage the bars show.
        let at = m
            .limiting_stage()
            .map_or_else(String::new, |s| format!(", {}", s.label()));
        ui.label(RichText::new(format!("At the peak ({}){at}", u.label())).strong())
            .on_hover_text(
                "Per-GPU bytes of each component at the peak phase, top of the stack first. \
                 Hover a component for its formula with this scenario's numbers; click to pin \
                 it in a window.",
            );
    }
    for (component, color, text) in rows {
        let row = swatch_row(ui, color, RichText::new(text).size(font));
        match component {
            Some(c) => {
                let row = row.on_hover_ui(|ui| {
                    explained::explanation_ui(ui, &explain(scenario, est, c), u);
                    ui.label(RichText::new("Click to pin.").weak());
                });
                if row.clicked() {
                    explained::toggle(ui, c);
                }
            }
            None => {
                row.on_hover_text(format!(
                    "Host: {}\nNVMe: {}\nSecond tier: {}",
                    u.format(m.offloaded.host),
                    u.format(m.offloaded.nvme),
                    u.format(m.offloaded.second_tier)
                ));
            }
        }
    }
    if !prefs.presentation {
        ui.separator();
        ui.label(format!("Total: {}", u.format(m.gpu_total)));
        ui.label(format!("GPU memory: {} usable", u.format(m.capacity)))
            .on_hover_text(
                "What the CUDA runtime lets a process allocate (cudaMemGetInfo's total): the \
                 device's memory less the driver's reserve. The fit is measured against it.",
            );
    }
    explained::panel_ui(ui, scenario, est, u, !prefs.presentation);
}

/// A colour swatch and a label that wraps within the legend's width.
fn swatch_row(ui: &mut Ui, color: egui::Color32, text: RichText) -> egui::Response {
    let size = ui.text_style_height(&egui::TextStyle::Body) * 0.8;
    ui.horizontal(|ui| {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
        ui.painter().rect_filled(rect, 2.0, color);
        ui.add(egui::Label::new(text).wrap().sense(egui::Sense::click()))
    })
    .inner
}
