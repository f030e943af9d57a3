//! What one GPU of a serving engine caches per token and per request, by layer kind: the engines'
//! view of the model's layers (docs/engines/vllm.md §3, sglang.md §2). Fixed-size arrays, no
//! allocation.

use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{MixerShape, RecurrentState};
use crate::estimator::num::ceil;

/// How a bucket of layers caches.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum CacheKind {
    #[default]
    None,
    /// Every token of the request (full attention, MLA's latent).
    Full,
    /// At most `window` tokens (sliding window or chunked local attention).
    Window(f64),
    /// A fixed state per request (Mamba, gated DeltaNet).
    State,
}

/// Layers of one cache kind on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bucket {
    pub kind: CacheKind,
    /// Layers on this GPU (its pipeline stage's share, rounded up).
    pub layers: f64,
    /// Attention: bytes one token adds to one layer. State: bytes of one request's state in one layer.
    pub bytes: f64,
}

/// The buckets of one GPU (at most one per layer kind of [`crate::estimator::model::blocks::Blocks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Layout {
    pub buckets: [Bucket; 4],
    pub len: usize,
}

/// Element bytes of the caches: the KV cache, the recurrent convolution state and the SSM state.
#[derive(Clone, Copy, Debug)]
pub struct CacheBytes {
    pub kv: f64,
    pub conv: f64,
    pub ssm: f64,
}

impl Layout {
    /// The layout of the `stage_layers` layers of one pipeline stage (each kind keeps its share of
    /// the model's layers) on one GPU of `tp`. Attention: `max(1, kv_heads / tp)` heads × (K + V
    /// head dims) (vLLM `ModelConfig.get_num_kv_heads`, SGLang `get_num_kv_heads`); MLA: the latent
    /// `kv_lora_rank + qk_rope_head_dim`, not split over TP (vllm.md §3.2, sglang.md §2.2);
    /// recurrent state: convolution + SSM / delta-rule state, heads split over TP.
    pub fn of(m: &ResolvedModel, stage_layers: f64, tp: f64, e: CacheBytes) -> Layout {
        let mut out = Layout::default();
        let total = f64::from(m.layers.max(1));
        for k in m.blocks.kinds() {
            if k.count == 0 || out.len >= out.buckets.len() {
                continue;
            }
            let layers = ceil(f64::from(k.count) * stage_layers / total);
            let (kind, bytes) = match k.mixer {
                MixerShape::Attention {
                    kv_heads,
                    head_dim,
                    window,
                    ..
                } => {
                    // ⌈kv_heads / tp⌉, the rule of the memory and time models
                    // (`model::blocks`): in every layout the engines start it is vLLM's
                    // `max(1, kv_heads // tp)` (QKVParallelLinear divides the KV heads over TP or
                    // TP over them); in one they refuse (`EngineNeedsTpDividingHeads`) the largest
                    // rank's share, as the rest of the estimate takes it.
                    let heads = ceil(kv_heads / tp.max(1.0));
                    let kind = if window > 0.0 {
                        CacheKind::Window(window)
                    } else {
                        CacheKind::Full
                    };
                    (kind, 2.0 * heads * head_dim * e.kv)
                }
                MixerShape::Mla(s) => (CacheKind::Full, s.kv_latent_width() * e.kv),
                MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => {
                    k.recurrent_state().map_or((CacheKind::None, 0.0), |r| {
                        (CacheKind::State, state_bytes(r, tp, e))
                    })
                }
                MixerShape::Empty => (CacheKind::None, 0.0),
            };
            if kind == CacheKind::None {
                continue;
            }
            // Layers with the same cache spec are one bucket whatever their MLP (DeepSeek's dense
            // and MoE layers share one MLA spec: vLLM groups by `KVCacheSpec`, §3.4).
            let len = out.len;
            if let Some(same) = out
                .buckets
                .get_mut(..len)
                .and_then(|b| b.iter_mut().find(|b| b.kind == kind && b.bytes == bytes))
            {
                same.layers += layers;
                continue;
            }
            out.buckets[out.len] = Bucket {
                kind,
                layers,
                bytes,
            };
            out.len += 1;
        }
        out
    }

    pub fn buckets(&self) -> &[Bucket] {
        self.buckets.get(..self.len).unwrap_or(&[])
    }

    /// The largest per-token attention bytes of one layer (vLLM pads every page to one size).
    pub fn attention_bytes(&self) -> f64 {
        self.buckets()
            .iter()
            .filter(|b| b.kind != CacheKind::State)
            .fold(0.0, |a, b| a.max(b.bytes))
    }

    /// The largest state of one layer for one request.
    pub fn state_bytes(&self) -> f64 {
        self.buckets()
            .iter()
            .filter(|b| b.kind == CacheKind::State)
            .fold(0.0, |a, b| a.max(b.bytes))
    }

    /// Attention layers on the GPU, all kinds.
    pub fn attention_layers(&self) -> f64 {
        self.buckets()
            .iter()
            .filter(|b| b.kind != CacheKind::State)
            .map(|b| b.layers)
            .sum()
    }
}

/// One GPU's share (heads split over `tp`) of a recurrent layer's state: the engines keep
/// `conv_width − 1` columns of the convolution window (vLLM `mamba_utils.py` conv state shape; the
/// club-3090 record's 15,360 = (2·2048 + 6144)/2 × 3 per rank for gated DeltaNet) and the SSM /
/// delta-rule state.
fn state_bytes(r: RecurrentState, tp: f64, e: CacheBytes) -> f64 {
    let share = ceil(r.heads / tp) / r.heads.max(1.0);
    let conv = r.conv_channels * (r.conv_width - 1.0).max(1.0);
    share * (conv * e.conv + r.ssm * e.ssm)
}
