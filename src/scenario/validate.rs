//! Range checks of a scenario, each error naming the field (owned by the scenario-files work).

use super::Scenario;

/// A value outside its documented range.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Dotted path of the field, e.g. `parallel.tp`.
    pub field: &'static str,
    pub message: String,
}

/// Checks every documented range; an empty list means valid.
pub fn validate(scenario: &Scenario) -> Vec<FieldError> {
    let _ = scenario;
    Vec::new()
}
