//! Memory composition: stacked bars of the components in `Component::ALL` order, one bar per phase
//! (or baseline vs current when comparing), plus one bar per pipeline stage class when PP > 1 (the
//! phases are then the picked stage's: `composition_stages`), a dashed capacity line, and off-GPU
//! bytes apart.

use egui::Ui;
use egui_plot::{
    AxisHints, Bar, BarChart, HLine, Line, LineStyle, Plot, PlotPoint, PlotUi, Text,
    uniform_grid_spacer,
};

use super::{memory_tick, static_plot};
use crate::estimator::{Breakdown, Component, Estimate, Phase};
use crate::scenario::Scenario;
use crate::ui::a11y::{self, Part};
use crate::ui::{Prefs, theme};
use crate::units::MemoryUnit;

/// One stacked bar: its x label and the bytes per component.
pub(super) struct Column {
    /// Full name, shown on hover.
    pub(super) label: String,
    /// Axis label: short, so that every bar keeps its label at small widths.
    pub(super) short: String,
    /// The phase that sets the peak (marked above its bar).
    pub(super) peak: bool,
    /// The limiting pipeline stage's bar (marked above it).
    pub(super) limiting: bool,
    pub(super) parts: Breakdown,
}

/// Axis label of a phase.
const fn short(phase: Phase) -> &'static str {
    match phase {
        Phase::Forward => "fwd",
        Phase::LossBackward => "loss",
        Phase::Backward => "bwd",
        Phase::OptimizerStep => "opt",
        Phase::Prefill => "prefill",
        Phase::Decode => "decode",
        Phase::Generation => "gen",
        Phase::Scoring => "score",
    }
}

/// The bars for an estimate: each phase's tensors plus the peak's context and reserve; with pipeline
/// parallelism the phases of the picked stage class and one bar per class.
fn phase_columns(prefs: &Prefs, (scenario, est): (&Scenario, &Estimate), out: &mut Vec<Column>) {
    let m = &est.memory;
    let picked = super::composition_stages::picked(prefs, est);
    // Another class than the limiting one: its phases recomputed (the estimate keeps its peak).
    let other = picked
        .filter(|s| m.limiting_stage().map(|l| l.first) != Some(s.first))
        .and_then(|s| crate::estimator::memory::stage_phases_of(scenario, est, s.first));
    let (phases, peak_phase, peak) = match picked {
        Some(s) => (other.as_ref().unwrap_or(&m.phases), s.peak_phase, &s.peak),
        None => (&m.phases, m.peak_phase, &m.peak),
    };
    for phase in Phase::ALL {
        let Some(tensors) = phases.get(phase) else {
            continue;
        };
        let mut parts = *tensors;
        for c in [
            Component::NcclBuffers,
            Component::CudaContext,
            Component::AllocatorReserve,
        ] {
            parts.set(c, peak.get(c));
        }
        let is_peak = peak_phase == Some(phase);
        let mark = if is_peak { " (peak)" } else { "" };
        let stage = picked.map_or_else(String::new, |s| format!(", {}", s.label()));
        out.push(Column {
            label: format!("{}{mark}{stage}", phase.label()),
            short: short(phase).to_owned(),
            peak: is_peak,
            limiting: false,
            parts,
        });
    }
    // Pipeline parallel: every stage class's peak side by side, the limiting one marked.
    super::composition_stages::columns(est, out);
    if out.is_empty() {
        out.push(Column {
            label: "peak".to_owned(),
            short: "peak".to_owned(),
            peak: false,
            limiting: false,
            parts: m.peak,
        });
    }
}

/// The zoom toggle's label and hover (the legend's checkbox and the View menu).
pub const ZOOM: &str = "Zoom to the bars";
pub const ZOOM_HOVER: &str = "End the memory chart's axis just above the tallest bar (the GPU's \
                              memory may then be above the view; its value stays in the legend).";

