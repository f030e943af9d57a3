//! VRAM Explorer: how much GPU memory a training or inference step needs, how fast it runs, and what
//! another GPU or memory technology would change.
//!
//! The mental model: a [`Scenario`](scenario::Scenario) is the document (everything a user can set);
//! [`estimate`](estimator::estimate) turns it into an [`Estimate`](estimator::Estimate), purely and
//! without allocating, every frame. Everything else — the app, the CLI, tests and benchmarks — edits a
//! scenario and reads an estimate.

#[macro_use]
mod macros;

#[cfg(feature = "gui")]
pub mod app;
pub mod claims;
pub mod cli;
pub mod estimator;
pub mod format;
pub mod hardware;
pub mod import;
pub mod measured;
pub mod presets;
pub mod report;
pub mod scenario;
pub mod tensor;
#[cfg(feature = "gui")]
pub mod ui;
pub mod units;
