//! Weight-only quantized matrices in a PyTorch decode: the dequantising GEMV reads each byte more
//! slowly than a BF16 GEMV (issue 13: the gpt-fast INT8 / INT4 rows were +16 … +46 % too fast when
//! timed at BF16's bandwidth). The shares are named assumptions with their source
//! (`timing.parts.int8_weight_only_read`, `int4_weight_only_read`: torchao's batch-1 decode table,
//! docs/time-model.md); serving engines run their own kernels (Marlin, GGUF) and keep the full
//! share, as do formats without a measured kernel.

use super::inputs::Inputs;
use super::roofline::{div, phase};
use super::types::PhaseRoofline;
use crate::scenario::{Scenario, ServingEngine, WeightFormat};
use crate::units::Bytes;

/// The share of BF16's read bandwidth the scenario's quantized weights reach in a decode step.
pub fn read_share(s: &Scenario) -> f64 {
    let pytorch = matches!(
        s.inference.engine,
        None | Some(ServingEngine::HfGenerate | ServingEngine::Preallocated)
    );
    let p = &s.timing.parts;
    // The shares are clamped to [0.05, 1] once, by the resolve pass (validate::RANGES).
    match s.quantization.weights {
        WeightFormat::Int8PerChannel if pytorch => p.int8_weight_only_read,
        WeightFormat::Int4Group if pytorch => p.int4_weight_only_read,
        _ => 1.0,
    }
}

/// A decode step's roofline: its weights read at [`read_share`] of the bandwidth, the cache at the
/// full rate; the bytes and intensity it reports are the bytes actually moved.
pub fn decode_phase(
    s: &Scenario,
    flops: f64,
    weights: f64,
    cache: f64,
    i: &Inputs,
) -> PhaseRoofline {
    let share = read_share(s);
    let mut d = phase(flops, weights / share + cache, i);
    let moved = (weights + cache).max(0.0);
    d.bytes = Bytes(moved);
    d.intensity = div(flops.max(0.0), moved);
    d
}
