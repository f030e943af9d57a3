//! Architecture comparison as small multiples: one column per quantity (memory, bandwidth, latency,
//! and what this scenario does there: fits, step time), each with its own unit and scale, one row per
//! GPU or memory technology, from `performance::compare`. Painted bars in rows rather than plots, so
//! long names stay legible at any width.

use egui::{Color32, RichText, Sense, Ui};

use crate::estimator::Component;
use crate::estimator::performance::{ComparisonRow, RowKind, compare};
use crate::hardware::GpuId;
use crate::scenario::{GpuChoice, Scenario};
use crate::ui::widgets::{self, Choice, opt};
use crate::ui::{ArchView, Prefs, theme};
use crate::units::{fmt_seconds, fmt_sig};

/// GPUs compared by default (the scenario's own GPU is always added).
const SHOWN: [GpuId; 8] = [
    GpuId::V100Sxm32,
    GpuId::A100Sxm80,
    GpuId::H100Sxm,
    GpuId::H200,
    GpuId::B200,
    GpuId::Mi300X,
    GpuId::L40S,
    GpuId::Rtx4090,
];

const VIEWS: [Choice<ArchView>; 3] = [
    opt(
        ArchView::Gpus,
        "GPUs",
        "Catalog GPUs, each with its own compute and memory.",
    ),
    opt(
        ArchView::Technologies,
        "Memory technologies",
        "This scenario's GPU compute with each memory technology in a GPU-sized configuration (what-if).",
    ),
    opt(
        ArchView::Article,
        "Seed article's figures",
        "The memory systems as the seed article describes them (HBM2e, GDDR6X, LPDDR5).",
    ),
];

/// A horizontal bar filling `fraction` of the cell, with the value written over it. The bar behind
/// the text is faint (its edge must not cut through the first digits) and a solid strip under the
/// text carries the length.
fn bar_cell(
    ui: &mut Ui,
    (width, font): (f32, &egui::FontId),
    fraction: f64,
    color: Color32,
    text: String,
    hover: String,
) {
    let h = ui.text_style_height(&egui::TextStyle::Body) + 6.0;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, h), Sense::hover());
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0) as f32
    } else {
        0.0
    };
    let mut bar = rect;
    bar.set_width(rect.width() * f);
    ui.painter()
        .rect_filled(bar, 2.0, color.gamma_multiply(0.28));
    let mut strip = bar;
    strip.set_top(bar.bottom() - 3.0);
    ui.painter().rect_filled(strip, 1.0, color);
    // The table's cell font (`cell_font`); the value never runs into the next cell: clipped.
    let color = ui.visuals().strong_text_color();
    let galley = ui.painter().layout_no_wrap(text, font.clone(), color);
    let pos = rect.left_center() + egui::vec2(4.0, -galley.size().y / 2.0);
    ui.painter()
        .with_clip_rect(rect.intersect(ui.clip_rect()))
        .galley(pos, galley, color);
    resp.on_hover_text(hover);
}

fn selected_rows<'a>(
    view: ArchView,
    scenario: &Scenario,
    all: &'a [ComparisonRow],
) -> Vec<&'a ComparisonRow> {
    let own = match scenario.gpu {
        GpuChoice::Catalog(id) => Some(id),
        GpuChoice::Custom(_) => None,
    };
    all.iter()
        .filter(|r| match (view, r.kind) {
            (ArchView::Gpus, RowKind::Gpu(id)) => SHOWN.contains(&id) || own == Some(id),
            (ArchView::Technologies, RowKind::Tech(_)) => true,
            (ArchView::Article, RowKind::Article(_)) => true,
            _ => false,
        })
        .collect()
}

