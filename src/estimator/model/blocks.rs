//! The layer kinds of a model (issue 14; docs/design-blocks.md): the scenario's run-length pattern
//! resolved into at most [`MAX_KINDS`] distinct layer kinds with their counts, each with its exact
//! parameters, its KV cache per token and its recurrent state per sequence. A fixed array filled in
//! place: resolving a pattern does not allocate.
//!
//! Parameter counts follow the Hugging Face Transformers modules at 5.25.0, checked against
//! `sum(p.numel())` of the classes in tests/data/hf/params.json:
//! - attention: `LlamaAttention` (q, k, v, o; Qwen2 q/k/v biases; Qwen3 `q_norm`/`k_norm`; gpt-oss
//!   `sinks`; Qwen3-Next's gated q projection, twice as wide); encoder-decoder decoders' cross
//!   attention (`T5LayerCrossAttention`, `WhisperDecoderLayer.encoder_attn`) and T5's relative
//!   position bias table;
//! - multi-head latent attention: `DeepseekV3Attention` (`q_a_proj`, `q_a_layernorm`, `q_b_proj` or
//!   `q_proj`; `kv_a_proj_with_mqa`, `kv_a_layernorm`, `kv_b_proj`; `o_proj`);
//! - Mamba: `MambaMixer` and `Mamba2Mixer`; Jamba's Δ/B/C norms (`JambaMambaMixer`);
//! - gated DeltaNet: `Qwen3NextGatedDeltaNet`;
//! - MLPs: two matrices (GELU, squared ReLU) or three (gated); experts as `MixtralSparseMoeBlock` /
//!   `DeepseekV3MoE` / `Qwen2MoeSparseMoeBlock` (router h × E, shared experts, shared-expert gate).

use super::moe::MoeShape;
use crate::scenario::{
    Attention, DenseMlp, FfnKind, GatedDeltaNet, LayerRun, Mamba, MambaVersion, Mixer, Mla,
    MlaCache, Mlp, MoeSpec, NormKind, PatternPart, TransformerDims,
};

/// Most distinct layer kinds a model resolves into; a pattern with more merges the rest into the
/// last kind's count (diagnosed by the caller through [`Blocks::overflowed`]).
pub const MAX_KINDS: usize = 4;

/// A resolved token mixer; dimensions as f64 element counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum MixerShape {
    /// No mixer (not produced by today's patterns; the default of an empty slot).
    #[default]
    Empty,
    /// Softmax attention with `window` = 0 for global, else the most keys a token sees and the cache
    /// holds (sliding window or chunk).
    Attention {
        heads: f64,
        kv_heads: f64,
        head_dim: f64,
        window: f64,
        /// Per-head RMSNorm of queries and keys (Qwen3, Gemma 3).
        qk_norm: bool,
        /// A sink logit per head (gpt-oss; eager attention).
        sinks: bool,
        /// A sigmoid output gate from the q projection (Qwen3-Next).
        output_gate: bool,
        /// Biases on the q, k and v projections (Qwen2), and on the output projection.
        qkv_bias: bool,
        out_bias: bool,
        /// `window` is a chunk (Llama 4's chunked local attention: a token sees its own chunk, the
        /// cache holds at most the chunk at decode, `Llama4TextAttention`, modeling_llama4.py), not a
        /// sliding window; the cache rule is the same, only the label differs.
        chunked: bool,
    },
    /// Multi-head latent attention ([`MlaShape`]).
    Mla(MlaShape),
    /// Inner width, heads (Mamba-2; = inner for Mamba-1), the convolution's channels and width,
    /// and the SSM state size.
    Mamba {
        inner: f64,
        heads: f64,
        conv_channels: f64,
        d_conv: f64,
        d_state: f64,
        version: MambaVersion,
        /// Mamba-2: the SSD scan's chunk length (`chunk_size`).
        chunk: f64,
    },
    DeltaNet {
        key_dim: f64,
        value_dim: f64,
        value_heads: f64,
        key_head_dim: f64,
        value_head_dim: f64,
        conv_kernel: f64,
    },
}

impl MixerShape {
    /// The key (or value) width one of `tp` tensor-parallel ranks holds of a softmax attention:
    /// its K/V heads, replicated when tensor parallelism exceeds them (⌈kv_heads / tp⌉ × head dim;
    /// vLLM's `QKVParallelLinear`, the KV cache's rule); 0 for other mixers.
    pub fn kv_width_rank(&self, tp: f64) -> f64 {
        match *self {
            MixerShape::Attention {
                kv_heads, head_dim, ..
            } => crate::estimator::num::ceil(kv_heads / tp.max(1.0)) * head_dim,
            _ => 0.0,
        }
    }
}

