//! The model families of a Hugging Face `config.json` ([`super::hf_config`]): each reads its own keys
//! (names from the `transformers` configuration class of the family) into transformer dimensions.

use super::hf_config::{Built, Reader};
use crate::presets::text::echo;
use crate::scenario::{
    ArchKind, Attention, DenseMlp, FfnKind, LayerRun, Mixer, Mlp, NormKind, PositionKind,
    TransformerDims,
};

/// Defaults of a Transformers configuration class (used where the file omits a key, as the class
/// does).
pub(super) struct Class {
    pub hidden: u32,
    pub heads: u32,
    /// 0 = as many as heads.
    pub kv_heads: u32,
    /// 0 = hidden ÷ heads.
    pub head_dim: u32,
    pub ffn: u32,
    pub vocab: u32,
    pub layers: u32,
    pub tied: bool,
}

/// The common decoder dimensions of a file.
#[derive(Clone, Copy)]
pub(super) struct Base {
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub ffn: u32,
    pub layers: u32,
}

/// Reads the common decoder keys with the class's defaults into `out.t` (RMSNorm, rotary, gated
/// MLP, decoder) and returns them.
pub(super) fn base(r: &mut Reader, c: &Class, out: &mut Built) -> Base {
    let hidden = r.or("hidden_size", c.hidden);
    let heads = r.or("num_attention_heads", c.heads);
    let kv_heads = r.or(
        "num_key_value_heads",
        if c.kv_heads > 0 { c.kv_heads } else { heads },
    );
    let derived = c.head_dim == 0 && !r.has("head_dim");
    if derived && !hidden.is_multiple_of(heads.max(1)) {
        r.problems.push(format!(
            "hidden size {hidden} is not a multiple of {heads} heads (and no `head_dim`)"
        ));
    }
    let head_dim = r.or(
        "head_dim",
        if c.head_dim > 0 {
            c.head_dim
        } else {
            hidden / heads.max(1)
        },
    );
    let b = Base {
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn: r.or("intermediate_size", c.ffn),
        layers: r.or("num_hidden_layers", c.layers),
    };
    out.t = TransformerDims {
        arch: ArchKind::Decoder,
        layers: b.layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn: b.ffn,
        ffn_kind: FfnKind::SwiGlu,
        vocab: r.or("vocab_size", c.vocab),
        tied_embeddings: r.flag("tie_word_embeddings", c.tied),
        positions: PositionKind::Rotary,
        max_positions: max_positions(r, out),
        token_types: 0,
        bias: false,
        norm: NormKind::RmsNorm,
        mlm_head: false,
        pooler: false,
        gelu_tanh: false,
        fused_qkv: false,
        // transformers' eager attention: softmax(..., dtype=torch.float32).
        softmax_fp32: true,
    };
    b
}

/// `max_position_embeddings` within the scenario's token bound (rotary positions have no
/// parameters: a larger value is clamped, with a note).
fn max_positions(r: &mut Reader, out: &mut Built) -> u32 {
    const MAX: u32 = 10_000_000;
    let n = r.or("max_position_embeddings", 4096);
    if n > MAX {
        out.notes.push(format!(
            "`max_position_embeddings` {n} is above the scenario's {MAX} tokens: set to {MAX} \
             (rotary positions, no parameters)"
        ));
    }
    n.min(MAX)
}

/// Attention with the file's heads, KV heads and head width.
pub(super) fn attention(b: &Base) -> Attention {
    Attention {
        heads: b.heads,
        kv_heads: b.kv_heads,
        head_dim: b.head_dim,
        ..Attention::default()
    }
}

/// A dense MLP `ffn` wide of the model's kind.
pub(super) fn dense(ffn: u32, bias: bool) -> Mlp {
    Mlp::Dense(DenseMlp {
        ffn,
        kind: None,
        bias,
    })
}

/// One layer.
pub(super) fn layer(mixer: Mixer, mlp: Mlp, norms: u32) -> LayerRun {
    LayerRun {
        count: 1,
        mixer,
        mlp,
        norms,
    }
}

/// The gated MLP's activation (`key`): SiLU or a GELU, same shapes (three matrices).
pub(super) fn gated_act(r: &mut Reader, key: &'static str, out: &mut Built) {
    let act = r.text(key).unwrap_or("silu");
    if !matches!(
        act,
        "silu" | "swish" | "gelu" | "gelu_pytorch_tanh" | "gelu_new"
    ) {
        r.problems.push(format!(
            "`{key}` = \"{}\": a gated MLP with this activation is not understood",
            echo(act)
        ));
    } else if act != "silu" && act != "swish" {
        out.notes.push(format!(
            "Gated MLP with `{act}`, counted with the SwiGLU shapes (three matrices)"
        ));
    }
}

