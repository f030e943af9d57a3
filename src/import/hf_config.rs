//! Hugging Face `config.json` → transformer dimensions. Pure: the caller reads the file.
//!
//! Understood shapes (key names from the `transformers` configuration classes of each family):
//! LLaMA, Mistral and Qwen2 (`LlamaConfig`, `MistralConfig`, `Qwen2Config`: gated SiLU MLP, RMSNorm,
//! rotary positions, GQA), GPT-2 (`GPT2Config`: `n_embd`, `n_layer`, `n_head`, `n_inner`, learned
//! positions, fused `c_attn`, `gelu_new`, tied head) and BERT / RoBERTa (`BertConfig`: post-LN encoder,
//! token types; imported as the base model with its pooler, as `BertModel` counts it) and Mixtral
//! (`MixtralConfig`: the LLaMA layout with `num_local_experts` experts of `intermediate_size`, top
//! `num_experts_per_tok`, a bias-free router). Other mixture-of-experts layouts (shared experts,
//! `moe_intermediate_size`) are refused by name.
//!
//! Bounded: at most [`MAX_CONFIG_BYTES`], JSON nesting within `serde_json`'s recursion limit (128
//! levels), linear-time key checks; counts are `u32` with saturating arithmetic, and the model made
//! passes the scenario format's range checks (`scenario::validate`) or is refused naming the fields.

use serde_json::{Map, Value};

use super::ImportError;
use crate::presets::text::echo;
use crate::scenario::{
    ArchKind, FfnKind, ModelFamily, ModelSpec, MoeSpec, NormKind, PositionKind, ShapeSource,
    TransformerDims,
};

/// Mixtral's expert keys, understood for `model_type = "mixtral"` only.
const MIXTRAL_KEYS: [&str; 2] = ["num_local_experts", "num_experts_per_tok"];

/// Largest config.json accepted (real ones are a few kB).
pub const MAX_CONFIG_BYTES: usize = 4 << 20;

/// A config.json turned into a model, with what was approximated or ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedConfig {
    /// The base model with the family, shape source and transformer dimensions replaced.
    pub model: ModelSpec,
    /// `model_type` of the file (e.g. "llama").
    pub model_type: String,
    /// Facts the import could not express exactly, for the user to read.
    pub notes: Vec<String>,
}

/// Keys that mean a structure the scenario cannot describe: refused, never guessed.
const UNSUPPORTED_KEYS: [(&str, &str); 9] = [
    ("num_local_experts", "mixture of experts"),
    ("num_experts", "mixture of experts"),
    ("n_routed_experts", "mixture of experts"),
    ("num_experts_per_tok", "mixture of experts"),
    ("moe_intermediate_size", "mixture of experts"),
    ("q_lora_rank", "low-rank attention (MLA)"),
    ("kv_lora_rank", "low-rank attention (MLA)"),
    ("text_config", "a multimodal model (nested text config)"),
    ("vision_config", "a multimodal model (vision tower)"),
];

/// Keys that do not change parameter count or memory (training hyper-parameters, token ids,
/// metadata) — skipped silently.
const IRRELEVANT_KEYS: [&str; 47] = [
    "_name_or_path",
    "architectures",
    "attention_dropout",
    "attention_probs_dropout_prob",
    "attn_pdrop",
    "bos_token_id",
    "classifier_dropout",
    "embd_pdrop",
    "eos_token_id",
    "gradient_checkpointing",
    "hidden_dropout_prob",
    "id2label",
    "initializer_range",
    "label2id",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "model_type",
    "n_ctx",
    "pad_token_id",
    "position_embedding_type",
    "pretraining_tp",
    "problem_type",
    "resid_pdrop",
    "rms_norm_eps",
    "rope_scaling",
    "rope_theta",
    "scale_attn_by_inverse_layer_idx",
    "reorder_and_upcast_attn",
    "scale_attn_weights",
    "summary_activation",
    "summary_first_dropout",
    "summary_proj_to_labels",
    "summary_type",
    "summary_use_proj",
    "task_specific_params",
    "torch_dtype",
    "dtype",
    "transformers_version",
    "use_cache",
    "use_sliding_window",
    "max_window_layers",
    "tokenizer_class",
    "return_dict",
    "output_past",
    "output_router_logits",
    "router_aux_loss_coef",
    "router_jitter_noise",
];

/// Reads typed fields and collects every problem, so one message names all of them.
struct Reader<'a> {
    obj: &'a Map<String, Value>,
    used: Vec<&'static str>,
    problems: Vec<String>,
}

impl<'a> Reader<'a> {
    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.push(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// A positive integer that fits in u32.
    fn count(&mut self, key: &'static str) -> Option<u32> {
        let v = self.get(key)?;
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => Some(n),
            None => {
                self.problems.push(format!(
                    "`{key}` = {} is not a positive integer",
                    echo_json(v)
                ));
                None
            }
        }
    }

    fn required(&mut self, key: &'static str) -> u32 {
        if self.obj.get(key).is_none_or(Value::is_null) {
            self.problems.push(format!("`{key}` is missing"));
            self.used.push(key);
            return 0;
        }
        self.count(key).unwrap_or(0)
    }