/// Multi-head latent attention's dimensions (DeepSeek-V2 §2.1; `DeepseekV3Attention`'s config
/// names in brackets).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MlaShape {
    /// Attention heads, each with its own decompressed key and value.
    pub heads: f64,
    /// The query latent's width, d_c' (`q_lora_rank`); 0 = queries projected directly.
    pub q_lora: f64,
    /// The compressed key/value latent's width, d_c (`kv_lora_rank`).
    pub kv_lora: f64,
    /// A query's and a key's part without RoPE per head, d_h (`qk_nope_head_dim`).
    pub nope: f64,
    /// Their decoupled RoPE part per head, d_h^R (`qk_rope_head_dim`); one RoPE key is shared by
    /// all heads.
    pub rope: f64,
    /// A value's width per head (`v_head_dim`).
    pub v: f64,
    /// The KV cache holds the latent and the RoPE key ([`MlaShape::kv_latent_width`] per token),
    /// not the decompressed keys and values.
    pub latent_cache: bool,
}

impl MlaShape {
    /// A query's (and a key's) width per head: the part without RoPE and the decoupled RoPE part,
    /// nope + rope (DeepSeek-V2 §2.1.3: q = [q^C; q^R], k = [k^C; k^R]).
    pub fn qk_head_dim(&self) -> f64 {
        self.nope + self.rope
    }

    /// Key and value elements of one head decompressed, nope + rope + v: what a decompressed cache
    /// holds per head and token, and what QKᵀ (nope + rope) and AV (v) multiply over per key.
    pub fn kv_per_head(&self) -> f64 {
        self.nope + self.rope + self.v
    }

    /// The up projection `kv_b`'s output per head: the key's part without RoPE and the value,
    /// nope + v (DeepSeek-V2 §2.1.2: W^UK and W^UV).
    pub fn kv_b_head_dim(&self) -> f64 {
        self.nope + self.v
    }

    /// The down projection `kv_a`'s output per token, kv_lora + rope: the compressed latent and
    /// the shared RoPE key, what a latent cache holds (DeepSeek-V2 §2.1.2, Table 1: "(d_c +
    /// d_h^R) · l" per token).
    pub fn kv_latent_width(&self) -> f64 {
        self.kv_lora + self.rope
    }
}

/// A resolved MLP.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum MlpShape {
    #[default]
    None,
    Dense {
        ffn: f64,
        kind: FfnKind,
    },
    /// The model's mixture of experts (`ResolvedModel::moe`).
    Moe,
}

/// One distinct layer kind and how many layers have it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerKind {
    pub count: u32,
    pub mixer: MixerShape,
    pub mlp: MlpShape,
    /// Norms per layer (2 with an MLP, 1 without; Gemma 2/3: 4).
    pub norms: f64,
    /// Parameters of one layer (mixer, MLP, norms).
    pub params: f64,
    /// Of those, the routed experts' (0 without a mixture).
    pub routed: f64,
    /// Of `routed`, the experts' matrix weights (`matmul_w`'s routed part; no biases).
    pub routed_w: f64,
    /// Of those, the experts a token does not run through.
    pub inactive: f64,
    /// Weights and biases of the layer's matrix multiplies (what autocast copies to 16 bit).
    pub matmul_w: f64,
    pub matmul_b: f64,
    /// The weights autocast casts to 16 bit (and caches for the forward): the layer's `nn.Linear`
    /// weights except the routed experts' (Transformers runs them through `torch._grouped_mm`,
    /// which is not on autocast's lower-precision list), plus a Mamba / gated DeltaNet
    /// depthwise `conv1d` weight (which is). PyTorch `aten/src/ATen/autocast_mode.cpp`
    /// (`cached_cast`: FP32 leaf tensors that require grad; the CPU `lower_precision_fp` list),
    /// torch 2.15; checked against every AMP record's `autocast_param_casts`
    /// (docs/blocks-measured.md "AMP-bf16").
    pub autocast_w: f64,
    /// Matrix weights of the mixer, and of the MLP a token runs through (top-k and shared experts and
    /// the router of a mixture): what a token's forward multiplies by.
    pub mixer_w: f64,
    pub mlp_active_w: f64,
    /// Parameter tensors of one layer.
    pub tensors: f64,
    /// Elements of its largest tensor.
    pub largest: f64,
    /// Of `params`, those every tensor-parallel rank holds whole: the layer's norms, a latent
    /// attention's down projections and latent norms, per-head q/k norms, a mixture's router and
    /// shared-expert gate (Megatron-Core and vLLM alike: [`replicated_params`]).
    pub replicated: f64,
    /// Of `matmul_w`, the replicated matrices (MLA's down projections, the router and gate).
    pub replicated_w: f64,
}

