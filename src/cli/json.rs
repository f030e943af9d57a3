//! The JSON report (schema in docs/format.md, "JSON report"). Memory in bytes, time in seconds, rates
//! per second; keys are the stable `Component::key`, `Phase::key` and `Diagnostic::code` strings.
//! Non-finite numbers (which the estimator never produces) would print as `null`.

use serde_json::{Map, Value, json};

use super::table::gpu_name;
use crate::estimator::{Breakdown, Component, Estimate, Phase};
use crate::presets::bundled;
use crate::scenario::{Mode, Scenario};

/// Version of the JSON layout; bumped only when a key changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 2;

/// The report of one scenario as pretty JSON.
pub fn report(s: &Scenario, est: &Estimate, origin: &str) -> String {
    let value = report_value(s, est, origin);
    let mut text =
        serde_json::to_string_pretty(&value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}

/// The report as a JSON value.
pub fn report_value(s: &Scenario, est: &Estimate, origin: &str) -> Value {
    let mem = &est.memory;
    let m = &est.model;
    let p = &mem.params;
    let diagnostics: Vec<Value> = est
        .diagnostics
        .iter()
        .map(|d| {
            json!({
                "code": d.code(),
                "severity": format!("{:?}", d.severity()).to_lowercase(),
                "message": d.message(),
            })
        })
        .collect();
    let phases: Map<String, Value> = Phase::ALL
        .iter()
        .filter_map(|ph| {
            let b = mem.phases.get(*ph)?;
            let v = json!({ "tensor_bytes": b.tensor_total().get(), "components": components(b) });
            Some((ph.key().to_owned(), v))
        })
        .collect();
    json!({
        "schema_version": SCHEMA_VERSION,
        "scenario": {
            "name": s.name,
            "title": s.title(),
            "source": origin,
            "mode": match s.mode { Mode::Training => "training", Mode::Inference => "inference" },
            "gpus": s.parallel.gpus(),
            // The training framework whose rules the estimate applied (issue 12).
            "framework": s.implementation.profile.label(),
        },
        "gpu": { "name": gpu_name(s), "capacity_bytes": mem.capacity.get() },
        "model": {
            "family": format!("{:?}", m.family).to_lowercase(),
            "params": {
                "total": p.total, "embeddings": p.embeddings, "per_layer": p.per_layer,
                "head": p.head, "trainable": p.trainable,
            },
            "layers": m.layers, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
            "head_dim": m.head_dim, "ffn": m.ffn, "vocab": m.vocab,
        },
        "memory": {
            "component_order": Component::ALL.iter().map(|c| c.key()).collect::<Vec<_>>(),
            "components": components(&mem.peak),
            "peak_phase": mem.peak_phase.map(Phase::key),
            "peak_stage": mem.peak_stage,
            "phases": phases,
            "tensor_peak_bytes": mem.tensor_peak.get(),
            "gpu_total_bytes": mem.gpu_total.get(),
            "capacity_bytes": mem.capacity.get(),
            "headroom_bytes": mem.headroom.get(),
            "fits": mem.fits,
            "offloaded": {
                "host_bytes": mem.offloaded.host.get(),
                "nvme_bytes": mem.offloaded.nvme.get(),
                "second_tier_bytes": mem.offloaded.second_tier.get(),
            },
        },
        "diagnostics": diagnostics,
        "performance": super::perf::json(s, est),
    })
}

/// Bytes per component, keyed by `Component::key`.
fn components(b: &Breakdown) -> Value {
    let map: Map<String, Value> = b
        .iter()
        .map(|(c, bytes)| (c.key().to_owned(), json!(bytes.get())))
        .collect();
    Value::Object(map)
}

/// The bundled presets as a JSON array.
pub fn presets() -> String {
    let list: Vec<Value> = bundled()
        .iter()
        .map(|p| json!({ "id": p.id, "name": p.name, "group": p.group, "notes": p.notes }))
        .collect();
    let mut text = serde_json::to_string_pretty(&list).unwrap_or_default();
    text.push('\n');
    text
}
