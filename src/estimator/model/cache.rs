//! What inference keeps per sequence, per layer kind: the KV cache (capped at the window of
//! sliding-window and chunked layers) and the fixed-size recurrent state of state-space and
//! linear-attention mixers. Per GPU: tensor parallelism splits KV heads (replicated when it exceeds
//! them), MLA's decompressed heads and a recurrent mixer's heads; MLA's latent cache is replicated on
//! every tensor-parallel rank (vLLM's MLA backend keeps the whole latent per rank: `vllm/attention/
//! backends/mla/common.py`, 0.8). Sums are over the kinds in order, each scaled by its share of the
//! layers, so a uniform model gives exactly the flat formula 2 · L · ⌈k/t⌉ · d · e.

use super::ResolvedModel;
use super::blocks::{LayerKind, MixerShape};
use crate::estimator::num::ceil;

impl LayerKind {
    /// KV elements one token adds to this layer on one GPU of `tp`.
    pub fn kv_per_token_rank(&self, tp: f64) -> f64 {
        match self.mixer {
            MixerShape::Attention { .. } => 2.0 * self.mixer.kv_width_rank(tp),
            MixerShape::Mla(s) if !s.latent_cache => ceil(s.heads / tp) * s.kv_per_head(),
            MixerShape::Mla(_) => self.kv_per_token(),
            MixerShape::Empty | MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => 0.0,
        }
    }

    /// Recurrent-state elements of one sequence in this layer on one GPU of `tp` (heads split).
    pub fn state_per_sequence_rank(&self, tp: f64) -> f64 {
        let share = match self.mixer {
            MixerShape::Mamba { heads, .. } => ceil(heads / tp) / heads.max(1.0),
            MixerShape::DeltaNet { value_heads, .. } => {
                ceil(value_heads / tp) / value_heads.max(1.0)
            }
            _ => 1.0,
        };
        self.state_per_sequence() * share
    }
}

/// One GPU's cache for `layers` layers of the model (a stage's, spread over the kinds in
/// proportion), `seqs` sequences of `len` tokens each.
#[derive(Clone, Copy, Debug)]
pub struct CacheShape {
    pub tp: f64,
    pub layers: f64,
    /// Element bytes of the KV cache and of the recurrent state.
    pub e_kv: f64,
    pub e_state: f64,
}

impl ResolvedModel {
    /// Share of the layers that are of kind `k`.
    fn share(&self, k: &LayerKind) -> f64 {
        f64::from(k.count) / f64::from(self.layers.max(1))
    }

    /// KV bytes per cached token on one GPU, for layers that cache every token (no window cap).
    pub fn kv_bytes_per_token(&self, s: &CacheShape) -> f64 {
        self.blocks
            .kinds()
            .iter()
            .map(|k| k.kv_per_token_rank(s.tp) * (s.layers * self.share(k)) * s.e_kv)
            .sum()
    }

    /// KV-cache and recurrent-state bytes of `seqs` sequences of `len` tokens on one GPU: each
    /// layer caches min(len, window) tokens, plus its fixed state per sequence.
    pub fn cache_bytes(&self, s: &CacheShape, seqs: f64, len: f64) -> f64 {
        self.blocks
            .kinds()
            .iter()
            .map(|k| {
                let layers = s.layers * self.share(k);
                let kv =
                    k.kv_per_token_rank(s.tp) * layers * s.e_kv * (seqs * k.cached_tokens(len));
                let state = k.state_per_sequence_rank(s.tp) * layers * s.e_state * seqs;
                kv + state
            })
            .sum::<f64>()
            + self.cross_cache_bytes(s, seqs)
    }

    /// The largest single layer's V (half its KV) for `seqs` sequences of `len` tokens: what Hugging
    /// Face's `DynamicCache` re-allocates when it appends with `torch.cat`.
    pub fn largest_layer_half_kv(&self, s: &CacheShape, seqs: f64, len: f64) -> f64 {
        self.blocks.kinds().iter().fold(0.0, |a, k| {
            let v = k.kv_per_token_rank(s.tp) / 2.0 * s.e_kv * seqs * k.cached_tokens(len);
            if k.count > 0 { a.max(v) } else { a }
        })
    }

    /// Whether any layer holds a recurrent state or a window-capped cache.
    pub fn has_bounded_cache(&self) -> bool {
        self.blocks.kinds().iter().any(|k| {
            k.state_per_sequence() > 0.0
                || matches!(k.mixer, MixerShape::Attention { window, .. } if window > 0.0)
        })
    }
}
