//! The four live charts. Each takes what it draws (estimates, prefs) and never edits anything except
//! its own view choices.

pub mod architecture;
pub mod chart;
pub mod composition;
mod composition_host;
mod composition_hover;
pub mod composition_legend;
mod composition_off;
pub mod composition_stages;
mod engine_printed;
pub mod explain;
pub mod measured_overlay;
pub mod roofline;
pub mod sensitivity;
pub mod step_time;
pub mod sweep;
mod sweep_view;
pub mod timeline;
mod timeline_cache;

use egui::{RichText, Ui};
use egui_plot::{AxisHints, Corner, GridInput, GridMark, Legend, Plot};

use crate::units::{MemoryUnit, fmt_sig};

/// A plot that does not pan or zoom (the scenario drives it, not the mouse); hover still shows values.
/// Its tick labels are drawn at full strength as soon as they fit (egui_plot fades labels in over
/// 60–80 points on x and 20–30 on y, which at projector font sizes left them faint or hidden).
pub fn static_plot<'a>(ui: &Ui, id: &str, height: f32) -> Plot<'a> {
    let body = ui.text_style_height(&egui::TextStyle::Body);
    Plot::new(id)
        .height(height)
        // Labels either drawn at full strength or not at all (no faint ones), with room between
        // neighbours ("10 20 50 100" ran together at 1024 × 700).
        .custom_x_axes(vec![
            AxisHints::new_x().label_spacing(body * 1.5..=body * 1.55),
        ])
        .custom_y_axes(vec![
            AxisHints::new_y().label_spacing(body * 1.2..=body * LABEL_GAP),
        ])
        .allow_zoom(false)
        .allow_drag(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .allow_double_click_reset(false)
        .set_margin_fraction(egui::vec2(0.02, 0.08))
}

/// Gap between two labelled ticks of a linear axis, in lines of body text.
pub const LABEL_GAP: f32 = 1.5;

/// egui_plot's default smallest grid spacing (points): `GridInput::base_step_size` is this many
/// points in plot units (egui_plot 0.38, `plot.rs`, `grid_spacing: Rangef::new(8.0, 300.0)`).
pub(crate) const GRID_MIN_POINTS: f64 = 8.0;

/// Grid marks for a linear axis whose labels stay readable at any font size: at the smallest step
/// of 1, 2, 2.5 or 5 × 10^k that puts two marks at least `gap` points apart (egui_plot's own
/// decade spacer skips to 100 GiB steps when 10 GiB ones are too close, leaving only "0 GiB").
pub fn linear_marks(gap: f32) -> impl Fn(GridInput) -> Vec<GridMark> {
    move |input: GridInput| {
        let (lo, hi) = input.bounds;
        let min_step = input.base_step_size / GRID_MIN_POINTS * f64::from(gap);
        if !(lo.is_finite() && hi.is_finite() && hi > lo && min_step > 0.0) {
            return Vec::new();
        }
        let mag = 10f64.powf(min_step.log10().floor());
        // 4 between 2.5 and 5: an axis just under 100 (a 79.19 GiB GPU's 87–89 GiB) keeps three
        // labels (0, 40, 80) where a step of 5 would leave two.
        let step = [1.0, 2.0, 2.5, 4.0, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= min_step * (1.0 - 1e-9))
            .unwrap_or(10.0 * mag);
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        (first..=last.min(first + 200))
            .map(|k| GridMark {
                value: k as f64 * step,
                step_size: step,
            })
            .collect()
    }
}

/// [`linear_marks`] for a plot drawn in `ui`: labelled ticks [`LABEL_GAP`] lines of text apart.
pub fn readable_marks(ui: &Ui) -> impl Fn(GridInput) -> Vec<GridMark> + use<> {
    linear_marks(ui.text_style_height(&egui::TextStyle::Body) * LABEL_GAP)
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

/// A legend's text size and row gap, fitted from frame to frame.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fit {
    font: f32,
    gap: f32,
}

/// A legend drawn by `add` (given its text size) within `height`, in the largest text from the
/// body size down to `min_font` at which it fits, then without gaps between rows: a legend that
/// fits is read, one that scrolls inside its cell is not ("Transient buffers" was cut at
/// 1280 × 720). The fit is measured on the drawn legend (wrapping and all) and corrected on the
/// next frame, which is requested; it grows back only with a line to spare, so it never
/// oscillates. Returns the legend's rectangle and how it fitted.
pub fn fitted_legend(
    ui: &mut Ui,
    id: &str,
    (height, min_font): (f32, f32),
    add: impl FnOnce(&mut Ui, f32),
) -> Fitted {
    let body = egui::TextStyle::Body.resolve(ui.style()).size;
    let gap = ui.spacing().item_spacing.y;
    let key = egui::Id::unique(("legend_fit", id));
    let initial = Fit { font: body, gap };
    let fit = ui.data(|d| d.get_temp::<Fit>(key)).unwrap_or(initial);
    // A change of mode (F5) or theme size starts over.
    let fit = if fit.font > body || fit.font < min_font.min(body) {
        initial
    } else {
        fit
    };
    let out = egui::ScrollArea::vertical()
        .id_salt(("legend", id))
        .max_height(height)
        .min_scrolled_height(0.0)
        .auto_shrink([false, true])
        .show(ui, |ui| {
            ui.spacing_mut().item_spacing.y = fit.gap;
            add(ui, fit.font);
        });
    let content = out.content_size.y;
    let next = if content > height + 0.5 {
        if fit.font > min_font {
            // In proportion to the overflow (text height scales with its size), at least 1 pt:
            // settles in a frame or two, not one per point.
            let by = (fit.font * (content / height - 1.0)).ceil().max(1.0);
            Fit {
                font: (fit.font - by).max(min_font),
                ..fit
            }
        } else {
            Fit { gap: 0.0, ..fit }
        }
    } else if content + 1.5 * body + 8.0 * gap < height {
        if fit.gap < gap {
            Fit { gap, ..fit }
        } else {
            let by = (0.5 * fit.font * (height / content.max(1.0) - 1.0))
                .floor()
                .max(1.0);
            Fit {
                font: (fit.font + by).min(body),
                ..fit
            }
        }
    } else {
        fit
    };
    if next != fit {
        ui.data_mut(|d| d.insert_temp(key, next));
        ui.ctx().request_repaint();
    }
    Fitted {
        rect: out.inner_rect,
        room: height - content,
        at_floor: next == fit && fit.font <= min_font && fit.gap <= 0.0,
    }
}

/// How a [`fitted_legend`] came out.
pub struct Fitted {
    /// The legend's rectangle.
    pub rect: egui::Rect,
    /// Height left below its rows, points (negative: rows cut off, reached by scrolling).
    pub room: f32,
    /// Its text is at the smallest size and its rows without gaps: it cannot shrink further.
    pub at_floor: bool,
}

/// Rows of text the legend under a plot gets (it scrolls if it needs more).
pub const LEGEND_ROWS: f32 = 2.0;

/// A plot and its legend, outside the plot area so that it never covers a point: beside the plot
/// in a wide cell (a projector's 16:9 rows are short), under it in a narrow one. `plot` draws the
/// plot at the height it is given. The legend's rectangle is published as "Legend: `chart`".
pub fn with_legend<R>(
    ui: &mut Ui,
    (chart, min_font): (&str, f32),
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
                    fitted_legend(ui, chart, (height, min_font), |ui, font| {
                        legend_rows(ui, font, items, false);
                    })
                    .rect
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
            .allocate_ui(size, |ui| {
                fitted_legend(ui, chart, (legend_h, min_font), |ui, font| {
                    legend_rows(ui, font, items, true);
                })
                .rect
            })
            .inner;
        crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Legend, chart, rect);
        r
    }
}

