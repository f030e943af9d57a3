//! The saved activations at the end of the forward (the phase where every layer's are live), the
//! figure several tests compare across settings.

use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::scenario::Scenario;

/// Bytes of `Component::Activations` in the forward phase of `s`'s estimate (0 without one).
pub fn forward_activations(s: &Scenario) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(Phase::Forward)
        .map_or(0.0, |b| b.get(Component::Activations).get())
}

/// Every byte of `phase` in `s`'s estimate (0 without one).
#[allow(
    dead_code,
    reason = "not every test that includes this module reads whole phases"
)]
pub fn phase_total(s: &Scenario, phase: Phase) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(phase)
        .map_or(0.0, |b| b.total().get())
}

/// `s` as the memory model resolves it: its context, model and the micro-batch's sizes.
#[allow(
    dead_code,
    reason = "not every test that includes this module reads the resolved parts"
)]
pub fn resolved(
    s: &Scenario,
) -> (
    vram_explorer::estimator::memory::ctx::Ctx,
    vram_explorer::estimator::ResolvedModel,
    vram_explorer::estimator::memory::activations::Sizes,
) {
    use vram_explorer::estimator::Diagnostics;
    use vram_explorer::estimator::memory::{activations as act, ctx::Ctx};
    let mut d = Diagnostics::default();
    let m = vram_explorer::estimator::model::derive(&s.model, &[], &[], &mut d);
    let c = Ctx::new(s, &m, &mut d);
    let z = act::sizes(&c, &m, c.b, c.s);
    (c, m, z)
}
