//! Bracketed integer searches over one scalar of a scenario: interpolate the excess over capacity
//! (exact where memory is affine in the coordinate), then bisect. Generic over the evaluation so unit
//! tests can drive them with synthetic memory curves.

use crate::scenario::Scenario;

/// What one evaluation tells a search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probe {
    /// Bytes over capacity (negative: headroom). Finite.
    pub excess: f64,
    /// The estimator's verdict; the searches trust it over `excess`.
    pub fits: bool,
    /// Estimated step time, seconds (ranking only).
    pub step_time_s: f64,
}

/// The coordinate in which memory is (close to) affine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coord {
    /// Memory ≈ a + b·x (batch, layers, parameters).
    Linear,
    /// Memory ≈ a + b/x (data-parallel degree under ZeRO sharding).
    Reciprocal,
}

impl Coord {
    fn map(self, x: u64) -> f64 {
        match self {
            Coord::Linear => x as f64,
            Coord::Reciprocal => 1.0 / (x.max(1) as f64),
        }
    }
}

/// Interpolation steps before falling back to bisection: affine curves need one (plus the check one
/// notch away); convex ones converge one-sidedly, so bisection bounds the worst case.
const INTERPOLATION_STEPS: u32 = 4;

/// Where the excess crosses zero between `(xa, ea)` and `(xb, eb)`, rounded toward `xa`, strictly
/// inside the bracket; the midpoint when interpolation is undefined.
fn guess(coord: Coord, xa: u64, ea: f64, xb: u64, eb: f64, interpolate: bool) -> u64 {
    let (lo, hi) = (xa.min(xb), xa.max(xb));
    let mid = lo + (hi - lo) / 2;
    let mut g = mid;
    if interpolate && ea != eb && ea.is_finite() && eb.is_finite() {
        let (ua, ub) = (coord.map(xa), coord.map(xb));
        let u = ua + (0.0 - ea) / (eb - ea) * (ub - ua);
        let x = match coord {
            Coord::Linear => u,
            Coord::Reciprocal if u > 0.0 => 1.0 / u,
            Coord::Reciprocal => f64::NAN,
        };
        if x.is_finite() {
            // Round toward the fitting end so an exact affine answer is probed first.
            let r = if xa < xb { x.floor() } else { x.ceil() };
            g = r.clamp(lo as f64, hi as f64) as u64;
        }
    }
    g.clamp(lo + 1, hi.saturating_sub(1).max(lo + 1))
}

/// Largest `x` in `lo ..= hi` for which `eval` fits, assuming fitting is monotone (fits below, not
/// above). `eval` sets `x` on the scratch scenario and estimates it.
pub fn solve_max_with<F>(
    scratch: &mut Scenario,
    lo: u64,
    hi: u64,
    coord: Coord,
    mut eval: F,
) -> super::Solved
where
    F: FnMut(&mut Scenario, u64) -> Probe,
{
    use super::Solved;
    let hi = hi.max(lo);
    let p_lo = eval(scratch, lo);
    if !p_lo.fits {
        return Solved::NoneFits;
    }
    if hi == lo {
        return Solved::AtLimit(lo);
    }
    let p_hi = eval(scratch, hi);
    if p_hi.fits {
        return Solved::AtLimit(hi);
    }
    // Invariant: `a` fits, `b` does not.
    let (mut a, mut ea, mut b, mut eb) = (lo, p_lo.excess, hi, p_hi.excess);
    let mut step = 0;
    while b - a > 1 {
        let g = guess(coord, a, ea, b, eb, step < INTERPOLATION_STEPS);
        let p = eval(scratch, g);
        if p.fits {
            (a, ea) = (g, p.excess);
        } else {
            (b, eb) = (g, p.excess);
        }
        step += 1;
    }
    Solved::Found(a)
}

