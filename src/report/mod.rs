//! Reports: Markdown and CSV.
