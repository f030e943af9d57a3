//! Getters of the serving engines' numeric settings for `RANGES` (`inference.engine.*`): each
//! applies only when the scenario's engine is that one.

use crate::scenario::{Scenario, ServingEngine, Sglang, Vllm};

pub(super) fn vllm(s: &Scenario) -> Option<&Vllm> {
    match &s.inference.engine {
        Some(ServingEngine::Vllm(v)) => Some(v),
        _ => None,
    }
}

pub(super) fn sglang(s: &Scenario) -> Option<&Sglang> {
    match &s.inference.engine {
        Some(ServingEngine::Sglang(g)) => Some(g),
        _ => None,
    }
}