/// The table within `height` (its rows scroll when they do not fit).
pub fn ui(ui: &mut Ui, prefs: &mut Prefs, scenario: &Scenario, height: f32) {
    if scenario.runs_on_cpu_only() {
        // The rows still describe the devices; only their "this scenario" column runs on the CPU.
        ui.label(
            egui::RichText::new(
                "This run uses no GPU (llama.cpp -dev none): each row's time is the CPU's. Untick -dev none under Serving engine to compare GPUs.",
            )
            .color(super::super::theme::note(prefs.theme)),
        );
    }
    let hover = "Which rows to compare; every column has its own unit and scale.";
    widgets::choice(ui, &mut prefs.arch_view, &VIEWS, "Compare", hover);
    let c = compare(scenario);
    let all: Vec<ComparisonRow> = c.rows().copied().collect();
    let rows = selected_rows(prefs.arch_view, scenario, &all);
    let max = |f: &dyn Fn(&ComparisonRow) -> f64| rows.iter().map(|r| f(r)).fold(1e-9, f64::max);
    let scale = [
        max(&|r| r.capacity.map_or(0.0, |b| b.get())),
        max(&|r| r.bandwidth.get()),
        max(&|r| r.latency_ns.unwrap_or(0.0)),
    ];
    let body = ui.text_style_height(&egui::TextStyle::Body);
    // Never wider than the column: an overflow would widen every later layout.
    let gap = ui.spacing().item_spacing.x;
    let avail = ui.available_width() - 4.0 * gap;
    let name_w = (body * 9.0).min(avail * 0.28);
    let cell_w = ((avail - name_w) / 4.0).floor().max(1.0);
    ui.horizontal(|ui| {
        let base = if prefs.arch_view == ArchView::Gpus { "GPU".to_owned() } else { format!("Memory on {}", c.base_gpu) };
        header(ui, name_w, &[&base, "Rows"], "Rows; the scenario's own GPU is highlighted.");
        header(ui, cell_w, &["Memory"], "Capacity per GPU (what-if configuration for technologies), in the chosen unit.");
        header(ui, cell_w, &["Bandwidth", "GB/s"], "Peak memory bandwidth, GB/s (10^9 B/s).");
        header(ui, cell_w, &["Latency"], "Load-to-use latency where sourced; — when unknown.");
        header(ui, cell_w, &["This scenario", "Scenario", "Fits"], "Whether the current scenario fits there (ok / no), and its step time (training) or time per output token (inference).");
    });
    let own = match scenario.gpu {
        GpuChoice::Catalog(id) => Some(RowKind::Gpu(id)),
        GpuChoice::Custom(_) => None,
    };
    let cells = Cells {
        width: cell_w,
        font: cell_font(ui, prefs, &rows, cell_w),
        scale,
        needed: c.needed,
    };
    let rows_h = height - 2.0 * (ui.spacing().interact_size.y + ui.spacing().item_spacing.y);
    egui::ScrollArea::vertical()
        .id_salt("architecture_rows")
        .max_height(rows_h.max(body * 3.0))
        .auto_shrink([false, true])
        .show(ui, |ui| {
            for r in rows {
                ui.horizontal(|ui| row_ui(ui, prefs, r, own == Some(r.kind), name_w, &cells));
            }
        });
}

/// One row's value texts: memory, bandwidth, latency, and this scenario's fit and time.
fn cell_texts(prefs: &Prefs, r: &ComparisonRow) -> [String; 4] {
    let cap = r
        .capacity
        .map_or_else(|| "—".to_owned(), |b| prefs.unit.format(b));
    let bw = format!("{} GB/s", fmt_sig(r.bandwidth.as_gb_per_s()));
    let lat = r
        .latency_ns
        .map_or_else(|| "—".to_owned(), |l| format!("{} ns", fmt_sig(l)));
    let mark = match r.fits {
        Some(true) => "ok",
        Some(false) => "no",
        None => "?",
    };
    // Without a sourced peak the time counts memory traffic only: a lower bound.
    let bound = if r.peak_known { "" } else { "≥ " };
    let time = format!("{mark} · {bound}{}", fmt_seconds(r.step_time_s));
    [cap, bw, lat, time]
}

/// The value cells' font: body text, or small text for every cell where any value would not fit
/// its cell in body text (cells of mixed sizes read as emphasis: "141 GiB" and "300 ns" stood out
/// of their columns at 1024 × 700).
fn cell_font(ui: &Ui, prefs: &Prefs, rows: &[&ComparisonRow], cell_w: f32) -> egui::FontId {
    let body = egui::TextStyle::Body.resolve(ui.style());
    let room = cell_w - 8.0;
    let fits = rows.iter().flat_map(|r| cell_texts(prefs, r)).all(|text| {
        ui.painter()
            .layout_no_wrap(text, body.clone(), Color32::WHITE)
            .size()
            .x
            <= room
    });
    if fits {
        body
    } else {
        egui::TextStyle::Small.resolve(ui.style())
    }
}

