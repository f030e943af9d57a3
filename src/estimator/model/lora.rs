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
    let (mut params, mut tensors, mut rows, mut largest) = (0.0, 0.0, 0.0, 0.0_f64);
    for (on, d_in, d_out, copies, _) in targeted(m, t) {
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

/// Adapter parameters of one layer on a tensor-parallel rank. An adapter follows its base layer's
/// split: on a column-parallel matrix (q, k, v, gate, up) A is whole and B holds the rank's output
/// columns; on a row-parallel one (o, down) A holds the rank's input rows and B is whole (Megatron
/// Bridge's `LoRA` on `ColumnParallelLinear` / `RowParallelLinear`; vLLM
/// `ColumnParallelLinearWithLoRA` slices `lora_b`, `RowParallelLinearWithLoRA` slices `lora_a`). K
/// and V heads a rank holds beyond kv / TP (`ResolvedModel::kv_replicated_width`) count whole.
pub fn layer_adapters_on_rank(m: &ResolvedModel, rank: u32, t: LoraTargets, tp: f64) -> f64 {
    let r = f64::from(rank.max(1));
    let tp = tp.max(1.0);
    let kv_extra = m.kv_replicated_width(tp);
    targeted(m, t)
        .into_iter()
        .filter(|x| x.0)
        .map(|(_, d_in, d_out, copies, split)| {
            let (d_in, d_out) = match split {
                Split::Row => (d_in / tp, d_out),
                Split::Column => (d_in, d_out / tp),
                Split::KvColumn => (d_in, d_out / tp + kv_extra),
            };
            copies * r * (d_in + d_out)
        })
        .sum()
}

/// How tensor parallelism splits a targeted matrix.
#[derive(Clone, Copy)]
enum Split {
    /// By output columns.
    Column,
    /// By output columns, K or V heads (replicated beyond kv / TP).
    KvColumn,
    /// By input rows.
    Row,
}

/// The matrices LoRA can target in one layer: (targeted, d_in, d_out, copies per layer, split).
fn targeted(m: &ResolvedModel, t: LoraTargets) -> [(bool, f64, f64, f64, Split); 7] {
    let h = f64::from(m.hidden);
    let (q, kv) = m.attention_widths();
    let f = f64::from(m.ffn);
    let experts = m.moe.stored_mlps();
    let gated = m.ffn_kind == FfnKind::SwiGlu;
    [
        (t.q, h, q, 1.0, Split::Column),
        (t.k, h, kv, 1.0, Split::KvColumn),
        (t.v, h, kv, 1.0, Split::KvColumn),
        (t.o, q, h, 1.0, Split::Row),
        (t.gate && gated, h, f, experts, Split::Column),
        (t.up, h, f, experts, Split::Column),
        (t.down, f, h, experts, Split::Row),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{ModelSpec, TransformerDims};

    fn model(kv_heads: u32) -> ResolvedModel {
        let spec = ModelSpec {
            transformer: TransformerDims {
                heads: 32,
                kv_heads,
                hidden: 4096,
                ffn: 11008,
                vocab: 32000,
                ..TransformerDims::default()
            },
            ..ModelSpec::default()
        };
        super::super::resolve(&spec, &mut Default::default())
    }

    /// At TP 1 a rank holds every adapter; at TP 4 the split side ÷ 4: q and v (column parallel)
    /// r · (h + h/4) each, o (row parallel) r · (h/4 + h), down r · (f/4 + h).
    #[test]
    fn an_adapter_follows_its_base_layers_split() {
        let m = model(32);
        let all = LoraTargets {
            q: true,
            k: false,
            v: true,
            o: true,
            gate: false,
            up: false,
            down: true,
        };
        let (whole, ..) = layer_adapters(&m, 8, all);
        assert_eq!(layer_adapters_on_rank(&m, 8, all, 1.0), whole);
        let (h, f) = (4096.0, 11008.0);
        let expected = 8.0 * (3.0 * (h + h / 4.0) + (f / 4.0 + h));
        assert_eq!(layer_adapters_on_rank(&m, 8, all, 4.0), expected);
    }

    /// Eight KV heads at TP 16: a rank holds one whole K head and one V head (128 wide), so v's B
    /// holds 128 columns, not 1024 / 16 = 64.
    #[test]
    fn replicated_kv_heads_keep_their_adapter_columns() {
        let m = model(8);
        let v = LoraTargets {
            q: false,
            k: false,
            v: true,
            o: false,
            gate: false,
            up: false,
            down: false,
        };
        assert_eq!(
            layer_adapters_on_rank(&m, 8, v, 16.0),
            8.0 * (4096.0 + 128.0)
        );
    }
}
