//! The headline over the charts: does it fit, by how much, which phase sets the peak, the largest batch
//! that fits, speed — and, with a pinned baseline, baseline and current side by side.

use egui::{RichText, Ui};

use super::{Prefs, theme};
use crate::estimator::{Diagnostic, Estimate};
use crate::units::{Bytes, fmt_seconds, fmt_sig};

/// What the headline shows about one scenario.
pub struct Column<'a> {
    pub title: &'a str,
    pub estimate: &'a Estimate,
    /// Largest micro-batch that fits (None: not even batch 1); under a serving engine the requests
    /// its KV cache holds at once.
    pub largest_batch: Option<u32>,
    /// The headline's words for `largest_batch`: (label, hover) from [`batch_wording`].
    pub batch_words: (&'static str, &'static str),
    /// The model family's units (sequences, images, samples; tokens/s or images/s).
    pub family: crate::ui::family::FamilyView,
}

/// The headline for the current scenario, with the baseline beside it when one is pinned.
pub fn ui(ui: &mut Ui, prefs: &Prefs, current: &Column<'_>, baseline: Option<&Column<'_>>) {
    match baseline {
        None => single(ui, prefs, current),
        Some(base) => compare(ui, prefs, base, current),
    }
}

/// A llama.cpp CPU build's host bytes (`None` when a GPU is used): such a run has no GPU peak to
/// hold against a GPU's memory.
pub fn host_only(est: &Estimate) -> Option<Bytes> {
    est.cpu_build().map(|b| Bytes(b.host_total() as f64))
}

/// The verdict's word and colour: CPU ONLY (a run that uses no GPU), FITS or DOES NOT FIT. The
/// headline's box and presentation mode's title both say it.
pub fn verdict_words(prefs: &Prefs, est: &Estimate) -> (&'static str, egui::Color32) {
    if host_only(est).is_some() {
        ("CPU ONLY", theme::good(prefs.theme))
    } else if est.memory.fits {
        ("FITS", theme::good(prefs.theme))
    } else {
        ("DOES NOT FIT", theme::bad(prefs.theme))
    }
}

fn verdict(ui: &mut Ui, prefs: &Prefs, est: &Estimate, size: f32) {
    let (text, color) = verdict_words(prefs, est);
    egui::Frame::new()
        .stroke(egui::Stroke::new(2.0, color))
        .corner_radius(6.0)
        .inner_margin(egui::Margin::symmetric(10, 4))
        .show(ui, |ui| {
            ui.label(RichText::new(text).size(size).strong().color(color))
        })
        .inner
        .on_hover_text(
            "Per-GPU peak (tensors + NCCL buffers + CUDA context + allocator reserve) against the GPU's memory.",
        );
}

fn single(ui: &mut Ui, prefs: &Prefs, col: &Column<'_>) {
    let m = &col.estimate.memory;
    let u = prefs.unit;
    ui.horizontal_wrapped(|ui| {
        // Presentation mode has the verdict in its title line.
        if !prefs.presentation {
            verdict(ui, prefs, col.estimate, theme::verdict_size(prefs));
            ui.add_space(12.0);
        }
        ui.vertical(|ui| {
            let statistics = if col.estimate.llamacpp.is_some() {
                format!(
                    "Buffers at the peak: {} (the model, KV cache and compute buffers llama.cpp prints; ggml allocates them at their exact sizes).\nWhat nvidia-smi would show: {} (with the CUDA context and the library workspace).",
                    u.format(m.tensor_peak),
                    u.format(m.gpu_total)
                )
            } else {
                format!(
                    "Tensors at the peak: {} (comparable to torch.cuda.max_memory_allocated).\nWith the allocator's reserve: {} (comparable to torch.cuda.max_memory_reserved).\nWhat nvidia-smi would show: {}.",
                    u.format(m.tensor_peak),
                    u.format(m.reserved_peak()),
                    u.format(m.gpu_total)
                )
            };
            ui.label(RichText::new(peak_text(prefs, col.estimate)).strong())
                .on_hover_text(statistics);
            let headroom = if host_only(col.estimate).is_some() {
                "No GPU used (llama.cpp -dev none)".to_owned()
            } else {
                headroom_text(prefs, m.headroom)
            };
            ui.label(headroom)
                .on_hover_text("The GPU's usable memory (what the CUDA runtime lets a process allocate) minus the per-GPU peak; negative when it does not fit.");
        });
        ui.add_space(12.0);
        ui.vertical(|ui| {
            ui.label(phase_text(col.estimate))
                .on_hover_text("The phase of the step whose live memory is largest.");
            let (label, hover) = col.batch_words;
            ui.label(format!(
                "{label}: {}",
                batch_name(col.largest_batch, col.family.items)
            ))
            .on_hover_text(hover);
        });
    });
    // Speed on one wrapping line below, so the headline stays short at any width.
    ui.horizontal_wrapped(|ui| {
        for (i, (label, value, hover)) in
            speed_rows(col.estimate, col.family).into_iter().enumerate()
        {
            if i > 0 {
                ui.label("·");
            }
            ui.label(format!("{label}: {value}")).on_hover_text(hover);
        }
    });
}

