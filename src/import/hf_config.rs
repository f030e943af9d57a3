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

use super::{ImportError, hf_pattern, hf_quant, hf_route};
use crate::presets::text::echo;
use crate::scenario::{
    Dtype, LayerRun, Mode, ModelFamily, ModelSpec, MoeSpec, Quantization, Scenario, ShapeSource,
    Tower, TransformerDims,
};

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
    /// `torch_dtype` / `dtype` of the checkpoint.
    pub dtype: Option<Dtype>,
    /// `quantization_config`, where the scenario has a matching weight format.
    pub quantization: Option<Quantization>,
    /// Multi-token-prediction layers in the checkpoint that the Transformers class does not build
    /// (DeepSeek-V3 / GLM-4.5 `num_nextn_predict_layers`): not counted.
    pub mtp_layers: u32,
    /// A vision tower is part of the model (and of its parameter count).
    pub vision: bool,
}

impl ImportedConfig {
    /// Puts the import into a scenario: the model; the checkpoint's dtype as the weights' type of an
    /// inference scenario; the quantized weight format.
    pub fn apply(&self, s: &mut Scenario) {
        s.model = self.model.clone();
        if let Some(dtype) = self.dtype.filter(|_| s.mode == Mode::Inference) {
            s.precision.weights = dtype;
        }
        if let Some(q) = &self.quantization {
            s.quantization = q.clone();
        }
    }
}

