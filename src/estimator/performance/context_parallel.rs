//! Context-parallel communication of a training step on one GPU (docs/context-parallel.md).
//!
//! - **Ring** (Liu et al. 2023, arXiv:2310.01889 §3; TransformerEngine d0067d0
//!   `AttnFuncWithCPAndKVP2P`): in each layer's forward a rank receives the other cp − 1 K/V chunks
//!   of the sequence — (cp − 1)/cp of its K and V — one per step, while it computes attention on the
//!   chunk it holds; the backward sends K/V and their gradients round the ring again (twice the
//!   forward's bytes), a recomputed forward once more. Each step is one send/recv with the next rank
//!   (one α). The transfers overlap with the attention core; what exceeds it is exposed.
//! - **All-to-all** (DeepSpeed-Ulysses, Jacobs et al. 2023, arXiv:2309.14509 §3.2; DeepSpeed 0.19.6
//!   `deepspeed/sequence/layer.py`): q, k and v go through an all-to-all before attention and the
//!   output after it, four per layer in forward and four in backward (four more when the forward
//!   is recomputed). An all-to-all of N·h elements over P ranks sends (P − 1)/P of each rank's N·h/P
//!   — 4·N·h/P per layer with P large, the paper's figure. Blocking in DeepSpeed's default
//!   (`sp_overlap_comm` off): fully exposed.

use super::inputs::Inputs;
use super::work::Work;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{Checkpointing, CpStyle, Scenario};

/// One layer's context-parallel traffic for one micro-batch on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerCp {
    /// Bytes this GPU sends in the layer's forward.
    pub forward_bytes: f64,
    /// Bytes it sends in the layer's backward.
    pub backward_bytes: f64,
    /// Point-to-point steps (ring) or all-to-alls per forward, each one latency α.
    pub forward_steps: f64,
}

/// The layer's CP traffic of `tokens` local tokens (b · seq ÷ cp) at `e` bytes per element.
///
/// ```
/// use vram_explorer::estimator::performance::context_parallel::layer_bytes;
/// use vram_explorer::scenario::CpStyle;
/// // Ulysses §3.2, MHA (kv = heads): 4·N·h/P per layer, times (P − 1)/P (a rank keeps its share).
/// let (n, h, p) = (131_072.0, 4096.0, 8.0);
/// let l = layer_bytes(CpStyle::AllToAll, n / p, 32.0, 32.0, 128.0, p, 1.0);
/// assert_eq!(l.forward_bytes, 4.0 * n * h / p * (p - 1.0) / p);
/// // Ring: (cp − 1)/cp of the sequence's K and V (8 KV heads of 128) arrive at each rank.
/// let r = layer_bytes(CpStyle::Ring, n / p, 32.0, 8.0, 128.0, p, 1.0);
/// assert_eq!(r.forward_bytes, (p - 1.0) / p * 2.0 * n * 8.0 * 128.0);
/// ```
pub fn layer_bytes(
    style: CpStyle,
    tokens: f64,
    heads: f64,
    kv_heads: f64,
    head_dim: f64,
    cp: f64,
    e: f64,
) -> LayerCp {
    if cp <= 1.0 {
        return LayerCp::default();
    }
    let kv = 2.0 * tokens * kv_heads * head_dim * e;
    match style {
        CpStyle::Ring => LayerCp {
            forward_bytes: (cp - 1.0) * kv,
            backward_bytes: 2.0 * (cp - 1.0) * kv,
            forward_steps: cp - 1.0,
        },
        CpStyle::AllToAll => {
            let q_out = 2.0 * tokens * heads * head_dim * e;
            let sent = (q_out + kv) * (cp - 1.0) / cp;
            LayerCp {
                forward_bytes: sent,
                backward_bytes: sent,
                forward_steps: 4.0,
            }
        }
    }
}

