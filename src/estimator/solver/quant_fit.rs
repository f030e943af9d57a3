//! "Which quantization fits this GPU at this context?": every weight format of
//! [`WeightFormat::ALL`] estimated on the scenario, with its headroom and the longest context that
//! fits. Pure; one scratch copy of the scenario, as the other solvers.
//!
//! Under llama.cpp the weights are a GGUF file, whatever the format says
//! (`engines::llamacpp::file_type`: any format that is not a GGUF type reads as the precision's
//! F16 / BF16 / F32 file), so the rows are the scenario's own file type and the `llama-quantize`
//! file types of [`LLAMACPP_FILE_TYPES`]; the formats llama.cpp does not load ([`NOT_GGUF`]) have
//! no row. On a llama.cpp CPU build (`-dev none`) each row is the host's buffers, with no GPU to
//! fit.

use std::borrow::Cow;

use super::{Solved, Target, max_fitting};
use crate::estimator::engines::llamacpp;
use crate::estimator::{Component, estimate};
use crate::hardware::GpuId;
use crate::scenario::{GpuChoice, Scenario, WeightFormat};
use crate::tensor::GgufFileType;
use crate::units::Bytes;

/// One format's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantFit {
    /// The format; under llama.cpp always `GgufFile` of the row's file type.
    pub format: WeightFormat,
    /// The scenario as it is (its own format, or under llama.cpp its own file type): this row's
    /// figures are the headline's.
    pub as_stored: bool,
    /// Bits per weight of the layer matrices incl. scales and zeros (`None`: the precision's type).
    /// For a GGUF file type, its base type's (Q4_K for Q4_K_M; `llama-quant.cpp` gives some
    /// tensors more bits).
    pub bits_per_weight: Option<f64>,
    /// Weight bytes on the GPU (layers in the format, embeddings and head in the weight type); on a
    /// llama.cpp CPU build, the host's model buffer.
    pub weights: Bytes,
    /// Whether it fits the GPU (meaningless with `host_total`: nothing is on a GPU).
    pub fits: bool,
    /// Capacity − GPU total: negative when it does not fit (meaningless with `host_total`).
    pub headroom: Bytes,
    /// Longest prompt (inference) or sequence (training) that fits, other inputs fixed.
    pub max_context: Solved,
    /// Whether the GPU has units for the format's arithmetic: FP8 (an FP8 peak in the catalog), FP4
    /// (Blackwell: B200, RTX 5090). `None` for weight-only formats, de-quantized to 16 bit anywhere,
    /// and for GGUF files under llama.cpp.
    pub native: Option<bool>,
    /// A llama.cpp CPU build (`-dev none`): the host bytes of llama.cpp's buffers (model, KV,
    /// compute) with this file. The estimator has no host-memory capacity, so there is nothing to
    /// fit them against: `fits` and `headroom` do not apply.
    pub host_total: Option<Bytes>,
}

impl QuantFit {
    /// The row's name: the format's label, "GGUF Q4_K_M" for a GGUF file type.
    pub fn label(&self) -> Cow<'static, str> {
        match self.format {
            WeightFormat::GgufFile(f) => Cow::Owned(format!("GGUF {}", f.name())),
            other => Cow::Borrowed(other.label()),
        }
    }
}

/// The `llama-quantize` file types listed under llama.cpp beside the scenario's own, largest
/// first: the types GGUF repositories commonly publish (F16 and Q8_0; the K-quants Q6_K … Q2_K,
/// llama.cpp `tools/quantize/quantize.cpp`'s recommended mixes; the legacy Q4_0). Every one is a
/// [`GgufFileType`] the estimator counts tensor by tensor (`llamacpp::tensor_types`).
pub const LLAMACPP_FILE_TYPES: [GgufFileType; 9] = [
    GgufFileType::F16,
    GgufFileType::Q8_0,
    GgufFileType::Q6K,
    GgufFileType::Q5KM,
    GgufFileType::Q4KM,
    GgufFileType::Q4KS,
    GgufFileType::Q4_0,
    GgufFileType::Q3KM,
    GgufFileType::Q2K,
];

/// The weight formats with no row under llama.cpp, which the estimator would read as the
/// precision's F16 / BF16 file (`llamacpp::file_type`) rather than as themselves: see
/// [`not_under_llamacpp`] for why each.
pub const NOT_GGUF: [WeightFormat; 6] = [
    WeightFormat::Int8PerChannel,
    WeightFormat::Int4Group,
    WeightFormat::Fp8,
    WeightFormat::Nf4,
    WeightFormat::Mxfp4,
    WeightFormat::Nvfp4,
];

/// Why a format of [`NOT_GGUF`] has no row under llama.cpp. llama.cpp loads GGUF files of ggml
/// types (`ggml/include/ggml.h` `enum ggml_type` at llama.cpp@0c1e57098): INT8 per channel,
/// GPTQ/AWQ, FP8 and bitsandbytes' NF4 are not among them; MXFP4 and NVFP4 are, as the file types
/// `LLAMA_FTYPE_MOSTLY_MXFP4_MOE` and `LLAMA_FTYPE_MOSTLY_NVFP4` (`include/llama.h`), which the
/// estimator's [`GgufFileType`] does not model.
pub const fn not_under_llamacpp(format: WeightFormat) -> &'static str {
    match format {
        WeightFormat::Mxfp4 | WeightFormat::Nvfp4 => {
            "a llama.cpp file type (MXFP4_MOE, NVFP4) the estimator does not model"
        }
        _ => "not a GGUF type: llama.cpp does not load it",
    }
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
/// inference and to a LoRA base (full training ignores them; QLoRA is always NF4). Under llama.cpp:
/// the scenario's GGUF file type first, then the other [`LLAMACPP_FILE_TYPES`] (see the module).
pub fn quant_fit(s: &Scenario) -> Vec<QuantFit> {
    if s.runs_on_llamacpp() {
        return gguf_fit(s);
    }
    let mut scratch = s.clone();
    WeightFormat::ALL
        .iter()
        .map(|&format| {
            scratch.quantization.weights = format;
            let e = estimate(&scratch);
            QuantFit {
                format,
                as_stored: format == s.quantization.weights,
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
                host_total: None,
            }
        })
        .collect()
}

/// The GGUF rows under llama.cpp: the scenario itself (its file type, `llamacpp::file_type`), then
/// each other file type of [`LLAMACPP_FILE_TYPES`] in its place.
fn gguf_fit(s: &Scenario) -> Vec<QuantFit> {
    let own = llamacpp::file_type(s);
    let others = LLAMACPP_FILE_TYPES.into_iter().filter(|f| *f != own);
    let mut scratch = s.clone();
    std::iter::once(own)
        .chain(others)
        .map(|f| {
            let as_stored = f == own;
            scratch.quantization.weights = if as_stored {
                s.quantization.weights
            } else {
                WeightFormat::GgufFile(f)
            };
            let e = estimate(&scratch);
            let host = e
                .cpu_build()
                .map(|b| (Bytes(b.host_model as f64), Bytes(b.host_total() as f64)));
            let format = WeightFormat::GgufFile(f);
            QuantFit {
                format,
                as_stored,
                bits_per_weight: format.bits_per_weight(
                    s.quantization.group_size,
                    e.model.hidden,
                    true,
                ),
                weights: host.map_or_else(|| e.memory.peak.get(Component::Weights), |h| h.0),
                fits: e.memory.fits,
                headroom: e.memory.headroom,
                max_context: max_fitting(&scratch, Target::Context),
                native: None,
                host_total: host.map(|h| h.1),
            }
        })
        .collect()
}
