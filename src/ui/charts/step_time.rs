//! The roofline chart's second view: one step's time by part (`performance::breakdown`), one bar
//! per part with its time and share, then the fastest layouts for the scenario's own GPU budget
//! and global batch (the parts-model search, run off the UI thread by the app) with an "Apply"
//! button each.

use egui::{Align, Layout as EguiLayout, RichText, Sense, Ui, vec2};

use crate::estimator::Estimate;
use crate::estimator::performance::breakdown::{PartClass, StepBreakdown, step_breakdown};
use crate::estimator::performance::parts::search::Layout;
use crate::scenario::{Mode, Scenario};
use crate::ui::layout_state::{self, Key, Request};
use crate::ui::{Prefs, theme};
use crate::units::{fmt_seconds, fmt_sig};

/// Layouts listed under the bars.
pub const LAYOUTS_SHOWN: usize = 3;

/// The two views of the roofline chart, as a toggle in its header (kittest finds them by label).
pub fn toggle(ui: &mut Ui) -> bool {
    let mut on = layout_state::with(ui.ctx(), |s| s.step_view);
    let before = on;
    ui.selectable_value(&mut on, false, "Roofline")
        .on_hover_text("Attainable FLOP/s against arithmetic intensity.");
    ui.selectable_value(&mut on, true, "Step time")
        .on_hover_text("The step's time by part, and the fastest layouts for your GPUs.");
    if on != before {
        layout_state::with(ui.ctx(), |s| s.step_view = on);
    }
    on
}

/// The title of the step-time view.
pub fn title(s: &Scenario) -> &'static str {
    if s.mode == Mode::Training {
        "Step time by part (one GPU)"
    } else {
        "Request time by part (one GPU)"
    }
}

pub fn ui(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, height: f32) {
    let b = step_breakdown(&est.performance);
    // Where a line per bar and the totals' line do not fit (presentation at 1280 × 720: nine
    // parts in a 197-point cell), the text shrinks until they do, down to the legends' smallest
    // size (18 px in presentation); below that the smallest parts share a row (`rows`). A cell
    // that grew took the height from the memory chart above it.
    let font = egui::TextStyle::Body.resolve(ui.style()).size;
    let text_h = ui.text_style_height(&egui::TextStyle::Body);
    let gap = ui.spacing().item_spacing.y;
    let lines = (b.parts().len() + 1) as f32;
    let smallest = theme::legend_min_size(prefs).min(font) / font;
    let scale = ((height / lines - gap) / text_h).clamp(smallest, 1.0);
    ui.scope(|ui| {
        if scale < 1.0 {
            for f in ui.style_mut().text_styles.values_mut() {
                f.size *= scale;
            }
        }
        parts_view(ui, prefs, (scenario, est), &b, height);
    });
}

/// The bars, the totals and the layouts that fit, in the current text size.
fn parts_view(
    ui: &mut Ui,
    prefs: &Prefs,
    (scenario, est): (&Scenario, &Estimate),
    b: &StepBreakdown,
    height: f32,
) {
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let line = body + ui.spacing().item_spacing.y;
    let button = body + 2.0 * ui.spacing().button_padding.y + ui.spacing().item_spacing.y;
    let searchable = scenario.mode == Mode::Training && est.performance.parts.is_some();
    let fit = ((height - line) / line).floor().max(2.0) as usize;
    let shown_rows = rows(prefs, b, fit);
    let n = shown_rows.len().max(1) as f32;
    // The bars first (at least one line each), then the totals line, then as many of the best
    // layouts as fit under a heading: the chart's cell never grows (in presentation the memory
    // chart above shares the window's height).
    let bars_min = n * line;
    let room = height - bars_min - line;
    let shown = if searchable && room >= line + button {
        (((room - line) / button).floor() as usize).min(LAYOUTS_SHOWN)
    } else {
        0
    };
    let below = line
        + if shown > 0 {
            line + shown as f32 * button
        } else {
            0.0
        };
    // At least a line (a clamp would panic if the spacing made a line taller than 1.8 bodies).
    let row = ((height - below) / n).min(body * 1.8).max(line);
    ui.scope(|ui| {
        ui.spacing_mut().item_spacing.y = 0.0;
        bars(ui, &shown_rows, b.total_s, row);
    });
    ui.label(totals(est, b));
    if shown > 0 {
        layouts(ui, prefs, scenario, est, shown);
    }
}

