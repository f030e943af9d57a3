//! Architecture comparison as small multiples: one column per quantity (memory, bandwidth, latency,
//! and what this scenario does on that GPU), each with its own unit and scale, one row per GPU.
//! Painted bars in a grid rather than plots: long GPU names stay legible at any width.

use egui::{Color32, RichText, Sense, Ui};

use crate::estimator::{Component, Estimate, estimate};
use crate::hardware::{self, GpuId};
use crate::scenario::{GpuChoice, Scenario};
use crate::ui::{Prefs, theme};
use crate::units::{Bytes, fmt_sig};

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

struct Row {
    name: &'static str,
    current: bool,
    capacity: Bytes,
    bandwidth_gb_s: f64,
    latency_ns: Option<f64>,
    peak: Bytes,
    fits: bool,
}

fn rows(scenario: &Scenario, scratch: &mut Scenario) -> Vec<Row> {
    let mut ids: Vec<GpuId> = SHOWN.to_vec();
    if let GpuChoice::Catalog(id) = scenario.gpu {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    scratch.clone_from(scenario);
    ids.into_iter()
        .map(|id| {
            scratch.gpu = GpuChoice::Catalog(id);
            let spec = hardware::gpu(id);
            let m = estimate(scratch).memory;
            Row {
                name: spec.name,
                current: scenario.gpu == GpuChoice::Catalog(id),
                capacity: spec.capacity.bytes(),
                bandwidth_gb_s: spec.bandwidth_gb_s,
                latency_ns: spec.latency_ns,
                peak: m.gpu_total,
                fits: m.fits,
            }
        })
        .collect()
}

/// A horizontal bar filling `fraction` of the cell, with the value written over it.
fn bar_cell(ui: &mut Ui, width: f32, fraction: f64, color: Color32, text: String, hover: String) {
    let h = ui.text_style_height(&egui::TextStyle::Body) + 4.0;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, h), Sense::hover());
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0) as f32
    } else {
        0.0
    };
    let mut bar = rect;
    bar.set_width(rect.width() * f);
    ui.painter()
        .rect_filled(bar, 2.0, color.gamma_multiply(0.55));
    ui.painter().text(
        rect.left_center() + egui::vec2(4.0, 0.0),
        egui::Align2::LEFT_CENTER,
        text,
        egui::TextStyle::Body.resolve(ui.style()),
        ui.visuals().strong_text_color(),
    );
    resp.on_hover_text(hover);
}

pub fn ui(
    ui: &mut Ui,
    prefs: &Prefs,
    scenario: &Scenario,
    current: &Estimate,
    scratch: &mut Scenario,
) {
    let _ = current;
    let u = prefs.unit;
    let rows = rows(scenario, scratch);
    let max_cap = rows.iter().map(|r| r.capacity.get()).fold(1.0, f64::max);
    let max_bw = rows.iter().map(|r| r.bandwidth_gb_s).fold(1.0, f64::max);
    let max_lat = rows.iter().filter_map(|r| r.latency_ns).fold(1.0, f64::max);
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let name_w = body * 9.5;
    let gap = ui.spacing().item_spacing.x;
    let cell_w = ((ui.available_width() - name_w - 4.0 * gap) / 4.0).max(50.0);
    let header = |ui: &mut Ui, w: f32, text: String, hover: &str| {
        ui.add_sized(
            [w, body + 2.0],
            egui::Label::new(RichText::new(text).strong()).truncate(),
        )
        .on_hover_text(hover);
    };
    ui.horizontal(|ui| {
        header(
            ui,
            name_w,
            "GPU".to_owned(),
            "Catalog GPUs; the scenario's own is highlighted.",
        );
        header(
            ui,
            cell_w,
            format!("Memory ({})", u.label()),
            "Capacity per GPU as the vendor quotes it, in the chosen unit.",
        );
        header(
            ui,
            cell_w,
            "Bandwidth (GB/s)".to_owned(),
            "Peak memory bandwidth per GPU, GB/s (10^9 B/s).",
        );
        header(
            ui,
            cell_w,
            "Latency (ns)".to_owned(),
            "Measured load-to-use DRAM latency where sourced; — when unknown.",
        );
        header(
            ui,
            cell_w,
            format!("This scenario ({})", u.label()),
            "Per-GPU peak of the current scenario on that GPU, against its memory.",
        );
    });
    for r in &rows {
        ui.horizontal(|ui| row_ui(ui, prefs, r, name_w, cell_w, [max_cap, max_bw, max_lat]));
    }
}

fn row_ui(ui: &mut Ui, prefs: &Prefs, r: &Row, name_w: f32, cell_w: f32, max: [f64; 3]) {
    let u = prefs.unit;
    let th = prefs.theme;
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let name = if r.current {
        RichText::new(r.name).strong().color(theme::current(th))
    } else {
        RichText::new(r.name)
    };
    ui.add_sized([name_w, body + 4.0], egui::Label::new(name).truncate());
    let cap = u.format(r.capacity);
    let hover = format!("{}: {cap}", r.name);
    bar_cell(
        ui,
        cell_w,
        r.capacity.get() / max[0],
        theme::component(Component::Weights),
        cap,
        hover,
    );
    let bw = format!("{} GB/s", fmt_sig(r.bandwidth_gb_s));
    let hover = format!("{}: {bw}", r.name);
    bar_cell(
        ui,
        cell_w,
        r.bandwidth_gb_s / max[1],
        theme::component(Component::CommBuffers),
        bw,
        hover,
    );
    let lat = r
        .latency_ns
        .map_or_else(|| "—".to_owned(), |l| format!("{} ns", fmt_sig(l)));
    let hover = format!("{}: {lat}", r.name);
    let frac = r.latency_ns.unwrap_or(0.0) / max[2];
    bar_cell(
        ui,
        cell_w,
        frac,
        theme::component(Component::OptimizerStates),
        lat,
        hover,
    );
    let (mark, color) = if r.fits {
        ("fits", theme::good(th))
    } else {
        ("no", theme::bad(th))
    };
    let frac = if r.capacity.get() > 0.0 {
        r.peak.get() / r.capacity.get()
    } else {
        1.0
    };
    let text = format!(
        "{mark}: {} of {}",
        fmt_sig(u.value(r.peak)),
        fmt_sig(u.value(r.capacity))
    );
    let hover = format!(
        "{}: peak {} of {} ({} %)",
        r.name,
        u.format(r.peak),
        u.format(r.capacity),
        fmt_sig(frac * 100.0)
    );
    bar_cell(ui, cell_w, frac, color, text, hover);
}