    fn flag(&mut self, key: &'static str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                self.problems
                    .push(format!("`{key}` = {} is not true or false", echo_json(v)));
                default
            }
        }
    }

    fn text(&mut self, key: &'static str) -> Option<&'a str> {
        self.get(key).and_then(Value::as_str)
    }
}

/// Parses a config.json and returns `base` with its transformer replaced. Nothing is returned
/// half-done: any problem is an error listing every key that was not understood.
pub fn from_hf_config(json: &str, base: &ModelSpec) -> Result<ImportedConfig, ImportError> {
    if json.len() > MAX_CONFIG_BYTES {
        return Err(ImportError::new(format!(
            "config.json is {} bytes, more than the {} accepted",
            json.len(),
            MAX_CONFIG_BYTES
        )));
    }
    let value: Value = serde_json::from_str(json)
        .map_err(|e| ImportError::new(format!("config.json is not valid JSON: {e}")))?;
    let Value::Object(obj) = &value else {
        return Err(ImportError::new("config.json is not a JSON object"));
    };
    let mut r = Reader {
        obj,
        used: Vec::new(),
        problems: Vec::new(),
    };
    let model_type = r.text("model_type").unwrap_or("").to_owned();
    let mixtral = model_type == "mixtral";
    for (key, what) in UNSUPPORTED_KEYS {
        if mixtral && MIXTRAL_KEYS.contains(&key) {
            continue;
        }
        if let Some(v) = obj.get(key).filter(|v| !v.is_null()) {
            r.problems.push(format!(
                "`{key}` = {}: {what} is not understood",
                echo_json(v)
            ));
        }
    }
    let mut notes = Vec::new();
    let dims = match model_type.as_str() {
        "llama" | "mistral" | "qwen2" | "mixtral" => llama_like(&mut r, &model_type, &mut notes),
        "gpt2" => gpt2(&mut r),
        "bert" | "roberta" => bert(&mut r, &mut notes),
        "" => {
            r.problems.push("`model_type` is missing".to_owned());
            TransformerDims::default()
        }
        other => {
            r.problems.push(format!(
                "model_type \"{}\" is not understood (supported: llama, mistral, mixtral, qwen2, \
                 gpt2, bert, roberta)",
                echo(other)
            ));
            TransformerDims::default()
        }
    };
    let moe = if mixtral {
        MoeSpec {
            experts: r.required("num_local_experts"),
            top_k: r.required("num_experts_per_tok"),
            ..MoeSpec::default()
        }
    } else {
        MoeSpec::default()
    };
    check_shape(&dims, &mut r.problems);
    if !r.problems.is_empty() {
        return Err(ImportError::new(format!(
            "config.json not understood: {}",
            r.problems.join("; ")
        )));
    }
    let mut ignored: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !r.used.contains(k) && !IRRELEVANT_KEYS.contains(k))
        .collect();
    ignored.sort_unstable();
    if !ignored.is_empty() {
        notes.push(ignored_note(&ignored));
    }
    if obj.contains_key("quantization_config") {
        notes.push(
            "The checkpoint is quantized (`quantization_config`): set the weight precision by hand"
                .to_owned(),
        );
    }
    let model = ModelSpec {
        family: ModelFamily::Transformer,
        shape: ShapeSource::Dimensions,
        transformer: dims,
        moe,
        ..base.clone()
    };
    super::check_model(&model, &["model.transformer.", "model.moe."], "config.json")?;
    Ok(ImportedConfig {
        model,
        model_type,
        notes,
    })
}

fn check_shape(t: &TransformerDims, problems: &mut Vec<String>) {
    if problems.is_empty() {
        if t.heads > 0 && t.head_dim == 0 && !t.hidden.is_multiple_of(t.heads) {
            problems.push(format!(
                "hidden size {} is not a multiple of {} heads (and no `head_dim`)",
                t.hidden, t.heads
            ));
        }
        if t.kv_heads > t.heads || (t.kv_heads > 0 && !t.heads.is_multiple_of(t.kv_heads)) {
            problems.push(format!(
                "{} key/value heads do not divide {} attention heads",
                t.kv_heads, t.heads
            ));
        }
    }
}

/// LLaMA, Mistral, Qwen2: gated MLP (3 matrices), RMSNorm, rotary, no biases except Qwen2's q/k/v.
fn llama_like(r: &mut Reader, model_type: &str, notes: &mut Vec<String>) -> TransformerDims {
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
fn gpt2(r: &mut Reader) -> TransformerDims {
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
fn bert(r: &mut Reader, notes: &mut Vec<String>) -> TransformerDims {
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

/// A JSON value echoed in a message: one line, long values elided.
fn echo_json(v: &Value) -> String {
    echo(&v.to_string())
}

/// "Ignored keys: a, b, c" with each key echoed safely, the first 20 named and the rest counted.
fn ignored_note(keys: &[&str]) -> String {
    const NAMED: usize = 20;
    let named: Vec<String> = keys.iter().take(NAMED).map(|k| echo(k)).collect();
    let more = keys.len().saturating_sub(NAMED);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("Ignored keys: {}{tail}", named.join(", "))
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
