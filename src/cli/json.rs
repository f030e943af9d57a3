//! The JSON report (schema in docs/format.md, "JSON report"). Memory in bytes, time in seconds, rates
//! per second; keys are the stable `Component::key`, `Phase::key` and `Diagnostic::code` strings.
//! Non-finite numbers (which the estimator never produces) would print as `null`.

use serde_json::{Map, Value, json};

use super::table::gpu_name;
use crate::estimator::{Breakdown, Component, Estimate, Phase, PhasePeaks};
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
    let phases = phases_json(&mem.phases);
    let gpu = est.cpu_build().is_none();
    json!({
        "schema_version": SCHEMA_VERSION,
        "scenario": {
            "name": s.name,
            "title": s.title(),
            "source": origin,
            "mode": match s.mode { Mode::Training => "training", Mode::Inference => "inference" },
            "gpus": s.parallel.gpus(),
            "framework": {
                "profile": format!("{:?}", s.implementation.profile),
                "label": crate::scenario::framework_label(&s.implementation, &s.peft),
            },
            "post_training": post_training(s),
        },
        // A llama.cpp CPU build names the scenario's GPU but uses none (the table's "GPU: none").
        "gpu": { "name": gpu_name(s), "capacity_bytes": mem.capacity.get(), "used": gpu },
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
            "stages": stages(s, est),
            "phases": phases,
            "tensor_peak_bytes": mem.tensor_peak.get(),
            "reserved_peak_bytes": mem.reserved_peak().get(),
            "gpu_total_bytes": mem.gpu_total.get(),
            "capacity_bytes": gpu.then_some(mem.capacity.get()),
            "headroom_bytes": gpu.then_some(mem.headroom.get()),
            "fits": gpu.then_some(mem.fits),
            "cpu_only": cpu_only(est),
            "offloaded": {
                "host_bytes": mem.offloaded.host.get(),
                "nvme_bytes": mem.offloaded.nvme.get(),
                "second_tier_bytes": mem.offloaded.second_tier.get(),
            },
        },
        "diagnostics": diagnostics,
        "engine": super::engine::json(est),
        "llamacpp": est.llamacpp.as_ref().map(llamacpp),
        "performance": super::perf::json(s, est),
    })
}

/// A llama.cpp CPU build (`-dev none`): the host bytes of its buffers and what that means for the
/// GPU figures; `null` when a GPU is used. The estimator has no host-memory capacity, so a CPU
/// build gets no fit, headroom or capacity (`null`), as the table report gives none.
pub fn cpu_only(est: &Estimate) -> Value {
    est.cpu_build().map_or(Value::Null, |b| {
        json!({
            "host_bytes": b.host_total(),
            "statement": "llama.cpp -dev none: the CPU backend holds every buffer (model, KV cache, \
                compute) in host memory and no GPU is used; the estimator has no host-memory \
                capacity to hold them against, so there is no fit, headroom or capacity (null)",
        })
    })
}

