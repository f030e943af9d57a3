//! Off-GPU bytes (host, NVMe, second tier) beside the memory chart, on their own scale: a 325 GiB
//! host bar drawn on a 40 GiB card's axis would cross its capacity line and read as "does not fit".
//! The panel names itself and its value above the bar: an own-scale axis says nothing the value
//! does not, and its labels took the narrow panel's width (at 1280 × 720 in presentation mode they
//! and the legend's last row were clipped, leaving an unnamed purple bar).

use egui::{RichText, Ui};
use egui_plot::{AxisHints, Bar, BarChart, PlotPoint};

use super::static_plot;
use crate::ui::a11y::{self, Part};
use crate::ui::{Prefs, theme};
use crate::units::Bytes;

/// The panel's heading.
const HEADING: &str = "Off-GPU";

/// The off-GPU heading and value, then its bar from 0 to a bit below the top, no capacity line.
pub fn ui(ui: &mut Ui, prefs: &Prefs, off: (Bytes, Bytes, Bytes), height: f32) {
    let u = prefs.unit;
    let (host, nvme, second_tier) = off;
    let total = host + nvme + second_tier;
    let hover = format!(
        "Off-GPU bytes on their own scale: {}\nHost: {}\nNVMe: {}\nSecond tier: {}",
        u.format(total),
        u.format(host),
        u.format(nvme),
        u.format(second_tier)
    );
    let top = ui.cursor().top();
    ui.vertical_centered(|ui| {
        ui.label(RichText::new(HEADING).small())
            .on_hover_text(&hover);
        ui.label(RichText::new(u.format(total)).small().strong())
            .on_hover_text(&hover);
    });
    let height = (height - (ui.cursor().top() - top)).max(40.0);
    let value = u.value(total);
    let fill = theme::offloaded_on(prefs.theme);
    let shown = static_plot(ui, "composition_off", height)
        .reset()
        .default_y_bounds(0.0, (value * 1.12).max(1e-3))
        .include_x(-0.5)
        .include_x(0.5)
        .show_grid([false, false])
        // The x axis stays (unlabelled) so the bar's foot lies near the GPU bars' (within a few
        // points: their axis is as tall as their labels' font).
        .show_axes([true, false])
        .custom_x_axes(vec![AxisHints::new_x().formatter(|_, _| String::new())])
        .label_formatter(|_| None)
        .show(ui, |plot_ui| {
            let bar = Bar::new(0.0, value)
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
        .rect_from_values(&PlotPoint::new(-0.3, 0.0), &PlotPoint::new(0.3, value));
    a11y::rect_node(ui.ctx(), Part::Marker, "Off-GPU", rect);
    a11y::rect_node(ui.ctx(), Part::Plot, "Off-GPU", *shown.transform.frame());
    shown.response.on_hover_text(hover);
}
