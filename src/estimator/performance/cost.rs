//! Time to train (or serve) a token budget, GPU-hours, energy and money.

use super::inputs::Inputs;
use super::roofline::div;
use super::types::Cost;

/// Megatron-LM's end-to-end training time estimate, 8TP/(nX) seconds for T tokens, P parameters,
/// n GPUs at X FLOP/s each (Narayanan et al. 2021, Eq. 4; the 8 = 6 for forward + backward, + 2 for
/// the recomputed forward). GPT-3 175B on 300B tokens with 1024 A100 at 140 TFLOP/s: ~34 days.
///
/// ```
/// use vram_explorer::estimator::performance::cost::megatron_training_time_s;
/// let days = megatron_training_time_s(300e9, 175e9, 1024.0, 140e12) / 86400.0;
/// assert!((days - 33.9).abs() < 0.1);
/// ```
pub fn megatron_training_time_s(tokens: f64, params: f64, gpus: f64, flops_per_gpu: f64) -> f64 {
    div(8.0 * tokens * params, gpus * flops_per_gpu)
}

/// Cost of `budget` tokens at `tokens_per_step` per step of `step_s` seconds on `gpus` GPUs.
/// Energy takes the board power (TDP) as the draw — an upper-end assumption; the memory-traffic
/// energy is bytes × 8 × pJ/bit of the GPU's memory technology (O'Connor et al. MICRO'17 for HBM2).
/// `budget` and `price` come from a resolved scenario (in range).
pub fn cost(
    tokens_per_step: f64,
    step_s: f64,
    gpus: f64,
    i: &Inputs,
    budget: f64,
    price: f64,
    bytes_per_step: f64,
) -> Cost {
    let steps = div(budget, tokens_per_step);
    let time_s = steps * step_s;
    let gpu_hours = time_s * gpus / 3600.0;
    Cost {
        tokens_per_step,
        steps,
        time_s,
        gpu_hours,
        energy_kwh: i.tdp_w.map(|w| gpu_hours * w / 1000.0),
        money: gpu_hours * price,
        memory_energy_per_step_j: i
            .energy_pj_per_bit
            .map(|pj| bytes_per_step.max(0.0) * 8.0 * pj * 1e-12),
    }
}