impl LayerKind {
    /// Whether the layer has a token mixer (attention, latent attention, Mamba, gated DeltaNet).
    pub fn has_mixer(&self) -> bool {
        self.mixer != MixerShape::Empty
    }

    /// Whether the mixer is attention with scores over keys (softmax or latent attention), not a
    /// scan.
    pub fn has_attention(&self) -> bool {
        matches!(
            self.mixer,
            MixerShape::Attention { .. } | MixerShape::Mla(_)
        )
    }

    /// Whether the layer has an MLP (dense or a mixture of experts).
    pub fn has_mlp(&self) -> bool {
        self.mlp != MlpShape::None
    }

    /// Its sub-layers, each behind its own pre-norm: 2 for a transformer layer, 1 for Nemotron-H's
    /// Mamba-, attention- or MLP-only layers.
    pub fn sublayers(&self) -> f64 {
        f64::from(u8::from(self.has_mixer()) + u8::from(self.has_mlp()))
    }

    /// A short name of the layer's mixer, for explanations ("sliding-window attention (4096)").
    pub fn mixer_label(&self) -> String {
        match self.mixer {
            MixerShape::Empty => "no mixer".to_owned(),
            MixerShape::Attention {
                window,
                chunked: true,
                ..
            } if window > 0.0 => format!("chunked local attention (chunk {window})"),
            MixerShape::Attention { window, .. } if window > 0.0 => {
                format!("local attention (window {window})")
            }
            MixerShape::Attention { .. } => "global attention".to_owned(),
            MixerShape::Mla(MlaShape {
                latent_cache: true, ..
            }) => "MLA (latent cache)".to_owned(),
            MixerShape::Mla(_) => "MLA (decompressed cache)".to_owned(),
            MixerShape::Mamba {
                version: MambaVersion::Mamba1,
                ..
            } => "Mamba".to_owned(),
            MixerShape::Mamba { .. } => "Mamba-2".to_owned(),
            MixerShape::DeltaNet { .. } => "gated DeltaNet".to_owned(),
        }
    }

    /// KV-cache elements one token adds to one layer (before tensor parallelism): 2 · kv_heads ·
    /// head_dim for attention; for MLA heads · (nope + rope + v) decompressed, or kv_lora + rope as a
    /// latent (DeepSeek-V2 §2.1.2, Table 1: "(d_c + d_h^R) · l" per token); 0 for recurrent mixers.
    pub fn kv_per_token(&self) -> f64 {
        match self.mixer {
            MixerShape::Attention {
                kv_heads, head_dim, ..
            } => 2.0 * kv_heads * head_dim,
            MixerShape::Mla(s) => {
                if s.latent_cache {
                    s.kv_latent_width()
                } else {
                    s.heads * s.kv_per_head()
                }
            }
            MixerShape::Empty | MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => 0.0,
        }
    }

    /// Tokens of a `ctx`-token sequence this layer's cache holds: all of them, or at most the
    /// window of a sliding-window / chunked layer (Mistral 7B §2 "rolling buffer cache").
    pub fn cached_tokens(&self, ctx: f64) -> f64 {
        match self.mixer {
            MixerShape::Attention { window, .. } if window > 0.0 => ctx.min(window),
            _ => ctx,
        }
    }

    /// Recurrent state elements one sequence holds in this layer, whatever its length: Mamba's
    /// convolution window (channels × d_conv, HF `MambaCache.conv_states`) and SSM state (inner ×
    /// d_state for Mamba-1, heads × head_dim × d_state = inner × d_state for Mamba-2); gated
    /// DeltaNet's convolution window and a key × value matrix per head (Yang et al. 2024 §2).
    pub fn state_per_sequence(&self) -> f64 {
        self.recurrent_state()
            .map_or(0.0, |r| r.conv_channels * r.conv_width + r.ssm)
    }

