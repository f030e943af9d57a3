//! The decoder's cross-attention cache of an encoder-decoder model: each cross-attention layer
//! keeps the keys and values of the encoder's output, 2 · S · kv_heads · head_dim elements per
//! sequence for S encoder positions (Whisper: S = 1500 frames for 30 s of audio), computed once at
//! prefill and not growing with generated tokens (Transformers 5.24 `EncoderDecoderCache`'s
//! `cross_attention_cache`, measured: docs/blocks-measured.md "What the cache holds").

use super::ResolvedModel;
use super::cache::CacheShape;
use crate::estimator::num::ceil;

impl ResolvedModel {
    /// Cross-attention K and V bytes of `seqs` sequences on one GPU (`s.layers` of the model's
    /// layers; TP splits the KV heads as for self-attention).
    pub fn cross_cache_bytes(&self, s: &CacheShape, seqs: f64) -> f64 {
        let x = &self.towers.cross;
        if x.layers <= 0.0 || !self.towers.has_encoder() {
            return 0.0;
        }
        let share = x.layers / f64::from(self.layers.max(1));
        let per_seq = 2.0 * ceil(x.kv_heads / s.tp) * x.head_dim * self.towers.encoder.len;
        s.layers * share * per_seq * s.e_kv * seqs
    }
}
