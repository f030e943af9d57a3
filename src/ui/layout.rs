//! The central area, top to bottom in fixed places: (presentation) a title line with the scenario's
//! name and verdict; the headline; a status band of fixed height (diagnostics on the left, "make it
//! fit" on the right, each scrolling inside the band), so a verdict that flips mid-drag never moves
//! a chart; then the charts ([`Chart`]) sized to the height left. Normal mode is a 2 × 2 grid with
//! the sensitivity chart below it (scroll for it); presentation mode fits its 2 × 2 grid to the
//! screen without scrolling (the sensitivity chart is left to the desk).

use egui::{RichText, Ui};

use super::a11y::{self, Part};
use super::charts::chart::{Chart, ChartCtx};
use super::{Prefs, headline, theme};
use crate::estimator::solver::{self, FitCache, FitOptions};
use crate::estimator::{Estimate, estimate};
use crate::scenario::Scenario;

/// Smallest plot height; below it the chart area scrolls instead of squashing.
const MIN_CHART: f32 = 120.0;

/// Normal mode: a 2 × 2 grid.
const GRID: [[Chart; 2]; 2] = [
    [Chart::Memory, Chart::Roofline],
    [Chart::Architecture, Chart::Sweep],
];

/// Presentation mode: the memory chart and the sweep on top.
const PRESENTATION: [[Chart; 2]; 2] = [
    [Chart::Memory, Chart::Sweep],
    [Chart::Roofline, Chart::Architecture],
];

/// Draws the area from the frame's one estimate of `scenario`; returns a scenario to adopt when
/// the user applies a make-it-fit suggestion.
pub fn central(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Scenario>,
    scratch: &mut Scenario,
    fit: &mut FitCache,
) -> Option<Scenario> {
    ui.data_mut(|d| {
        let drawn = d.get_temp_mut_or_default::<Drawn>(drawn_id());
        drawn.central = Some(ui.max_rect());
        drawn.charts.clear();
    });
    let base = baseline.map(|b| (b, estimate(b)));
    let largest = |s: &Scenario| {
        solver::max_micro_batch(s)
            .value()
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    };
    let cur_col = headline::Column {
        title: "Current",
        estimate: current,
        largest_batch: largest(scenario),
        batch_words: headline::batch_wording(scenario),
        family: super::family::view(scenario.model.family),
    };
    let base_col = base.as_ref().map(|(b, e)| headline::Column {
        title: "Baseline",
        estimate: e,
        largest_batch: largest(b),
        batch_words: headline::batch_wording(b),
        family: super::family::view(b.model.family),
    });
    if prefs.presentation {
        title_line(ui, prefs, scenario, current);
    }
    let row = ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
    let head_h = if base_col.is_some() {
        5.0 * (row + 4.0)
    } else {
        let verdict = if prefs.presentation {
            0.0
        } else {
            theme::verdict_size(prefs) + 18.0
        };
        // A narrow area wraps the speed line: one more row, decided by the width alone.
        let narrow = if ui.available_width() < 900.0 {
            row
        } else {
            0.0
        };
        verdict.max(2.0 * row) + row + narrow
    };
    band(ui, "headline_band", head_h, |ui| {
        headline::ui(ui, prefs, &cur_col, base_col.as_ref());
    });
    let status_rows = if prefs.presentation { 1.2 } else { 3.0 };
    let adopt = band(ui, "status_band", status_rows * row, |ui| {
        status(ui, prefs, scenario, current, fit)
    });
    ui.separator();
    let mut cx = ChartCtx {
        prefs,
        scenario,
        estimate: current,
        baseline: base.as_ref().map(|(b, e)| (*b, e)),
        scratch,
        height: MIN_CHART,
    };
    charts(ui, &mut cx);
    adopt
}

/// A region of exactly `height` (full width) whose contents scroll inside it: what is drawn in it
/// never moves what comes below.
fn band<R>(ui: &mut Ui, id: &str, height: f32, add: impl FnOnce(&mut Ui) -> R) -> R {
    let size = egui::vec2(ui.available_width(), height);
    ui.allocate_ui(size, |ui| {
        ui.set_min_size(size);
        egui::ScrollArea::vertical()
            .id_salt(id)
            .max_height(height)
            // Not the default 64 px floor: the band is exactly `height`.
            .min_scrolled_height(height)
            .auto_shrink([false, false])
            .show(ui, add)
            .inner
    })
    .inner
}

/// Presentation: the scenario's name and the verdict, as a title.
fn title_line(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, current: &Estimate) {
    let (verdict, color) = super::headline::verdict_words(prefs, current);
    let size = theme::title_size(prefs);
    ui.horizontal(|ui| {
        ui.add(
            egui::Label::new(RichText::new(verdict).size(size).strong().color(color))
                .selectable(false),
        );
        ui.add(egui::Label::new(RichText::new(scenario.title()).size(size).strong()).truncate());
    });
}

/// Diagnostics on the left, make-it-fit (and which quantization fits) on the right.
fn status(
    ui: &mut Ui,
    prefs: &Prefs,
    scenario: &Scenario,
    current: &Estimate,
    fit: &mut FitCache,
) -> Option<Scenario> {
    ui.columns(2, |cols| {
        let [left, right] = cols else {
            return None;
        };
        headline::diagnostics_ui(left, prefs, current);
        // First the one-line toggle, then the list that may scroll inside the band.
        super::fit::quant_ui(right, prefs, scenario);
        // The search runs only when the scenario changed (memoized on the scenario itself).
        if current.memory.fits {
            None
        } else {
            super::fit::ui(right, prefs, fit.get(scenario, FitOptions::default()))
        }
    })
}