    /// The parts of a recurrent mixer's per-sequence state ([`RecurrentState`]); `None` for
    /// attention and empty mixers. Serving engines keep `conv_width − 1` columns of the window.
    pub fn recurrent_state(&self) -> Option<RecurrentState> {
        match self.mixer {
            MixerShape::Mamba {
                inner,
                heads,
                conv_channels,
                d_conv,
                d_state,
                ..
            } => Some(RecurrentState {
                conv_channels,
                conv_width: d_conv,
                ssm: inner * d_state,
                heads,
            }),
            MixerShape::DeltaNet {
                key_dim,
                value_dim,
                value_heads,
                key_head_dim,
                value_head_dim,
                conv_kernel,
            } => Some(RecurrentState {
                conv_channels: 2.0 * key_dim + value_dim,
                conv_width: conv_kernel,
                ssm: value_heads * key_head_dim * value_head_dim,
                heads: value_heads,
            }),
            MixerShape::Empty | MixerShape::Attention { .. } | MixerShape::Mla(_) => None,
        }
    }
}

/// One sequence's state in a recurrent layer: a depthwise convolution's window over
/// `conv_channels` channels of `conv_width` taps, and `ssm` state elements split over `heads`
/// heads (Mamba's heads, DeltaNet's value heads: what tensor parallelism divides).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecurrentState {
    pub conv_channels: f64,
    pub conv_width: f64,
    pub ssm: f64,
    pub heads: f64,
}

/// The layer kinds of a model: a fixed array, filled in place.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Blocks {
    kinds: [LayerKind; MAX_KINDS],
    len: usize,
    /// More distinct kinds than [`MAX_KINDS`]: the rest were counted as the last kind.
    pub overflowed: bool,
    /// Where each kind sits in the layer order (filled by the pattern's resolution).
    pub order: super::layer_order::LayerOrder,
    /// Not [`Blocks::is_flat`]: kept as the kinds are added, since the estimate asks often.
    by_kind: bool,
}

/// Softmax attention followed by an MLP: the layer the flat dimensions describe.
fn flat_kind(k: &LayerKind) -> bool {
    matches!(k.mixer, MixerShape::Attention { .. }) && k.has_mlp()
}

impl Blocks {
    /// One kind of `count` layers (a uniform model), as [`Blocks::push`] to empty blocks gives it,
    /// built as one value (no default array filled and then overwritten).
    pub fn uniform(kind: LayerKind, count: u32) -> Blocks {
        if count == 0 {
            return Blocks::default();
        }
        let empty = LayerKind::default();
        let mut order = super::layer_order::LayerOrder::default();
        order.place(0, count);
        Blocks {
            kinds: [LayerKind { count, ..kind }, empty, empty, empty],
            len: 1,
            overflowed: false,
            order,
            by_kind: !flat_kind(&kind),
        }
    }

    pub fn kinds(&self) -> &[LayerKind] {
        self.kinds.get(..self.len).unwrap_or(&[])
    }

    /// The kind of the model's first layer (none without kinds).
    pub fn first_kind(&self) -> Option<&LayerKind> {
        let n = self.kinds().len();
        self.kinds()
            .iter()
            .enumerate()
            .find(|(i, k)| k.count > 0 && (0..n).all(|j| self.order.before(*i, j) == 0))
            .map(|(_, k)| k)
    }

    /// Layers over all kinds.
    pub fn layers(&self) -> u32 {
        self.kinds()
            .iter()
            .fold(0u32, |a, k| a.saturating_add(k.count))
    }

    /// Whether every layer is one kind of softmax attention followed by an MLP: the transformer
    /// the flat dimensions (`ResolvedModel`'s heads, head size, FFN) describe, so the flat
    /// formulas hold. Any other single kind (every layer Mamba, or latent attention) is summed by
    /// kind like a hybrid's layers.
    pub fn is_flat(&self) -> bool {
        !self.by_kind
    }

    /// Adds `count` layers of `kind`, merging with an equal kind already listed; returns the kind's
    /// index (the last one when the kinds overflowed). The layer order is the caller's to record
    /// (`order`).
    pub fn add(&mut self, kind: LayerKind, count: u32) -> usize {
        if count == 0 {
            return self.index_of(&kind);
        }
        let same =
            |k: &&mut LayerKind| LayerKind { count: 0, ..**k } == LayerKind { count: 0, ..kind };
        if let Some((i, k)) = self
            .kinds
            .iter_mut()
            .take(self.len)
            .enumerate()
            .find(|(_, k)| same(k))
        {
            k.count = k.count.saturating_add(count);
            return i;
        }
        if let Some(slot) = self.kinds.get_mut(self.len) {
            *slot = LayerKind { count, ..kind };
            self.len += 1;
            self.by_kind = self.len > 1 || !flat_kind(&kind);
            self.len - 1
        } else {
            if let Some(last) = self.kinds.last_mut() {
                last.count = last.count.saturating_add(count);
            }
            self.overflowed = true;
            MAX_KINDS - 1
        }
    }

