//! The pure estimator: `estimate(&Scenario) -> Estimate`. No egui, no IO, no clock, no allocation.

pub mod article;
pub mod diagnostics;
pub mod engines;
pub mod explain;
pub mod memory;
mod memory_types;
pub mod model;
pub mod num;
pub mod performance;
pub mod resolve;
pub mod sensitivity;
pub mod solver;
mod stage_types;
pub mod timeline;

pub use diagnostics::{Diagnostic, Diagnostics, Severity};
pub use memory_types::*;
pub use model::ResolvedModel;
pub use performance::Performance;
pub use resolve::{Resolved, resolve};
pub use stage_types::{MAX_STAGE_CLASSES, StageClass, StageRole};

use crate::scenario::Scenario;

/// Everything the app, CLI and tests read about a scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    pub model: ResolvedModel,
    pub memory: MemoryEstimate,
    pub performance: Performance,
    pub diagnostics: Diagnostics,
    /// What the serving engine (vLLM, SGLang) would print at startup; `None` for other engines.
    pub engine: Option<engines::EngineFigures>,
    /// llama.cpp's buffers as it prints them (a llama.cpp scenario only).
    pub llamacpp: Option<engines::llamacpp::Buffers>,
}

impl Estimate {
    /// llama.cpp's buffers when the scenario runs on a CPU build (`-dev none`): no GPU memory, no
    /// GPU roofline, no GPU comparison apply to it.
    pub fn cpu_build(&self) -> Option<&engines::llamacpp::Buffers> {
        self.llamacpp.as_ref().filter(|b| b.gpus == 0)
    }
}

/// Estimates a scenario. Total: every input gives a finite answer (out-of-range inputs are clamped and
/// reported as [`Diagnostic::InputClamped`]). The scenario is resolved once ([`resolve`]) and every
/// part reads the resolved values.
///
/// The model is derived once, into a local the resolved scenario borrows, and moved into the result
/// (`Resolved` owning a copy cost two more copies of the 1.2 kB model).
pub fn estimate(scenario: &Scenario) -> Estimate {
    let mut diagnostics = Diagnostics::default();
    let spec = resolve::model_spec(&scenario.model, &mut diagnostics);
    let model = model::derive(
        &spec,
        &scenario.model.pattern,
        &scenario.model.towers,
        &mut diagnostics,
    );
    let r = resolve::resolve_rest(scenario, spec, &model, &mut diagnostics);
    let mut memory = memory::estimate_resolved(&r, &mut diagnostics);
    let mut performance = performance::estimate_performance(&r, &memory, &mut diagnostics);
    let engine = engines::figures::of(&r, &memory);
    let llamacpp = engines::llamacpp::buffers(&r);
    if let Some(f) = &engine {
        engines::reservation::apply(f, &r, &mut memory, &mut diagnostics);
        // The engine's own count, as the headline and `fit` give it (not what would fit beside
        // the requests' memory).
        let i = &r.scenario.inference;
        let request = f64::from(i.prompt_tokens) + f64::from(i.generated_tokens);
        // An engine that would not start serves none (`refusals::check` says why).
        performance.throughput.max_concurrent_requests = if f.too_small {
            0
        } else {
            u32::try_from(f.requests_at_once(request)).unwrap_or(u32::MAX)
        };
    }
    engines::refusals::check(
        &r.scenario,
        engine.as_ref(),
        llamacpp.as_ref(),
        &mut memory.fits,
        &mut diagnostics,
    );
    if let Some(b) = &llamacpp {
        // llama.cpp's cache holds `-np` slots of `-c / -np` cells: as many requests as the slots
        // at this `-c` whose slot holds one (what the window's headline and `fit` say).
        let i = &r.scenario.inference;
        let request = u64::from(i.prompt_tokens) + u64::from(i.generated_tokens);
        performance.throughput.max_concurrent_requests = if memory.fits {
            engines::llamacpp::kv::slots_holding(&b.settings, request)
        } else {
            0
        };
    }
    Estimate {
        model,
        memory,
        performance,
        diagnostics,
        engine,
        llamacpp,
    }
}