/// llama.cpp's buffers in bytes (and MiB as it prints them), per GPU and for the host.
fn llamacpp(b: &crate::estimator::engines::llamacpp::Buffers) -> Value {
    use crate::estimator::engines::llamacpp::mib_printed;
    let (host_model, host_compute) = crate::report::llamacpp::host_names(b);
    let devices: Vec<Value> = b
        .dev
        .iter()
        .take(b.gpus as usize)
        .enumerate()
        .map(|(i, d)| {
            json!({
                "name": format!("CUDA{i}"), "layers": d.layers, "output_layer": d.output,
                "model_bytes": d.model, "kv_bytes": d.kv, "compute_bytes": d.compute,
                "model_mib": mib_printed(d.model), "kv_mib": mib_printed(d.kv),
                "compute_mib": mib_printed(d.compute),
            })
        })
        .collect();
    json!({
        "file_type": b.file_type.name(),
        "n_ctx": b.n_ctx, "n_batch": b.n_batch, "n_ubatch": b.n_ubatch, "n_seq": b.n_seq,
        "n_stream": b.n_stream,
        "fit": b.fit.map(|f| json!({
            "from_n_ctx": f.from, "n_ctx": f.to, "free_bytes": f.free, "target_bytes": f.target,
            "n_gpu_layers": f.ngl,
            "experts_host_layers": f.experts_host.map(|(a, z)| [a, z]),
        })),
        "flash_attn": b.flash_attn,
        "layers_on_gpu": b.layers_on_gpu, "output_on_gpu": b.output_on_gpu, "n_layer": b.n_layer,
        "devices": devices,
        "host": {
            "model_name": host_model, "compute_name": host_compute,
            "model_bytes": b.host_model, "kv_bytes": b.host_kv, "compute_bytes": b.host_compute,
            "model_mib": mib_printed(b.host_model), "kv_mib": mib_printed(b.host_kv),
            "compute_mib": mib_printed(b.host_compute),
            "ffn_override_bytes": b.host_ffn, "op_offload_copy_bytes": b.host_copy,
        },
        "kv_k_bytes": b.k_bytes, "kv_v_bytes": b.v_bytes, "kv_layers": b.kv_layers,
        "swa_cache": (b.swa.layers > 0).then(|| json!({
            "cells": b.swa.cells, "layers": b.swa.layers,
            "k_bytes": b.swa.k_bytes, "v_bytes": b.swa.v_bytes,
        })),
        "recurrent_state": (b.rs.layers > 0).then(|| json!({
            "layers": b.rs.layers, "r_bytes": b.rs.r_bytes, "s_bytes": b.rs.s_bytes,
        })),
        "log_lines": crate::report::llamacpp::log_lines(b).lines().collect::<Vec<_>>(),
    })
}

/// Tensor bytes and components per phase, keyed by `Phase::key`.
fn phases_json(p: &PhasePeaks) -> Map<String, Value> {
    Phase::ALL
        .iter()
        .filter_map(|ph| {
            let b = p.get(*ph)?;
            let v = json!({ "tensor_bytes": b.tensor_total().get(), "components": components(b) });
            Some((ph.key().to_owned(), v))
        })
        .collect()
}

/// The pipeline's stage classes in stage order (empty without PP): stage indices 0-based, the
/// class's peak as `components` (context and reserve included), `limiting` on the one that sets
/// `peak_stage`.
fn stages(s: &Scenario, est: &Estimate) -> Vec<Value> {
    let mem = &est.memory;
    let limiting = mem.limiting_stage().map(|c| c.first);
    mem.stage_classes()
        .map(|c| {
            json!({
                "role": c.role.label(),
                "first_stage": c.first,
                "last_stage": c.last(),
                "stage_count": c.count,
                "layers": c.layers,
                "in_flight_microbatches": c.in_flight,
                "limiting": limiting == Some(c.first),
                "peak_phase": c.peak_phase.map(Phase::key),
                "components": components(&c.peak),
                "tensor_peak_bytes": c.peak.tensor_total().get(),
                "gpu_total_bytes": c.peak.total().get(),
                "phases": phases_json(
                    &crate::estimator::memory::stage_phases_of(s, est, c.first).unwrap_or_default()
                ),
            })
        })
        .collect()
}

/// The post-training run (`null` for plain training or inference): its models are the components
/// `reference_model`, `reward_model`, `critic`, `rollout_engine`; its phases `generation`, `scoring`.
fn post_training(s: &Scenario) -> Value {
    let p = &s.post_training;
    if s.mode != Mode::Training || p.algorithm == crate::scenario::RlAlgorithm::Off {
        return Value::Null;
    }
    json!({
        "algorithm": format!("{:?}", p.algorithm).to_lowercase(),
        "reference": format!("{:?}", p.reference).to_lowercase(),
        "prompt_tokens": p.prompt_tokens,
        "num_generations": p.num_generations,
        "rollout": format!("{:?}", p.rollout).to_lowercase(),
        "rollout_gpu_memory_utilization": p.rollout_gpu_memory_utilization,
        "rollout_sleep": p.rollout_sleep,
        "framework": format!("{:?}", p.framework).to_lowercase(),
        "param_offload": p.param_offload,
        "optimizer_offload": p.optimizer_offload,
        "ref_offload": p.ref_offload,
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
