//! Matrix multiplies: achievable efficiency from the size of the GEMM and the GPU's generation.
//!
//! Two measured curves, each read as *durations at peak* (a GEMM's fixed costs — wave
//! quantisation, prologue/epilogue — are time, not FLOPs): on a GPU with k× the curve's reference
//! peak a GEMM needs k× the FLOPs to reach the same efficiency. Both are interpolated between
//! their points, not stepped (no jumps when a layout search changes a size).
//!
//! - [`Curve::Ampere`], calculon's (calculon-ai/calculon `systems/a100_80g.json` at commit
//!   caa4b11f8fe1fee3ba57adaacb7590d7deabd053, `matrix.float16.gflops_efficiency`): a GEMM of
//!   ≥ 128 GFLOP runs at 95 % of the A100 peak, 16 GFLOP at 90 %, 1 GFLOP at 60 %, smaller ones
//!   down to 10 %. calculon reuses the same GFLOP thresholds for H100, which flattens the curve
//!   there: a 400 GFLOP GEMM would already be at the top.
//! - [`Curve::Hopper`], a measured Hopper size sweep: tilelang's FP16 GEMM benchmark on an NVIDIA
//!   H800 SXM (tile-ai/tilelang `benchmark/matmul/README.md`, measured at tilelang commit
//!   17bd0a6c651f599bec1397e0b91830c3ddc93076; the stored copy read is the fork xwhzz/tilelang at
//!   b2acfc3791d5ddeef3772214222461c85659c904): M = N = 8192, K = 256 … 16384, 386 → 766 TFLOP/s.
//!   The H800's tensor cores and clocks are the H100 SXM's (989.4 TFLOP/s dense 16-bit). Its
//!   efficiency keeps rising to ≈ 2 TFLOP per GEMM (550 GFLOP: 96 % of the top, 1.1 TFLOP: 99 %),
//!   which is what the Megatron-Core H100 table shows: with calculon's curve the runs whose GEMMs
//!   are 200–400 GFLOP came out 6 % too fast and those of 0.8–1 TFLOP 5 % too slow
//!   (docs/time-model.md, "fourth pass"). The points are scaled so the top is calculon's 95 %;
//!   the step-level share `gemm_efficiency_hopper` is fitted on top of them either way. Caveat:
//!   the sweep's small sizes are small-K shapes, which run below a transformer GEMM of the same
//!   FLOPs. Between points the curve is linear in size; below the smallest (34 GFLOP) efficiency
//!   falls in proportion to size, as calculon's lowest segment does.

/// Which measured size curve a GPU's GEMMs follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// calculon's A100 curve (Ampere and older, and GPUs below the Hopper peak).
    Ampere,
    /// tilelang's H800 sweep (Hopper-class and newer).
    Hopper,
}

impl Curve {
    /// The curve of a GPU by its 16-bit dense peak (`super::HOPPER_PEAK16` is the boundary the
    /// step-level share uses too), so an FP8 recipe on an older GPU keeps its generation's curve.
    pub fn for_peak16(peak16: f64) -> Curve {
        if peak16 >= super::HOPPER_PEAK16 {
            Curve::Hopper
        } else {
            Curve::Ampere
        }
    }
}

/// The A100 16-bit dense peak calculon's thresholds refer to, FLOP/s (`tflops: 312`).
const CURVE_PEAK: f64 = 312e12;

/// calculon's points (GFLOP at the A100 peak, efficiency), largest first.
const POINTS: [(f64, f64); 3] = [(128.0, 0.95), (16.0, 0.9), (1.0, 0.6)];
/// calculon's floor for the smallest GEMMs (`[0, 0.1]`).
const FLOOR: f64 = 0.1;

/// ln of the points' sizes (ln 128, ln 16, ln 1), so the hot path takes one `ln`.
const LN_POINTS: [f64; 3] = [4.852_030_263_919_617, 2.772_588_722_239_781, 0.0];

/// The H800/H100 SXM 16-bit dense peak the Hopper points refer to, FLOP/s.
const HOPPER_CURVE_PEAK: f64 = 989.4e12;

/// The sweep's largest and smallest GEMMs, GFLOP (2·8192²·K at K = 16384 and 256).
const HOPPER_TOP_GFLOP: f64 = 2_199.023_255_552;
const HOPPER_SMALLEST_GFLOP: f64 = 34.359_738_368;

