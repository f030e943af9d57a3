//! The four live charts. Each takes what it draws (estimates, prefs) and never edits anything except
//! its own view choices.

pub mod architecture;
pub mod chart;
pub mod composition;
mod composition_hover;
pub mod composition_legend;
mod composition_off;
pub mod explain;
pub mod measured_overlay;
pub mod roofline;
pub mod sensitivity;
pub mod sweep;
mod sweep_view;
pub mod timeline;

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

/// A plot and its legend, outside the plot area so that it never covers a point: beside the plot
/// in a wide cell (a projector's 16:9 rows are short), under it in a narrow one. `plot` draws the
/// plot at the height it is given. The legend's rectangle is published as "Legend: `chart`".
pub fn with_legend<R>(
    ui: &mut Ui,
    chart: &str,
    height: f32,
    items: &[(egui::Color32, String)],
    plot: impl FnOnce(&mut Ui, f32) -> R,
) -> R {
    let row = ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
    let width = ui.available_width();
    if width > 2.4 * height {
        let gap = ui.spacing().item_spacing.x;
        let legend_w = (width * 0.34).clamp(140.0, 340.0);
        let plot_w = width - legend_w - gap;
        ui.horizontal_top(|ui| {
            let r = ui
                .vertical(|ui| {
                    ui.set_width(plot_w);
                    plot(ui, height)
                })
                .inner;
            let rect = ui
                .vertical(|ui| {
                    ui.set_width(legend_w);
                    legend_items(ui, chart, height, items, false)
                })
                .inner;
            crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Legend, chart, rect);
            r
        })
        .inner
    } else {
        let legend_h = LEGEND_ROWS * row;
        let r = plot(ui, (height - legend_h).max(80.0));
        let size = egui::vec2(width, legend_h);
        let rect = ui
            .allocate_ui(size, |ui| legend_items(ui, chart, legend_h, items, true))
            .inner;
        crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Legend, chart, rect);
        r
    }
}

/// The legend's items (a swatch and a wrapping label each) within `max_height`, on wrapped rows
/// or one per line; returns the rectangle they take.
fn legend_items(
    ui: &mut Ui,
    chart: &str,
    max_height: f32,
    items: &[(egui::Color32, String)],
    wrapped: bool,
) -> egui::Rect {
    egui::ScrollArea::vertical()
        .id_salt(("legend", chart))
        .max_height(max_height)
        .min_scrolled_height(0.0)
        .auto_shrink([false, true])
        .show(ui, |ui| {
            let item = |ui: &mut Ui, color: egui::Color32, text: &str| {
                swatch(ui, color);
                ui.add(egui::Label::new(text).wrap());
            };
            if wrapped {
                ui.horizontal_wrapped(|ui| {
                    // Spacing, not `add_space`: a space at the end of a row would not wrap and
                    // would widen the legend past its column.
                    ui.spacing_mut().item_spacing.x = 8.0;
                    for (color, text) in items {
                        item(ui, *color, text);
                    }
                });
            } else {
                for (color, text) in items {
                    ui.horizontal_top(|ui| item(ui, *color, text));
                }
            }
        })
        .inner_rect
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