/// Smallest `x` in `lo ..= hi` for which `eval` fits, assuming fitting is monotone (fits above, not
/// below).
pub fn solve_min_with<F>(
    scratch: &mut Scenario,
    lo: u64,
    hi: u64,
    coord: Coord,
    mut eval: F,
) -> super::Solved
where
    F: FnMut(&mut Scenario, u64) -> Probe,
{
    use super::Solved;
    let hi = hi.max(lo);
    let p_lo = eval(scratch, lo);
    if p_lo.fits {
        return Solved::Found(lo);
    }
    let p_hi = eval(scratch, hi);
    if !p_hi.fits {
        return Solved::NoneFits;
    }
    // Invariant: `b` fits, `a` does not.
    let (mut a, mut ea, mut b, mut eb) = (lo, p_lo.excess, hi, p_hi.excess);
    let mut step = 0;
    while b - a > 1 {
        let g = guess(coord, b, eb, a, ea, step < INTERPOLATION_STEPS);
        let p = eval(scratch, g);
        if p.fits {
            (b, eb) = (g, p.excess);
        } else {
            (a, ea) = (g, p.excess);
        }
        step += 1;
    }
    Solved::Found(b)
}

#[cfg(test)]
mod tests {
    use super::super::Solved;
    use super::*;

    fn affine(cap: f64, a: f64, b: f64) -> impl FnMut(&mut Scenario, u64) -> Probe {
        move |_, x| {
            let m = a + b * x as f64;
            Probe {
                excess: m - cap,
                fits: m <= cap,
                step_time_s: 0.0,
            }
        }
    }

    #[test]
    fn affine_max_takes_four_evaluations() {
        let mut s = Scenario::default();
        let mut calls = 0;
        let mut f = affine(1000.0, 100.0, 7.0);
        let r = solve_max_with(&mut s, 1, 65_536, Coord::Linear, |sc, x| {
            calls += 1;
            f(sc, x)
        });
        assert_eq!(r, Solved::Found(128)); // 100 + 7·128 = 996 ≤ 1000 < 1003
        assert!(calls <= 4, "{calls} evaluations");
    }

    #[test]
    fn quadratic_max_is_exact() {
        let mut s = Scenario::default();
        let r = solve_max_with(&mut s, 1, 10_000_000, Coord::Linear, |_, x| {
            let m = 5.0 + 3.0 * x as f64 + 0.01 * (x as f64).powi(2);
            Probe {
                excess: m - 1e9,
                fits: m <= 1e9,
                step_time_s: 0.0,
            }
        });
        let Solved::Found(x) = r else { panic!("{r:?}") };
        let m = |x: f64| 5.0 + 3.0 * x + 0.01 * x * x;
        assert!(m(x as f64) <= 1e9 && m(x as f64 + 1.0) > 1e9);
    }

    #[test]
    fn edges() {
        let mut s = Scenario::default();
        assert_eq!(
            solve_max_with(&mut s, 1, 10, Coord::Linear, affine(5.0, 10.0, 1.0)),
            Solved::NoneFits
        );
        assert_eq!(
            solve_max_with(&mut s, 1, 10, Coord::Linear, affine(50.0, 10.0, 1.0)),
            Solved::AtLimit(10)
        );
        assert_eq!(
            solve_min_with(&mut s, 1, 10, Coord::Linear, affine(50.0, 100.0, -1.0)),
            Solved::NoneFits
        );
    }

    #[test]
    fn reciprocal_min_is_exact_and_quick() {
        let mut s = Scenario::default();
        let mut calls = 0;
        // 4 GB replicated + 120 GB sharded over dp, on 24 GB: dp ≥ 6.
        let r = solve_min_with(&mut s, 1, 65_536, Coord::Reciprocal, |_, x| {
            calls += 1;
            let m = 4.0 + 120.0 / x as f64;
            Probe {
                excess: m - 24.0,
                fits: m <= 24.0,
                step_time_s: 0.0,
            }
        });
        assert_eq!(r, Solved::Found(6));
        assert!(calls <= 4, "{calls} evaluations");
    }
}
