//! Memoization of make-it-fit on its input.

use super::fit::{FitOptions, FitResult, make_it_fit};
use crate::scenario::Scenario;

/// Memoizes [`make_it_fit`] on its input: the app keeps one and asks every frame; the search reruns
/// only when the scenario or the options differ from the last call (compared with `PartialEq`, never
/// with hand-kept flags).
#[derive(Clone, Debug, Default)]
pub struct FitCache {
    key: Option<(Scenario, FitOptions)>,
    result: FitResult,
}

impl FitCache {
    /// The result for `s`, computed now if the input changed.
    pub fn get(&mut self, s: &Scenario, opts: FitOptions) -> &FitResult {
        let hit = matches!(&self.key, Some((k, o)) if k == s && *o == opts);
        if !hit {
            self.result = make_it_fit(s, opts);
            self.key = Some((s.clone(), opts));
        }
        &self.result
    }

    /// Whether the next [`get`](Self::get) with these inputs is free.
    pub fn is_fresh(&self, s: &Scenario, opts: FitOptions) -> bool {
        matches!(&self.key, Some((k, o)) if k == s && *o == opts)
    }
}
