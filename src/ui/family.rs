//! The model family's words and controls ([`crate::report::family`]: the CLI and the reports
//! share them).

pub use crate::report::family::{FamilyView, throughput_text, view};
