//! "Which quantization fits this GPU at this context?": every weight format of
//! [`WeightFormat::ALL`] estimated on the scenario, with its headroom and the longest context that
//! fits. Pure; one scratch copy of the scenario, as the other solvers.

use super::{Solved, Target, max_fitting};
use crate::estimator::{Component, estimate};
use crate::hardware::GpuId;
use crate::scenario::{GpuChoice, Scenario, WeightFormat};
use crate::units::Bytes;

/// One format's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantFit {
    pub format: WeightFormat,
    /// Bits per weight of the layer matrices incl. scales and zeros (`None`: the precision's type).
    pub bits_per_weight: Option<f64>,
    /// Weight bytes on the GPU (layers in the format, embeddings and head in the weight type).
    pub weights: Bytes,
    pub fits: bool,
    /// Capacity − GPU total: negative when it does not fit.
    pub headroom: Bytes,
    /// Longest prompt (inference) or sequence (training) that fits, other inputs fixed.
    pub max_context: Solved,
    /// Whether the GPU has units for the format's arithmetic: FP8 (an FP8 peak in the catalog), FP4
    /// (Blackwell: B200, RTX 5090). `None` for weight-only formats, de-quantized to 16 bit anywhere.
    pub native: Option<bool>,
}

/// Whether the scenario's GPU computes `format` natively (see [`QuantFit::native`]).
pub fn native(s: &Scenario, format: WeightFormat) -> Option<bool> {
    let spec = s.gpu.spec();
    match format {
        WeightFormat::Fp8 => Some(spec.peaks.fp8.is_some()),
        WeightFormat::Mxfp4 | WeightFormat::Nvfp4 => Some(matches!(
            s.gpu,
            GpuChoice::Catalog(GpuId::B200 | GpuId::Rtx5090)
        )),
        _ => None,
    }
}

/// Every weight format on the scenario's GPU, in [`WeightFormat::ALL`] order. The formats apply to
/// inference and to a LoRA base (full training ignores them; QLoRA is always NF4).
pub fn quant_fit(s: &Scenario) -> [QuantFit; WeightFormat::ALL.len()] {
    let mut scratch = s.clone();
    WeightFormat::ALL.map(|format| {
        scratch.quantization.weights = format;
        let e = estimate(&scratch);
        QuantFit {
            format,
            bits_per_weight: format.bits_per_weight(
                s.quantization.group_size,
                e.model.hidden,
                true,
            ),
            weights: e.memory.peak.get(Component::Weights),
            fits: e.memory.fits,
            headroom: e.memory.headroom,
            max_context: max_fitting(&scratch, Target::Context),
            native: native(s, format),
        }
    })
}