/// One bar of the view: a part, or the smallest parts together.
struct BarRow {
    label: String,
    hover: String,
    seconds: f64,
    color: egui::Color32,
}

/// The parts as bars, at most `fit` of them: beyond that the smallest share the last row
/// ("3 smaller", each listed on hover), the others keep their order.
fn rows(prefs: &Prefs, b: &StepBreakdown, fit: usize) -> Vec<BarRow> {
    let parts = b.parts();
    let merged = if parts.len() > fit {
        let seconds: Vec<f64> = parts.iter().map(|(_, s)| *s).collect();
        super::smallest(&seconds, parts.len() - fit + 1)
    } else {
        Vec::new()
    };
    let mut out: Vec<BarRow> = parts
        .iter()
        .enumerate()
        .filter(|(i, _)| !merged.contains(i))
        .map(|(_, (part, seconds))| BarRow {
            label: part.label().to_owned(),
            hover: part.hover().to_owned(),
            seconds: *seconds,
            color: color(part.class(), prefs),
        })
        .collect();
    if !merged.is_empty() {
        let list: Vec<String> = merged
            .iter()
            .map(|i| format!("{}: {}", parts[*i].0.label(), fmt_seconds(parts[*i].1)))
            .collect();
        out.push(BarRow {
            label: format!("{} smaller", merged.len()),
            hover: format!(
                "Too many parts for the chart's height: the smallest share this row.\n{}",
                list.join("\n")
            ),
            seconds: merged.iter().map(|i| parts[*i].1).sum(),
            color: theme::several(prefs.theme),
        });
    }
    out
}

/// "Step 1.23 s (compute-bound) · MFU 45.1 % · HFU 52.0 %".
fn totals(est: &Estimate, b: &StepBreakdown) -> String {
    let p = &est.performance;
    let mut out = format!("Total {} ({})", fmt_seconds(b.total_s), b.bound.label());
    if p.training.is_some() && p.peak_known {
        out += &format!(
            " · MFU {} % · HFU {} %",
            fmt_sig(p.throughput.mfu * 100.0),
            fmt_sig(p.throughput.hfu * 100.0)
        );
    }
    out
}

/// One labelled bar per row, scaled to the largest, with its time and share of the step; the
/// columns are measured so that a row never grows the chart's cell.
fn bars(ui: &mut Ui, rows: &[BarRow], total_s: f64, row: f32) {
    let values: Vec<String> = rows
        .iter()
        .map(|r| value_text(r.seconds, total_s))
        .collect();
    let widest = rows
        .iter()
        .map(|r| text_width(ui, &r.label))
        .fold(0.0_f32, f32::max);
    let value_w = values
        .iter()
        .map(|v| text_width(ui, v))
        .fold(0.0_f32, f32::max);
    let max = rows.iter().map(|r| r.seconds).fold(0.0_f64, f64::max);
    let width = ui.available_width();
    let gap = ui.spacing().item_spacing.x;
    let bar_w = (width - widest - value_w - 3.0 * gap - 4.0).max(20.0);
    for (r, value) in rows.iter().zip(&values) {
        ui.allocate_ui_with_layout(
            vec2(width, row),
            EguiLayout::left_to_right(Align::Center),
            |ui| {
                ui.add_sized([widest, row], egui::Label::new(r.label.as_str()))
                    .on_hover_text(r.hover.as_str());
                let (rect, _) = ui.allocate_exact_size(vec2(bar_w, row * 0.7), Sense::hover());
                let frac = if max > 0.0 {
                    (r.seconds / max) as f32
                } else {
                    0.0
                };
                let filled = egui::Rect::from_min_size(
                    rect.min,
                    vec2((rect.width() * frac).max(2.0), rect.height()),
                );
                ui.painter().rect_filled(filled, 2.0, r.color);
                ui.label(value.as_str());
            },
        );
    }
}