/// The average layer's [`layer_bytes`] over the model's layer kinds: softmax attention with its own
/// heads; latent attention (DeepSeek) with its decompressed K (heads × (nope + rope)) and V (heads ×
/// v) as Megatron-Core runs it under CP; layers without attention (Mamba, gated DeltaNet, MLP-only)
/// exchange nothing here (Megatron-Core's Mamba context parallelism is not modelled).
fn mean_layer(m: &ResolvedModel, w: &Work, i: &Inputs) -> LayerCp {
    use crate::estimator::model::blocks::MixerShape;
    let tp = f64::from(i.tp.max(1));
    let per_rank = |x: f64| (x / tp).ceil();
    let of = |heads: f64, kv_heads: f64, head_dim: f64| {
        layer_bytes(
            i.cp_style,
            w.local_tokens(),
            per_rank(heads),
            per_rank(kv_heads),
            head_dim,
            w.cp,
            w.act_bytes,
        )
    };
    if m.blocks.is_flat() {
        return of(
            f64::from(m.heads),
            f64::from(m.kv_heads),
            f64::from(m.head_dim),
        );
    }
    let layers = f64::from(m.blocks.layers().max(1));
    let mut sum = LayerCp::default();
    for k in m.blocks.kinds() {
        let l = match k.mixer {
            MixerShape::Attention {
                heads,
                kv_heads,
                head_dim,
                ..
            } => of(heads, kv_heads, head_dim),
            // K and V of heads × (nope + rope) and heads × v: as many heads of their mean width.
            MixerShape::Mla(s) => of(s.heads, s.heads, 0.5 * (s.qk_head_dim() + s.v)),
            MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } | MixerShape::Empty => {
                LayerCp::default()
            }
        };
        let n = f64::from(k.count);
        sum.forward_bytes += n * l.forward_bytes;
        sum.backward_bytes += n * l.backward_bytes;
        sum.forward_steps += n * l.forward_steps;
    }
    LayerCp {
        forward_bytes: sum.forward_bytes / layers,
        backward_bytes: sum.backward_bytes / layers,
        forward_steps: sum.forward_steps / layers,
    }
}

/// Context-parallel traffic of a step on one GPU: (bytes sent, exposed seconds). `attention_s` is
/// the step's attention-core time (parts model) the ring's transfers hide behind; 0 when unknown
/// (nothing hidden).
pub fn step(s: &Scenario, m: &ResolvedModel, w: &Work, i: &Inputs, attention_s: f64) -> (f64, f64) {
    if i.cp <= 1 {
        return (0.0, 0.0);
    }
    let l = mean_layer(m, w, i);
    let recompute = match s.strategies.checkpointing {
        Checkpointing::Full | Checkpointing::EveryK => 1.0,
        // The per-op policy keeps the attention output: the ring is not run again.
        Checkpointing::None | Checkpointing::Selective | Checkpointing::PerOp => 0.0,
    };
    let passes_steps = l.forward_steps * (2.0 + recompute);
    let bytes_layer = l.forward_bytes * (1.0 + recompute) + l.backward_bytes;
    let layers = f64::from(m.layers.div_ceil(i.pp.max(1)));
    let accum = f64::from(s.workload.grad_accum_steps.max(1));
    let bytes = bytes_layer * layers * accum;
    // CP ranks are adjacent after TP (`tp-cp-ep-dp-pp`).
    let (bw, _) = i.collective_bw(i.cp, i.tp);
    let transfer = if bw > 0.0 { bytes / bw } else { 0.0 };
    let time = transfer + passes_steps * layers * accum * i.alpha_s;
    let exposed = match i.cp_style {
        CpStyle::Ring => (time - attention_s).max(0.0),
        CpStyle::AllToAll => time,
    };
    (bytes, exposed)
}

/// Sequences from which make-it-fit and the layout search try context parallelism: 32K tokens.
/// Below it CP rarely pays (NVIDIA Megatron-Bridge's Llama-3 8B recipes,
/// `recipes/llama/llama3.py`: CP 2 at 16K, 4 at 64K, 8 at 128K), and leaving it out keeps both
/// searches' budgets.
pub const LONG_CONTEXT_TOKENS: u32 = 32_768;

/// The context-parallel degrees worth trying for `s`, ascending: 1, and for transformer training
/// at ≥ [`LONG_CONTEXT_TOKENS`] the powers of two up to 16 whose 2·cp chunks divide the sequence
/// (Megatron's load-balanced ring), at most `room`.
///
/// ```
/// use vram_explorer::estimator::performance::context_parallel::cp_degrees;
/// use vram_explorer::scenario::{Mode, Scenario};
/// let mut s = Scenario::default();
/// s.mode = Mode::Training;
/// s.workload.seq_len = 131_072;
/// assert_eq!(cp_degrees(&s, 64).collect::<Vec<_>>(), [1, 2, 4, 8, 16]);
/// assert_eq!(cp_degrees(&s, 4).collect::<Vec<_>>(), [1, 2, 4]);
/// s.workload.seq_len = 8192;
/// assert_eq!(cp_degrees(&s, 64).collect::<Vec<_>>(), [1]);
/// ```
pub fn cp_degrees(s: &Scenario, room: u64) -> impl Iterator<Item = u32> {
    let seq = s.workload.seq_len;
    // Megatron's own attention refuses context parallelism (`megatron_local_layers_without_cp`).
    let local = s.implementation.profile == crate::scenario::Profile::Megatron
        && s.implementation.megatron_local_layers;
    let long = s.mode == crate::scenario::Mode::Training
        && s.model.family == crate::scenario::ModelFamily::Transformer
        && seq >= LONG_CONTEXT_TOKENS
        && !local;
    (0..5u32)
        .map(|k| 1u32 << k)
        .filter(move |&cp| cp == 1 || (long && u64::from(cp) <= room && seq.is_multiple_of(2 * cp)))
}
