//! The performance part of the report: roofline per phase, step time, throughput, cost.
//! (Filled in as the bandwidth work's `Performance` lands.)

use crate::estimator::Estimate;
use crate::scenario::Scenario;

/// Appends the performance section (nothing while the estimator has no performance figures).
pub fn section(out: &mut String, s: &Scenario, est: &Estimate) {
    let _ = (out, s, est);
}

/// The performance figures as JSON (`null` while the estimator has none).
pub fn json(s: &Scenario, est: &Estimate) -> serde_json::Value {
    let _ = (s, est);
    serde_json::Value::Null
}

/// Extra CSV columns of a sweep (each starting with a comma).
pub fn csv_header() -> &'static str {
    ""
}

/// The values of [`csv_header`]'s columns for one estimate.
pub fn csv_row(est: &Estimate) -> String {
    let _ = est;
    String::new()
}
