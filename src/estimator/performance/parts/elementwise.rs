//! Memory-bound work: norms, activations, dropout, residual adds, softmax, the loss — timed by the
//! bytes they move at an achievable bandwidth that depends on the size of the transfer.
//!
//! Bandwidth efficiency by bytes per kernel: calculon-ai/calculon `systems/a100_80g.json` at
//! commit caa4b11f8fe1fee3ba57adaacb7590d7deabd053, `mem1.MB_efficiency` (≥ 100 MB 90 %,
//! ≥ 10 MB 75 %, ≥ 1 MB 60 %, smaller 30 %), the same table in its H100 file.

/// Achievable fraction of peak memory bandwidth for one kernel moving `bytes`.
pub fn bandwidth_efficiency(bytes: f64) -> f64 {
    let mb = bytes / 1e6;
    if mb >= 100.0 {
        0.9
    } else if mb >= 10.0 {
        0.75
    } else if mb >= 1.0 {
        0.6
    } else {
        0.3
    }
}

/// Time of one memory-bound kernel moving `bytes` at `bandwidth` B/s peak.
pub fn time(bytes: f64, bandwidth: f64) -> f64 {
    if bytes > 0.0 && bandwidth > 0.0 {
        bytes / (bandwidth * bandwidth_efficiency(bytes))
    } else {
        0.0
    }
}

/// Elementwise kernels of one transformer layer's forward for `tokens` tokens on one GPU, in
/// element counts, as Megatron-LM fuses them (Korthikanti et al. 2022 §4 lists the same ops for
/// the activation memory; the counts are reads + writes of each fused kernel):
/// - two LayerNorms, each reading and writing the hidden state: 2 × 2·h;
/// - two fused bias-dropout-add kernels (read the output and the residual, write the sum, a 1-byte
///   mask ≈ ½ element): 2 × 3.5·h;
/// - the fused bias-activation of the MLP (read and write the f-wide input; SwiGLU reads two);
///
/// The first two run on the full hidden state on every tensor-parallel rank unless sequence
/// parallelism splits them (Korthikanti §4.2.2). Returns (replicated-region elements, MLP
/// elements) per token, before dividing by TP.
pub fn layer_elements_per_token(hidden: f64, ffn: f64, swiglu: bool) -> (f64, f64) {
    let norms = 2.0 * 2.0 * hidden;
    let dropout_add = 2.0 * 3.5 * hidden;
    let act = if swiglu { 3.0 * ffn } else { 2.0 * ffn };
    (norms + dropout_add, act)
}

/// Elements the materialised softmax path moves per token and head column: fused
/// scale-mask-softmax reads and writes the scores (2), dropout reads them, writes them and a mask
/// (2.5) — Megatron-LM `fused_softmax` + attention dropout; zero under a fused (flash) kernel.
pub const SOFTMAX_ELEMENTS: f64 = 4.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_transfers_run_below_large_ones() {
        assert!(time(1e5, 2e12) * 1e3 > time(1e8, 2e12));
        assert_eq!(bandwidth_efficiency(2e8), 0.9);
        assert_eq!(time(0.0, 2e12), 0.0);
        let (rep, mlp) = layer_elements_per_token(1.0, 4.0, false);
        assert_eq!((rep, mlp), (11.0, 8.0));
    }
}