    /// Adds `count` layers of `kind` placed after every layer added so far (one run, in order).
    pub fn push(&mut self, kind: LayerKind, count: u32) {
        let i = self.add(kind, count);
        self.order.place(i, count);
    }

    fn index_of(&self, kind: &LayerKind) -> usize {
        self.kinds()
            .iter()
            .position(|k| LayerKind { count: 0, ..*k } == LayerKind { count: 0, ..*kind })
            .unwrap_or(self.len.min(MAX_KINDS - 1))
    }

    /// Σ over kinds of count × `f(kind)`.
    pub fn sum(&self, f: impl Fn(&LayerKind) -> f64) -> f64 {
        self.kinds().iter().map(|k| f64::from(k.count) * f(k)).sum()
    }
}

/// Dimensions a layer kind inherits from `model.transformer` (already in range).
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    pub hidden: f64,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub ffn: u32,
    pub ffn_kind: FfnKind,
    pub norm: NormKind,
}

impl Defaults {
    pub fn of(t: &TransformerDims) -> Defaults {
        Defaults {
            hidden: f64::from(t.hidden),
            heads: t.heads,
            kv_heads: t.kv_heads,
            head_dim: t.head_dim(),
            ffn: t.ffn,
            ffn_kind: t.ffn_kind,
            norm: t.norm,
        }
    }

    fn norm_params(&self) -> f64 {
        match self.norm {
            NormKind::LayerNorm => 2.0 * self.hidden,
            NormKind::RmsNorm => self.hidden,
        }
    }

    fn norm_tensors(&self) -> f64 {
        match self.norm {
            NormKind::LayerNorm => 2.0,
            NormKind::RmsNorm => 1.0,
        }
    }
}

/// Parameter arithmetic of one part of a layer.
#[derive(Clone, Copy, Debug, Default)]
struct Part {
    /// Matrix weights and biases, other parameters (norms, conv, per-head scalars), tensors, largest.
    w: f64,
    b: f64,
    other: f64,
    tensors: f64,
    largest: f64,
}

impl Part {
    fn total(&self) -> f64 {
        self.w + self.b + self.other
    }
    fn mat(&mut self, rows: f64, cols: f64) {
        self.w += rows * cols;
        self.tensors += 1.0;
        self.largest = self.largest.max(rows * cols);
    }
    fn bias(&mut self, on: bool, n: f64) {
        if on {
            self.b += n;
            self.tensors += 1.0;
        }
    }
    fn vector(&mut self, n: f64) {
        self.other += n;
        self.tensors += 1.0;
    }
}

fn or(x: u32, default: u32) -> f64 {
    f64::from(if x > 0 { x } else { default }.max(1))
}

fn attention(a: &Attention, d: &Defaults) -> (MixerShape, Part) {
    let h = d.hidden;
    let heads = or(a.heads, d.heads);
    let kv = or(a.kv_heads, d.kv_heads).min(heads);
    let hd = or(a.head_dim, d.head_dim);
    let q_out = heads * hd * if a.output_gate { 2.0 } else { 1.0 };
    let mut p = Part::default();
    p.mat(h, q_out);
    p.mat(h, kv * hd);
    p.mat(h, kv * hd);
    p.mat(heads * hd, h);
    p.bias(a.qkv_bias, q_out);
    p.bias(a.qkv_bias && !a.no_k_bias, kv * hd);
    p.bias(a.qkv_bias, kv * hd);
    p.bias(a.out_bias, h);
    if a.cross_attention {
        // A second q, k, v, o over the encoder's output, the same shapes and biases (T5
        // `T5LayerCrossAttention`, Whisper `encoder_attn`; its norm is one of the layer's `norms`).
        p.mat(h, heads * hd);
        p.mat(h, kv * hd);
        p.mat(h, kv * hd);
        p.mat(heads * hd, h);
        p.bias(a.qkv_bias, heads * hd);
        p.bias(a.qkv_bias && !a.no_k_bias, kv * hd);
        p.bias(a.qkv_bias, kv * hd);
        p.bias(a.out_bias, h);
    }
    if a.relative_buckets > 0 {
        // T5 `relative_attention_bias`: nn.Embedding(relative_attention_num_buckets, n_heads).
        p.vector(f64::from(a.relative_buckets) * heads);
    }
    if a.qk_norm {
        p.vector(hd);
        p.vector(hd);
    }
    if a.sinks {
        p.vector(heads);
    }
    let window = if a.window > 0 { a.window } else { a.chunk };
    let shape = MixerShape::Attention {
        heads,
        kv_heads: kv,
        head_dim: hd,
        window: f64::from(window),
        qk_norm: a.qk_norm,
        sinks: a.sinks,
        output_gate: a.output_gate,
        qkv_bias: a.qkv_bias,
        out_bias: a.out_bias,
        chunked: a.window == 0 && a.chunk > 0,
    };
    (shape, p)
}