/// "812 ms · 61.2 %"; a share under 0.1 % is written "< 0.1 %".
fn value_text(seconds: f64, total: f64) -> String {
    let share = if total > 0.0 {
        seconds / total * 100.0
    } else {
        0.0
    };
    let share = if share < 0.1 {
        "< 0.1".to_owned()
    } else {
        fmt_sig(share)
    };
    format!("{} · {share} %", fmt_seconds(seconds))
}

fn text_width(ui: &Ui, text: &str) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    ui.fonts_mut(|f| {
        f.layout_no_wrap(text.to_owned(), font, egui::Color32::WHITE)
            .size()
            .x
    })
}

fn color(class: PartClass, prefs: &Prefs) -> egui::Color32 {
    theme::step_part(class, prefs.theme)
}

/// The fastest layouts for the scenario's own GPU count and global batch; asks the app to search
/// when the scenario (its layout aside) or the budget changed.
fn layouts(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, est: &Estimate, shown: usize) {
    let ctx = ui.ctx().clone();
    let (running, result, stale, (gpus, global_batch)) = layout_state::with(&ctx, |s| {
        if s.seen.as_ref().is_none_or(|(seen, _)| seen != scenario) {
            s.seen = Some((scenario.clone(), Key::of(scenario, LAYOUTS_SHOWN)));
        }
        let Some((_, key)) = &s.seen else {
            return (s.running, None, true, (0, 0));
        };
        let stale = s.key.as_ref() != Some(key);
        if stale && !s.running {
            s.requests.push(Request::Search(Box::new(key.clone())));
            s.running = true;
            s.key = Some(key.clone());
        }
        (
            s.running,
            s.result.clone(),
            stale,
            (key.gpus, key.global_batch),
        )
    });
    let heading = format!("Fastest layouts for {gpus} GPUs, global batch {global_batch}");
    ui.horizontal(|ui| {
        ui.label(RichText::new(heading).strong());
        if running || stale {
            ui.spinner();
            ui.weak("searching…");
        }
    });
    let Some(result) = result.filter(|_| !stale) else {
        return;
    };
    if result.best.is_empty() {
        ui.label(format!(
            "No layout of TP, PP, DP, micro-batch, recomputation and ZeRO-1 fits ({} tried).",
            result.evaluated
        ));
        return;
    }
    let own = est.performance.step.total_s;
    egui::Grid::new("best_layouts")
        .num_columns(3)
        .spacing([ui.spacing().item_spacing.x * 2.0, 2.0])
        .show(ui, |ui| {
            for (rank, l) in result.best.iter().take(shown).enumerate() {
                layout_row(ui, prefs, scenario, rank, l, own);
                ui.end_row();
            }
        });
}

fn layout_row(ui: &mut Ui, prefs: &Prefs, scenario: &Scenario, rank: usize, l: &Layout, own: f64) {
    if l.is_applied_in(scenario) {
        ui.label(RichText::new("current").color(theme::good(prefs.theme)));
    } else if ui
        .button(format!("Apply #{}", rank + 1))
        .on_hover_text("Set this layout in the scenario (one edit: undo takes it back).")
        .clicked()
    {
        layout_state::with(ui.ctx(), |s| s.requests.push(Request::Apply(*l)));
    }
    let share = if own > 0.0 && l.step_s > 0.0 {
        format!(" ({} %)", fmt_sig(l.step_s / own * 100.0))
    } else {
        String::new()
    };
    ui.label(format!("{}{share}", fmt_seconds(l.step_s)))
        .on_hover_text(format!(
            "Step time (and as a share of your layout's); MFU {} %.",
            fmt_sig(l.mfu * 100.0)
        ));
    let summary = l.summary();
    ui.add(egui::Label::new(summary.as_str()).truncate())
        .on_hover_text(summary);
}
