//! The model families of a Hugging Face `config.json` ([`super::hf_config`]): each reads its own keys
//! (names from the `transformers` configuration class of the family) into transformer dimensions.

use super::hf_config::{Reader, echo_json};
use crate::scenario::{ArchKind, FfnKind, NormKind, PositionKind, TransformerDims};

/// LLaMA, Mistral, Qwen2: gated MLP (3 matrices), RMSNorm, rotary, no biases except Qwen2's q/k/v.
pub(super) fn llama_like(
    r: &mut Reader,
    model_type: &str,
    notes: &mut Vec<String>,
) -> TransformerDims {
    let hidden = r.required("hidden_size");
    let heads = r.required("num_attention_heads");
    let kv_heads = r.count("num_key_value_heads").unwrap_or(heads);
    let head_dim = r.count("head_dim").unwrap_or(0);
    let layers = r.required("num_hidden_layers");
    let act = r.text("hidden_act").unwrap_or("silu");
    if act != "silu" {
        notes.push(format!(
            "Gated MLP with `{act}` activation, counted as SwiGLU (same shapes)"
        ));
    }
    let attention_bias = r.flag("attention_bias", false);
    let mlp_bias = r.flag("mlp_bias", false);
    if attention_bias != mlp_bias {
        r.problems.push(format!(
            "`attention_bias` = {attention_bias} with `mlp_bias` = {mlp_bias}: biases on only part \
             of the projections are not understood"
        ));
    }
    if model_type == "qwen2" {
        let d = if head_dim > 0 {
            head_dim
        } else {
            hidden / heads.max(1)
        };
        // Saturating: u32::MAX layers and heads must not overflow (they are then refused by range).
        let extra = u64::from(layers)
            .saturating_mul(u64::from(d))
            .saturating_mul(u64::from(heads).saturating_add(2 * u64::from(kv_heads)));
        notes.push(format!(
            "Qwen2's q/k/v projection biases ({extra} parameters) are not counted: the scenario has \
             no bias on q/k/v alone"
        ));
    }
    if let Some(w) = r
        .get("sliding_window")
        .filter(|_| matches!(model_type, "mistral" | "mixtral"))
    {
        notes.push(format!(
            "Sliding-window attention ({} tokens) is ignored: the KV cache is counted at full length",
            echo_json(w)
        ));
    }
    TransformerDims {
        arch: ArchKind::Decoder,
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn: r.required("intermediate_size"),
        ffn_kind: FfnKind::SwiGlu,
        vocab: r.required("vocab_size"),
        tied_embeddings: r.flag("tie_word_embeddings", false),
        positions: PositionKind::Rotary,
        max_positions: r.count("max_position_embeddings").unwrap_or(4096),
        token_types: 0,
        bias: attention_bias && mlp_bias,
        norm: NormKind::RmsNorm,
        mlm_head: false,
        pooler: false,
        gelu_tanh: false,
        fused_qkv: false,
        // transformers' eager LLaMA/Mistral/Qwen2 attention: softmax(..., dtype=torch.float32).
        softmax_fp32: true,
    }
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
pub(super) fn bert(r: &mut Reader, notes: &mut Vec<String>) -> TransformerDims {
    notes.push(
        "Imported as the base encoder with its pooler (as `BertModel` counts it); turn on the MLM \
         head for masked-LM training"
            .to_owned(),
    );
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
        mlm_head: false,
        pooler: true,
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