/// Draws the chart with a side legend listing the current peak's components (top of stack first).
pub fn ui(
    ui: &mut Ui,
    prefs: &mut Prefs,
    scenario: &Scenario,
    current: &Estimate,
    baseline: Option<&Estimate>,
    height: f32,
) {
    // A llama.cpp CPU build: the host's buffers, not per-GPU bars against a GPU it does not use.
    let host = current.cpu_build().filter(|_| baseline.is_none());
    // Pipeline parallel: the stage whose phases the bars show (not when comparing two peaks).
    let height = match baseline {
        None if host.is_none() => {
            (height - super::composition_stages::picker_ui(ui, prefs, current)).max(80.0)
        }
        _ => height,
    };
    let mut columns = Vec::new();
    match baseline {
        None if let Some(b) = host => columns = super::composition_host::columns(b),
        Some(base) => {
            columns.push(Column {
                label: "baseline (peak)".to_owned(),
                short: "baseline".to_owned(),
                peak: false,
                limiting: false,
                parts: base.memory.peak,
            });
            columns.push(Column {
                label: "current (peak)".to_owned(),
                short: "current".to_owned(),
                peak: false,
                limiting: false,
                parts: current.memory.peak,
            });
        }
        None => phase_columns(prefs, (scenario, current), &mut columns),
    }
    let off = current.memory.offloaded;
    let off_total = match host {
        Some(_) => crate::units::Bytes(0.0),
        None => off.host + off.nvme + off.second_tier,
    };

    ui.horizontal(|ui| {
        // Nothing here may be wider than the column: an overflow widens every later layout.
        let gap = ui.spacing().item_spacing.x;
        let avail = ui.available_width() - 2.0 * gap;
        let (plot_w, off_w, legend_w) = widths(prefs, avail, columns.len(), off_total);
        ui.vertical(|ui| {
            ui.set_width(plot_w);
            plot(ui, prefs, &columns, current, baseline, height);
        });
        if off_total.get() > 0.0 {
            ui.vertical(|ui| {
                ui.set_width(off_w);
                super::composition_off::ui(
                    ui,
                    prefs,
                    (off.host, off.nvme, off.second_tier),
                    height,
                );
            });
        }
        let legend = ui.vertical(|ui| {
            ui.set_width(legend_w);
            legend_ui(
                ui,
                prefs,
                (scenario, current, host),
                off_total,
                (legend_w, height),
            );
        });
        a11y::rect_node(ui.ctx(), Part::Legend, "Memory", legend.response.rect);
    });
}

/// The legend beside the bars, never taller than the plot: its text fits the height; in
/// presentation the smallest components share a row when the rows do not fit at 18 px (at the desk
/// the legend scrolls and every row keeps its hover).
fn legend_ui(
    ui: &mut Ui,
    prefs: &mut Prefs,
    (scenario, current, host): (
        &Scenario,
        &Estimate,
        Option<&crate::estimator::engines::llamacpp::Buffers>,
    ),
    off_total: crate::units::Bytes,
    (legend_w, height): (f32, f32),
) {
    let min = crate::ui::theme::legend_min_size(prefs);
    let rows = Component::ALL
        .iter()
        .filter(|c| current.memory.peak.get(**c).get() > 0.0)
        .count();
    let key = super::composition_legend::MergeKey::new(rows, (legend_w, height));
    let merging = prefs.presentation && host.is_none();
    let merge = if merging {
        super::composition_legend::merged(ui, key)
    } else {
        0
    };
    let fitted = super::fitted_legend(ui, "composition_legend", (height, min), |ui, font| {
        // Presentation keeps the legend's rows for the components (the View menu has the same
        // toggle).
        if !prefs.presentation {
            ui.checkbox(&mut prefs.memory_zoom, ZOOM)
                .on_hover_text(ZOOM_HOVER);
        }
        let est = (scenario, current);
        match host {
            Some(b) => super::composition_host::legend(ui, prefs, b, font),
            None => super::composition_legend::ui(ui, prefs, est, (off_total, merge), font),
        }
    });
    if merging {
        super::composition_legend::refit(ui, &fitted, merge, key);
    }
}

/// The plot's, the off-GPU panel's and the legend's widths within `avail` points.
fn widths(
    prefs: &Prefs,
    avail: f32,
    bars: usize,
    off_total: crate::units::Bytes,
) -> (f32, f32, f32) {
    // Presentation: a wider legend (its rows must fit unwrapped at 18 px; two bars need
    // little width).
    // Below ~560 points (1024 × 700) the bars need the room for their labels.
    // A training step's five bars need the room for their labels too (at 1280 × 720 they lost
    // all but the first behind a 0.55 legend and the off-GPU panel).
    let few_bars = bars <= 3;
    let share = match (prefs.presentation, avail >= 560.0 && few_bars) {
        (true, true) => 0.55,
        (true, false) => 0.48,
        (false, _) => 0.34,
    };
    let legend_w = (avail * share).clamp(120.0, 400.0);
    // Off-GPU bytes get their own panel and scale: never drawn against the GPU's capacity.
    let off_share = if prefs.presentation { 0.11 } else { 0.14 };
    let off_w = if off_total.get() > 0.0 {
        (avail * off_share).clamp(70.0, 130.0)
    } else {
        0.0
    };
    ((avail - legend_w - off_w).max(120.0), off_w, legend_w)
}

