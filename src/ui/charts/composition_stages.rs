//! The composition chart's pipeline stages (PP > 1): a picker of the stage class whose phases the
//! bars show (the limiting stage unless another is picked), and one bar per class, the limiting one
//! marked.

use egui::Ui;

use super::composition::Column;
use crate::estimator::{Estimate, StageClass};
use crate::ui::Prefs;

/// The word shown with the limiting stage, in the picker and over its bar.
pub const LIMITING: &str = "limiting";

/// The stage class the bars show: the picked one while it exists, else the limiting one (`None`
/// without pipeline parallelism).
pub fn picked<'a>(prefs: &Prefs, est: &'a Estimate) -> Option<&'a StageClass> {
    let m = &est.memory;
    prefs
        .memory_stage
        .and_then(|i| m.stage_class(i))
        .or_else(|| m.limiting_stage())
}

/// The picker's text for a class: its label, and "· limiting" on the limiting one. `compact`
/// (presentation, large fonts): the stage numbers only, so that the row fits on one line.
pub fn picker_label(class: &StageClass, limiting: bool, compact: bool) -> String {
    let (a, b) = (class.first + 1, class.last() + 1);
    let label = match (compact, a == b) {
        (false, _) => class.label(),
        (true, true) => format!("{a}"),
        (true, false) => format!("{a}–{b}"),
    };
    if limiting {
        format!("{label} · {LIMITING}")
    } else {
        label
    }
}

/// One selectable label per stage class (nothing without PP); returns the height it took.
pub fn picker_ui(ui: &mut Ui, prefs: &mut Prefs, est: &Estimate) -> f32 {
    let m = &est.memory;
    let Some(limiting) = m.limiting_stage() else {
        return 0.0;
    };
    let u = prefs.unit;
    let shown = picked(prefs, est).map(|c| c.first);
    let row = ui.horizontal_wrapped(|ui| {
        let title = if prefs.presentation {
            "Stage:"
        } else {
            "Pipeline stage:"
        };
        ui.label(title).on_hover_text(
            "The bars show one pipeline stage's phases. Stages differ: the first holds the \
             embedding and the most micro-batches in flight (1F1B), the last the head and the \
             loss. The limiting stage has the largest peak: the one that must fit.",
        );
        for class in m.stage_classes() {
            let is_limiting = class.first == limiting.first;
            let hover = format!(
                "{}.\nPeak {} in the {} phase.",
                class.describe(),
                u.format(class.peak.total()),
                class.peak_phase.map_or("—", |p| p.label())
            );
            let text = picker_label(class, is_limiting, prefs.presentation);
            let on = shown == Some(class.first);
            if ui.selectable_label(on, text).on_hover_text(hover).clicked() {
                // Picking the limiting stage follows it when the scenario changes.
                prefs.memory_stage = (!is_limiting).then_some(class.first);
            }
        }
    });
    row.response.rect.height() + ui.spacing().item_spacing.y
}

/// One bar per stage class (its peak with context and reserve), after the phase bars.
pub(super) fn columns(est: &Estimate, out: &mut Vec<Column>) {
    let m = &est.memory;
    let limiting = m.limiting_stage().map(|c| c.first);
    for class in m.stage_classes() {
        let is_limiting = limiting == Some(class.first);
        let mark = if is_limiting { ", limiting" } else { "" };
        let (a, b) = (class.first + 1, class.last() + 1);
        let short = if a == b {
            format!("st {a}")
        } else {
            format!("st {a}–{b}")
        };
        out.push(Column {
            label: format!("{} peak{mark}", class.label()),
            short,
            peak: false,
            limiting: is_limiting,
            parts: class.peak,
        });
    }
}
