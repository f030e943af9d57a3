//! Random valid scenarios (issue 17, item 7): every field sampled over its documented range, every
//! enum variant, both modes, every family, catalog and custom GPUs. Each estimate must be total:
//! every figure finite, no negative bytes, times or utilisation, utilisation ≤ 1, the peak at least
//! each of its components. `VRAM_RANDOM_SCENARIOS=1000000 cargo test --release --test
//! random_scenarios` runs the heavier pass; the default is 10⁵.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

#[path = "support/sample.rs"]
mod sample;

use vram_explorer::estimator::memory::stage_phases_of;
use vram_explorer::estimator::{Breakdown, Component, Estimate, estimate};
use vram_explorer::scenario::Scenario;
use vram_explorer::scenario::validate::validate;

const SEED: u64 = 0x005E_ED17;

fn count() -> u64 {
    std::env::var("VRAM_RANDOM_SCENARIOS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

/// Every number of `json` (the serialised performance) finite and ≥ 0; NaN and ±∞ serialise as null.
fn check_json(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Number(n) if n.as_f64().is_some_and(|x| x < 0.0) => {
            out.push(format!("{path} = {n} < 0"));
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                check_json(x, &format!("{path}.{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_json(x, &format!("{path}[{i}]"), out);
            }
        }
        serde_json::Value::Null => {
            // `Option` fields are null when absent; a NaN also serialises as null: caught by the
            // Debug scan below.
        }
        _ => {}
    }
}

fn check_breakdown(b: &Breakdown, what: &str, out: &mut Vec<String>) {
    for c in Component::ALL {
        let x = b.get(c).get();
        if !(x.is_finite() && non_negative(x)) {
            out.push(format!("{what} {c:?} = {x}"));
        }
    }
}

/// False for negative numbers and NaN.
fn non_negative(x: f64) -> bool {
    x >= 0.0
}

/// What is wrong with an estimate (empty = nothing).
fn problems(e: &Estimate) -> Vec<String> {
    let mut out = Vec::new();
    let debug = format!("{e:?}");
    for bad in ["NaN", "inf"] {
        if let Some(at) = debug.find(bad) {
            // Name the field: the text just before the value.
            let from = debug[..at]
                .char_indices()
                .rev()
                .nth(60)
                .map_or(0, |(i, _)| i);
            out.push(format!("non-finite: …{}", &debug[from..at + bad.len()]));
        }
    }
    if let Some(f) = &e.engine {
        for (name, x) in [
            ("tokens", f.tokens),
            ("blocks", f.blocks),
            ("kv_budget", f.kv_budget.get()),
            ("kv_pool", f.kv_pool.get()),
            ("max_concurrency", f.max_concurrency),
            ("block_bytes", f.block_bytes),
        ] {
            if !non_negative(x) {
                out.push(format!("engine.{name} = {x}"));
            }
        }
    }
    let m = &e.memory;
    check_breakdown(&m.peak, "peak", &mut out);
    for (i, p) in m.phases.0.iter().enumerate() {
        if let Some(b) = p {
            check_breakdown(b, &format!("phase {i}"), &mut out);
        }
    }
    // Under vLLM every stage class holds its own pool and budget terms: the limiting class holds
    // the most in all (another may allocate more tensors inside a smaller reservation).
    let per_stage_pools = e
        .engine
        .is_some_and(|f| f.stages.iter().any(Option::is_some));
    for s in m.stage_classes() {
        check_breakdown(&s.peak, "stage", &mut out);
        let above = if per_stage_pools {
            s.peak.total() > m.peak.total()
        } else {
            s.peak.tensor_total() > m.tensor_peak
        };
        if above {
            out.push(format!("{} above the limiting stage", s.label()));
        }
    }
    let total = m.gpu_total.get();
    for c in Component::ALL {
        if m.peak.get(c).get() > total * (1.0 + 1e-12) {
            out.push(format!("{c:?} above the peak"));
        }
    }
    let o = &m.offloaded;
    for (name, b) in [("host", o.host), ("nvme", o.nvme), ("tier", o.second_tier)] {
        if !non_negative(b.get()) {
            out.push(format!("offloaded {name} = {}", b.get()));
        }
    }
    let p = &m.params;
    for (name, x) in [
        ("total", p.total),
        ("trainable", p.trainable),
        ("active", p.active),
        ("per_layer", p.per_layer),
        ("embeddings", p.embeddings),
    ] {
        if !non_negative(x) {
            out.push(format!("params.{name} = {x}"));
        }
    }
    if m.fits && m.headroom.get() < 0.0 && m.offloaded.second_tier.get() <= 0.0 {
        out.push("fits with negative headroom".to_owned());
    }
    match serde_json::to_value(e.performance) {
        Ok(v) => check_json(&v, "performance", &mut out),
        Err(err) => out.push(format!("performance does not serialise: {err}")),
    }
    let perf = &e.performance;
    let mut unit = vec![
        ("mfu", perf.throughput.mfu),
        ("hfu", perf.throughput.hfu),
        ("hidden_share", perf.offload.hidden_share),
    ];
    for r in [perf.training, perf.optimizer, perf.prefill, perf.decode]
        .into_iter()
        .flatten()
    {
        unit.push(("saturation", r.saturation));
        unit.push(("idle_share", r.idle_share));
    }
    for (name, x) in unit {
        if !(0.0..=1.0).contains(&x) {
            out.push(format!("{name} = {x} outside [0, 1]"));
        }
    }
    out
}

/// Each pipeline stage class's phases, recomputed as the report and chart do
/// (`stage_phases_of`), hold no negative or non-finite bytes.
fn stage_problems(s: &Scenario, e: &Estimate, out: &mut Vec<String>) {
    for c in e.memory.stage_classes() {
        let Some(phases) = stage_phases_of(s, e, c.first) else {
            out.push(format!("{}: no phases", c.label()));
            continue;
        };
        for (i, p) in phases.0.iter().enumerate() {
            if let Some(b) = p {
                check_breakdown(b, &format!("{} phase {i}", c.label()), out);
            }
        }
    }
}

/// The sampler stays inside the documented ranges (else the test would test clamping).
#[test]
fn sampled_scenarios_are_valid() {
    let mut r = sample::Rng::new(SEED);
    for _ in 0..2000 {
        let s = sample::scenario(&mut r);
        assert_eq!(validate(&s), Vec::new(), "{s:?}");
    }
}

#[test]
fn random_valid_scenarios_give_total_answers() {
    let n = count();
    let mut r = sample::Rng::new(SEED);
    let mut failures: Vec<(u64, Vec<String>, Scenario)> = Vec::new();
    let mut failed = 0u64;
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    for i in 0..n {
        let s = sample::scenario(&mut r);
        let e = estimate(&s);
        let mut p = problems(&e);
        stage_problems(&s, &e, &mut p);
        if !p.is_empty() {
            failed += 1;
            for k in &p {
                let kind: String = k.split(['=', '[', '…']).next().unwrap_or("").into();
                *kinds.entry(kind).or_default() += 1;
            }
            if failures.len() < 5 {
                failures.push((i, p, s));
            }
        }
    }
    for (i, p, s) in &failures {
        eprintln!(
            "scenario {i}: {p:?}\n{}\n",
            ron::ser::to_string(s).unwrap_or_default()
        );
    }
    eprintln!("{kinds:#?}");
    assert_eq!(
        failed, 0,
        "{failed} of {n} random valid scenarios went wrong"
    );
}