/// The legend's items (a swatch and a wrapping label each) in text of `font` points, on wrapped
/// rows or one per line.
fn legend_rows(ui: &mut Ui, font: f32, items: &[(egui::Color32, String)], wrapped: bool) {
    let item = |ui: &mut Ui, color: egui::Color32, text: &str| {
        swatch(ui, color);
        ui.add(egui::Label::new(RichText::new(text).size(font)).wrap());
    };
    if wrapped {
        ui.horizontal_wrapped(|ui| {
            // Spacing, not `add_space`: a space at the end of a row would not wrap and would
            // widen the legend past its column.
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
}

/// The side of a legend swatch (points).
fn swatch_size(ui: &Ui) -> f32 {
    ui.text_style_height(&egui::TextStyle::Body) * 0.7
}

/// A square of `color` the size of a line of text.
fn swatch(ui: &mut Ui, color: egui::Color32) {
    let s = swatch_size(ui);
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

/// The plot's data area, published as "Plot: `chart`".
pub fn plot_node(ui: &Ui, chart: &str, transform: &egui_plot::PlotTransform) {
    let rect = *transform.frame();
    crate::ui::a11y::rect_node(ui.ctx(), crate::ui::a11y::Part::Plot, chart, rect);
}

/// Indices of the `n` smallest of `values` (ties in order), for the rows a crowded legend or the
/// step-time view merges into one "N smaller" row.
pub fn smallest(values: &[f64], n: usize) -> Vec<usize> {
    let mut by_size: Vec<usize> = (0..values.len()).collect();
    by_size.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    by_size.truncate(n);
    by_size
}