fn mla(m: &Mla, d: &Defaults) -> (MixerShape, Part) {
    let h = d.hidden;
    let heads = or(m.heads, d.heads);
    let (ql, kl) = (f64::from(m.q_lora_rank), f64::from(m.kv_lora_rank.max(1)));
    let (nope, rope, v) = (
        f64::from(m.qk_nope_head_dim),
        f64::from(m.qk_rope_head_dim),
        f64::from(m.v_head_dim.max(1)),
    );
    let s = MlaShape {
        heads,
        q_lora: ql,
        kv_lora: kl,
        nope,
        rope,
        v,
        latent_cache: m.cache == MlaCache::Latent,
    };
    let mut p = Part::default();
    if ql > 0.0 {
        p.mat(h, ql);
        p.vector(ql);
        p.mat(ql, heads * s.qk_head_dim());
    } else {
        p.mat(h, heads * s.qk_head_dim());
    }
    p.mat(h, s.kv_latent_width());
    p.vector(kl);
    p.mat(kl, heads * s.kv_b_head_dim());
    p.mat(heads * v, h);
    (MixerShape::Mla(s), p)
}

fn mamba(m: &Mamba, d: &Defaults) -> (MixerShape, Part) {
    let h = d.hidden;
    let inner = f64::from(m.expand.max(1)) * h;
    let (n, k) = (f64::from(m.d_state.max(1)), f64::from(m.d_conv.max(1)));
    let mut p = Part::default();
    let shape = match m.version {
        MambaVersion::Mamba1 => {
            let r = if m.dt_rank > 0 {
                f64::from(m.dt_rank)
            } else {
                (h / 16.0).ceil()
            };
            p.mat(h, 2.0 * inner);
            p.bias(m.bias, 2.0 * inner);
            p.other += inner * k;
            p.tensors += 1.0;
            p.bias(m.conv_bias, inner);
            p.mat(inner, r + 2.0 * n);
            p.mat(r, inner);
            p.b += inner;
            p.tensors += 1.0;
            p.vector(inner * n);
            p.vector(inner);
            if m.inner_norms {
                p.vector(r);
                p.vector(n);
                p.vector(n);
            }
            MixerShape::Mamba {
                inner,
                heads: inner,
                conv_channels: inner,
                d_conv: k,
                d_state: n,
                version: m.version,
                chunk: f64::from(m.chunk_size.max(1)),
            }
        }
        MambaVersion::Mamba2 => {
            let g = f64::from(m.n_groups.max(1));
            let heads = (inner / f64::from(m.head_dim.max(1))).floor().max(1.0);
            let conv = inner + 2.0 * g * n;
            p.mat(h, 2.0 * inner + 2.0 * g * n + heads);
            p.bias(m.bias, 2.0 * inner + 2.0 * g * n + heads);
            p.other += conv * k;
            p.tensors += 1.0;
            p.bias(m.conv_bias, conv);
            p.vector(heads);
            p.vector(heads);
            p.vector(heads);
            if m.gated_norm {
                p.vector(inner);
            }
            MixerShape::Mamba {
                inner,
                heads,
                conv_channels: conv,
                d_conv: k,
                d_state: n,
                version: m.version,
                chunk: f64::from(m.chunk_size.max(1)),
            }
        }
    };
    p.mat(inner, h);
    p.bias(m.bias, h);
    (shape, p)
}

