//! The performance part of the report: roofline per phase, step time, throughput, cost, and the
//! architecture comparison (every catalog GPU and memory technology). Figures come from
//! `estimator::performance`; this file only formats them.

use crate::report::family::{FamilyView, throughput_text, view};
use crate::report::markdown::bounded;
use std::fmt::Write;

use serde_json::{Value, json};

use crate::estimator::Estimate;
use crate::estimator::performance::{ComparisonRow, PhaseRoofline, compare};
use crate::scenario::Scenario;
use crate::units::{Bytes, MemoryUnit, fmt_seconds, fmt_sig};

/// Appends the performance section and the comparison table (its bytes in `unit`, as the memory
/// table's).
pub fn section(out: &mut String, s: &Scenario, est: &Estimate, unit: MemoryUnit) {
    let p = &est.performance;
    if let Some(l) = est.cpu_build() {
        cpu_section(out, est, &l.settings);
        return;
    }
    roofline_table(out, p);
    let st = &p.step;
    let _ = writeln!(
        out,
        "  Step time {} ({}): compute {}, optimizer {}{}, communication {}, pipeline bubble {}, offload {}{}",
        fmt_seconds(st.total_s),
        st.bound.label(),
        fmt_seconds(st.compute_phase_s),
        fmt_seconds(st.optimizer_s),
        if st.host_optimizer_s > 0.0 {
            format!(
                ", optimizer on the host {}",
                fmt_seconds(st.host_optimizer_s)
            )
        } else {
            String::new()
        },
        fmt_seconds(st.communication_s),
        fmt_seconds(st.bubble_s),
        fmt_seconds(st.offload_s),
        if st.launch_s > 0.0 {
            format!(", fixed overhead per forward {}", fmt_seconds(st.launch_s))
        } else {
            String::new()
        }
    );
    rollout_line(out, st);
    parts_line(out, p);
    let t = &p.throughput;
    let family = view(s.model.family);
    throughput_line(out, est, family);
    if forward_only_line(out, p) {
        // An encoder's single forward, printed by `forward_only_line`.
    } else if p.prefill.is_some() {
        let _ = writeln!(
            out,
            "  Time to first token {}, per output token {}, KV cache {} B per token{}, up to {} concurrent requests",
            fmt_seconds(t.ttft_s),
            fmt_seconds(t.tpot_s),
            super::table::group_digits(t.kv_bytes_per_token.get()),
            if windowed(est) {
                " (every layer; windowed layers stop growing at their window)"
            } else {
                ""
            },
            t.max_concurrent_requests
        );
        launch_line(out, p);
        serving_line(out, s, t);
    } else {
        let c = &p.cost;
        let _ = writeln!(
            out,
            "  Training {} {}: {}, {} GPU-hours, {} at the set price{}",
            crate::format::count(s.timing.token_budget),
            family.counted(),
            fmt_seconds(c.time_s),
            crate::format::count(c.gpu_hours),
            crate::format::count(c.money),
            c.energy_kwh
                .map(|e| format!(", {} kWh", crate::format::count(e)))
                .unwrap_or_default()
        );
    }
    out.push('\n');
    comparison(out, s, unit);
}

/// The GPU's peak rates and one roofline row per phase.
fn roofline_table(out: &mut String, p: &crate::estimator::performance::Performance) {
    let _ = writeln!(
        out,
        "Performance (peak {} TFLOP/s{}, memory {} GB/s)",
        fmt_sig(p.peak.as_tflops()),
        if p.peak_known {
            ""
        } else {
            " unknown: times are memory-only"
        },
        fmt_sig(p.bandwidth.as_gb_per_s())
    );
    roofline_rows(out, p);
}

/// The roofline's column heads and one row per phase the scenario runs.
fn roofline_rows(out: &mut String, p: &crate::estimator::performance::Performance) {
    let _ = writeln!(
        out,
        "  {:<14} {:>11} {:>11} {:>9} {:>7} {:>10} {:>8} {:>10}  bound",
        "Phase", "TFLOP", "GB moved", "FLOP/B", "ridge", "TFLOP/s", "busy", "time"
    );
    let phases = [
        ("training", p.training),
        ("optimizer", p.optimizer),
        ("prefill", p.prefill),
        ("decode step", p.decode),
    ];
    for (name, r) in phases {
        if let Some(r) = r {
            roofline_row(out, name, &r);
        }
    }
}