/// The sweep's efficiencies scaled to a 95 % top (0.95 × TFLOP/s ÷ 766), largest GEMM first, each
/// point half the size of the one before; the tests keep tilelang's table (`HOPPER_SWEEP`) and
/// check them against it.
const HOPPER_POINTS: [f64; 7] = [
    0.95,
    0.940_078_328_981_723_3,
    0.912_793_733_681_462_1,
    0.874_347_258_485_639_7,
    0.778_851_174_934_725_9,
    0.644_908_616_187_989_6,
    0.478_720_626_631_853_8,
];

/// Efficiency (fraction of peak) of one GEMM of `flops` on a GPU of `peak` FLOP/s on `curve`,
/// before the step-level share `timing.parts.gemm_efficiency` (or `_hopper`).
///
/// ```
/// use vram_explorer::estimator::performance::parts::gemm::{curve, Curve};
/// assert_eq!(curve(200e9, 312e12, Curve::Ampere), 0.95);
/// assert!((curve(16e9, 312e12, Curve::Ampere) - 0.9).abs() < 1e-12);
/// // The same GEMM on a GPU with 3× the peak sits lower on the curve.
/// assert!(curve(16e9, 936e12, Curve::Ampere) < 0.9);
/// // On Hopper a 1.1 TFLOP GEMM still runs faster than a 275 GFLOP one (tilelang's sweep).
/// let h100 = 989.4e12;
/// assert!(curve(1.1e12, h100, Curve::Hopper) > curve(275e9, h100, Curve::Hopper) + 0.06);
/// ```
pub fn curve(flops: f64, peak: f64, curve: Curve) -> f64 {
    if !(flops.is_finite() && flops > 0.0 && peak > 0.0) {
        return FLOOR;
    }
    match curve {
        Curve::Ampere => ampere(flops / 1e9 * CURVE_PEAK / peak),
        Curve::Hopper => hopper(flops / 1e9 * HOPPER_CURVE_PEAK / peak),
    }
}

