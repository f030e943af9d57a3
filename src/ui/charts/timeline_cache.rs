//! The timeline and the measured run's placement over it, kept between frames: rebuilt only when
//! the scenario or the loaded measurement changes (STYLE.md: memoize keyed on the inputs
//! themselves), so a shown timeline costs a scenario comparison per frame, not a rebuild.

use std::sync::Arc;

use crate::estimator::Estimate;
use crate::estimator::timeline::{self, Timeline};
use crate::measured::Measurement;
use crate::measured::align::{Aligned, align};
use crate::scenario::Scenario;
use crate::ui::measured_state::Loaded;

#[derive(Clone, Default)]
struct Cache {
    scenario: Option<Scenario>,
    timeline: Arc<Timeline>,
    /// The measurement the placement was made for (compared by pointer).
    measured: Option<Arc<Loaded>>,
    aligned: Option<Arc<Aligned>>,
}

fn id() -> egui::Id {
    egui::Id::unique("vram_explorer_timeline_cache")
}

/// The timeline of `scenario` (whose estimate is `est`) and the placement of `measured`'s points.
pub fn get(
    ctx: &egui::Context,
    scenario: &Scenario,
    est: &Estimate,
    measured: Option<&Arc<Loaded>>,
) -> (Arc<Timeline>, Option<Arc<Aligned>>) {
    ctx.data_mut(|d| {
        let c = d.get_temp_mut_or_default::<Cache>(id());
        let mut changed = false;
        if c.scenario.as_ref() != Some(scenario) {
            c.timeline = Arc::new(timeline::build(scenario, est));
            c.scenario = Some(scenario.clone());
            changed = true;
        }
        let same = match (&c.measured, measured) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if changed || !same {
            c.measured = measured.cloned();
            c.aligned = measured.and_then(|m| match &m.measurement {
                Measurement::Snapshot(s) => Some(Arc::new(align(s, &c.timeline))),
                Measurement::Light(_) => None,
            });
        }
        (c.timeline.clone(), c.aligned.clone())
    })
}