/// A llama.cpp CPU build's times on the host's roofline: its prompt at the host's compute rate or
/// its weight reads, each token at its memory bandwidth (`engines::llamacpp::time::cpu_phases`); no
/// GPU comparison applies.
fn cpu_section(out: &mut String, est: &Estimate, l: &crate::scenario::LlamaCpp) {
    let t = &est.performance.throughput;
    let _ = writeln!(
        out,
        "\nPerformance on the CPU (llama.cpp -dev none; host {} TFLOP/s, memory {} GB/s, both assumptions: set yours)",
        fmt_sig(l.host_tflops),
        fmt_sig(l.host_memory_gb_s)
    );
    roofline_rows(out, &est.performance);
    let _ = writeln!(
        out,
        "  Time to first token {}, per output token {}, {} tokens/s; up to {} concurrent requests",
        fmt_seconds(t.ttft_s),
        fmt_seconds(t.tpot_s),
        fmt_sig(if t.tpot_s > 0.0 { 1.0 / t.tpot_s } else { 0.0 }),
        t.max_concurrent_requests
    );
    let _ = writeln!(
        out,
        "  (no GPU is used: the architecture comparison of GPUs does not apply)\n"
    );
}

/// Some layer caches at most its window (sliding-window or chunked attention): the per-token KV
/// figure then holds only up to that window.
fn windowed(est: &Estimate) -> bool {
    est.model
        .blocks
        .kinds()
        .iter()
        .any(|k| k.cached_tokens(f64::MAX) < f64::MAX)
}

/// The fixed overhead per forward (`estimator::performance::launch`), when there is one.
fn launch_line(out: &mut String, p: &crate::estimator::performance::Performance) {
    let l = &p.throughput.launch;
    if l.kernels <= 0.0 {
        return;
    }
    let issue = if l.graphs {
        "replayed from a CUDA graph".to_owned()
    } else {
        format!("issued from Python in {}", fmt_seconds(l.issue_s))
    };
    let _ = writeln!(
        out,
        "  Fixed overhead per forward: {} kernels, floors {}, {issue}{}; {} of the request",
        crate::format::count(l.kernels),
        fmt_seconds(l.gpu_s),
        if l.loop_s > 0.0 {
            format!(", generate loop {}", fmt_seconds(l.loop_s))
        } else {
            String::new()
        },
        fmt_seconds(p.step.launch_s)
    );
}

/// The serving features' effect on time (`estimator::performance::serving`), only when one is on.
fn serving_line(out: &mut String, s: &Scenario, t: &crate::estimator::performance::Throughput) {
    let x = &s.inference.features;
    if *x == crate::scenario::InferenceFeatures::default() {
        return;
    }
    let v = &t.serving;
    let mut parts = Vec::new();
    if v.lookahead > 0.0 {
        parts.push(format!(
            "speculative decoding ({}, k = {}, α = {}): {} tokens per verify step, draft step {}",
            x.speculative.method.label(),
            v.lookahead,
            crate::format::count(x.speculative.acceptance_rate),
            crate::format::count(v.tokens_per_step),
            fmt_seconds(v.draft_step_s)
        ));
    }
    if v.prefix_hit_tokens > 0.0 {
        parts.push(format!(
            "prefix cache hit {} tokens per request",
            crate::format::count(v.prefix_hit_tokens)
        ));
    }
    if v.prefill_chunks > 1.0 {
        parts.push(format!(
            "prefill in {} chunks",
            crate::format::count(v.prefill_chunks)
        ));
    }
    if x.sequences_per_prompt > 1 {
        parts.push(format!(
            "{} sequences decoded per step",
            crate::format::count(v.decode_sequences)
        ));
    }
    if x.kv_offload_fraction > 0.0 || x.weights_offload_fraction > 0.0 {
        parts.push(format!(
            "offloaded to the host: KV {} %, weights {} %",
            crate::format::count(100.0 * x.kv_offload_fraction),
            crate::format::count(100.0 * x.weights_offload_fraction)
        ));
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "  Serving: {}", parts.join("; "));
    }
}

