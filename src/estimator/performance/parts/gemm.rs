//! Matrix multiplies: achievable efficiency from the size of the GEMM and the GPU's peak.
//!
//! The curve is calculon's (calculon-ai/calculon `systems/a100_80g.json` at commit
//! caa4b11f8fe1fee3ba57adaacb7590d7deabd053, `matrix.float16.gflops_efficiency`): a GEMM of
//! ≥ 128 GFLOP runs at 95 % of peak, 16 GFLOP at 90 %, 1 GFLOP at 60 %, smaller ones down to 10 %.
//! calculon steps between the points and uses the same GFLOP thresholds for H100
//! (`systems/h100_80g_nvl8.json`); here the thresholds are read as *durations at peak* (a GEMM's
//! fixed costs — wave quantisation, prologue/epilogue — are time, not FLOPs), so on a GPU with
//! k× the A100's peak a GEMM needs k× the FLOPs to reach the same efficiency, and the curve is
//! interpolated in log(size) instead of stepped (no jumps when a layout search changes a size).

/// The A100 16-bit dense peak calculon's thresholds refer to, FLOP/s (`tflops: 312`).
const CURVE_PEAK: f64 = 312e12;

/// calculon's points (GFLOP at the A100 peak, efficiency), largest first.
const POINTS: [(f64, f64); 3] = [(128.0, 0.95), (16.0, 0.9), (1.0, 0.6)];
/// calculon's floor for the smallest GEMMs (`[0, 0.1]`).
const FLOOR: f64 = 0.1;

/// ln of the points' sizes (ln 128, ln 16, ln 1), so the hot path takes one `ln`.
const LN_POINTS: [f64; 3] = [4.852_030_263_919_617, 2.772_588_722_239_781, 0.0];

/// Efficiency (fraction of peak) of one GEMM of `flops` on a GPU of `peak` FLOP/s, before the
/// step-level share `timing.parts.gemm_efficiency`.
///
/// ```
/// use vram_explorer::estimator::performance::parts::gemm::curve;
/// assert_eq!(curve(200e9, 312e12), 0.95);
/// assert!((curve(16e9, 312e12) - 0.9).abs() < 1e-12);
/// // The same GEMM on a GPU with 3× the peak sits lower on the curve.
/// assert!(curve(16e9, 936e12) < 0.9);
/// ```
pub fn curve(flops: f64, peak: f64) -> f64 {
    if !(flops.is_finite() && flops > 0.0 && peak > 0.0) {
        return FLOOR;
    }
    let g = flops / 1e9 * CURVE_PEAK / peak;
    if g >= POINTS[0].0 {
        return POINTS[0].1;
    }
    if g <= POINTS[2].0 {
        return (POINTS[2].1 * g).max(FLOOR);
    }
    let lg = g.ln();
    let (hi, lo) = if lg >= LN_POINTS[1] { (0, 1) } else { (1, 2) };
    let t = (lg - LN_POINTS[lo]) / (LN_POINTS[hi] - LN_POINTS[lo]);
    POINTS[lo].1 + (POINTS[hi].1 - POINTS[lo].1) * t
}

/// Time of one GEMM of `flops` at `peak` × curve × `share` (the fitted step-level share).
pub fn time(flops: f64, peak: f64, share: f64) -> f64 {
    let rate = peak * curve(flops, peak) * share;
    if rate > 0.0 && flops > 0.0 {
        flops / rate
    } else {
        0.0
    }
}

/// Time of one transformer layer's forward GEMMs for `tokens` tokens on one GPU (Megatron shapes
/// after TP: column-parallel QKV and MLP-up, row-parallel out and MLP-down; Shoeybi et al. 2019
/// §3), `keep` the share structured pruning keeps. Each GEMM is placed on the curve by its own
/// size; a mixture of experts' expert GEMM sees top-k/E of the tokens (GShard §2.2).
pub fn layer_forward(
    m: &crate::estimator::model::ResolvedModel,
    tokens: f64,
    tp: f64,
    keep: f64,
    peak: f64,
    share: f64,
) -> f64 {
    let (proj_w, mlp_w) = crate::estimator::performance::flops::layer_matmul_weights(m);
    let q = f64::from(m.heads) * f64::from(m.head_dim);
    let kv = f64::from(m.kv_heads) * f64::from(m.head_dim);
    let qkv_share = if q + kv > 0.0 {
        (q + 2.0 * kv) / (2.0 * q + 2.0 * kv)
    } else {
        0.5
    };
    let proj_f = 2.0 * tokens * proj_w * keep / tp;
    let mlp_f = 2.0 * tokens * mlp_w * keep / tp;
    let mats = match m.ffn_kind {
        crate::scenario::FfnKind::Gelu | crate::scenario::FfnKind::SquaredRelu => 2.0,
        crate::scenario::FfnKind::SwiGlu => 3.0,
    };
    let routed_tokens = if m.moe.experts > 0 {
        f64::from(m.moe.top_k) / f64::from(m.moe.experts)
    } else {
        1.0
    };
    let mlp_op = mlp_f / (mats * m.moe.active_mlps()).max(1.0) * routed_tokens;
    let mlp_rate = peak * curve(mlp_op, peak) * share;
    let mlp = if mlp_rate > 0.0 {
        mlp_f / mlp_rate
    } else {
        0.0
    };
    time(proj_f * qkv_share, peak, share) + time(proj_f * (1.0 - qkv_share), peak, share) + mlp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_matches_calculons_points_and_is_monotone() {
        for (g, e) in POINTS {
            assert!((curve(g * 1e9, CURVE_PEAK) - e).abs() < 1e-12, "{g}");
        }
        for (a, b) in LN_POINTS.iter().zip(POINTS) {
            assert!((a - b.0.ln()).abs() < 1e-12);
        }
        let mut last = 0.0;
        for k in 0..60 {
            let e = curve(1e6 * 1.4f64.powi(k), CURVE_PEAK);
            assert!(e >= last, "not monotone at {k}");
            last = e;
        }
        assert_eq!(curve(0.0, CURVE_PEAK), FLOOR);
        assert_eq!(curve(1e6, CURVE_PEAK), FLOOR);
    }
}
