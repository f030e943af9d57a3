//! Off-GPU bytes (host, NVMe, second tier) beside the memory chart, on their own scale: a 325 GiB
//! host bar drawn on a 40 GiB card's axis would cross its capacity line and read as "does not fit".

use egui::Ui;
use egui_plot::{AxisHints, Bar, BarChart, PlotPoint};

use super::{memory_tick, static_plot};
use crate::ui::a11y::{self, Part};
use crate::ui::{Prefs, theme};
use crate::units::Bytes;

/// The off-GPU bar, its own axis from 0 to a bit above it, no capacity line.
pub fn ui(ui: &mut Ui, prefs: &Prefs, off_total: Bytes, height: f32) {
    let u = prefs.unit;
    let off = u.value(off_total);
    let fill = theme::offloaded_on(prefs.theme);
    let shown = static_plot(ui, "composition_off", height)
        .y_grid_spacer(super::readable_marks(ui))
        .reset()
        .default_y_bounds(0.0, (off * 1.12).max(1e-3))
        .include_x(-0.5)
        .include_x(0.5)
        .show_grid([false, true])
        .y_axis_min_width(ui.text_style_height(&egui::TextStyle::Small) * 3.0)
        .custom_x_axes(vec![
            AxisHints::new_x()
                .tick_label_font(egui::TextStyle::Small.resolve(ui.style()))
                .formatter(|mark, _| {
                    if mark.value.abs() < 1e-6 {
                        "off-GPU".to_owned()
                    } else {
                        String::new()
                    }
                }),
        ])
        .y_axis_formatter(move |mark, _| memory_tick(u, mark.value))
        .label_formatter(move |pos| match pos {
            egui_plot::HoverPosition::Elsewhere { position } => Some(memory_tick(u, position.y)),
            egui_plot::HoverPosition::NearDataPoint { .. } => None,
        })
        .show(ui, |plot_ui| {
            let bar = Bar::new(0.0, off)
                .name("off-GPU (host, NVMe, second tier)")
                .width(0.6)
                .fill(fill)
                .stroke(egui::Stroke::new(1.0, theme::bar_outline(prefs.theme)));
            plot_ui.bar_chart(
                BarChart::new("Off-GPU", vec![bar])
                    .color(fill)
                    .element_formatter(Box::new(|_, _| String::new())),
            );
        });
    let rect = shown
        .transform
        .rect_from_values(&PlotPoint::new(-0.3, 0.0), &PlotPoint::new(0.3, off));
    a11y::rect_node(ui.ctx(), Part::Marker, "Off-GPU", rect);
    a11y::rect_node(ui.ctx(), Part::Plot, "Off-GPU", *shown.transform.frame());
    shown.response.on_hover_text(format!(
        "Off-GPU (host, NVMe, second tier): {}, on its own scale.",
        u.format(off_total)
    ));
}