/// Which layers use a sliding window: `layer_types` when given ("sliding_attention" /
/// "full_attention"), else `default(i)`. Wrong lengths and unknown kinds are problems.
pub(super) fn sliding_layers(
    r: &mut Reader,
    layers: u32,
    default: impl Fn(u32) -> bool,
) -> Vec<bool> {
    let n = layers as usize;
    match r.strings("layer_types", MAX_LAYERS) {
        Some(types) => {
            if types.len() != n {
                r.problems.push(format!(
                    "`layer_types` lists {} layers, `num_hidden_layers` is {layers}",
                    types.len()
                ));
            }
            let mut out = Vec::with_capacity(n);
            for t in types {
                match t {
                    "sliding_attention" => out.push(true),
                    "full_attention" => out.push(false),
                    other => r.problems.push(format!(
                        "`layer_types` entry \"{}\" is not understood for this model_type",
                        echo(other)
                    )),
                }
            }
            out
        }
        None => (0..layers).map(default).collect(),
    }
}

/// Most layers a config may list (the scenario's bound).
pub(super) const MAX_LAYERS: usize = 10_000;

/// Whether a per-layer list may be built: beyond the scenario's bound it is not (the layer count
/// in `model.transformer.layers` is then refused by the range check, naming the field).
pub(super) fn check_layers(_r: &mut Reader, layers: u32) -> bool {
    layers as usize <= MAX_LAYERS
}

/// GPT-2 (`GPT2LMHeadModel`): learned positions, LayerNorm, fused `c_attn`, GELU MLP of `n_inner`
/// (None → 4h), biases everywhere, LM head tied to the token embedding.
pub(super) fn gpt2(r: &mut Reader) -> TransformerDims {
    let hidden = r.required("n_embd");
    let act = r.text("activation_function").unwrap_or("gelu_new");
    TransformerDims {
        arch: ArchKind::Decoder,
        layers: r.required("n_layer"),
        hidden,
        heads: r.required("n_head"),
        kv_heads: 0,
        head_dim: 0,
        ffn: r.count("n_inner").unwrap_or(hidden.saturating_mul(4)),
        ffn_kind: FfnKind::Gelu,
        vocab: r.required("vocab_size"),
        tied_embeddings: r.flag("tie_word_embeddings", true),
        positions: PositionKind::Learned,
        max_positions: r.required("n_positions"),
        token_types: 0,
        bias: true,
        norm: NormKind::LayerNorm,
        mlm_head: false,
        pooler: false,
        gelu_tanh: matches!(act, "gelu_new" | "gelu_pytorch_tanh"),
        fused_qkv: true,
        softmax_fp32: false,
    }
    .with_mha()
}

/// BERT / RoBERTa base model (`BertModel`: embeddings + LayerNorm, post-LN layers, pooler).
/// The class is the one `architectures` names: `*ForMaskedLM` has the MLM head and no pooler,
/// anything else is counted as the base model with its pooler.
pub(super) fn bert(r: &mut Reader, notes: &mut Vec<String>) -> TransformerDims {
    let masked_lm = r
        .get("architectures")
        .and_then(|a| a.as_array())
        .and_then(|a| a.first())
        .and_then(|a| a.as_str())
        .is_some_and(|a| a.ends_with("ForMaskedLM"));
    notes.push(if masked_lm {
        "Imported with the masked-LM head and no pooler (as `architectures` names `*ForMaskedLM`)"
            .to_owned()
    } else {
        "Imported as the base encoder with its pooler (as `BertModel` counts it); turn on the MLM \
         head for masked-LM training"
            .to_owned()
    });
    let act = r.text("hidden_act").unwrap_or("gelu");
    TransformerDims {
        arch: ArchKind::Encoder,
        layers: r.required("num_hidden_layers"),
        hidden: r.required("hidden_size"),
        heads: r.required("num_attention_heads"),
        kv_heads: 0,
        head_dim: 0,
        ffn: r.required("intermediate_size"),
        ffn_kind: FfnKind::Gelu,
        vocab: r.required("vocab_size"),
        tied_embeddings: true,
        positions: PositionKind::Learned,
        max_positions: r.required("max_position_embeddings"),
        token_types: r.count("type_vocab_size").unwrap_or(2),
        bias: true,
        norm: NormKind::LayerNorm,
        mlm_head: masked_lm,
        pooler: !masked_lm,
        gelu_tanh: matches!(act, "gelu_new" | "gelu_pytorch_tanh"),
        fused_qkv: false,
        softmax_fp32: false,
    }
    .with_mha()
}

trait WithMha {
    fn with_mha(self) -> Self;
}

impl WithMha for TransformerDims {
    /// Multi-head attention: as many key/value heads as heads.
    fn with_mha(mut self) -> Self {
        self.kv_heads = self.heads;
        self
    }
}