fn compare(ui: &mut Ui, prefs: &Prefs, base: &Column<'_>, cur: &Column<'_>) {
    let u = prefs.unit;
    let (bm, cm) = (&base.estimate.memory, &cur.estimate.memory);
    let small_verdict = theme::body_size(prefs) * 1.1;
    let heading = |ui: &mut Ui, text: &str| {
        ui.label(RichText::new(text).strong());
    };
    ui.horizontal_top(|ui| {
        egui::Grid::new("headline_compare_memory")
            .num_columns(4)
            .spacing([18.0, 2.0])
            .striped(true)
            .show(ui, |ui| {
                for h in ["", base.title, cur.title, "Difference"] {
                    heading(ui, h);
                }
                ui.end_row();
                ui.label("Verdict");
                verdict(ui, prefs, base.estimate, small_verdict);
                verdict(ui, prefs, cur.estimate, small_verdict);
                ui.label("");
                ui.end_row();
                let rows = [
                    ("Peak per GPU", bm.gpu_total, cm.gpu_total),
                    ("GPU memory", bm.capacity, cm.capacity),
                    ("Headroom", bm.headroom, cm.headroom),
                ];
                for (label, b, c) in rows {
                    ui.label(label);
                    ui.label(u.format(b));
                    ui.label(u.format(c));
                    ui.label(delta(prefs, b, c));
                    ui.end_row();
                }
            });
        ui.add_space(12.0);
        egui::Grid::new("headline_compare_speed")
            .num_columns(3)
            .spacing([18.0, 2.0])
            .striped(true)
            .show(ui, |ui| {
                for h in ["", base.title, cur.title] {
                    heading(ui, h);
                }
                ui.end_row();
                ui.label("Peak phase");
                ui.label(phase_name(base.estimate));
                ui.label(phase_name(cur.estimate));
                ui.end_row();
                ui.label(if base.batch_words == cur.batch_words {
                    "Largest batch"
                } else {
                    "Largest batch / requests"
                });
                ui.label(batch_name(base.largest_batch, base.family.items));
                ui.label(batch_name(cur.largest_batch, cur.family.items));
                ui.end_row();
                let (b, c) = (
                    compact_speed(base.estimate, base.family),
                    compact_speed(cur.estimate, cur.family),
                );
                let hovers = [
                    "Training: one optimizer step. Inference: time per output token.",
                    "Tokens per second over all GPUs (trained or generated).",
                ];
                for ((label, hover), (bv, cv)) in ["Time", "Throughput"]
                    .into_iter()
                    .zip(hovers)
                    .zip(b.into_iter().zip(c))
                {
                    ui.label(label).on_hover_text(hover);
                    ui.label(bv);
                    ui.label(cv);
                    ui.end_row();
                }
            });
    });
}

/// "+10.2 GiB (+109 %)": the change and its size relative to the baseline's magnitude, both with
/// the change's sign (a negative baseline, such as a headroom, does not flip the percentage).
fn delta(prefs: &Prefs, base: Bytes, cur: Bytes) -> String {
    let d = cur - base;
    let sign = if d.get() > 0.0 { "+" } else { "" };
    let pct = if base.get().abs() > 0.0 {
        format!(" ({sign}{} %)", fmt_sig(d.get() / base.get().abs() * 100.0))
    } else {
        String::new()
    };
    format!("{sign}{}{pct}", prefs.unit.format(d))
}

