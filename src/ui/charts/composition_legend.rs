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
/// line say them), so that the components fit on a projector; there, `merge` rows fewer than there
/// are components: the smallest ones share one "N smaller" row ([`merged`]).
pub fn ui(
    ui: &mut Ui,
    prefs: &Prefs,
    (scenario, est): (&Scenario, &Estimate),
    (off_total, merge): (Bytes, usize),
    font: f32,
) {
    let u = prefs.unit;
    let m = &est.memory;
    let mut shown: Vec<Component> = Component::ALL
        .iter()
        .rev()
        .copied()
        .filter(|c| m.peak.get(*c).get() > 0.0)
        .collect();
    let other = smallest(&mut shown, merge, |c| m.peak.get(c).get());
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
    for c in shown {
        let text = format!("{}: {}", c.label(), u.format(m.peak.get(c)));
        let color = theme::component_on(c, prefs.theme);
        let row = swatch_row(ui, color, RichText::new(text).size(font)).on_hover_ui(|ui| {
            explained::explanation_ui(ui, &explain(scenario, est, c), u);
            ui.label(RichText::new("Click to pin.").weak());
        });
        if row.clicked() {
            explained::toggle(ui, c);
        }
    }
    merged_row(ui, prefs, est, &other, font);
    // Presentation: the off-GPU panel's heading names it and its value (a row fewer to fit).
    if off_total.get() > 0.0 && !prefs.presentation {
        let text = format!("Off-GPU: {}", u.format(off_total));
        let color = theme::offloaded_on(prefs.theme);
        swatch_row(ui, color, RichText::new(text).size(font)).on_hover_text(format!(
            "Host: {}\nNVMe: {}\nSecond tier: {}",
            u.format(m.offloaded.host),
            u.format(m.offloaded.nvme),
            u.format(m.offloaded.second_tier)
        ));
    }
    if !prefs.presentation {
        ui.separator();
        // At the legend's fitted size, as the rows above: at full size they were the lines cut
        // off at the bottom of a small window.
        ui.label(RichText::new(format!("Total: {}", u.format(m.gpu_total))).size(font));
        ui.label(RichText::new(format!("GPU memory: {} usable", u.format(m.capacity))).size(font))
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

/// Removes the `merge + 1` smallest of `shown` (by `bytes`, keeping the others' order) and returns
/// them, smallest first: one row then stands for them, `merge` rows fewer. Nothing when there
/// would be fewer than two rows left.
fn smallest(
    shown: &mut Vec<Component>,
    merge: usize,
    bytes: impl Fn(Component) -> f64,
) -> Vec<Component> {
    if merge == 0 || shown.len() < merge + 3 {
        return Vec::new();
    }
    let sizes: Vec<f64> = shown.iter().map(|c| bytes(*c)).collect();
    let out: Vec<Component> = super::smallest(&sizes, merge + 1)
        .into_iter()
        .map(|i| shown[i])
        .collect();
    shown.retain(|c| !out.contains(c));
    out
}

/// What a merge count was fitted to: the legend's component rows and its cell (points, rounded).
/// Another scenario, mode or window size starts the count over from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeKey {
    rows: usize,
    size: (i32, i32),
}

impl MergeKey {
    pub fn new(rows: usize, (width, height): (f32, f32)) -> Self {
        MergeKey {
            rows,
            size: (width.round() as i32, height.round() as i32),
        }
    }
}

/// The number of rows the presentation legend merges for `key`, as the last frames fitted it.
pub fn merged(ui: &Ui, key: MergeKey) -> usize {
    ui.data(|d| d.get_temp::<(usize, MergeKey)>(merge_id()))
        .filter(|(_, k)| *k == key)
        .map_or(0, |(merge, _)| merge)
}

/// After drawing: while the legend's smallest text still cuts rows off, merge as many more rows as
/// whole lines are cut (at least one; a merged row frees a line or more, so this never merges more
/// than it needs, except where a row wraps). The count only grows for one `key`: it never
/// un-merges and re-merges (no oscillation), and the same scenario and window size always settle
/// on the same count.
pub fn refit(ui: &Ui, fitted: &super::Fitted, merge: usize, key: MergeKey) {
    let line = ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
    // `smallest` leaves at least two rows besides the merged one.
    let most = key.rows.saturating_sub(3);
    // A row cut by a few points is still read: merging starts at a quarter of a line.
    let next = if fitted.at_floor && fitted.room < -0.25 * line {
        let lines = (-fitted.room / line).floor().max(1.0) as usize;
        (merge + lines).min(most)
    } else {
        merge
    };
    let stored = ui.data(|d| d.get_temp::<(usize, MergeKey)>(merge_id()));
    if stored != Some((next, key)) {
        ui.data_mut(|d| d.insert_temp(merge_id(), (next, key)));
        if next != merge {
            ui.ctx().request_repaint();
        }
    }
}

fn merge_id() -> egui::Id {
    egui::Id::unique("composition_legend_merge")
}

/// One row for the components `smallest` took out: their count and sum, each on hover.
fn merged_row(ui: &mut Ui, prefs: &Prefs, est: &Estimate, other: &[Component], font: f32) {
    if other.is_empty() {
        return;
    }
    let (u, m) = (prefs.unit, &est.memory);
    let sum = other
        .iter()
        .map(|c| m.peak.get(*c))
        .fold(Bytes(0.0), |a, b| a + b);
    let text = format!("{} smaller: {}", other.len(), u.format(sum));
    // No swatch colour: the row stands for several.
    let row = swatch_row(
        ui,
        egui::Color32::TRANSPARENT,
        RichText::new(text).size(font),
    );
    let list: Vec<String> = other
        .iter()
        .map(|c| format!("{}: {}", c.label(), u.format(m.peak.get(*c))))
        .collect();
    row.on_hover_text(format!(
        "Too many components for the legend's height: the smallest share this row.\n{}",
        list.join("\n")
    ));
}