fn delta_net(g: &GatedDeltaNet, d: &Defaults) -> (MixerShape, Part) {
    let h = d.hidden;
    let (kh, vh) = (
        f64::from(g.key_heads.max(1)),
        f64::from(g.value_heads.max(1)),
    );
    let (dk, dv) = (
        f64::from(g.key_head_dim.max(1)),
        f64::from(g.value_head_dim.max(1)),
    );
    let (kd, vd) = (kh * dk, vh * dv);
    let kernel = f64::from(g.conv_kernel.max(1));
    let mut p = Part::default();
    p.mat(h, 2.0 * kd + 2.0 * vd);
    p.mat(h, 2.0 * vh);
    p.other += (2.0 * kd + vd) * kernel;
    p.tensors += 1.0;
    p.vector(vh);
    p.vector(vh);
    p.vector(dv);
    p.mat(vd, h);
    let shape = MixerShape::DeltaNet {
        key_dim: kd,
        value_dim: vd,
        value_heads: vh,
        key_head_dim: dk,
        value_head_dim: dv,
        conv_kernel: kernel,
    };
    (shape, p)
}

/// One MLP of width `f`: two matrices, or three when gated; biases on each when `bias`.
fn one_mlp(p: &mut Part, h: f64, f: f64, kind: FfnKind, bias: bool) {
    let gated = kind == FfnKind::SwiGlu;
    p.mat(h, f);
    p.bias(bias, f);
    if gated {
        p.mat(h, f);
        p.bias(bias, f);
    }
    p.mat(f, h);
    p.bias(bias, h);
}

/// The experts of one MoE layer: (routed part, shared part incl. router and gate).
fn moe_parts(moe: &MoeSpec, shape: &MoeShape, d: &Defaults) -> (Part, Part) {
    let h = d.hidden;
    let f = f64::from(shape.ffn.max(1));
    let mut one = Part::default();
    one_mlp(&mut one, h, f, d.ffn_kind, moe.expert_bias);
    let e = f64::from(shape.experts);
    let routed = Part {
        w: one.w * e,
        b: one.b * e,
        other: 0.0,
        tensors: one.tensors * e,
        largest: one.largest,
    };
    let mut shared = Part::default();
    shared.mat(h, e);
    shared.bias(moe.router_bias, e);
    let sf = f64::from(shape.shared_ffn.max(1));
    for _ in 0..shape.shared.min(64) {
        one_mlp(&mut shared, h, sf, d.ffn_kind, moe.expert_bias);
    }
    if shape.shared > 64 {
        let mut one_shared = Part::default();
        one_mlp(&mut one_shared, h, sf, d.ffn_kind, moe.expert_bias);
        let more = f64::from(shape.shared - 64);
        shared.w += one_shared.w * more;
        shared.b += one_shared.b * more;
        shared.tensors += one_shared.tensors * more;
    }
    if shape.shared_gate {
        shared.mat(h, 1.0);
    }
    (routed, shared)
}

/// One layer kind from a pattern run (whose numbers are in range).
pub fn layer_kind(run: &LayerRun, moe: &MoeSpec, shape: &MoeShape, d: &Defaults) -> LayerKind {
    let (mixer, mp) = match &run.mixer {
        Mixer::Attention(a) => attention(a, d),
        Mixer::Mla(m) => mla(m, d),
        Mixer::Mamba(m) => mamba(m, d),
        Mixer::GatedDeltaNet(g) => delta_net(g, d),
        Mixer::None => (MixerShape::Empty, Part::default()),
    };
    let mut mlp_part = Part::default();
    let mut idle_w = 0.0;
    let mut routed_w = 0.0;
    let (mlp, routed, inactive) = match &run.mlp {
        Mlp::Dense(DenseMlp { ffn, kind, bias }) => {
            let f = or(*ffn, d.ffn);
            let kind = kind.unwrap_or(d.ffn_kind);
            one_mlp(&mut mlp_part, d.hidden, f, kind, *bias);
            (MlpShape::Dense { ffn: f, kind }, 0.0, 0.0)
        }
        Mlp::Moe if shape.experts > 0 => {
            let (routed, shared) = moe_parts(moe, shape, d);
            let e = f64::from(shape.experts);
            let idle = routed.total() * (e - f64::from(shape.top_k)).max(0.0) / e;
            idle_w = routed.w * (e - f64::from(shape.top_k)).max(0.0) / e;
            routed_w = routed.w;
            mlp_part = Part {
                w: routed.w + shared.w,
                b: routed.b + shared.b,
                other: 0.0,
                tensors: routed.tensors + shared.tensors,
                largest: routed.largest.max(shared.largest),
            };
            (MlpShape::Moe, routed.total(), idle)
        }
        // A mixture with no experts configured is a dense MLP of the model's width.
        Mlp::Moe => {
            let f = f64::from(d.ffn.max(1));
            one_mlp(&mut mlp_part, d.hidden, f, d.ffn_kind, false);
            (
                MlpShape::Dense {
                    ffn: f,
                    kind: d.ffn_kind,
                },
                0.0,
                0.0,
            )
        }
        Mlp::None => (MlpShape::None, 0.0, 0.0),
    };
    let default_norms = if mlp == MlpShape::None { 1 } else { 2 };
    let norms = f64::from(if run.norms > 0 {
        run.norms
    } else {
        default_norms
    });
    let norm_p = norms * d.norm_params();
    let (replicated_w, replicated_other) = replicated_params(&mixer, &run.mlp, shape, moe, d);
    LayerKind {
        count: run.count,
        mixer,
        mlp,
        norms,
        params: mp.total() + mlp_part.total() + norm_p,
        routed,
        routed_w,
        inactive,
        matmul_w: mp.w + mlp_part.w,
        matmul_b: mp.b + mlp_part.b,
        autocast_w: mp.w + mlp_part.w - routed_w + conv_weights(&mixer),
        mixer_w: mp.w,
        mlp_active_w: mlp_part.w - idle_w,
        tensors: mp.tensors + mlp_part.tensors + norms * d.norm_tensors(),
        largest: mp.largest.max(mlp_part.largest),
        replicated: norm_p + replicated_w + replicated_other,
        replicated_w,
    }
}

