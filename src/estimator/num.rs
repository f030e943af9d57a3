//! Small numeric helpers of the estimator's hot path.

/// `x.ceil()`, bit for bit (signed zeros, NaN and ±∞ included), without a call: on baseline x86-64
/// (no SSE4.1 `roundsd`) `f64::ceil` is a libm call, and the estimator rounds shard sizes several
/// times per estimate. Magnitudes ≥ 2⁵² are already integers; below that truncation through `i64`
/// is exact.
///
/// ```
/// use vram_explorer::estimator::num::ceil;
/// for x in [0.0, -0.0, 0.5, -0.5, 2.0, 2.5, -2.5, 1e300, f64::INFINITY, 4503599627370495.5] {
///     assert_eq!(ceil(x).to_bits(), x.ceil().to_bits());
/// }
/// assert!(ceil(f64::NAN).is_nan());
/// ```
#[inline]
pub fn ceil(x: f64) -> f64 {
    const INTEGRAL: f64 = 4_503_599_627_370_496.0; // 2^52
    if x.abs() < INTEGRAL {
        let t = x as i64 as f64;
        if t < x { t + 1.0 } else { t.copysign(x) }
    } else {
        x
    }
}
