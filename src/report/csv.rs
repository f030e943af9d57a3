//! CSV exports (RFC 4180: comma-separated, a header row, fields with commas or quotes quoted).
//! Numbers are written with Rust's shortest round-trip formatting, so parsing a cell gives back the
//! estimate's exact `f64`. Bytes are plain bytes; GiB columns (2^30 B) are for reading only.

use std::fmt::Write;

use crate::estimator::performance::{Comparison, PhaseRoofline};
use crate::estimator::{Component, Estimate, Phase};
use crate::units::Bytes;

/// One CSV field, quoted when needed.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A finite number, or an empty cell.
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

fn line(out: &mut String, cells: &[String]) {
    let row: Vec<String> = cells.iter().map(|c| field(c)).collect();
    let _ = writeln!(out, "{}", row.join(","));
}

/// The per-GPU breakdown at the peak: one row per component in stack order, then the totals.
/// Columns: `component,label,bytes,gib`.
pub fn breakdown_csv(e: &Estimate) -> String {
    let mut out = String::from("component,label,bytes,gib\n");
    let mut row = |key: &str, label: &str, b: Bytes| {
        line(
            &mut out,
            &[key.into(), label.into(), num(b.get()), num(b.as_gib())],
        );
    };
    for (c, b) in e.memory.peak.iter() {
        row(c.key(), c.label(), b);
    }
    let m = &e.memory;
    row(
        "tensor_peak",
        "Tensor peak (max_memory_allocated)",
        m.tensor_peak,
    );
    row(
        "reserved_peak",
        "Reserved peak (max_memory_reserved)",
        m.reserved_peak(),
    );
    row("gpu_total", "GPU total (nvidia-smi)", m.gpu_total);
    row("capacity", "Capacity", m.capacity);
    row("headroom", "Headroom", m.headroom);
    out
}

/// Tensor bytes per phase: one row per phase the mode has, one column per component.
/// Columns: `phase,<component keys…>,tensor_total`.
pub fn phases_csv(e: &Estimate) -> String {
    let mut header = vec!["phase".to_owned()];
    header.extend(Component::ALL.iter().map(|c| c.key().to_owned()));
    header.push("tensor_total".to_owned());
    let mut out = String::new();
    line(&mut out, &header);
    for p in Phase::ALL {
        let Some(b) = e.memory.phases.get(p) else {
            continue;
        };
        let mut cells = vec![p.key().to_owned()];
        cells.extend(Component::ALL.iter().map(|c| num(b.get(*c).get())));
        cells.push(num(b.tensor_total().get()));
        line(&mut out, &cells);
    }
    out
}

/// The roofline phases the estimate has (Williams et al. 2009), one row each.
pub const ROOFLINE_COLUMNS: &str = "phase,flops,bytes,intensity_flop_per_byte,ridge_flop_per_byte,\
attainable_tflops,saturation,idle_share,compute_time_s,memory_time_s,time_s,bound";

/// The roofline phases present in `e` with their keys.
pub fn roofline_phases(e: &Estimate) -> impl Iterator<Item = (&'static str, PhaseRoofline)> + '_ {
    let p = &e.performance;
    [
        ("training", p.training),
        ("optimizer", p.optimizer),
        ("prefill", p.prefill),
        ("decode", p.decode),
    ]
    .into_iter()
    .filter_map(|(k, r)| r.map(|r| (k, r)))
}

pub fn roofline_csv(e: &Estimate) -> String {
    let mut out = format!("{ROOFLINE_COLUMNS}\n");
    for (key, r) in roofline_phases(e) {
        line(
            &mut out,
            &[
                key.to_owned(),
                num(r.flops),
                num(r.bytes.get()),
                num(r.intensity),
                num(r.ridge),
                num(r.attainable.as_tflops()),
                num(r.saturation),
                num(r.idle_share),
                num(r.compute_time_s),
                num(r.memory_time_s),
                num(r.time_s),
                r.bound.label().to_owned(),
            ],
        );
    }
    out
}

/// The architecture comparison: every catalog GPU, then every memory technology (and the seed
/// article's figures) with the scenario's GPU compute. Empty cells are unknown.
pub const COMPARISON_COLUMNS: &str = "label,capacity_bytes,bandwidth_gb_s,peak_tflops,latency_ns,\
energy_pj_per_bit,fits,headroom_bytes,max_batch,step_time_s,tokens_per_s,bound,confidence";

pub fn comparison_csv(c: &Comparison) -> String {
    let mut out = format!("{COMPARISON_COLUMNS}\n");
    for r in c.rows() {
        line(
            &mut out,
            &[
                r.label.to_owned(),
                opt(r.capacity.map(Bytes::get)),
                num(r.bandwidth.as_gb_per_s()),
                num(r.peak.as_tflops()),
                opt(r.latency_ns),
                opt(r.energy_pj_per_bit),
                r.fits.map(|f| f.to_string()).unwrap_or_default(),
                opt(r.headroom.map(Bytes::get)),
                r.max_batch.map(|b| b.to_string()).unwrap_or_default(),
                num(r.step_time_s),
                num(r.tokens_per_s),
                r.bound.label().to_owned(),
                r.confidence.tag().to_owned(),
            ],
        );
    }
    out
}

/// Splits CSV text into rows of fields (quoted fields may hold commas and doubled quotes; no
/// newlines inside fields). The inverse of the writers above, for tests and scripts.
pub fn parse(text: &str) -> Vec<Vec<String>> {
    text.lines().map(parse_line).collect()
}

fn parse_line(l: &str) -> Vec<String> {
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = l.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    cells.push(cur);
    cells
}
