//! `vram-explorer check`: a file parses, validates, and describes a job its framework or engine
//! would run. The estimate's diagnostics about the layout are printed; an error among them (a
//! layout the framework refuses, e.g. Megatron-Core's tensor parallelism that does not divide the
//! KV heads) fails the check. Diagnostics about the outcome (it does not fit, the engine would not
//! start, memory-bound) are answers, not faults of the file, and are left to `report`.

use std::fmt::Write as _;
use std::path::Path;

use super::table;
use crate::estimator::diagnostics::{Diagnostic, Severity};
use crate::estimator::estimate;
use crate::presets;
use crate::presets::text::escape_controls;

/// The check's text on success (an `ok:` line, then one line per warning), or the error.
pub fn run(file: &Path) -> Result<String, String> {
    let s = presets::load(file).map_err(|e| e.to_string())?;
    let path = file.display().to_string();
    let shown = escape_controls(&path);
    let layout: Vec<Diagnostic> = estimate(&s)
        .diagnostics
        .iter()
        .filter(|d| !d.is_outcome() && d.severity() != Severity::Note)
        .collect();
    let errors: Vec<String> = layout
        .iter()
        .filter(|d| d.severity() == Severity::Error)
        .map(|d| format!("{} ({})", d.message(), d.code()))
        .collect();
    if !errors.is_empty() {
        // Message first, path last, as every other runtime error.
        return Err(format!(
            "the scenario describes a job its framework would not run: {}: {shown}",
            errors.join("; ")
        ));
    }
    let runs_on = table::engine_name(&s).map_or_else(
        || format!("framework: {}", s.implementation.profile.label()),
        |e| format!("engine: {e}"),
    );
    // Its title: a file without a name gets the default scenario's.
    let mut out = format!(
        "ok: \"{}\" is a valid scenario ({runs_on}): {shown}\n",
        escape_controls(&s.title())
    );
    for d in layout {
        let _ = writeln!(out, "warning: {} ({})", d.message(), d.code());
    }
    Ok(out)
}
