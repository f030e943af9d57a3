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

use serde_json::Value;

use super::hf_keys::UNSUPPORTED_KEYS;
pub(super) use super::hf_reader::{Reader, echo_json};
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
    /// A 4-bit bitsandbytes config's data type, compute dtype and double quantization.
    pub bitsandbytes: Option<hf_quant::BnbLoad>,
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
        if let Some(b) = &self.bitsandbytes {
            b.apply(
                &mut s.implementation.hf.bitsandbytes,
                &mut s.peft.double_quant,
            );
        }
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
    if model_type == "qwen2_5_vl_text" {
        // Transformers 5.25 maps qwen2_5_vl_text to `Qwen2_5_VLTextModel` only (no LM head): its
        // count is the decoder alone; the scenario's head is tied (adds no parameters).
        out.t.tied_embeddings = true;
        out.notes.push(
            "qwen2_5_vl_text is counted as `Qwen2_5_VLTextModel` (no LM head, the only class \
             Transformers maps it to); the scenario's LM head is tied to the embedding"
                .to_owned(),
        );
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
        bitsandbytes: precision.bitsandbytes,
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