/// The chart grid, each row as tall as the height left allows (never below [`MIN_CHART`]). What a
/// row needs besides its plots (titles, selectors, legends, gaps) is measured on the frame before
/// (first guessed from the text size), so the grid fills the height exactly at any font size.
fn charts(ui: &mut Ui, cx: &mut ChartCtx<'_>) {
    let presentation = cx.prefs.presentation;
    if presentation && cx.prefs.slides {
        slide(ui, cx);
        return;
    }
    let rows = if presentation { &PRESENTATION } else { &GRID };
    let guess = theme::chart_title_size(cx.prefs) * 1.25 + 3.0 * ui.spacing().item_spacing.y + 10.0;
    let key = egui::Id::unique(("chart_row_overhead", presentation));
    let overhead = ui.data(|d| d.get_temp::<f32>(key)).unwrap_or(guess);
    let n = rows.len() as f32;
    let avail = ui.available_height();
    let width = ui.available_width();
    egui::ScrollArea::vertical()
        .id_salt(("charts", presentation))
        .auto_shrink([false, false])
        .show(ui, |ui| {
            // This frame's width, not the content width a scroll area remembers from the last.
            ui.set_max_width(width - ui.spacing().scroll.allocated_width());
            let h = ((avail - n * overhead) / n).floor().max(MIN_CHART);
            let top = ui.cursor().top();
            for (i, row) in rows.iter().enumerate() {
                if i > 0 {
                    ui.separator();
                }
                cx.height = h;
                ui.columns(2, |cols| {
                    for (col, chart) in cols.iter_mut().zip(*row) {
                        cell(col, chart, cx);
                    }
                });
            }
            let measured = ((ui.cursor().top() - top) / n - h).ceil();
            // Grow at once (nothing may leave the screen); shrink only by a clear margin.
            if measured > overhead || measured < overhead - 4.0 {
                ui.data_mut(|d| d.insert_temp(key, measured));
                ui.ctx().request_repaint();
            }
            if !presentation {
                ui.separator();
                let body = ui.text_style_height(&egui::TextStyle::Body);
                cx.height = (body * 1.6 * 12.0 + 60.0).max(MIN_CHART);
                cell(ui, Chart::Sensitivity, cx);
            }
        });
}

/// Slides: one chart of [`Chart::ALL`] in all the height left, a footer saying where we are; ← / →
/// (or Page Up / Page Down) move when no field has the keyboard.
fn slide(ui: &mut Ui, cx: &mut ChartCtx<'_>) {
    let n = Chart::ALL.len();
    let free = ui.ctx().memory(|m| m.focused().is_none());
    if free {
        let (next, prev) = ui.input_mut(|i| {
            let none = egui::Modifiers::NONE;
            (
                i.consume_key(none, egui::Key::ArrowRight)
                    | i.consume_key(none, egui::Key::PageDown),
                i.consume_key(none, egui::Key::ArrowLeft) | i.consume_key(none, egui::Key::PageUp),
            )
        });
        if next {
            cx.prefs.slide = (cx.prefs.slide + 1) % n;
        }
        if prev {
            cx.prefs.slide = (cx.prefs.slide + n - 1) % n;
        }
    }
    let i = cx.prefs.slide.min(n - 1);
    let Some(&chart) = Chart::ALL.get(i) else {
        return;
    };
    let row = ui.text_style_height(&egui::TextStyle::Body) + ui.spacing().item_spacing.y;
    let title_h = theme::chart_title_size(cx.prefs) * 1.25 + ui.spacing().item_spacing.y;
    cx.height = (ui.available_height() - title_h - 2.0 * row - 12.0).max(MIN_CHART);
    cell(ui, chart, cx);
    ui.separator();
    ui.label(
        RichText::new(format!(
            "Slide {} of {n}: {} · arrow keys move · F6 for all charts",
            i + 1,
            chart.name()
        ))
        .weak(),
    );
}

/// One chart, its rectangle published as "Chart: name" and kept for the export ([`drawn`]).
fn cell(ui: &mut Ui, chart: Chart, cx: &mut ChartCtx<'_>) {
    let rect = ui.scope(|ui| chart.ui(ui, cx)).response.rect;
    a11y::rect_node(ui.ctx(), Part::Chart, chart.name(), rect);
    let visible = rect.intersect(ui.clip_rect());
    ui.data_mut(|d| {
        d.get_temp_mut_or_default::<Drawn>(drawn_id())
            .charts
            .push(DrawnChart {
                name: chart.name(),
                rect,
                visible,
            });
    });
}

/// Where the last frame drew the central area and each chart (screen points): what File ▸ Export
/// PNG crops its per-chart images from.
#[derive(Clone, Debug, Default)]
pub struct Drawn {
    /// The central area: the window without the side panel and the menu bar.
    pub central: Option<egui::Rect>,
    pub charts: Vec<DrawnChart>,
}

/// Where a chart was drawn (screen points).
#[derive(Clone, Copy, Debug)]
pub struct DrawnChart {
    pub name: &'static str,
    /// The whole chart cell.
    pub rect: egui::Rect,
    /// The part of it inside the scroll area's clip.
    pub visible: egui::Rect,
}

fn drawn_id() -> egui::Id {
    egui::Id::unique("layout_drawn_rects")
}

/// The rectangles of the last frame ([`Drawn`]).
pub fn drawn(ctx: &egui::Context) -> Drawn {
    ctx.data(|d| d.get_temp::<Drawn>(drawn_id()))
        .unwrap_or_default()
}