/// calculon's curve at `g` GFLOP of A100 time.
fn ampere(g: f64) -> f64 {
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

/// tilelang's Hopper sweep at `g` GFLOP of H100 time, linear between neighbouring points. The
/// sweep doubles K from point to point, so the segment is the binary exponent of top ÷ g, read
/// from the float's bits: no logarithm on the hot path (a Hopper step has most GEMMs below the
/// top, where calculon's curve had returned before taking one). Below the smallest point the
/// efficiency falls in proportion to the size (a fixed time per GEMM), as calculon's lowest
/// segment does, down to the floor.
fn hopper(g: f64) -> f64 {
    let x = HOPPER_TOP_GFLOP / g;
    if x <= 1.0 {
        return HOPPER_POINTS[0];
    }
    let last = HOPPER_POINTS.len() - 1;
    // x = 2^k · m with m in [1, 2): g lies between point k (top / 2^k) and point k + 1.
    let k = ((x.to_bits() >> 52) & 0x7ff) as usize - 1023;
    if k >= last {
        return (HOPPER_POINTS[last] * g / HOPPER_SMALLEST_GFLOP).max(FLOOR);
    }
    let m = f64::from_bits((x.to_bits() & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    // g = top / 2^k / m: t = 0 at point k + 1 (m = 2), 1 at point k (m = 1).
    let t = 2.0 / m - 1.0;
    let (hi, lo) = (HOPPER_POINTS[k], HOPPER_POINTS[k + 1]);
    lo + (hi - lo) * t
}

/// How one GPU runs GEMMs in a training step: its GEMM peak (the compute type's), the step-level
/// share and its generation's size curve, and for a Hopper-class GPU the floor below which no
/// tensor-core kernel of it runs ([`Gemm::for_gpu`]).
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub peak: f64,
    pub share: f64,
    pub curve: Curve,
    /// The Ampere-class GPU whose rate is the floor, at the compute type's peak
    /// (`HOPPER_PEAK16` × `peak` ÷ the 16-bit peak); 0: no floor.
    pub floor_peak: f64,
    /// Its step-level share (`timing.parts.gemm_efficiency`).
    pub floor_share: f64,
}

impl Gemm {
    /// How a GPU of 16-bit dense peak `peak16` runs GEMMs at `peak` (its compute type's): the
    /// curve and fitted share of its generation by the 16-bit peak ([`Curve::for_peak16`]), and on
    /// a Hopper-class GPU a floor: every tensor-core kernel runs at least as fast as on the
    /// fastest Ampere-class GPU, one of 16-bit peak `HOPPER_PEAK16` with the same ratio of the
    /// compute type's peak to the 16-bit one (the Ampere curve and `gemm_efficiency` there).
    ///
    /// The two classes are measured and fitted at 312 (A100) and 989 TFLOP/s (H100), and the
    /// Hopper class runs below the Ampere class at the same peak (its fitted share 0.56 against
    /// 0.72; its sweep's small GEMMs are small-K shapes, slow for their FLOPs): without the floor
    /// a custom GPU of 600 TFLOP/s ran Llama-3-8B at TP 8 in 1.33 s where one of 599 took 0.94 s,
    /// and the H100 1.09 s. Each class's kernel rate is non-decreasing in the peak (the curves are
    /// read as durations at peak, rising less than in proportion to size), so with the floor no
    /// faster GPU gives a slower step (`tests/golden_bandwidth.rs`
    /// `more_compute_never_slows_a_step`). Large GEMMs on an H100 stay on the Hopper class (526
    /// against the floor's 410 TFLOP/s at the top of the curves).
    pub fn for_gpu(peak: f64, peak16: f64, pt: &crate::scenario::PartsTiming) -> Gemm {
        let curve = Curve::for_peak16(peak16);
        match curve {
            Curve::Ampere => Gemm {
                peak,
                share: pt.gemm_efficiency,
                curve,
                floor_peak: 0.0,
                floor_share: 0.0,
            },
            Curve::Hopper => Gemm {
                peak,
                share: pt.gemm_efficiency_hopper,
                curve,
                floor_peak: peak * super::HOPPER_PEAK16 / peak16,
                floor_share: pt.gemm_efficiency,
            },
        }
    }

    /// The same GPU's GEMMs at another peak (the 16-bit one for an FP8 recipe's output head):
    /// the floor moves with it.
    pub fn at_peak(&self, peak: f64) -> Gemm {
        let floor_peak = if self.peak > 0.0 {
            self.floor_peak * peak / self.peak
        } else {
            0.0
        };
        Gemm {
            peak,
            floor_peak,
            ..*self
        }
    }

    /// Time of one GEMM of `flops` at peak × curve(size) × share.
    pub fn time(&self, flops: f64) -> f64 {
        self.time_of_gemms(flops, flops)
    }

    /// Time of `total` FLOPs run as GEMMs of `each` FLOPs (each on the curve by its own size).
    pub fn time_of_gemms(&self, total: f64, each: f64) -> f64 {
        if total <= 0.0 {
            return 0.0;
        }
        let rate = self.rate(each);
        if rate > 0.0 { total / rate } else { 0.0 }
    }

    /// FLOP/s of a GEMM of `each` FLOPs: peak × curve(size) × share, at least the floor's.
    fn rate(&self, each: f64) -> f64 {
        let own = self.peak * curve(each, self.peak, self.curve) * self.share;
        // The floor can only matter below its own top (95 % of its peak × its share).
        if self.floor_peak > 0.0 && own < self.floor_peak * POINTS[0].1 * self.floor_share {
            let floor = self.floor_peak * curve(each, self.floor_peak, Curve::Ampere);
            own.max(floor * self.floor_share)
        } else {
            own
        }
    }

    /// FLOP/s of a tensor-core kernel benchmarked alone at `fraction` of `peak` (FlashAttention's
    /// forward and backward), with the step-level share, at least the floor's.
    pub fn kernel_rate(&self, peak: f64, fraction: f64) -> f64 {
        let own = peak * fraction * self.share;
        if self.floor_peak > 0.0 && self.peak > 0.0 {
            own.max(peak * self.floor_peak / self.peak * fraction * self.floor_share)
        } else {
            own
        }
    }
}

/// Time of one transformer layer's forward GEMMs for `tokens` tokens on one GPU (Megatron shapes
/// after TP: column-parallel QKV and MLP-up, row-parallel out and MLP-down; Shoeybi et al. 2019
/// §3), `keep` the share structured pruning keeps. Each GEMM is placed on the curve by its own
/// size; a mixture of experts' expert GEMM sees top-k/E of the tokens (GShard §2.2). K/V heads
/// are replicated when tensor parallelism exceeds them (vLLM's `QKVParallelLinear`; the
/// `tp_does_not_divide_kv_heads` diagnostic, the KV cache's rule): a rank then projects whole
/// heads, `ResolvedModel::kv_replicated_width` more than kv / tp; the replicated matrices
/// (`ResolvedModel::replicated_matmul_per_layer`: MLA's down projections, a router) run whole.
pub fn layer_forward(
    m: &crate::estimator::model::ResolvedModel,
    tokens: f64,
    tp: f64,
    keep: f64,
    g: &Gemm,
) -> f64 {
    let (proj_w, mlp_w) = crate::estimator::performance::flops::layer_matmul_weights(m);
    let (q, kv) = m.attention_widths();
    let qkv_share = if q + kv > 0.0 {
        (q + 2.0 * kv) / (2.0 * q + 2.0 * kv)
    } else {
        0.5
    };
    let proj_f = 2.0 * tokens * proj_w * keep / tp;
    // Whole K/V heads and replicated matrices (MLA's down projections, a router) cost a rank more
    // only under tensor parallelism.
    let (replicated_kv_f, replicated_f) = if tp > 1.0 {
        (
            2.0 * tokens * f64::from(m.hidden) * 2.0 * m.kv_replicated_width(tp) * keep,
            2.0 * tokens * m.replicated_matmul_per_layer() * keep * (1.0 - 1.0 / tp),
        )
    } else {
        (0.0, 0.0)
    };
    let mlp_f = 2.0 * tokens * mlp_w * keep / tp;
    let mats = m.ffn_kind.matrices();
    let routed_tokens = if m.moe.experts > 0 {
        f64::from(m.moe.top_k) / f64::from(m.moe.experts)
    } else {
        1.0
    };
    let mlp_op = mlp_f / (mats * m.moe.active_mlps()).max(1.0) * routed_tokens;
    // The average layer's weights are spread over every layer; a GEMM runs only in the layers
    // that have its matrix, at that layer's size (a split decoder's attention-only and MLP-only
    // layers each run whole projections, a hybrid's MLP layers whole MLPs).
    let (mixers, mlps) = layers_with_matmuls(m);
    let qkv_f = proj_f * qkv_share + replicated_kv_f;
    let out_f = proj_f * (1.0 - qkv_share);
    g.time_of_gemms(qkv_f, qkv_f / mixers)
        + g.time_of_gemms(out_f, out_f / mixers)
        + g.time_of_gemms(mlp_f, mlp_op / mlps)
        + g.time(replicated_f)
}

/// Shares of the layers with mixer (attention, Mamba, DeltaNet) and with MLP matrix multiplies,
/// the average layer's weights (`flops::layer_matmul_weights`) being spread over all of them: 1
/// and 1 for a uniform stack; never 0 (a share of 0 has no FLOPs to time).
fn layers_with_matmuls(m: &crate::estimator::model::ResolvedModel) -> (f64, f64) {
    if m.blocks.is_flat() {
        return (1.0, 1.0);
    }
    let l = f64::from(m.layers.max(1));
    let share = |n: f64| if n > 0.0 { n / l } else { 1.0 };
    (
        share(m.blocks.sum(|k| f64::from(u8::from(k.mixer_w > 0.0)))),
        share(m.blocks.sum(|k| f64::from(u8::from(k.mlp_active_w > 0.0)))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tilelang's sweep (M = N = 8192): K, and the measured TFLOP/s, largest first.
    const HOPPER_SWEEP: [(f64, f64); 7] = [
        (16384.0, 766.0),
        (8192.0, 758.0),
        (4096.0, 736.0),
        (2048.0, 705.0),
        (1024.0, 628.0),
        (512.0, 520.0),
        (256.0, 386.0),
    ];

    /// The top of the sweep, TFLOP/s: the points are scaled so it reads as calculon's 95 %.
    const HOPPER_TOP: f64 = 766.0;

    #[test]
    fn curve_matches_calculons_points_and_is_monotone() {
        for (g, e) in POINTS {
            assert!(
                (curve(g * 1e9, CURVE_PEAK, Curve::Ampere) - e).abs() < 1e-12,
                "{g}"
            );
        }
        for (a, b) in LN_POINTS.iter().zip(POINTS) {
            assert!((a - b.0.ln()).abs() < 1e-12);
        }
        let mut last = 0.0;
        for k in 0..60 {
            let e = curve(1e6 * 1.4f64.powi(k), CURVE_PEAK, Curve::Ampere);
            assert!(e >= last, "not monotone at {k}");
            last = e;
        }
        assert_eq!(curve(0.0, CURVE_PEAK, Curve::Ampere), FLOOR);
        assert_eq!(curve(1e6, CURVE_PEAK, Curve::Ampere), FLOOR);
    }

    /// The Hopper points are tilelang's sweep: each GEMM is 2·8192²·K FLOPs and runs at the
    /// published TFLOP/s, scaled so the top is 95 %.
    #[test]
    fn hopper_curve_is_tilelangs_sweep() {
        for (i, ((k, tflops), e)) in HOPPER_SWEEP.iter().zip(HOPPER_POINTS).enumerate() {
            let gflop = 2.0 * 8192.0 * 8192.0 * k / 1e9;
            assert!(
                (gflop - HOPPER_TOP_GFLOP / 2f64.powi(i as i32)).abs() < 1e-9,
                "K {k}"
            );
            assert!((e - 0.95 * tflops / HOPPER_TOP).abs() < 1e-12, "K {k}");
            let at = curve(gflop * 1e9, HOPPER_CURVE_PEAK, Curve::Hopper);
            assert!((at - e).abs() < 1e-12, "K {k}: {at} vs {e}");
            // Half-way between two points (in size) is half-way between their efficiencies.
            if let Some(next) = HOPPER_POINTS.get(i + 1) {
                let mid = curve(0.75 * gflop * 1e9, HOPPER_CURVE_PEAK, Curve::Hopper);
                assert!((mid - 0.5 * (e + next)).abs() < 1e-12, "K {k}: {mid}");
            }
        }
        assert!((HOPPER_SMALLEST_GFLOP - 2.0 * 8192.0 * 8192.0 * 256.0 / 1e9).abs() < 1e-9);
        // Below the sweep: proportional to the size.
        let half = curve(
            0.5 * HOPPER_SMALLEST_GFLOP * 1e9,
            HOPPER_CURVE_PEAK,
            Curve::Hopper,
        );
        assert!((half - 0.5 * HOPPER_POINTS[6]).abs() < 1e-12);
        let mut last = 0.0;
        for k in 0..60 {
            let e = curve(1e6 * 1.4f64.powi(k), HOPPER_CURVE_PEAK, Curve::Hopper);
            assert!(
                e >= last && (FLOOR..=0.95).contains(&e),
                "not monotone at {k}"
            );
            last = e;
        }
        assert_eq!(curve(1e15, HOPPER_CURVE_PEAK, Curve::Hopper), 0.95);
        assert_eq!(curve(1e6, HOPPER_CURVE_PEAK, Curve::Hopper), FLOOR);
        // A GPU with twice the H100's peak needs twice the FLOPs for the same efficiency.
        let a = curve(300e9, HOPPER_CURVE_PEAK, Curve::Hopper);
        let b = curve(600e9, 2.0 * HOPPER_CURVE_PEAK, Curve::Hopper);
        assert!((a - b).abs() < 1e-12);
    }

    /// A rank projects whole K/V heads: Llama-3-8B's 8 KV heads at TP 16 cost each rank the K/V
    /// GEMMs of one head, as 16 heads would; at TP 8 (one head either way for 8, two for 16) 8
    /// heads cost less.
    #[test]
    fn kv_projections_replicate_past_the_kv_heads() {
        let model = |kv_heads: u32| {
            let mut spec = crate::scenario::ModelSpec::default();
            let t = &mut spec.transformer;
            (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (32, 4096, 32, kv_heads, 14336);
            crate::estimator::model::resolve(&spec, &mut Default::default())
        };
        let time = |tp: f64, kv_heads: u32| {
            let g = Gemm::for_gpu(989e12, 989e12, &crate::scenario::PartsTiming::default());
            layer_forward(&model(kv_heads), 16_384.0, tp, 1.0, &g)
        };
        let (eight, sixteen) = (time(16.0, 8), time(16.0, 16));
        assert!(
            (eight / sixteen - 1.0).abs() < 1e-12,
            "{eight} vs {sixteen}"
        );
        assert!(time(8.0, 8) < time(8.0, 16));
        // TP 8 divides 8 heads; at TP 16 a rank holds a whole head where kv / tp is half of one
        // (128 wide).
        assert_eq!(model(8).kv_replicated_width(8.0), 0.0);
        assert_eq!(model(8).kv_replicated_width(16.0), 64.0);
    }
}