/// One bar chart per component, stacked in `Component::ALL` order (components absent from every
/// bar are left out).
fn stacked(prefs: &Prefs, columns: &[Column]) -> Vec<BarChart> {
    let u = prefs.unit;
    let mut charts: Vec<BarChart> = Vec::with_capacity(Component::COUNT);
    for c in Component::ALL {
        if columns.iter().all(|col| col.parts.get(c).get() <= 0.0) {
            continue;
        }
        let bars = columns
            .iter()
            .enumerate()
            .map(|(i, col)| {
                Bar::new(i as f64, u.value(col.parts.get(c)))
                    .name(&col.label)
                    .width(0.6)
                    .fill(theme::component_on(c, prefs.theme))
                    .stroke(egui::Stroke::new(1.0, theme::bar_outline(prefs.theme)))
            })
            .collect();
        // Hover text comes as a tooltip (`hover_text`): the plot's own text is clipped at its edge.
        let chart = BarChart::new(c.label(), bars)
            .color(theme::component_on(c, prefs.theme))
            .element_formatter(Box::new(|_, _| String::new()));
        let below: Vec<&BarChart> = charts.iter().collect();
        let chart = chart.stack_on(&below);
        charts.push(chart);
    }
    charts
}

/// The plot with one x label per bar and a memory y axis from 0 to a bit above `top`.
fn frame<'a>(ui: &Ui, prefs: &Prefs, labels: Vec<String>, top: f64, height: f32) -> Plot<'a> {
    let u = prefs.unit;
    let n = labels.len();
    let y_axis = y_axis_width(ui);
    let set = bar_labels(ui, prefs, &labels, data_width(ui) / n.max(1) as f32);
    // One axis of labels, or two staggered rows (even bars on the first, odd on the second), each
    // label then two bars apart: egui_plot drops a label wider than its mark's step, so the marks
    // step by two.
    let rows: Vec<Option<usize>> = if set.staggered {
        vec![Some(0), Some(1)]
    } else {
        vec![None]
    };
    let axes = rows
        .into_iter()
        .map(|row| {
            let labels = labels.clone();
            AxisHints::new_x()
                .label_spacing(24.0..=32.0)
                .tick_label_font(set.font.clone())
                .formatter(move |mark, _| {
                    let i = mark.value.round();
                    let other_row = row.is_some_and(|r| (i as usize) % 2 != r);
                    if (mark.value - i).abs() > 1e-6 || i < 0.0 || other_row {
                        return String::new();
                    }
                    labels
                        .get(i as usize)
                        .map_or_else(String::new, Clone::clone)
                })
        })
        .collect();
    let spacer: Box<dyn Fn(egui_plot::GridInput) -> Vec<egui_plot::GridMark> + 'a> =
        if set.staggered {
            Box::new(move |_| {
                (0..n)
                    .map(|i| egui_plot::GridMark {
                        value: i as f64,
                        step_size: 2.0,
                    })
                    .collect()
            })
        } else {
            uniform_grid_spacer(|_| [1.0, 10.0, 100.0])
        };
    static_plot(ui, "composition", height)
        .y_grid_spacer(super::readable_marks(ui))
        .y_axis_min_width(y_axis)
        .reset()
        .default_y_bounds(0.0, (top * 1.12).max(1e-3))
        .include_x(-0.5)
        .include_x(n as f64 - 0.5)
        .show_grid([false, true])
        .x_grid_spacer(spacer)
        // One label per bar, even when bars are only ~30 points apart.
        .custom_x_axes(axes)
        .y_axis_formatter(move |mark, _| memory_tick(u, mark.value))
        .label_formatter(move |pos| match pos {
            egui_plot::HoverPosition::Elsewhere { position } => Some(memory_tick(u, position.y)),
            _ => None,
        })
}

/// Width of the plot's y axis (its labels): four lines of body text.
fn y_axis_width(ui: &Ui) -> f32 {
    ui.text_style_height(&egui::TextStyle::Body) * 4.0
}

