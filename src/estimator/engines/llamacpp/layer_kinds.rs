//! Which kind each layer index is, as llama.cpp's per-layer buffers need it (the weights and cache
//! of layer `il` go to that layer's device). The resolved model keeps its kinds with counts and a
//! few order facts (`model::layer_order`), not the sequence, so the sequence is rebuilt from them:
//!
//! - one kind: every layer;
//! - every kind's layers contiguous (DeepSeek-V3: 3 dense layers, then 58 MoE layers): by range;
//! - two kinds, the rarer one every `p`-th layer (`il % p == p − 1`, the rule of llama.cpp's
//!   `set_swa_pattern`: Gemma 3's 5 local : 1 global, Gemma 2 and gpt-oss alternating, Llama 4's
//!   3 chunked : 1 global), when the order facts agree;
//! - otherwise the kinds in listing order, contiguous (an approximation: only which device a layer
//!   lands on can be wrong, never the totals).
//!
//! The sequence only matters when layers are split between devices; the totals are exact.

use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MAX_KINDS, MixerShape};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Kind `i` holds layers `first[i] ..= last[i]`.
    Ranges([u32; MAX_KINDS], [u32; MAX_KINDS]),
    /// `minor` at every `period`-th layer (its first `count` such places), `major` elsewhere.
    Periodic {
        minor: usize,
        major: usize,
        period: u32,
        count: u32,
    },
}

/// The model's layer kinds in layer order.
#[derive(Clone, Copy, Debug)]
pub struct LayerKinds<'m> {
    kinds: &'m [LayerKind],
    order: Order,
    /// Attention layers with and without a window both exist: llama.cpp then keeps the windowed
    /// ones in a smaller cache of their own (`llama_kv_cache_iswa`).
    pub interleaved_swa: bool,
}

impl<'m> LayerKinds<'m> {
    pub fn of(m: &'m ResolvedModel) -> LayerKinds<'m> {
        let kinds = m.blocks.kinds();
        let windowed =
            |k: &LayerKind| matches!(k.mixer, MixerShape::Attention { window, .. } if window > 0.0);
        let global = |k: &LayerKind| {
            matches!(k.mixer, MixerShape::Attention { window, .. } if window <= 0.0)
                || matches!(k.mixer, MixerShape::Mla(_))
        };
        LayerKinds {
            kinds,
            order: order(m),
            interleaved_swa: kinds.iter().any(windowed) && kinds.iter().any(global),
        }
    }

    /// The kind of layer `il` (`None` for a model without kinds).
    pub fn at(&self, il: u32) -> Option<&'m LayerKind> {
        let i = match self.order {
            Order::Ranges(first, last) => (0..self.kinds.len())
                .find(|&i| first[i] <= il && il <= last[i])
                .unwrap_or(self.kinds.len().saturating_sub(1)),
            Order::Periodic {
                minor,
                major,
                period,
                count,
            } => {
                if il % period == period - 1 && il / period < count {
                    minor
                } else {
                    major
                }
            }
        };
        self.kinds.get(i)
    }

    /// With sliding-window layers interleaved as llama.cpp's `set_swa_pattern` lays them out (the
    /// global kind every `p`-th layer, windowed elsewhere): `p`.
    pub fn swa_period(&self) -> Option<u32> {
        match self.order {
            Order::Periodic { minor, period, .. }
                if self.interleaved_swa && self.kinds.get(minor).is_some_and(|k| !self.swa(k)) =>
            {
                Some(period)
            }
            _ => None,
        }
    }

    /// One layer kind (or none): every layer is alike.
    pub fn uniform(&self) -> bool {
        self.kinds.len() <= 1
    }

    /// Whether a layer of kind `k` goes to llama.cpp's sliding-window cache.
    pub fn swa(&self, k: &LayerKind) -> bool {
        self.interleaved_swa
            && matches!(k.mixer, MixerShape::Attention { window, .. } if window > 0.0)
    }
}

fn order(m: &ResolvedModel) -> Order {
    let kinds = m.blocks.kinds();
    let o = &m.blocks.order;
    let n = kinds.len();
    let mut first = [0u32; MAX_KINDS];
    let mut last = [0u32; MAX_KINDS];
    for i in 0..n {
        first[i] = (0..n).map(|j| o.before(i, j)).sum();
        last[i] = o.last(i);
    }
    let contiguous = n <= 1
        || (0..n).all(|i| last[i].checked_sub(first[i]).map(|d| d + 1) == Some(kinds[i].count));
    if contiguous {
        return Order::Ranges(first, last);
    }
    if n == 2 {
        // The rarer kind (of equal counts, the one that does not start the model) recurs.
        let minor = if kinds[0].count < kinds[1].count
            || (kinds[0].count == kinds[1].count && first[0] > 0)
        {
            0
        } else {
            1
        };
        let major = 1 - minor;
        let period = o.before(minor, major) + 1;
        let count = kinds[minor].count;
        let fits = period >= 2
            && last[minor] == period * count - 1
            && (period - 1) * count <= kinds[major].count;
        if fits {
            return Order::Periodic {
                minor,
                major,
                period,
                count,
            };
        }
    }
    // Listing order, contiguous.
    let mut at = 0u32;
    for i in 0..n {
        first[i] = at;
        at = at.saturating_add(kinds[i].count);
        last[i] = at.saturating_sub(1);
    }
    Order::Ranges(first, last)
}