/// A column header `w` points wide: the first of `names` (longest first) that fits whole, so that
/// a header is never cut mid-word ("This sce…" at 1280 × 720 in presentation); the last one is
/// truncated if none fits.
fn header(ui: &mut Ui, w: f32, names: &[&str], hover: &str) {
    let font = egui::TextStyle::Small.resolve(ui.style());
    let color = ui.visuals().strong_text_color();
    let fits = |t: &&&str| {
        ui.painter()
            .layout_no_wrap((**t).to_owned(), font.clone(), color)
            .size()
            .x
            <= w
    };
    let text = names
        .iter()
        .find(fits)
        .or(names.last())
        .copied()
        .unwrap_or_default();
    let size = egui::vec2(w, ui.text_style_height(&egui::TextStyle::Body) + 2.0);
    let layout = egui::Layout::left_to_right(egui::Align::Center);
    ui.allocate_ui_with_layout(size, layout, |ui| {
        ui.set_min_size(size);
        let text = RichText::new(text).font(font).color(color);
        ui.add(egui::Label::new(text).truncate())
            .on_hover_text(hover);
    });
}

/// What every row's value cells share: their width and font, the columns' scales (memory,
/// bandwidth, latency) and the memory the scenario needs.
struct Cells {
    width: f32,
    font: egui::FontId,
    scale: [f64; 3],
    needed: crate::units::Bytes,
}

fn row_ui(ui: &mut Ui, prefs: &Prefs, r: &ComparisonRow, own: bool, name_w: f32, cells: &Cells) {
    let th = prefs.theme;
    let body = ui.text_style_height(&egui::TextStyle::Body);
    // In the cells' size (the names were cut at projector sizes in the body size).
    let name = RichText::new(r.label).text_style(egui::TextStyle::Small);
    let name = if own {
        name.strong().color(theme::current(th))
    } else {
        name
    };
    let size = egui::vec2(name_w, body + 6.0);
    let layout = egui::Layout::left_to_right(egui::Align::Center);
    ui.allocate_ui_with_layout(size, layout, |ui| {
        ui.set_min_size(size);
        ui.add(egui::Label::new(name).truncate())
            .on_hover_text(format!("{} {}", r.label, r.confidence.tag()));
    });
    let [cap, bw, lat, time] = cell_texts(prefs, r);
    let cell = (cells.width, &cells.font);
    let frac = r.capacity.map_or(0.0, |b| b.get() / cells.scale[0]);
    let hover = format!("{}: {cap}", r.label);
    let color = theme::component_on(Component::Weights, th);
    bar_cell(ui, cell, frac, color, cap, hover);
    let frac = r.bandwidth.get() / cells.scale[1];
    let hover = format!("{}: {bw}", r.label);
    let color = theme::component_on(Component::CommBuffers, th);
    bar_cell(ui, cell, frac, color, bw, hover);
    let frac = r.latency_ns.unwrap_or(0.0) / cells.scale[2];
    let hover = format!("{}: {lat}", r.label);
    let color = theme::component_on(Component::OptimizerStates, th);
    bar_cell(ui, cell, frac, color, lat, hover);
    scenario_cell(ui, prefs, r, cell, (time, cells.needed));
}

/// The last column: does the scenario fit there, and how long a step (or token) takes.
fn scenario_cell(
    ui: &mut Ui,
    prefs: &Prefs,
    r: &ComparisonRow,
    cell: (f32, &egui::FontId),
    (text, needed): (String, crate::units::Bytes),
) {
    let u = prefs.unit;
    let th = prefs.theme;
    let cap = r.capacity.map_or_else(|| "—".to_owned(), |b| u.format(b));
    let color = match r.fits {
        Some(true) => theme::good(th),
        Some(false) => theme::bad(th),
        None => theme::baseline(th),
    };
    let frac = r.capacity.map_or(1.0, |b| {
        if b.get() > 0.0 {
            needed.get() / b.get()
        } else {
            1.0
        }
    });
    // Without a sourced peak the time counts memory traffic only: a lower bound.
    let bound = if r.peak_known { "" } else { "≥ " };
    let time = format!("{bound}{}", fmt_seconds(r.step_time_s));
    let hover = format!(
        "{}: needs {} of {}\nStep (or per-token) time {}, {} tokens/s, {}\nLargest batch that fits: {}",
        r.label,
        u.format(needed),
        cap,
        time,
        widgets::fmt_count(r.tokens_per_s),
        r.bound.label(),
        r.max_batch.map_or_else(
            || "— (capacity unknown, or a serving engine: its startup KV cache bounds the requests)"
                .to_owned(),
            |b| b.to_string()
        )
    );
    bar_cell(ui, cell, frac, color, text, hover);
}
