//! The four live charts. Each takes what it draws (estimates, prefs) and never edits anything except
//! its own view choices.

pub mod architecture;
pub mod chart;
pub mod composition;
mod composition_hover;
pub mod composition_legend;
pub mod explain;
pub mod roofline;
pub mod sensitivity;
pub mod sweep;
mod sweep_view;

use egui::{RichText, Ui};
use egui_plot::{Corner, Legend, Plot};

use crate::units::{MemoryUnit, fmt_sig};

/// A plot that does not pan or zoom (the scenario drives it, not the mouse); hover still shows values.
pub fn static_plot<'a>(id: &str, height: f32) -> Plot<'a> {
    Plot::new(id)
        .height(height)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .set_margin_fraction(egui::vec2(0.02, 0.08))
}

/// Legend in insertion order (we insert in stack order).
pub fn legend(corner: Corner) -> Legend {
    Legend::default()
        .follow_insertion_order(true)
        .position(corner)
        .background_alpha(0.85)
}

/// Tick label of a memory axis: `12.5 GiB`.
pub fn memory_tick(unit: MemoryUnit, value: f64) -> String {
    format!("{} {}", fmt_sig(value), unit.label())
}

/// A chart's title with its hover explanation.
pub fn title(ui: &mut Ui, text: &str, hover: &str) {
    ui.label(RichText::new(text).strong()).on_hover_text(hover);
}
