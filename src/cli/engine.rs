//! The serving engine in the reports (its printed lines, the budget behind them, the JSON
//! `engine` object) and the `engine-args` command: a pasted `vllm serve …` / `sglang.launch_server
//! …` / `llama-server …` line read into the scenario's engine settings.

use std::fmt::Write;

use serde_json::{Value, json};

use crate::estimator::Estimate;
use crate::estimator::engines::EngineFigures;
use crate::report::engine::{budget_lines, default_context_line, printed_lines};
use crate::scenario::Scenario;
use crate::scenario::engine_args;
use crate::units::MemoryUnit;

/// The table section: what the engine would print, and why.
pub fn section(out: &mut String, est: &Estimate, unit: MemoryUnit) {
    let Some(f) = &est.engine else {
        return;
    };
    let _ = writeln!(out, "{} would print (per GPU)", f.kind.label());
    for l in printed_lines(f) {
        let _ = writeln!(out, "  {l}");
    }
    for l in budget_lines(f, unit) {
        let _ = writeln!(out, "  {l}");
    }
    if let Some(l) = default_context_line(f) {
        let _ = writeln!(out, "  {l}");
    }
    out.push('\n');
}

/// The JSON `engine` object (bytes, tokens), or null without vLLM / SGLang.
pub fn json(est: &Estimate) -> Value {
    let Some(f) = &est.engine else {
        return Value::Null;
    };
    let EngineFigures {
        kind,
        version,
        device,
        fraction,
        requested,
        weights,
        activation_peak,
        non_torch,
        context,
        cudagraph,
        state_pool,
        held_back,
        kv_budget,
        kv_pool,
        block_tokens,
        block_bytes,
        blocks,
        cpu_blocks,
        tokens,
        max_model_len,
        max_concurrency,
        max_requests,
        batched_tokens,
        too_small,
        longest_len,
        model_context,
        model_context_refused,
        latent: _,
        stages: _,
    } = *f;
    json!({
        "name": kind.label(),
        "version": version,
        "device_bytes": device.get(),
        "fraction": fraction,
        "requested_bytes": requested.get(),
        "weights_bytes": weights.get(),
        "activation_peak_bytes": activation_peak.get(),
        "non_torch_bytes": non_torch.get(),
        "context_bytes": context.get(),
        "cudagraph_bytes": cudagraph.get(),
        "state_pool_bytes": state_pool.get(),
        "held_back_bytes": held_back.get(),
        "kv_budget_bytes": kv_budget.get(),
        "kv_pool_bytes": kv_pool.get(),
        "block_tokens": block_tokens,
        "block_bytes": block_bytes,
        "blocks": blocks,
        "cpu_blocks": cpu_blocks,
        "kv_cache_tokens": tokens,
        "max_model_len": max_model_len,
        "max_concurrency": max_concurrency,
        "max_requests": max_requests,
        "batched_tokens": batched_tokens,
        "fits_one_request": !too_small,
        "longest_max_model_len": longest_len,
        "model_context_tokens": model_context,
        "model_context_fits": !model_context_refused,
        "printed": printed_lines(f),
    })
}

/// Reads a serving command line (vLLM, SGLang or llama.cpp) and applies it to `s`; the notes say
/// what was ignored or not modelled.
pub fn apply(cmd: &str, s: &mut Scenario) -> Result<Vec<String>, String> {
    let (out, notes) = engine_args::apply_command(cmd, s)?;
    *s = out;
    Ok(notes)
}

/// `engine-args`: the settings the line gives (as RON), the notes, and with a scenario the lines
/// the engine would print.
pub fn run(cmd: &str, base: Option<Scenario>, unit: MemoryUnit) -> Result<String, String> {
    let mut s = base.unwrap_or_default();
    let notes = apply(cmd, &mut s)?;
    let mut out = String::new();
    let engine = ron::ser::to_string_pretty(&s.inference.engine, ron::ser::PrettyConfig::default())
        .map_err(|e| e.to_string())?;
    let _ = writeln!(out, "inference.engine: {engine}");
    if matches!(
        s.inference.engine,
        Some(crate::scenario::ServingEngine::LlamaCpp(_))
    ) {
        let _ = writeln!(out, "quantization.weights: {:?}", s.quantization.weights);
    }
    let _ = writeln!(
        out,
        "parallel: tp {}, pp {}, dp {}",
        s.parallel.tp, s.parallel.pp, s.parallel.dp
    );
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    out.push('\n');
    let est = crate::estimator::estimate(&s);
    section(&mut out, &est, unit);
    if let Some(b) = &est.llamacpp {
        let _ = writeln!(out, "llama.cpp would print");
        for l in crate::report::llamacpp::log_lines(b).lines() {
            let _ = writeln!(out, "  {l}");
        }
    }
    // What the engine refuses or warns about with this line (the report's diagnostics, those of
    // the serving engine only: the rest concern the scenario, not the pasted line).
    for d in est.diagnostics.iter().filter(|d| d.concerns_engine()) {
        let severity = format!("{:?}", d.severity()).to_lowercase();
        let _ = writeln!(out, "{severity}: {}  [{}]", d.message(), d.code());
    }
    Ok(out)
}
