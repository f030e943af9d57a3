//! One part of a scenario's step time (`step_breakdown`), 0 when the step has no such part. Shared
//! by the step-time tests: `#[path = "support/step_part.rs"] mod step_part;`.

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::scenario::Scenario;

pub fn part(s: &Scenario, which: StepPart) -> f64 {
    step_breakdown(&estimate(s).performance)
        .parts()
        .iter()
        .find(|(p, _)| *p == which)
        .map_or(0.0, |(_, t)| *t)
}
