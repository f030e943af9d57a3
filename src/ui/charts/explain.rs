//! Explained numbers in the composition legend: a component's formula, the formula filled in with the
//! scenario's values, its source and assumption (all text from `estimator::explain`), and the
//! per-layer view of a transformer. Nothing is computed here. Hovering a legend entry shows the
//! explanation as a tooltip; clicking pins it in a window that follows the scenario as it changes.

use egui::{CollapsingHeader, RichText, Ui};

use crate::estimator::explain::{Explanation, explain, per_layer};
use crate::estimator::{Component, Estimate};
use crate::scenario::Scenario;
use crate::units::MemoryUnit;

/// Id of the component whose explanation is pinned below the legend (runtime view state).
fn pinned_id() -> egui::Id {
    egui::Id::unique("composition-explained-component")
}

/// The pinned component, if any.
pub fn pinned(ui: &Ui) -> Option<Component> {
    ui.data(|d| d.get_temp::<Component>(pinned_id()))
}

/// Pins `c` (or unpins it when it is already pinned).
pub fn toggle(ui: &Ui, c: Component) {
    let now = pinned(ui);
    ui.data_mut(|d| {
        if now == Some(c) {
            d.remove::<Component>(pinned_id());
        } else {
            d.insert_temp(pinned_id(), c);
        }
    });
}

/// The explanation of one component: what a tooltip and the pinned panel show.
pub fn explanation_ui(ui: &mut Ui, x: &Explanation, u: MemoryUnit) {
    ui.set_max_width(520.0);
    ui.label(RichText::new(format!("{} = {}", x.title, u.format(x.value))).strong());
    ui.label(format!("Formula — {}", x.formula));
    ui.label(format!("Filled in — {}", x.filled));
    ui.label(RichText::new(format!("Source — {}", x.source)).small());
    if !x.assumption.is_empty() {
        ui.label(RichText::new(format!("Assumption — {}", x.assumption)).small());
    }
}

/// The pinned explanation (if any) in its own window, and the per-layer view under the legend.
pub fn panel_ui(ui: &mut Ui, scenario: &Scenario, est: &Estimate, u: MemoryUnit, layers: bool) {
    if let Some(c) = pinned(ui) {
        let x = explain(scenario, est, c);
        let mut open = true;
        egui::Window::new("Explained number")
            .open(&mut open)
            .resizable(true)
            .default_width(560.0)
            .show(ui.ctx(), |ui| explanation_ui(ui, &x, u));
        if !open {
            toggle(ui, c);
        }
    }
    if !layers {
        return;
    }
    let (layers, rows) = per_layer(scenario, est);
    if rows.is_empty() {
        return;
    }
    CollapsingHeader::new("Per layer")
        .id_salt("composition-per-layer")
        .show(ui, |ui| {
            egui::Grid::new("per-layer-grid")
                .num_columns(3)
                .striped(true)
                .show(ui, |ui| {
                    ui.label("");
                    ui.label("one layer");
                    ui.label(format!("× {layers}"));
                    ui.end_row();
                    for r in rows.iter().filter(|r| r.per_layer.get() > 0.0) {
                        ui.label(r.label);
                        ui.label(u.format(r.per_layer));
                        ui.label(u.format(r.stage));
                        ui.end_row();
                    }
                });
            ui.label(
                RichText::new(
                    "One micro-batch; layers on the stage that sets the peak. Weights after TP; \
                     activations saved without checkpointing; KV at the last decode step.",
                )
                .small(),
            );
        });
}