/// A layer's parameters that tensor parallelism does not split, as (matrix weights, the rest
/// beside the layer norms): a latent attention's down projections `q_a` (h × q_lora) and `kv_a`
/// (h × (kv_lora + rope)) with their latent RMSNorms (vLLM 0.34
/// `model_executor/models/deepseek_v2.py`: `ReplicatedLinear` / `MergedReplicatedLinear`;
/// Megatron-Core `MLASelfAttention`'s down projections are `parallel_mode="duplicated"`); per-head
/// q/k norms (head dim each); a mixture's router (h × E, its bias; vLLM's `gate` is a
/// `ReplicatedLinear`, Megatron-Core's `TopKRouter` weight is not split) and a shared-expert gate
/// (h × 1). Row-parallel output biases, also whole on every rank, are left out (h each).
fn replicated_params(
    mixer: &MixerShape,
    mlp: &Mlp,
    shape: &MoeShape,
    moe: &MoeSpec,
    d: &Defaults,
) -> (f64, f64) {
    let h = d.hidden;
    let (mut w, mut other) = match *mixer {
        MixerShape::Mla(s) => (h * s.q_lora + h * s.kv_latent_width(), s.q_lora + s.kv_lora),
        MixerShape::Attention {
            head_dim,
            qk_norm: true,
            ..
        } => (0.0, 2.0 * head_dim),
        _ => (0.0, 0.0),
    };
    if matches!(mlp, Mlp::Moe) && shape.experts > 0 {
        let e = f64::from(shape.experts);
        w += h * e + if shape.shared_gate { h } else { 0.0 };
        other += if moe.router_bias { e } else { 0.0 };
    }
    (w, other)
}

/// A recurrent mixer's depthwise convolution weight (channels × width; `conv1d`, which autocast
/// casts like a matrix weight).
pub fn conv_weights(mixer: &MixerShape) -> f64 {
    match *mixer {
        MixerShape::Mamba {
            conv_channels,
            d_conv,
            ..
        } => conv_channels * d_conv,
        MixerShape::DeltaNet {
            key_dim,
            value_dim,
            conv_kernel,
            ..
        } => (2.0 * key_dim + value_dim) * conv_kernel,
        _ => 0.0,
    }
}

/// The layer kinds of a pattern (numbers in range), merged, with counts.
pub fn from_pattern(
    pattern: &[PatternPart],
    moe: &MoeSpec,
    shape: &MoeShape,
    d: &Defaults,
) -> Blocks {
    let mut blocks = Blocks::default();
    for part in pattern {
        let mut order = super::layer_order::PartOrder::new(part.repeat);
        for run in &part.layers {
            let kind = layer_kind(run, moe, shape, d);
            let i = blocks.add(kind, run.count.saturating_mul(part.repeat));
            order.run(&mut blocks.order, i, run.count);
        }
        order.end(&mut blocks.order);
    }
    blocks
}
