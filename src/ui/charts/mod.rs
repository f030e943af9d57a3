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

/// A chart's title (never wrapped: truncated with its full text on hover) with its explanation.
pub fn title(ui: &mut Ui, prefs: &crate::ui::Prefs, text: &str, hover: &str) {
    let size = crate::ui::theme::chart_title_size(prefs);
    ui.add(egui::Label::new(RichText::new(text).size(size).strong()).truncate())
        .on_hover_text(format!("{text}\n{hover}"));
}

/// Rows of text the legend under a plot gets (it scrolls if it needs more).
pub const LEGEND_ROWS: f32 = 2.0;

/// Height of the legend under a plot.
pub fn legend_height(ui: &Ui) -> f32 {
    LEGEND_ROWS * (ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y)
}

/// The legend under a plot, outside its area so that it never covers a point: one swatch and
/// label per item, wrapping within [`legend_height`]. Publishes its rectangle as "Legend: `chart`".
pub fn legend_below(ui: &mut Ui, chart: &str, items: &[(egui::Color32, String)]) {
    let size = egui::vec2(ui.available_width(), legend_height(ui));
    let rect = ui
        .allocate_ui(size, |ui| {
            egui::ScrollArea::vertical()
                .id_salt(("legend", chart))
                .max_height(size.y)
                .auto_shrink([false, true])
                .show(ui, |ui| {
                    ui.horizontal_wrapped(|ui| {
                        for (color, text) in items {
                            swatch(ui, *color);
                            ui.add(egui::Label::new(text.as_str()).wrap());
                            ui.add_space(8.0);
                        }
                    });
                })
                .inner_rect
        })
        .inner;
    crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Legend, chart, rect);
}

/// A square of `color` the size of a line of text.
fn swatch(ui: &mut Ui, color: egui::Color32) {
    let s = ui.text_style_height(&egui::TextStyle::Body) * 0.7;
    let (rect, _) = ui.allocate_exact_size(egui::vec2(s, s), egui::Sense::hover());
    ui.painter().rect_filled(rect, 2.0, color);
}

/// The current scenario's marker at plot position `at`, `radius` points around it, published as
/// "Marker: `chart`".
pub fn marker_node(
    ui: &Ui,
    chart: &str,
    transform: &egui_plot::PlotTransform,
    at: [f64; 2],
    radius: f32,
) {
    let p = transform.position_from_point(&egui_plot::PlotPoint::new(at[0], at[1]));
    let rect = egui::Rect::from_center_size(p, egui::Vec2::splat(2.0 * radius));
    crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Marker, chart, rect);
}