/// "Peak per GPU: 17.9 GiB of 79.2 GiB (22.6 %)": the GPU total against the usable memory.
pub fn peak_text(prefs: &Prefs, est: &Estimate) -> String {
    let m = &est.memory;
    let u = prefs.unit;
    if let Some(host) = host_only(est) {
        return format!("Host memory: {} in llama.cpp's buffers", u.format(host));
    }
    let pct = if m.capacity.get() > 0.0 {
        format!(
            " ({} %)",
            fmt_sig(m.gpu_total.get() / m.capacity.get() * 100.0)
        )
    } else {
        String::new()
    };
    format!(
        "Peak per GPU: {} of {}{pct}",
        u.format(m.gpu_total),
        u.format(m.capacity)
    )
}

fn headroom_text(prefs: &Prefs, headroom: Bytes) -> String {
    if headroom.get() >= 0.0 {
        format!("Headroom {}", prefs.unit.format(headroom))
    } else {
        format!("Short by {}", prefs.unit.format(Bytes::ZERO - headroom))
    }
}

fn phase_name(est: &Estimate) -> &'static str {
    est.memory.peak_phase.map_or("—", |p| p.label())
}

fn phase_text(est: &Estimate) -> String {
    match est.memory.limiting_stage() {
        // Pipeline parallel: the stage that must fit.
        Some(s) => format!("Peak phase: {}, limiting {}", phase_name(est), s.label()),
        None => format!("Peak phase: {}", phase_name(est)),
    }
}

fn batch_name(b: Option<u32>, items: &str) -> String {
    match b {
        Some(b) => format!(
            "{b} {}",
            crate::ui::widgets::singular_if_one(f64::from(b), items)
        ),
        None => "none (not even 1)".to_owned(),
    }
}

/// How the headline names the largest batch: under a serving engine it is the requests the KV
/// cache the engine sized at startup holds at once (`solver::max_fitting`).
pub fn batch_wording(s: &crate::scenario::Scenario) -> (&'static str, &'static str) {
    match s.served_from_a_startup_kv_cache() {
        true => (
            "Requests the KV cache holds at once",
            "The engine sizes its KV cache at startup whatever the load. vLLM/SGLang: the KV cache's tokens over one request (prompt + generated), at most max_num_seqs / max_running_requests. llama.cpp: the most -np slots at this -c whose slot holds one request.",
        ),
        false => (
            "Largest batch that fits",
            "Largest micro-batch (sequences per GPU per forward) whose peak still fits, other inputs unchanged.",
        ),
    }
}

/// Step time, throughput and saturation: (label, value with unit, hover).
fn speed_rows(
    est: &Estimate,
    family: crate::ui::family::FamilyView,
) -> Vec<(&'static str, String, &'static str)> {
    let p = &est.performance;
    let step = &p.step;
    // Without a sourced compute peak the rate is an upper bound: written as the CLI and the
    // Markdown report write it (one function).
    let tokens = crate::ui::family::throughput_text(est, family);
    let main = p.training.or(p.decode).or(p.prefill);
    let saturation = main.map_or_else(
        || "—".to_owned(),
        |r| format!("{} % ({})", fmt_sig(r.saturation * 100.0), r.bound.label()),
    );
    let mut rows = Vec::with_capacity(4);
    if p.training.is_some() {
        rows.push((
            "Step time",
            format!("{} ({})", fmt_seconds(step.total_s), step.bound.label()),
            "One optimizer step: forward + backward of every micro-batch, the update, exposed communication, bubbles and offload (a post-training step adds its rollout's generation and scoring).",
        ));
        rows.push((
            "Throughput",
            tokens,
            "Training tokens per second over all GPUs.",
        ));
        rows.push((
            "MFU",
            format!("{} %", fmt_sig(p.throughput.mfu * 100.0)),
            "Model FLOPs utilisation (PaLM App. B): model FLOPs ÷ (step time × peak).",
        ));
    } else {
        if p.decode.is_none() {
            // Encoder-only (or nothing generated): one forward, no decode phase (issue 13).
            rows.push((
                "Forward pass",
                fmt_seconds(p.throughput.ttft_s),
                "One forward of the batch; no decode phase, so no time per output token.",
            ));
        } else {
            rows.push((
                "First token",
                fmt_seconds(p.throughput.ttft_s),
                "Time to first token: the prefill of the prompt batch.",
            ));
            rows.push((
                "Per output token",
                format!(
                    "{} ({})",
                    fmt_seconds(p.throughput.tpot_s),
                    p.throughput.decode_bound.label()
                ),
                "Time per output token at the mean decode context; in brackets, what takes most of the decode steps' time: their roofline (compute or memory), their collectives, offload, or the fixed overhead of each forward.",
            ));
        }
        rows.push((
            "Throughput",
            tokens,
            "Generated tokens per second over all GPUs.",
        ));
    }
    // A post-training step also generates and scores; the saturation is its training phase's.
    let rollout = step.rollout_generation_s > 0.0 || step.scoring_s > 0.0;
    rows.push(if rollout {
        (
            "Training-phase saturation",
            saturation,
            "Attainable ÷ peak FLOP/s of the policy's forward and backward on the roofline (the step's rollout generation and scoring are bound on their own: see the step-time chart).",
        )
    } else {
        (
            "Compute saturation",
            saturation,
            "Attainable ÷ peak FLOP/s of the main phase on the roofline: how busy the compute units can be.",
        )
    });
    rows
}

