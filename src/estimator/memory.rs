//! Per-GPU memory of a step, phase by phase (memory work owns this).

use super::model::ResolvedModel;
use super::{Diagnostics, MemoryEstimate};
use crate::scenario::Scenario;

pub fn estimate_memory(
    scenario: &Scenario,
    model: &ResolvedModel,
    diagnostics: &mut Diagnostics,
) -> MemoryEstimate {
    let _ = (scenario, model, diagnostics);
    MemoryEstimate::default()
}
