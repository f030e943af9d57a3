//! `report`'s output formats (the same Markdown and CSV the app exports, from `crate::report`) and
//! `--output`: the file is replaced atomically (temporary file beside it, then rename), so an
//! interrupted or failed write leaves the old file as it was. What is at the path is respected (links
//! followed, devices and FIFOs written in place, hard links refused): see `presets::write_atomically`.

use std::path::Path;

use clap::ValueEnum;

use crate::estimator::Estimate;
use crate::estimator::performance::compare;
use crate::presets;
use crate::presets::text::escape_controls;
use crate::report;
use crate::scenario::Scenario;
use crate::units::MemoryUnit;

/// What `report` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The plain-text table (memory in `--unit`).
    Table,
    /// The JSON report (bytes and seconds; schema in docs/format.md).
    Json,
    /// The Markdown report (summary, breakdown, phases, diagnostics, roofline, comparison).
    Markdown,
    /// One CSV table, chosen with `--csv-table`.
    Csv,
}

impl Format {
    /// The format a file name implies: `.md`/`.markdown`, `.csv`, `.json`; else none.
    pub fn from_extension(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            "txt" => Some(Format::Table),
            _ => None,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "JSON report",
            Format::Markdown => "Markdown report",
            Format::Csv => "CSV",
        }
    }
}

/// Which CSV `--format csv` writes (columns in docs/format.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum CsvTable {
    /// The per-GPU breakdown at the peak: `component,label,bytes,gib`, then the totals.
    #[default]
    Breakdown,
    /// Tensor bytes of every component in every phase.
    Phases,
    /// The roofline figures of each phase.
    Roofline,
    /// The architecture comparison: every catalog GPU and memory technology.
    Comparison,
}

/// What the report says, in `format`. `origin` (file path or `preset ID`) heads the table and JSON.
pub fn render(
    format: Format,
    csv: CsvTable,
    (s, est): (&Scenario, &Estimate),
    origin: &str,
    unit: MemoryUnit,
) -> String {
    match format {
        Format::Table => super::table::report(s, est, origin, unit),
        Format::Json => super::json::report(s, est, origin),
        Format::Markdown => report::markdown_in(s, est, Some(&compare(s)), unit),
        Format::Csv => match csv {
            CsvTable::Breakdown => report::breakdown_csv(est),
            CsvTable::Phases => report::phases_csv(est),
            CsvTable::Roofline => report::roofline_csv(est),
            CsvTable::Comparison => report::comparison_csv(&compare(s)),
        },
    }
}

/// Writes `text` to `path` atomically; returns the line to tell the user (message first, path last).
pub fn write(path: &Path, format: Format, text: &str) -> Result<String, String> {
    presets::write_atomically(path, text.as_bytes())
        .map(|()| {
            format!(
                "wrote the {} ({} bytes): {}",
                format.label(),
                text.len(),
                escape_controls(&path.display().to_string())
            )
        })
        .map_err(|e| {
            format!(
                "cannot write the {} ({e}): {}",
                format.label(),
                path.display()
            )
        })
}