/// Throughput as the window's headline writes it (one function), then per sequence for a
/// transformer, MFU and HFU.
fn throughput_line(out: &mut String, est: &Estimate, family: FamilyView) {
    let p = &est.performance;
    let t = &p.throughput;
    let per_item = if family.tokens {
        let bound = if p.peak_known { "" } else { "≤ " };
        format!(
            ", {bound}{} {}/s",
            crate::format::count(t.samples_per_s),
            family.items
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  Throughput {}{per_item}, MFU {} %, HFU {} %",
        throughput_text(est, family),
        fmt_sig(t.mfu * 100.0),
        fmt_sig(t.hfu * 100.0)
    );
}

fn roofline_row(out: &mut String, name: &str, r: &PhaseRoofline) {
    let _ = writeln!(
        out,
        "  {name:<14} {:>11} {:>11} {:>9} {:>7} {:>10} {:>7}% {:>10}  {}",
        fmt_sig(r.flops / 1e12),
        fmt_sig(r.bytes.as_gb()),
        fmt_sig(r.intensity),
        fmt_sig(r.ridge),
        fmt_sig(r.attainable.as_tflops()),
        fmt_sig(r.saturation * 100.0),
        fmt_seconds(r.time_s),
        r.bound.label()
    );
}

/// The architecture comparison as a table.
fn comparison(out: &mut String, s: &Scenario, unit: MemoryUnit) {
    let c = compare(s);
    let _ = writeln!(
        out,
        "Architecture comparison (needs {} per GPU; technology rows use the {} compute)",
        unit.format(c.needed),
        c.base_gpu
    );
    let _ = writeln!(
        out,
        "  {:<28} {:>11} {:>9} {:>5} {:>11} {:>9} {:>10} {:>12}  bound",
        "GPU / memory",
        "capacity",
        "GB/s",
        "fits",
        "headroom",
        "max batch",
        "step",
        format!("{}/s", view(s.model.family).counted())
    );
    let engine = s.served_from_a_startup_kv_cache();
    for r in c.rows() {
        comparison_row(out, r, unit, engine);
    }
    if c.rows().any(|r| !r.peak_known) {
        out.push_str("  ≥ / ≤: no sourced compute peak: memory-traffic time only (a bound)\n");
    }
    if engine {
        out.push_str(
            "  max batch n/a: the serving engine sizes its KV cache at startup, and the requests it \
             holds at once are read off that cache (the headline's figure), not off each row's capacity\n",
        );
    }
    out.push('\n');
}

fn comparison_row(out: &mut String, r: &ComparisonRow, unit: MemoryUnit, engine: bool) {
    let unknown = || if engine { "n/a" } else { "unknown" }.to_owned();
    let gib = |b: Bytes| unit.format(b);
    let _ = writeln!(
        out,
        "  {:<28} {:>11} {:>9} {:>5} {:>11} {:>9} {:>10} {:>12}  {}",
        r.label,
        r.capacity.map_or_else(unknown, gib),
        fmt_sig(r.bandwidth.as_gb_per_s()),
        r.fits.map_or("?", |f| if f { "yes" } else { "no" }),
        r.headroom.map_or_else(unknown, gib),
        r.max_batch.map_or_else(unknown, |b| b.to_string()),
        bounded(r.peak_known, "≥ ", fmt_seconds(r.step_time_s)),
        bounded(r.peak_known, "≤ ", fmt_sig(r.tokens_per_s)),
        r.bound.label()
    );
}

/// The performance figures and the comparison as JSON.
pub fn json(s: &Scenario, est: &Estimate) -> Value {
    let comparison = compare(s);
    json!({
        "figures": serde_json::to_value(est.performance).unwrap_or(Value::Null),
        "comparison": {
            "needed_bytes": comparison.needed.get(),
            "per_batch_bytes": comparison.per_batch.get(),
            "base_gpu": comparison.base_gpu,
            "rows": comparison.rows().map(|r| serde_json::to_value(r).unwrap_or(Value::Null)).collect::<Vec<_>>(),
        },
    })
}

/// Extra CSV columns of a sweep (each starting with a comma).
pub fn csv_header() -> &'static str {
    ",step_time_s,tokens_per_s,mfu,bound"
}

/// The values of [`csv_header`]'s columns for one estimate.
pub fn csv_row(est: &Estimate) -> String {
    let p = &est.performance;
    format!(
        ",{},{},{},{}",
        p.step.total_s,
        p.throughput.tokens_per_s,
        p.throughput.mfu,
        p.step.bound.label()
    )
}

/// A post-training step's rollout (issue 15 item 4), when it has one.
fn rollout_line(out: &mut String, st: &crate::estimator::performance::StepTime) {
    if st.rollout_generation_s > 0.0 || st.scoring_s > 0.0 || st.phase_swap_s > 0.0 {
        let _ = writeln!(
            out,
            "  Post-training rollout (in the step time): generation {}, scoring {}, offload between phases {}, training step {}",
            fmt_seconds(st.rollout_generation_s),
            fmt_seconds(st.scoring_s),
            fmt_seconds(st.phase_swap_s),
            fmt_seconds(st.total_s - st.rollout_generation_s - st.scoring_s - st.phase_swap_s)
        );
    }
}

/// The parts model's split of the compute (docs/time-model.md), when it timed the step.
fn parts_line(out: &mut String, p: &crate::estimator::performance::Performance) {
    if let Some(k) = &p.parts {
        let _ = writeln!(
            out,
            "  Compute by part: GEMMs {}, attention {}, elementwise {} ({}), recompute {}, pipeline sends {} (GEMM share {:.2})",
            fmt_seconds(k.gemm_s),
            fmt_seconds(k.attention_s),
            fmt_seconds(k.elementwise_s),
            if k.eager_elementwise {
                "eager PyTorch kernels"
            } else {
                "fused kernels"
            },
            fmt_seconds(k.recompute_s),
            fmt_seconds(k.p2p_s),
            k.gemm_share
        );
    }
}

/// An encoder-only model (or no generated tokens): one forward, no decode phase, no TPOT, no KV
/// cache held between steps (issue 13). Returns whether it printed.
fn forward_only_line(out: &mut String, p: &crate::estimator::performance::Performance) -> bool {
    if p.prefill.is_none() || p.decode.is_some() {
        return false;
    }
    let _ = writeln!(
        out,
        "  Forward pass {} (no decode phase)",
        fmt_seconds(p.throughput.ttft_s)
    );
    true
}
