//! LoRA adapter sizes: a targeted matrix W of d_out × d_in gains A (r × d_in) and B (d_out × r), so
//! r · (d_in + d_out) trainable parameters (Hu et al. 2021, arXiv:2106.09685 §4.1; Hugging Face PEFT
//! `lora.Linear`: `lora_A` = Linear(d_in, r), `lora_B` = Linear(r, d_out), no biases).

use super::ResolvedModel;
use super::blocks::{LayerKind, MixerShape, MlpShape};
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
    let w = walk(m, rank, t, 1.0, 1.0);
    (w.params, w.tensors, w.rows, w.largest)
}

/// Adapter parameters of one layer (the mean over the layers) on one GPU of `tp` tensor-parallel
/// ranks in `mode`: its expert-parallel share of the experts' adapters
/// (`MoeShape::stored_expert_fraction`), split as a trained or served adapter is
/// ([`AdapterSplit::of`]). The one count the inventory, FSDP's gradients and the step time use.
pub fn rank_adapters_per_layer(
    m: &ResolvedModel,
    rank: u32,
    t: LoraTargets,
    tp: f64,
    mode: crate::scenario::Mode,
) -> f64 {
    layer_adapters_on_rank(
        m,
        rank,
        t,
        tp,
        m.moe.stored_expert_fraction(),
        AdapterSplit::of(mode),
    )
}

/// Adapter parameters one token runs through in one layer (the mean over the layers), per rank of
/// `tp` as training splits them: every dense adapter and, of a mixture's routed experts, the
/// top-k a token is sent to (k ÷ E of their adapters). Per GPU under expert parallelism the same
/// under balanced routing: a rank's E ÷ ep experts see k ÷ E of its group's ep × the tokens. What
/// the step's adapter FLOPs read (`performance::peft_moe::lora_flops_saved`, the parts model).
pub fn active_adapters_per_layer(m: &ResolvedModel, rank: u32, t: LoraTargets, tp: f64) -> f64 {
    let experts = f64::from(m.moe.experts);
    let active = if experts > 0.0 {
        (f64::from(m.moe.top_k) / experts).min(1.0)
    } else {
        1.0
    };
    layer_adapters_on_rank(m, rank, t, tp, active, AdapterSplit::Even)
}

/// Adapter parameters of one layer (the mean over the layers) on a tensor-parallel rank that
/// stores `expert_fraction` of each layer's routed experts (`MoeShape::stored_expert_fraction`).
/// `split` is how the serving or training framework divides an adapter over the ranks.
fn layer_adapters_on_rank(
    m: &ResolvedModel,
    rank: u32,
    t: LoraTargets,
    tp: f64,
    expert_fraction: f64,
    split: AdapterSplit,
) -> f64 {
    let tp = tp.max(1.0);
    match split {
        AdapterSplit::Even => walk(m, rank, t, 1.0, expert_fraction).rank_params / tp,
        AdapterSplit::AlongBase => walk(m, rank, t, tp, expert_fraction).rank_params,
    }
}

/// How tensor parallelism divides LoRA adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterSplit {
    /// Both A and B ÷ TP (training: Megatron Bridge's `ParallelLinearAdapter`,
    /// `src/megatron/bridge/peft/utils.py`, builds A as a `ColumnParallelLinear` split along r over a
    /// column-parallel base or a `RowParallelLinear` split along d_in over a row-parallel one, and
    /// B as a `ColumnParallelLinear` split along d_out).
    Even,
    /// Along the base layer's split (serving: vLLM `ColumnParallelLinearWithLoRA` slices `lora_b`
    /// by output columns and keeps `lora_a` whole, `RowParallelLinearWithLoRA` slices `lora_a` by
    /// input rows and keeps `lora_b` whole); K and V heads a rank holds beyond kv / TP
    /// (`ResolvedModel::kv_replicated_width`) keep their columns whole.
    AlongBase,
}

impl AdapterSplit {
    /// Served adapters split along their base layers, trained ones evenly.
    pub fn of(mode: crate::scenario::Mode) -> AdapterSplit {
        if mode == crate::scenario::Mode::Inference {
            AdapterSplit::AlongBase
        } else {
            AdapterSplit::Even
        }
    }
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

/// One layer's adapters on average over the layer kinds, as they are added up.
#[derive(Default)]
struct Walk {
    r: f64,
    tp: f64,
    kv_extra: f64,
    params: f64,
    rank_params: f64,
    tensors: f64,
    rows: f64,
    largest: f64,
}

/// One targeted matrix kind of a layer kind: its shape, how many a layer has on average (over the
/// model, and on this rank), and how many the rank-r rows its adapters save per token are.
struct Mat {
    d_in: f64,
    d_out: f64,
    copies: f64,
    copies_rank: f64,
    rows: f64,
    split: Split,
}

impl Mat {
    /// `share` of the layers have one of it.
    fn one(d_in: f64, d_out: f64, share: f64, split: Split) -> Mat {
        Mat {
            d_in,
            d_out,
            copies: share,
            copies_rank: share,
            rows: share,
            split,
        }
    }
}

impl Walk {
    fn add(&mut self, on: bool, x: Mat) {
        if !on || x.copies <= 0.0 {
            return;
        }
        let r = self.r;
        self.params += x.copies * r * (x.d_in + x.d_out);
        let (ri, ro) = match x.split {
            Split::Row => (x.d_in / self.tp, x.d_out),
            Split::Column => (x.d_in, x.d_out / self.tp),
            Split::KvColumn => (x.d_in, x.d_out / self.tp + self.kv_extra),
        };
        self.rank_params += x.copies_rank * r * (ri + ro);
        self.tensors += x.copies * 2.0;
        // Per token the rank-r intermediate A·x is saved for B's gradient; an expert's adapter
        // sees only the rows routed to it.
        self.rows += r * x.rows;
        self.largest = self.largest.max(r * x.d_in.max(x.d_out));
    }