/// Width of the plot's data area, beside its y axis.
fn data_width(ui: &Ui) -> f32 {
    ui.available_width() - y_axis_width(ui)
}

/// The label on the GPU-memory line: "GPU 79.2 GiB", or the size alone where the plot is too
/// narrow for the whole (at 1024 × 700 in presentation it was cut at the plot's left edge).
fn capacity_label(ui: &Ui, unit: MemoryUnit, cap: f64) -> String {
    let size = memory_tick(unit, cap);
    let whole = format!("GPU {size}");
    let font = egui::TextStyle::Small.resolve(ui.style());
    let width = ui
        .painter()
        .layout_no_wrap(whole.clone(), font, egui::Color32::WHITE)
        .size()
        .x;
    if width <= data_width(ui) * 0.95 {
        whole
    } else {
        size
    }
}

/// How the bars' labels are set: their font, and whether they take two staggered rows.
struct BarLabels {
    font: egui::FontId,
    staggered: bool,
}

/// The bars' labels: small text, smaller where the widest label would not fit its bar's width
/// (egui_plot drops a tick label wider than the spacing of its marks), never below 10 points, nor
/// below 18 px in presentation. Where even that size does not fit one bar, the labels take two
/// staggered rows, each label then with two bars' width (at 1280 × 720 in presentation a GRPO
/// step's six bars had lost "bwd" and "score").
fn bar_labels(ui: &Ui, prefs: &Prefs, labels: &[String], per_bar: f32) -> BarLabels {
    let mut font = egui::TextStyle::Small.resolve(ui.style());
    let widest = labels
        .iter()
        .map(|l| {
            ui.painter()
                .layout_no_wrap(l.clone(), font.clone(), egui::Color32::WHITE)
                .size()
                .x
        })
        .fold(0.0, f32::max);
    // A little room between neighbours.
    let fits = per_bar * 0.92;
    if widest <= fits || widest <= 0.0 {
        return BarLabels {
            font,
            staggered: false,
        };
    }
    let floor = if prefs.presentation {
        crate::ui::theme::legend_min_size(prefs).min(font.size)
    } else {
        10.0
    };
    let one_row = font.size * fits / widest;
    let staggered = one_row < floor && labels.len() > 1;
    let room = if staggered { 2.0 * fits } else { fits };
    font.size = (font.size * room / widest).min(font.size).max(floor);
    BarLabels { font, staggered }
}

fn plot(
    ui: &mut Ui,
    prefs: &Prefs,
    columns: &[Column],
    current: &Estimate,
    baseline: Option<&Estimate>,
    height: f32,
) {
    let u = prefs.unit;
    let labels: Vec<String> = columns.iter().map(|c| c.short.clone()).collect();
    let charts = stacked(prefs, columns);
    // A CPU build's bar has no GPU to be held to.
    let cap = match current.cpu_build() {
        Some(_) if baseline.is_none() => 0.0,
        _ => u.value(current.memory.capacity),
    };
    let bars_top = columns
        .iter()
        .map(|c| u.value(c.parts.total()))
        .fold(0.0, f64::max);
    let caps = baseline.map_or(cap, |b| cap.max(u.value(b.memory.capacity)));
    let tallest = if prefs.memory_zoom {
        bars_top
    } else {
        bars_top.max(caps)
    };
    let cap_label = capacity_label(ui, u, cap);
    let shown = frame(ui, prefs, labels, tallest, height).show(ui, |plot_ui| {
        // Topmost component first, so the legend reads like the stack.
        for chart in charts.into_iter().rev() {
            plot_ui.bar_chart(chart);
        }
        marks(plot_ui, prefs, columns, (cap, &cap_label), baseline);
        super::measured_overlay::composition(plot_ui, prefs, columns.len());
        if cap > tallest * 1.12 {
            let at = PlotPoint::new(-0.45, tallest * 1.1);
            let text = format!("GPU memory {} is above the view", memory_tick(u, cap));
            plot_ui.text(
                Text::new("capacity above", at, text)
                    .anchor(egui::Align2::LEFT_TOP)
                    .color(theme::capacity(prefs.theme)),
            );
        }
        plot_ui.pointer_coordinate().map(|p| {
            (
                super::composition_hover::text(prefs, columns, p),
                super::composition_hover::component_at(prefs, columns, p),
            )
        })
    });
    // The bar that sets the peak (the current one when comparing) is this chart's marker.
    let at = columns
        .iter()
        .position(|c| c.peak)
        .unwrap_or(columns.len().saturating_sub(1));
    if let Some(col) = columns.get(at) {
        let (x, top) = (at as f64, u.value(col.parts.total()));
        let rect = shown
            .transform
            .rect_from_values(&PlotPoint::new(x - 0.3, 0.0), &PlotPoint::new(x + 0.3, top));
        a11y::rect_node(ui.ctx(), Part::Marker, "Memory", rect);
    }
    if let Some(at) = columns.iter().position(|c| c.limiting)
        && let Some(col) = columns.get(at)
    {
        let (x, top) = (at as f64, u.value(col.parts.total()));
        let rect = shown
            .transform
            .rect_from_values(&PlotPoint::new(x - 0.3, 0.0), &PlotPoint::new(x + 0.3, top));
        a11y::rect_node(ui.ctx(), Part::Marker, "Limiting stage", rect);
    }
    a11y::rect_node(ui.ctx(), Part::Plot, "Memory", *shown.transform.frame());
    let Some((text, component)) = shown.inner else {
        return;
    };
    let r = &shown.response;
    // A click on a segment pins its explanation, as a click on its legend row does.
    if r.clicked()
        && let Some(c) = component
    {
        super::explain::toggle(ui, c);
    }
    if let Some(text) = text
        && r.hovered()
    {
        egui::Tooltip::always_open(r.ctx.clone(), r.layer_id, r.id, egui::PopupAnchor::Pointer)
            .gap(12.0)
            .show(|ui| ui.label(text));
    }
}

