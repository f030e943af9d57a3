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

use super::{ImportError, hf_families};
use crate::presets::text::echo;
use crate::scenario::{ModelFamily, ModelSpec, MoeSpec, ShapeSource, TransformerDims};

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
pub(super) struct Reader<'a> {
    obj: &'a Map<String, Value>,
    used: Vec<&'static str>,
    pub(super) problems: Vec<String>,
}

impl<'a> Reader<'a> {
    pub(super) fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.push(key);
        self.obj.get(key).filter(|v| !v.is_null())
    }

    /// A positive integer that fits in u32.
    pub(super) fn count(&mut self, key: &'static str) -> Option<u32> {
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

    pub(super) fn required(&mut self, key: &'static str) -> u32 {
        if self.obj.get(key).is_none_or(Value::is_null) {
            self.problems.push(format!("`{key}` is missing"));
            self.used.push(key);
            return 0;
        }
        self.count(key).unwrap_or(0)
    }

    pub(super) fn flag(&mut self, key: &'static str, default: bool) -> bool {
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

    pub(super) fn text(&mut self, key: &'static str) -> Option<&'a str> {
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
    unsupported_keys(&mut r, mixtral);
    let mut notes = Vec::new();
    let dims = match model_type.as_str() {
        "llama" | "mistral" | "qwen2" | "mixtral" => {
            hf_families::llama_like(&mut r, &model_type, &mut notes)
        }
        "gpt2" => hf_families::gpt2(&mut r),
        "bert" | "roberta" => hf_families::bert(&mut r, &mut notes),
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
    ignored_notes(&r, &mut notes);
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

/// Keys whose meaning the estimator does not model: each one is a problem, never a silent default.
fn unsupported_keys(r: &mut Reader<'_>, mixtral: bool) {
    for (key, what) in UNSUPPORTED_KEYS {
        if mixtral && MIXTRAL_KEYS.contains(&key) {
            continue;
        }
        if let Some(v) = r.obj.get(key).filter(|v| !v.is_null()) {
            r.problems.push(format!(
                "`{key}` = {}: {what} is not understood",
                echo_json(v)
            ));
        }
    }
}

/// Notes on keys that were read by nothing (listed) and on a quantized checkpoint.
fn ignored_notes(r: &Reader<'_>, notes: &mut Vec<String>) {
    let mut ignored: Vec<&str> = r
        .obj
        .keys()
        .map(String::as_str)
        .filter(|k| !r.used.contains(k) && !IRRELEVANT_KEYS.contains(k))
        .collect();
    ignored.sort_unstable();
    if !ignored.is_empty() {
        notes.push(ignored_note(&ignored));
    }
    if r.obj.contains_key("quantization_config") {
        notes.push(
            "The checkpoint is quantized (`quantization_config`): set the weight precision by hand"
                .to_owned(),
        );
    }
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

/// A JSON value echoed in a message: one line, long values elided.
pub(super) fn echo_json(v: &Value) -> String {
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
