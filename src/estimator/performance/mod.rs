//! FLOPs, bytes moved, roofline, step time, communication and cost (bandwidth work owns this).

use super::model::ResolvedModel;
use super::{Diagnostics, MemoryEstimate};
use crate::scenario::Scenario;

/// Roofline, time and cost of a scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Performance {}

pub fn estimate_performance(
    scenario: &Scenario,
    model: &ResolvedModel,
    memory: &MemoryEstimate,
    diagnostics: &mut Diagnostics,
) -> Performance {
    let _ = (scenario, model, memory, diagnostics);
    Performance {}
}
