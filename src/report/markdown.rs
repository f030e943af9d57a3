//! The Markdown report: scenario summary, the per-GPU breakdown (GiB and bytes), the phase that sets
//! the peak, diagnostics, roofline figures and the architecture comparison. Tables are GitHub
//! Markdown; numbers carry their units (memory in GiB = 2^30 B, bandwidth in GB/s).

use std::fmt::Write;

use super::csv::roofline_phases;
use super::family::FamilyView;
use crate::estimator::performance::{Comparison, compare};
use crate::estimator::solver::{checkpointing_label, optimizer_label, precision_label, zero_label};
use crate::estimator::{Estimate, Phase};
use crate::presets::text::{escape_controls, escape_controls_keep_lines};
use crate::scenario::{GpuChoice, Mode, ModelFamily, Scenario};
use crate::units::{Bytes, MemoryUnit, fmt_seconds, fmt_sig};

/// A table cell: `|` would end the cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Bytes as an integer with thousands separators (exact for anything below 2^53).
pub fn bytes_exact(b: Bytes) -> String {
    crate::format::grouped(b.get())
}

/// The whole report, with the comparison table computed here (`compare` is pure).
pub fn markdown(s: &Scenario, e: &Estimate) -> String {
    markdown_with(s, e, Some(&compare(s)))
}

/// The report with a given comparison (or none), memory in GiB.
pub fn markdown_with(s: &Scenario, e: &Estimate, comparison: Option<&Comparison>) -> String {
    markdown_in(s, e, comparison, MemoryUnit::GiB)
}

/// The report with a given comparison (or none), memory in `unit` (GiB or GB, labelled everywhere).
pub fn markdown_in(
    s: &Scenario,
    e: &Estimate,
    comparison: Option<&Comparison>,
    unit: MemoryUnit,
) -> String {
    let mut out = String::new();
    // Its title: a file without a name gets the default scenario's.
    let name = s.title();
    // Names and notes come from files: control characters escaped (an `ESC [2J` in a report that is
    // later `cat` to a terminal must not clear it).
    let title = escape_controls(&name.replace('\n', " ")).into_owned();
    let _ = writeln!(out, "# VRAM report: {title}\n");
    if !s.notes.is_empty() {
        let notes = escape_controls_keep_lines(&s.notes).replace('\n', "\n> ");
        let _ = writeln!(out, "> {notes}\n");
    }
    summary(&mut out, s, e, unit);
    let cpu = e.cpu_build();
    match cpu {
        Some(b) => cpu_memory(&mut out, b, unit),
        None => memory(&mut out, e, unit),
    }
    if let Some(b) = &e.llamacpp {
        llamacpp_log(&mut out, b);
    }
    if let Some(f) = &e.engine {
        engine_log(&mut out, f, unit);
    }
    diagnostics(&mut out, e);
    let family = super::family::view(s.model.family);
    if let Some(b) = cpu {
        cpu_time(&mut out, e, b);
        return out;
    }
    performance(&mut out, e, unit, family);
    if let Some(c) = comparison {
        comparison_table(&mut out, c, unit, family);
    }
    out
}

/// A llama.cpp CPU build (`-dev none`): host memory, no GPU table.
fn cpu_memory(
    out: &mut String,
    b: &crate::estimator::engines::llamacpp::Buffers,
    unit: MemoryUnit,
) {
    let _ = writeln!(
        out,
        "## Host memory (llama.cpp -dev none)
"
    );
    let _ = writeln!(
        out,
        "**{}** in llama.cpp's CPU buffers (model, KV cache and compute, below); no GPU is used.\n",
        unit.format(Bytes(b.host_total() as f64))
    );
}

/// The buffer lines llama.cpp's load log will print.
fn llamacpp_log(out: &mut String, b: &crate::estimator::engines::llamacpp::Buffers) {
    let _ = writeln!(out, "## llama.cpp load log (predicted)\n");
    let _ = writeln!(out, "```text\n{}```\n", super::llamacpp::log_lines(b));
}

