//! LoRA adapter sizes: a targeted matrix W of d_out × d_in gains A (r × d_in) and B (d_out × r), so
//! r · (d_in + d_out) trainable parameters (Hu et al. 2021, arXiv:2106.09685 §4.1; Hugging Face PEFT
//! `lora.Linear`: `lora_A` = Linear(d_in, r), `lora_B` = Linear(r, d_out), no biases).

use super::ResolvedModel;
use crate::scenario::{FfnKind, LoraTargets};

/// Adapters of one layer: (trainable parameters, parameter tensors, rank-r rows saved per token,
/// largest adapter tensor). Mixture-of-experts MLP targets get an adapter on every stored expert
/// (PEFT matches each expert's `w1`/`w2`/`w3` by name).
///
/// ```
/// use vram_explorer::estimator::model::{lora::layer_adapters, resolve};
/// use vram_explorer::estimator::Diagnostics;
/// use vram_explorer::scenario::{LoraTargets, ModelSpec, TransformerDims};
/// // Llama-2-7B: h = 4096, 32 heads, 32 layers; r = 8 on q and v → 32 · 2 · 8 · (4096 + 4096).
/// let mut spec = ModelSpec::default();
/// spec.transformer = TransformerDims { kv_heads: 32, ffn: 11008, vocab: 32000, ..TransformerDims::default() };
/// let m = resolve(&spec, &mut Diagnostics::default());
/// let (per_layer, _, _, _) = layer_adapters(&m, 8, LoraTargets::default());
/// assert_eq!(per_layer * 32.0, 4_194_304.0);
/// ```
pub fn layer_adapters(m: &ResolvedModel, rank: u32, t: LoraTargets) -> (f64, f64, f64, f64) {
    let r = f64::from(rank.max(1));
    let h = f64::from(m.hidden);
    let (q, kv) = m.attention_widths();
    let f = f64::from(m.ffn);
    let experts = m.moe.stored_mlps();
    let gated = m.ffn_kind == FfnKind::SwiGlu;
    // (targeted, d_in, d_out, copies per layer)
    let mats = [
        (t.q, h, q, 1.0),
        (t.k, h, kv, 1.0),
        (t.v, h, kv, 1.0),
        (t.o, q, h, 1.0),
        (t.gate && gated, h, f, experts),
        (t.up, h, f, experts),
        (t.down, f, h, experts),
    ];
    let (mut params, mut tensors, mut rows, mut largest) = (0.0, 0.0, 0.0, 0.0_f64);
    for (on, d_in, d_out, copies) in mats {
        if on {
            params += copies * r * (d_in + d_out);
            tensors += copies * 2.0;
            // Per token the rank-r intermediate A·x is saved for B's gradient; an MLP adapter of a
            // mixture sees only the rows routed to its expert (top-k of E per token, counted later).
            rows += if copies > 1.0 {
                r * m.moe.active_mlps()
            } else {
                r
            };
            largest = largest.max(r * d_in.max(d_out));
        }
    }
    (params, tensors, rows, largest)
}
