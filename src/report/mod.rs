//! Reports for slides and scripts: a Markdown report and CSVs of the breakdown, the phases, the
//! roofline figures and the architecture comparison, and the one-page summary for slides. Pure:
//! strings out, the caller writes files.

pub mod csv;
pub mod engine;
pub mod family;
pub mod import;
pub mod llamacpp;
pub mod markdown;
pub mod stages;
pub mod summary;

pub use csv::{breakdown_csv, comparison_csv, phases_csv, roofline_csv};
pub use markdown::{markdown, markdown_in, markdown_with};