/// What vLLM or SGLang would print at startup, and the budget behind it (as the table report's
/// section and the window's lines above the chart).
fn engine_log(out: &mut String, f: &crate::estimator::engines::EngineFigures, unit: MemoryUnit) {
    use super::engine::{budget_lines, default_context_line, printed_lines};
    let _ = writeln!(
        out,
        "## {} startup log (predicted, per GPU)
",
        f.kind.label()
    );
    let _ = writeln!(
        out,
        "```text
{}
```
",
        printed_lines(f).join("\n")
    );
    for l in budget_lines(f, unit)
        .into_iter()
        .chain(default_context_line(f))
    {
        let _ = writeln!(out, "- {}", cell(&l));
    }
    out.push('\n');
}

/// A CPU build's times: the prompt at the host's compute rate, tokens at its memory bandwidth.
fn cpu_time(out: &mut String, e: &Estimate, b: &crate::estimator::engines::llamacpp::Buffers) {
    let t = &e.performance.throughput;
    let l = &b.settings;
    let _ = writeln!(out, "## Time on the CPU\n");
    let _ = writeln!(
        out,
        "Time to first token **{}**, per output token **{}** (host {} TFLOP/s, memory {} GB/s: \
         assumptions, set yours). No GPU is used: no roofline or GPU comparison applies.\n",
        fmt_seconds(t.ttft_s),
        fmt_seconds(t.tpot_s),
        fmt_sig(l.host_tflops),
        fmt_sig(l.host_memory_gb_s)
    );
}

fn gpu_name(s: &Scenario) -> String {
    match &s.gpu {
        GpuChoice::Custom(c) => c.name.clone(),
        GpuChoice::Catalog(_) => s.gpu.spec().name.to_owned(),
    }
}

fn summary(out: &mut String, s: &Scenario, e: &Estimate, unit: MemoryUnit) {
    out.push_str("| Input | Value |\n|---|---|\n");
    for (k, v) in summary_rows(s, e, unit) {
        let _ = writeln!(out, "| {k} | {} |", cell(&v));
    }
    out.push('\n');
}

/// The report's input table (mode, model, GPU, precision, optimizer, batch, strategies, layout):
/// (row name, value), also the key figures of the slides summary (`super::summary`).
pub fn summary_rows(s: &Scenario, e: &Estimate, unit: MemoryUnit) -> Vec<(&'static str, String)> {
    let gib = |b: Bytes| unit.format(b);
    let mode = match s.mode {
        Mode::Training => "training",
        Mode::Inference => "inference",
    };
    let family = match s.model.family {
        ModelFamily::Transformer => "transformer",
        ModelFamily::Cnn => "CNN",
        ModelFamily::Recommender => "recommender",
    };
    let p = &s.parallel;
    let st = &s.strategies;
    let rows: Vec<(&str, String)> = vec![
        ("Mode", mode.to_owned()),
        (
            "Model",
            format!(
                "{family}, {} parameters",
                bytes_exact(Bytes(e.model.params.total))
            ),
        ),
        (
            "GPU",
            if e.cpu_build().is_some() {
                "none (llama.cpp -dev none: CPU only)".to_owned()
            } else {
                format!("{} ({})", gpu_name(s), gib(e.memory.capacity))
            },
        ),
        ("Precision", precision_label(&s.precision, s.mode)),
        (
            "Optimizer",
            match s.mode {
                Mode::Training => optimizer_label(s.optimizer.kind).to_owned(),
                Mode::Inference => "none (inference)".to_owned(),
            },
        ),
        ("Batch", batch(s)),
        (
            "Strategies",
            format!(
                "checkpointing {}, ZeRO stage {}",
                checkpointing_label(st.checkpointing),
                zero_label(st.zero)
            ),
        ),
        (
            "Layout",
            format!(
                "TP {} × PP {} × DP {}{} = {}",
                p.tp,
                p.pp,
                p.dp,
                crate::scenario::cp_suffix(p),
                crate::format::plural(p.gpus(), "GPU", "GPUs")
            ),
        ),
    ];
    rows
}

/// The batch in the model's own units: sequences of tokens, or images, or samples.
fn batch(s: &Scenario) -> String {
    let w = &s.workload;
    let family = super::family::view(s.model.family);
    match (s.mode, family.sequences) {
        (Mode::Training, true) => format!(
            "micro-batch {} × {} accumulation, sequence {} tokens",
            w.micro_batch, w.grad_accum_steps, w.seq_len
        ),
        (Mode::Training, false) => format!(
            "micro-batch {} {} × {} accumulation",
            w.micro_batch, family.items, w.grad_accum_steps
        ),
        // Dynamic batching serves `concurrent_requests` at once (`Serving::batch`), whatever the
        // training micro-batch says.
        (Mode::Inference, true) if s.inference.dynamic_batching => format!(
            "{} concurrent requests, prompt {} + {} generated tokens",
            s.inference.concurrent_requests,
            s.inference.prompt_tokens,
            s.inference.generated_tokens
        ),
        (Mode::Inference, true) => format!(
            "batch {}, prompt {} + {} generated tokens",
            w.micro_batch, s.inference.prompt_tokens, s.inference.generated_tokens
        ),
        (Mode::Inference, false) => format!("batch {} {}", w.micro_batch, family.items),
    }
}

fn memory(out: &mut String, e: &Estimate, unit: MemoryUnit) {
    let gib = |b: Bytes| unit.format(b);
    let u = unit.label();
    let m = &e.memory;
    let verdict = if m.fits { "Fits" } else { "Does not fit" };
    let _ = writeln!(out, "## Memory per GPU\n");
    let _ = writeln!(
        out,
        "**{verdict}**: {} of {} ({} headroom).",
        gib(m.gpu_total),
        gib(m.capacity),
        gib(m.headroom)
    );
    if let Some(p) = m.peak_phase {
        let _ = writeln!(out, "The peak is set by the **{}** phase.", p.label());
    }
    let _ = write!(out, "\n| Component | {u} | Bytes |\n|---|---:|---:|\n");
    for (c, b) in m.peak.iter() {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            c.label(),
            fmt_sig(unit.value(b)),
            bytes_exact(b)
        );
    }
    for (label, b) in [
        ("**Tensor peak** (max_memory_allocated)", m.tensor_peak),
        ("**Reserved peak** (max_memory_reserved)", m.reserved_peak()),
        ("**GPU total** (nvidia-smi)", m.gpu_total),
        ("Capacity", m.capacity),
    ] {
        let _ = writeln!(
            out,
            "| {label} | {} | {} |",
            fmt_sig(unit.value(b)),
            bytes_exact(b)
        );
    }
    let _ = write!(out, "\n| Phase | Tensor {u} |\n|---|---:|\n");
    for p in Phase::ALL {
        if let Some(b) = m.phases.get(p) {
            let mark = if m.peak_phase == Some(p) {
                " (peak)"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "| {}{mark} | {} |",
                p.label(),
                fmt_sig(unit.value(b.tensor_total()))
            );
        }
    }
    out.push('\n');
    super::stages::markdown(out, m, unit);
}

fn diagnostics(out: &mut String, e: &Estimate) {
    let _ = writeln!(out, "## Diagnostics\n");
    if e.diagnostics.is_empty() {
        out.push_str("None.\n\n");
        return;
    }
    for d in e.diagnostics.iter() {
        let _ = writeln!(
            out,
            "- **{:?}** ({}): {}",
            d.severity(),
            d.code(),
            d.message()
        );
    }
    out.push('\n');
}

fn performance(out: &mut String, e: &Estimate, unit: MemoryUnit, family: FamilyView) {
    let gib = |b: Bytes| unit.format(b);
    let p = &e.performance;
    let _ = writeln!(out, "## Time and roofline\n");
    let _ = writeln!(
        out,
        "Step time **{}** ({}); {}; MFU {} %.\n",
        fmt_seconds(p.step.total_s),
        p.step.bound.label(),
        super::family::throughput_text(e, family),
        fmt_sig(p.throughput.mfu * 100.0)
    );
    out.push_str(
        "| Phase | FLOPs | Bytes moved | Intensity (FLOP/B) | Ridge (FLOP/B) | Attainable TFLOP/s | \
         Saturation | Time | Bound |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for (key, r) in roofline_phases(e) {
        let _ = writeln!(
            out,
            "| {key} | {:.3e} | {} | {} | {} | {} | {} % | {} | {} |",
            r.flops,
            gib(r.bytes),
            fmt_sig(r.intensity),
            fmt_sig(r.ridge),
            fmt_sig(r.attainable.as_tflops()),
            fmt_sig(r.saturation * 100.0),
            fmt_seconds(r.time_s),
            r.bound.label()
        );
    }
    out.push('\n');
}

fn comparison_table(out: &mut String, c: &Comparison, unit: MemoryUnit, family: FamilyView) {
    let gib = |b: Bytes| unit.format(b);
    let _ = writeln!(out, "## Architecture comparison\n");
    let _ = writeln!(
        out,
        "Needs {} per GPU. Memory technologies use the {} compute.\n",
        gib(c.needed),
        c.base_gpu
    );
    let _ = writeln!(
        out,
        "| Device | Capacity | Bandwidth | Fits | Headroom | Largest batch | Step time | {}/s | \
         Bound | Source |\n|---|---:|---:|---|---:|---:|---:|---:|---|---|",
        capitalised(family.counted())
    );
    let unknown = || "unknown".to_owned();
    for r in c.rows() {
        let _ = writeln!(
            out,
            "| {} | {} | {} GB/s | {} | {} | {} | {} | {} | {} | {} |",
            cell(r.label),
            r.capacity.map(gib).unwrap_or_else(unknown),
            fmt_sig(r.bandwidth.as_gb_per_s()),
            r.fits.map_or("unknown", |f| if f { "yes" } else { "no" }),
            r.headroom.map(gib).unwrap_or_else(unknown),
            r.max_batch.map(|b| b.to_string()).unwrap_or_else(unknown),
            bounded(r.peak_known, "≥ ", fmt_seconds(r.step_time_s)),
            bounded(r.peak_known, "≤ ", fmt_sig(r.tokens_per_s)),
            r.bound.label(),
            r.confidence.tag()
        );
    }
    out.push('\n');
    if c.rows().any(|r| !r.peak_known) {
        out.push_str(
            "≥ / ≤: no sourced compute peak for that device, so its time counts memory traffic only \
             (a lower bound on time, an upper bound on throughput).\n\n",
        );
    }
}

/// "Tokens", "Images", "Samples": a table header.
fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// `value` prefixed with `mark` when it is only a bound (the device has no sourced compute peak).
pub fn bounded(known: bool, mark: &str, value: String) -> String {
    if known {
        value
    } else {
        format!("{mark}{value}")
    }
}