/// Whether the limiting stage's bar stands next to the peak's.
fn labels_crowd(columns: &[Column]) -> bool {
    columns.iter().enumerate().any(|(i, c)| {
        c.limiting
            && columns[i.saturating_sub(1)..(i + 2).min(columns.len())]
                .iter()
                .any(|c| c.peak)
    })
}

/// "peak" over the bar that sets the peak, "limiting" over the limiting stage's unless it stands
/// next to the peak's (the two words would cover each other; the stage picker above the chart
/// names the limiting stage too), and the GPU's memory (per bar when comparing).
fn marks(
    plot_ui: &mut PlotUi<'_>,
    prefs: &Prefs,
    columns: &[Column],
    (cap, cap_label): (f64, &str),
    baseline: Option<&Estimate>,
) {
    let u = prefs.unit;
    for (i, col) in columns.iter().enumerate().filter(|(_, c)| c.peak) {
        let top = u.value(col.parts.total());
        plot_ui.text(
            Text::new("peak", PlotPoint::new(i as f64, top), "peak")
                .anchor(egui::Align2::CENTER_BOTTOM)
                .color(theme::capacity(prefs.theme)),
        );
    }
    let crowded = labels_crowd(columns);
    for (i, col) in columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.limiting && !crowded)
    {
        let top = u.value(col.parts.total());
        let text = super::composition_stages::LIMITING;
        plot_ui.text(
            Text::new("limiting stage", PlotPoint::new(i as f64, top), text)
                .anchor(egui::Align2::CENTER_BOTTOM)
                .color(theme::capacity(prefs.theme)),
        );
    }
    match baseline {
        None if cap <= 0.0 => {}
        None => {
            plot_ui.hline(
                HLine::new("GPU memory", cap)
                    .color(theme::capacity(prefs.theme))
                    .style(LineStyle::dashed_loose())
                    .width(2.0),
            );
            // The line says what it is, on the line (no legend lookup in a room).
            let right = columns.len() as f64 - 0.5;
            plot_ui.text(
                Text::new(
                    "GPU memory label",
                    PlotPoint::new(right, cap),
                    cap_label.to_owned(),
                )
                .anchor(egui::Align2::RIGHT_BOTTOM)
                .color(theme::capacity(prefs.theme)),
            );
        }
        Some(base) => {
            // Each bar against its own GPU's memory.
            let caps = [u.value(base.memory.capacity), cap];
            for (i, c) in caps.into_iter().enumerate() {
                let x = i as f64;
                plot_ui.line(
                    Line::new("GPU memory", vec![[x - 0.45, c], [x + 0.45, c]])
                        .color(theme::capacity(prefs.theme))
                        .style(LineStyle::dashed_dense())
                        .width(2.0),
                );
            }
        }
    }
}
