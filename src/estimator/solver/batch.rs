//! Splits of a global batch into DP × micro-batch × accumulation that `validate` accepts, found from
//! the prime factors of the batch: the cost is logarithmic in the batch (factors of numbers ≤ 65,536
//! by trial division up to 256), never a scan over its values.
//!
//! The global batch is micro-batch × accumulation × DP (`Workload::grad_accum_steps`), at most
//! 65,536³ = 2⁴⁸ sequences, so it is held in u64; the bounds of each factor are the ranges of
//! `workload.micro_batch`, `workload.grad_accum_steps` and `parallel.dp` in `validate::RANGES`.

use super::space::List;
use crate::scenario::validate::range_of;

/// Distinct primes a product of three numbers ≤ 65,536 can have (each has at most six:
/// 2·3·5·7·11·13 = 30,030).
const PRIMES: usize = 18;
/// Divisors collected per enumeration; beyond it the rest are dropped (a number ≤ 2³² has at most
/// 1,344 divisors, so only the layout search over a larger global batch can truncate).
pub const DIVISORS: usize = 2048;

/// A positive integer as its prime factorisation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factors {
    prime: [u32; PRIMES],
    exp: [u8; PRIMES],
    len: usize,
}

impl Factors {
    pub fn one() -> Self {
        Factors {
            prime: [0; PRIMES],
            exp: [0; PRIMES],
            len: 0,
        }
    }

    /// Multiplies by `n` (trial division: n ≤ 2³² needs divisors up to 2¹⁶).
    pub fn mul(&mut self, n: u32) {
        let mut n = n;
        let mut p = 2u32;
        while u64::from(p) * u64::from(p) <= u64::from(n) {
            while n.is_multiple_of(p) {
                self.add(p, 1);
                n /= p;
            }
            p += if p == 2 { 1 } else { 2 };
        }
        if n > 1 {
            self.add(n, 1);
        }
    }

    fn add(&mut self, p: u32, e: u8) {
        let at = self.prime.iter().take(self.len).position(|q| *q == p);
        match at.and_then(|i| self.exp.get_mut(i)) {
            Some(x) => *x = x.saturating_add(e),
            None => {
                if let (Some(q), Some(x)) =
                    (self.prime.get_mut(self.len), self.exp.get_mut(self.len))
                {
                    *q = p;
                    *x = e;
                    self.len += 1;
                }
            }
        }
    }

    /// Divides by `n`; `None` when `n` does not divide the number.
    pub fn div(&self, n: u32) -> Option<Factors> {
        let mut d = Factors::one();
        d.mul(n);
        let mut out = *self;
        for (p, e) in d.prime.iter().zip(d.exp).take(d.len) {
            let i = out.prime.iter().take(out.len).position(|q| q == p)?;
            let x = out.exp.get_mut(i)?;
            *x = x.checked_sub(e)?;
        }
        Some(out)
    }

    /// The number, saturating at u64::MAX.
    pub fn value(&self) -> u64 {
        let mut v = 1u64;
        for (p, e) in self.prime.iter().zip(self.exp).take(self.len) {
            for _ in 0..e {
                v = v.saturating_mul(u64::from(*p));
            }
        }
        v
    }

    /// Divisors ≤ `limit`, ascending, written to `out`; returns how many.
    pub fn divisors_upto(&self, limit: u64, out: &mut [u64; DIVISORS]) -> usize {
        let mut n = 0;
        self.walk(0, 1, limit, out, &mut n);
        if let Some(found) = out.get_mut(..n) {
            found.sort_unstable();
        }
        n
    }

    fn walk(&self, i: usize, d: u64, limit: u64, out: &mut [u64; DIVISORS], n: &mut usize) {
        if i >= self.len {
            if let Some(slot) = out.get_mut(*n) {
                *slot = d;
                *n += 1;
            }
            return;
        }
        let (Some(&p), Some(&e)) = (self.prime.get(i), self.exp.get(i)) else {
            return;
        };
        let mut x = d;
        for k in 0..=e {
            self.walk(i + 1, x, limit, out, n);
            x = x.saturating_mul(u64::from(p));
            if k == e || x > limit {
                break;
            }
        }
    }
}

/// Upper bound of a count field from `validate::RANGES` (1 if the field were missing).
pub fn max_of(field: &str) -> u64 {
    range_of(field).map_or(1, |r| r.max as u64)
}

/// Micro-batches `m` that split `per_replica` sequences into `m` × accumulation with both within
/// their valid ranges, ascending; at most 64, spread evenly over the valid ones (the smallest and the
/// largest kept). Empty when no valid split exists.
pub fn micro_batches(per_replica: &Factors) -> List<u32, 64> {
    let mut out = List::new();
    let p = per_replica.value();
    let (max_micro, max_accum) = (
        max_of("workload.micro_batch"),
        max_of("workload.grad_accum_steps"),
    );
    if p > max_micro.saturating_mul(max_accum) {
        return out;
    }
    let mut divs = [0u64; DIVISORS];
    let n = per_replica.divisors_upto(max_micro, &mut divs);
    let lo = p.div_ceil(max_accum);
    let valid = divs.get(..n).unwrap_or(&[]);
    let first = valid.iter().position(|d| *d >= lo).unwrap_or(n);
    let valid = valid.get(first..).unwrap_or(&[]);
    let k = valid.len();
    let picks = k.min(64);
    for j in 0..picks {
        // Index j of `picks` evenly spread over 0 ..= k − 1.
        let i = if picks <= 1 {
            0
        } else {
            j * (k - 1) / (picks - 1)
        };
        if let Some(&m) = valid.get(i) {
            out.push(u32::try_from(m).unwrap_or(u32::MAX));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors(ns: &[u32]) -> Factors {
        let mut f = Factors::one();
        for &n in ns {
            f.mul(n);
        }
        f
    }

    #[test]
    fn divisors_and_division() {
        let f = factors(&[12, 10]);
        assert_eq!(f.value(), 120);
        let mut out = [0; DIVISORS];
        let n = f.divisors_upto(10, &mut out);
        assert_eq!(out.get(..n), Some(&[1, 2, 3, 4, 5, 6, 8, 10][..]));
        assert_eq!(f.div(8).map(|g| g.value()), Some(15));
        assert_eq!(f.div(7), None);
        assert_eq!(factors(&[65_521, 65_521]).value(), 65_521 * 65_521);
    }

    #[test]
    fn splits_stay_in_range() {
        // 2 × 65,536 sequences per replica: accumulation ≤ 65,536 needs a micro-batch ≥ 2.
        let m = micro_batches(&factors(&[2, 65_536]));
        assert_eq!(m.iter().next(), Some(2));
        assert_eq!(m.last(), Some(65_536));
        // Two primes above 65,536 / 2: no split keeps both factors in range.
        assert_eq!(
            micro_batches(&factors(&[65_521, 65_519, 3])).iter().count(),
            0
        );
        // 720,720 has 240 divisors: 64 kept, both ends included.
        let m = micro_batches(&factors(&[720_720]));
        assert_eq!(m.iter().count(), 64);
        assert_eq!((m.iter().next(), m.last()), (Some(11), Some(65_520)));
    }
}
