//! The scenario: the document a user edits, saves as a preset and the estimator reads.
//!
//! Every field has a default (`#[serde(default)]`), so a preset names only what differs and older
//! files keep loading as fields are added. Unknown fields are errors (`deny_unknown_fields`): a typo
//! must not be silently ignored. Ranges are checked by [`validate`](validate::validate).

mod axis;
mod gpu;
mod implementation;
mod input;
mod model;
mod moe;
mod parallel;
mod peft;
mod precision;
mod quant;
mod strategies;
mod timing;
pub mod validate;
mod workload;

pub use axis::Axis;
pub use gpu::*;
pub use implementation::*;
pub use input::*;
pub use model::*;
pub use moe::*;
pub use parallel::*;
pub use peft::*;
pub use precision::*;
pub use quant::*;
pub use strategies::*;
pub use timing::*;
pub use workload::*;

use serde::{Deserialize, Serialize};

/// The current scenario format version. Bump it when a field is renamed, and migrate in `presets`.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    pub version: u32,
    pub name: String,
    /// Free text: what the scenario is for, what a source claimed.
    pub notes: String,
    pub mode: Mode,
    pub model: ModelSpec,
    pub workload: Workload,
    pub inference: Inference,
    pub precision: PrecisionSpec,
    pub optimizer: Optimizer,
    pub strategies: Strategies,
    pub parallel: Parallelism,
    pub gpu: GpuChoice,
    pub implementation: Implementation,
    pub overheads: Overheads,
    pub timing: Timing,
    /// Input batches on the GPU, prefetch and host staging (seed article §2.2).
    pub input: InputPipeline,
    /// LoRA / QLoRA fine-tuning (training only).
    pub peft: Peft,
    /// Quantized storage of the layers' weight matrices.
    pub quantization: Quantization,
}

impl Default for Scenario {
    /// Llama-3-8B inference in BF16 on one H100 SXM (80 GB): fits with visible headroom.
    fn default() -> Self {
        Scenario {
            version: FORMAT_VERSION,
            name: "Llama-3-8B inference on one H100".to_owned(),
            notes: String::new(),
            mode: Mode::Inference,
            model: ModelSpec::default(),
            workload: Workload::default(),
            inference: Inference::default(),
            // Inference serves 16-bit weights as stored, not autocast over FP32 weights.
            precision: PrecisionSpec {
                mode: PrecisionMode::Uniform,
                ..PrecisionSpec::default()
            },
            optimizer: Optimizer::default(),
            strategies: Strategies::default(),
            parallel: Parallelism::default(),
            gpu: GpuChoice::default(),
            implementation: Implementation::default(),
            overheads: Overheads::default(),
            timing: Timing::default(),
            input: InputPipeline::default(),
            peft: Peft::default(),
            quantization: Quantization::default(),
        }
    }
}