/// Keys that mean a structure: refused, naming it, when the family of the file did not read them.
const UNSUPPORTED_KEYS: [(&str, &str); 22] = [
    ("num_local_experts", "mixture of experts"),
    ("num_experts", "mixture of experts"),
    ("n_routed_experts", "mixture of experts"),
    ("num_experts_per_tok", "mixture of experts"),
    ("moe_intermediate_size", "mixture of experts"),
    ("shared_expert_intermediate_size", "shared experts"),
    ("n_shared_experts", "shared experts"),
    ("first_k_dense_replace", "dense layers before the experts"),
    ("decoder_sparse_step", "MoE layer frequency"),
    ("mlp_only_layers", "dense layers among the experts"),
    ("interleave_moe_layer_step", "MoE layer frequency"),
    ("q_lora_rank", "low-rank attention (MLA)"),
    ("kv_lora_rank", "low-rank attention (MLA)"),
    ("layer_types", "per-layer attention types"),
    ("sliding_window_pattern", "a local/global layer pattern"),
    ("hybrid_override_pattern", "a hybrid layer pattern"),
    ("attn_layer_period", "a hybrid layer pattern"),
    ("attention_chunk_size", "chunked attention"),
    ("no_rope_layers", "layers without RoPE"),
    ("text_config", "a multimodal model (nested text config)"),
    ("vision_config", "a multimodal model (vision tower)"),
    ("is_encoder_decoder", "an encoder-decoder model"),
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

    /// A reader over a nested object (`text_config`, `vision_config`).
    pub(super) fn new(obj: &'a Map<String, Value>) -> Self {
        Reader {
            obj,
            used: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// A positive integer, or the configuration class's default when absent or null.
    pub(super) fn or(&mut self, key: &'static str, default: u32) -> u32 {
        self.count(key).unwrap_or(default)
    }

    /// A non-negative integer (0 allowed: `first_k_dense_replace`, `q_lora_rank` absent), or `default`.
    pub(super) fn zero_or(&mut self, key: &'static str, default: u32) -> u32 {
        let Some(v) = self.get(key) else {
            return default;
        };
        match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                self.problems.push(format!(
                    "`{key}` = {} is not a non-negative integer",
                    echo_json(v)
                ));
                default
            }
        }
    }

    /// A list of strings (`layer_types`); None when absent. At most `max` entries.
    pub(super) fn strings(&mut self, key: &'static str, max: usize) -> Option<Vec<&'a str>> {
        let v = self.get(key)?;
        let list = v
            .as_array()
            .filter(|a| a.len() <= max)
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<&str>>>());
        if list.is_none() {
            self.problems.push(format!(
                "`{key}` = {} is not a list of at most {max} strings",
                echo_json(v)
            ));
        }
        list
    }

    /// A list of non-negative integers (`mlp_only_layers`, `no_rope_layers`); empty when absent.
    pub(super) fn integers(&mut self, key: &'static str, max: usize) -> Vec<u32> {
        let Some(v) = self.get(key) else {
            return Vec::new();
        };
        let list = v.as_array().filter(|a| a.len() <= max).and_then(|a| {
            a.iter()
                .map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect::<Option<Vec<u32>>>()
        });
        list.unwrap_or_else(|| {
            self.problems.push(format!(
                "`{key}` = {} is not a list of at most {max} non-negative integers",
                echo_json(v)
            ));
            Vec::new()
        })
    }

    /// A nested object; None when absent.
    pub(super) fn object(&mut self, key: &'static str) -> Option<&'a Map<String, Value>> {
        let v = self.get(key)?;
        let o = v.as_object();
        if o.is_none() {
            self.problems
                .push(format!("`{key}` = {} is not an object", echo_json(v)));
        }
        o
    }

    /// Marks keys as read (they change no parameter nor memory the import models).
    pub(super) fn skip(&mut self, keys: &[&'static str]) {
        self.used.extend_from_slice(keys);
    }

    /// The key is present with a null value (marked as read).
    pub(super) fn is_null(&mut self, key: &'static str) -> bool {
        self.used.push(key);
        self.obj.get(key).is_some_and(Value::is_null)
    }

    /// A value is present and not null.
    pub(super) fn has(&self, key: &str) -> bool {
        self.obj.get(key).is_some_and(|v| !v.is_null())
    }

    /// "Ignored keys (in `where`): …" for keys no family read, if any.
    pub(super) fn ignored(&self, place: &str) -> Option<String> {
        let mut ignored: Vec<&str> = self
            .obj
            .keys()
            .map(String::as_str)
            .filter(|k| !self.used.contains(k) && !IRRELEVANT_KEYS.contains(k))
            .filter(|k| !super::hf_keys::IRRELEVANT.contains(k))
            .collect();
        ignored.sort_unstable();
        (!ignored.is_empty()).then(|| ignored_note(&ignored, place))
    }
}

/// Parses a config.json and returns `base` with its transformer (and layer pattern, towers, MoE)
/// replaced. Nothing is returned half-done: any problem is an error listing every key that was not
/// understood.
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
    let mut r = Reader::new(obj);
    let model_type = r.text("model_type").unwrap_or("").to_owned();
    let mut out = Built::default();
    if model_type.is_empty() {
        r.problems.push("`model_type` is missing".to_owned());
    } else if !hf_route::build(&mut r, &model_type, &mut out) {
        r.problems.push(format!(
            "model_type \"{}\" is not understood (supported: {})",
            echo(&model_type),
            hf_route::SUPPORTED.join(", ")
        ));
    }
    let precision = hf_quant::read(&mut r, &mut out.notes);
    unsupported_keys(&mut r);
    check_shape(&out.t, &mut r.problems);
    if !r.problems.is_empty() {
        return Err(ImportError::new(format!(
            "config.json not understood: {}",
            r.problems.join("; ")
        )));
    }
    out.notes.extend(r.ignored(""));
    let model = ModelSpec {
        family: ModelFamily::Transformer,
        shape: ShapeSource::Dimensions,
        transformer: out.t,
        moe: out.moe,
        pattern: hf_pattern::compress(&out.layers),
        towers: out.towers,
        ..base.clone()
    };
    super::check_model(&model, &["model.transformer.", "model.moe."], "config.json")?;
    Ok(ImportedConfig {
        model,
        model_type,
        notes: out.notes,
        dtype: precision.dtype,
        quantization: precision.quantization,
        mtp_layers: out.mtp_layers,
        vision: out.vision,
    })
}

/// What a family builds: the dimensions (the reference and defaults of the pattern), the
/// per-layer runs (empty = the flat model), towers, notes.
#[derive(Default)]
pub(super) struct Built {
    pub t: TransformerDims,
    pub moe: MoeSpec,
    /// One entry per layer (count 1), compressed into the pattern afterwards.
    pub layers: Vec<LayerRun>,
    pub towers: Vec<Tower>,
    pub notes: Vec<String>,
    /// `num_nextn_predict_layers`: multi-token-prediction layers the checkpoint has and the
    /// Transformers class does not build (not counted).
    pub mtp_layers: u32,
    /// A vision tower is included.
    pub vision: bool,
}

/// Keys whose meaning no family read: each one is a problem, never a silent default.
fn unsupported_keys(r: &mut Reader<'_>) {
    for (key, what) in UNSUPPORTED_KEYS {
        if r.used.contains(&key) {
            continue;
        }
        if let Some(v) = r.obj.get(key).filter(|v| !v.is_null()) {
            r.problems.push(format!(
                "`{key}` = {}: {what} is not understood for this model_type",
                echo_json(v)
            ));
        }
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
fn ignored_note(keys: &[&str], place: &str) -> String {
    const NAMED: usize = 20;
    let named: Vec<String> = keys.iter().take(NAMED).map(|k| echo(k)).collect();
    let more = keys.len().saturating_sub(NAMED);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("Ignored keys{place}: {}{tail}", named.join(", "))
}