/// Time and throughput in a form comparable between training and inference scenarios.
fn compact_speed(est: &Estimate, family: crate::ui::family::FamilyView) -> [String; 2] {
    let p = &est.performance;
    let time = if p.training.is_some() {
        format!("{} per step", fmt_seconds(p.step.total_s))
    } else {
        format!("{} per token", fmt_seconds(p.throughput.tpot_s))
    };
    [time, crate::ui::family::throughput_text(est, family)]
}

/// The diagnostics, most serious first, each coloured by severity. In presentation mode the band
/// is one row high: the most serious message is cut to that row with "…" (the whole text on
/// hover) and the others are counted beside it ("+2 more", every message on hover), rather than
/// wrapping into rows the band clips.
pub fn diagnostics_ui(ui: &mut Ui, prefs: &Prefs, est: &Estimate) {
    let mut items: Vec<Diagnostic> = est.diagnostics.iter().collect();
    items.sort_by_key(|d| std::cmp::Reverse(d.severity()));
    let line = |d: &Diagnostic| {
        let icon = match d.severity() {
            crate::estimator::Severity::Error => "Error:",
            crate::estimator::Severity::Warning => "Warning:",
            crate::estimator::Severity::Note => "Note:",
        };
        RichText::new(format!("{icon} {}", d.message()))
            .color(theme::severity(d.severity(), prefs.theme))
    };
    if prefs.presentation {
        let Some(first) = items.first() else {
            return;
        };
        let more = items.len() - 1;
        ui.horizontal(|ui| {
            // Room for "+N more" on the right of the cut message.
            let count_w = if more > 0 {
                5.0 * ui.text_style_height(&egui::TextStyle::Body)
            } else {
                0.0
            };
            let w = (ui.available_width() - count_w).max(0.0);
            ui.allocate_ui(egui::vec2(w, ui.available_height()), |ui| {
                ui.add(egui::Label::new(line(first)).truncate());
            });
            if more > 0 {
                // Built only while hovered, not every frame.
                ui.label(RichText::new(format!("+{more} more")).weak())
                    .on_hover_ui(|ui| {
                        for d in &items {
                            ui.label(line(d));
                        }
                    });
            }
        });
        return;
    }
    for d in &items {
        ui.label(line(d));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_delta_carries_the_change_sign_on_a_negative_baseline() {
        let prefs = Prefs::default();
        let gib = |g: f64| Bytes::from_gib(g);
        // Headroom -9.36 GiB -> +0.84 GiB: up by 10.2 GiB, 109 % of the baseline's size.
        let up = delta(&prefs, gib(-9.36), gib(0.84));
        assert!(up.starts_with("+10.2 GiB (+109"), "{up}");
        // Headroom -9.4 GiB -> -15.9 GiB: down by 6.5 GiB, -69.1 % (a typographic minus).
        let down = delta(&prefs, gib(-9.4), gib(-15.9));
        assert!(down.starts_with("−6.5") && down.contains("(−69"), "{down}");
    }
}