    /// An MLP's gate (when gated), up and down adapters at FFN size `f`.
    fn mlp(&mut self, t: LoraTargets, h: f64, f: f64, gated: bool, x: [f64; 3]) {
        let [copies, copies_rank, rows] = x;
        let mat = |d_in, d_out, split| Mat {
            d_in,
            d_out,
            copies,
            copies_rank,
            rows,
            split,
        };
        self.add(t.gate && gated, mat(h, f, Split::Column));
        self.add(t.up, mat(h, f, Split::Column));
        self.add(t.down, mat(f, h, Split::Row));
    }
}

/// Walks the layer kinds (`ResolvedModel::blocks`; a model without them as one kind of its own
/// dimensions): attention layers' q, k, v, o (not a Mamba or DeltaNet mixer's projections, whose
/// names no q/k/v/o target matches), a dense MLP's gate, up and down at its FFN size, and a
/// mixture's at the expert size (`moe_intermediate_size`) for every routed expert (on this rank
/// `expert_fraction` of them) and at the shared size for every shared expert.
fn walk(m: &ResolvedModel, rank: u32, t: LoraTargets, tp: f64, expert_fraction: f64) -> Walk {
    let h = f64::from(m.hidden);
    let mut w = Walk {
        r: f64::from(rank.max(1)),
        tp,
        kv_extra: m.kv_replicated_width(tp),
        ..Walk::default()
    };
    // A model without blocks: one kind of its own dimensions, an attention layer.
    let blockless = m.blocks.kinds().is_empty();
    let fallback = [LayerKind {
        count: 1,
        mixer: MixerShape::Empty,
        mlp: if m.moe.experts > 0 {
            MlpShape::Moe
        } else {
            MlpShape::Dense {
                ffn: f64::from(m.ffn),
                kind: m.ffn_kind,
            }
        },
        ..LayerKind::default()
    }];
    let kinds = if blockless {
        &fallback[..]
    } else {
        m.blocks.kinds()
    };
    let l = f64::from(kinds.iter().map(|k| k.count).sum::<u32>().max(1));
    for k in kinds {
        let n = f64::from(k.count) / l;
        let (q, kv) = match k.mixer {
            MixerShape::Attention {
                heads,
                kv_heads,
                head_dim,
                ..
            } => (heads * head_dim, kv_heads * head_dim),
            MixerShape::Mla(_) => m.attention_widths(),
            // A layer without a mixer (Nemotron-H's MLP-only layers) has no q, k, v or o.
            MixerShape::Empty if blockless => m.attention_widths(),
            _ => (0.0, 0.0),
        };
        if q > 0.0 {
            w.add(t.q, Mat::one(h, q, n, Split::Column));
            w.add(t.k, Mat::one(h, kv, n, Split::KvColumn));
            w.add(t.v, Mat::one(h, kv, n, Split::KvColumn));
            w.add(t.o, Mat::one(q, h, n, Split::Row));
        }
        let gated = m.ffn_kind == FfnKind::SwiGlu;
        match k.mlp {
            MlpShape::Dense { ffn, kind } => w.mlp(t, h, ffn, kind == FfnKind::SwiGlu, [n; 3]),
            MlpShape::Moe => {
                let (e, sh) = (f64::from(m.moe.experts), f64::from(m.moe.shared));
                let routed = [n * e, n * e * expert_fraction, n * f64::from(m.moe.top_k)];
                w.mlp(t, h, f64::from(m.moe.ffn), gated, routed);
                w.mlp(t, h, f64::from(m.moe.shared_ffn), gated, [n * sh; 3]);
            }
            MlpShape::None => {}
        }
    }
    w
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
            o: true,
            down: true,
            ..LoraTargets::default()
        };
        let (whole, ..) = layer_adapters(&m, 8, all);
        assert_eq!(
            layer_adapters_on_rank(&m, 8, all, 1.0, 1.0, AdapterSplit::AlongBase),
            whole
        );
        let (h, f) = (4096.0, 11008.0);
        let expected = 8.0 * (3.0 * (h + h / 4.0) + (f / 4.0 + h));
        assert_eq!(
            layer_adapters_on_rank(&m, 8, all, 4.0, 1.0, AdapterSplit::AlongBase),
            expected
        );
    }

    /// Trained adapters are split evenly (Megatron Bridge: A along r or d_in, B along d_out).
    #[test]
    fn trained_adapters_split_evenly() {
        let m = model(32);
        let (whole, ..) = layer_adapters(&m, 8, LoraTargets::default());
        let even =
            layer_adapters_on_rank(&m, 8, LoraTargets::default(), 4.0, 1.0, AdapterSplit::Even);
        assert_eq!(even, whole / 4.0);
    }

    /// Eight KV heads at TP 16: a rank holds one whole K head and one V head (128 wide), so v's B
    /// holds 128 columns, not 1024 / 16 = 64.
    #[test]
    fn replicated_kv_heads_keep_their_adapter_columns() {
        let m = model(8);
        let v = LoraTargets {
            q: false,
            ..LoraTargets::default()
        };
        assert_eq!(
            layer_adapters_on_rank(&m, 8, v, 16.0, 1.0, AdapterSplit::AlongBase),
            8.0 * (4096.0 + 128.0)
        );
    }
}
