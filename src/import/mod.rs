//! Imports, offline (nothing is fetched): a Hugging Face `config.json` (a file, a model directory or
//! a Hub id in the local cache, [`source`]) gives the model as a layer pattern with its towers; `.safetensors` headers (one file, or a sharded index with its shards beside it) give the
//! exact parameter count by element type.
//!
//! Parsers are pure (`&str` / `&[u8]` in, a new value or an error out — never a half-applied change);
//! [`files`] does the reading, header bytes only. Every error names what was not understood.

pub mod files;
pub mod flow;
pub mod hf_config;
mod hf_decoders;
mod hf_encdec;
mod hf_families;
mod hf_keys;
mod hf_llama4;
mod hf_moe;
mod hf_multimodal;
mod hf_pattern;
mod hf_quant;
pub use hf_quant::BnbLoad;
mod hf_qwen3_next;
mod hf_reader;
pub mod hf_route;
mod hf_ssm;
pub mod safetensors;
pub mod source;

pub use hf_config::{ImportedConfig, from_hf_config};
pub use safetensors::{SafetensorsHeader, StDtype, TensorInfo, parse_file, parse_header};

use serde_json::Value;

use crate::presets::text::echo;

use std::collections::{HashMap, HashSet};

use crate::scenario::{Dtype, ModelFamily, ModelSpec, Scenario, ShapeSource, validate};

/// Why an import was refused. The message names what was not understood (and, from [`files`], the
/// path last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    pub message: String,
}

impl ImportError {
    pub fn new(message: impl Into<String>) -> Self {
        ImportError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImportError {}

/// Parameters of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtypeCount {
    pub dtype: StDtype,
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
}

/// Exact counts of a checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamSummary {
    pub tensors: u64,
    pub params: u64,
    pub bytes: u64,
    /// Ordered by element type.
    pub by_dtype: Vec<DtypeCount>,
    /// What the counts may not mean (quantized packing, index mismatches).
    pub notes: Vec<String>,
}

impl ParamSummary {
    /// Counts the tensors of one or more headers (sums saturate; [`ParamSummary::try_of`] refuses
    /// what does not fit in 64 bits instead).
    pub fn of<'a>(tensors: impl IntoIterator<Item = &'a TensorInfo>) -> Self {
        let mut s = ParamSummary::default();
        let mut packed = false;
        for t in tensors {
            let (params, bytes) = (t.numel, t.end.saturating_sub(t.begin));
            s.tensors = s.tensors.saturating_add(1);
            s.params = s.params.saturating_add(params);
            s.bytes = s.bytes.saturating_add(bytes);
            packed |= PACKED.iter().any(|p| t.name.contains(p));
            match s.by_dtype.iter_mut().find(|c| c.dtype == t.dtype) {
                Some(c) => {
                    c.tensors = c.tensors.saturating_add(1);
                    c.params = c.params.saturating_add(params);
                    c.bytes = c.bytes.saturating_add(bytes);
                }
                None => s.by_dtype.push(DtypeCount {
                    dtype: t.dtype,
                    tensors: 1,
                    params,
                    bytes,
                }),
            }
        }
        s.by_dtype.sort_by_key(|c| c.dtype);
        if packed {
            s.notes.push(
                "Quantized tensors (packed integers, scales) found: element counts are storage \
                 elements, not model parameters"
                    .to_owned(),
            );
        }
        s
    }

    /// [`ParamSummary::of`], refusing a count above what a scenario accepts (`model.params`, see
    /// `scenario::validate`): such a checkpoint is sparse or forged, not a model.
    pub fn try_of<'a>(
        tensors: impl IntoIterator<Item = &'a TensorInfo>,
    ) -> Result<Self, ImportError> {
        let s = ParamSummary::of(tensors);
        let max = validate::range_of("model.params").map_or(f64::MAX, |r| r.max);
        if s.params == u64::MAX || s.params as f64 > max {
            return Err(ImportError::new(format!(
                "the checkpoint counts {} parameters, more than the {max:e} a scenario accepts \
                 (`model.params`)",
                s.params
            )));
        }
        Ok(s)
    }

    /// The element type holding most parameters, as a scenario dtype (None for integer/bool types).
    pub fn main_dtype(&self) -> Option<Dtype> {
        let main = self.by_dtype.iter().max_by_key(|c| c.params)?;
        Some(match main.dtype {
            StDtype::F32 => Dtype::Fp32,
            StDtype::F16 => Dtype::Fp16,
            StDtype::BF16 => Dtype::Bf16,
            StDtype::F8E4M3 => Dtype::Fp8E4M3,
            StDtype::F8E5M2 => Dtype::Fp8E5M2,
            StDtype::I8 => Dtype::Int8,
            _ => return None,
        })
    }

    /// [`ParamSummary::to_model`], checked as a scenario file is (`scenario::validate`): an error
    /// names every model field out of range.
    pub fn validated_model(&self, base: &ModelSpec) -> Result<ModelSpec, ImportError> {
        let model = self.to_model(base);
        check_model(&model, &["model.params"], "the checkpoint")?;
        Ok(model)
    }

    /// `base` described by this parameter count (the shape is then derived from it).
    pub fn to_model(&self, base: &ModelSpec) -> ModelSpec {
        ModelSpec {
            family: ModelFamily::Transformer,
            shape: ShapeSource::ParamCount,
            params: self.params as f64,
            ..base.clone()
        }
    }
}

/// Tensor names that mean quantized storage (GPTQ `qweight`/`qzeros`, bitsandbytes `absmax` and
/// `quant_map`, compressed-tensors `weight_packed`).
const PACKED: [&str; 5] = [
    "qweight",
    "qzeros",
    ".absmax",
    ".quant_map",
    "weight_packed",
];

/// Refuses a model a scenario file could not hold: the same range checks as loading a file
/// (`scenario::validate`), naming every field out of range among those the import set (`fields`:
/// dotted prefixes, e.g. `model.transformer.`).
pub fn check_model(model: &ModelSpec, fields: &[&str], what: &str) -> Result<(), ImportError> {
    let scenario = Scenario {
        model: model.clone(),
        ..Scenario::default()
    };
    let errors: Vec<String> = validate::validate(&scenario)
        .into_iter()
        .filter(|e| fields.iter().any(|f| e.field.starts_with(f)))
        .map(|e| format!("`{}` {}", e.field, e.message))
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    Err(ImportError::new(format!(
        "{what} gives values out of range: {}",
        errors.join("; ")
    )))
}

/// Most shards an index may name (the largest public checkpoints have a few hundred).
pub const MAX_SHARDS: usize = 10_000;
/// Most tensors an index or a header may list (a 405B-parameter checkpoint has about 1,300).
pub const MAX_TENSORS: usize = 1_000_000;

/// `model.safetensors.index.json`: which shard holds each tensor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShardIndex {
    /// `metadata.total_size`: tensor bytes over all shards, if given.
    pub total_size: Option<u64>,
    /// (tensor, shard file name), in file order.
    pub weight_map: Vec<(String, String)>,
    /// Distinct shard file names, in first-seen order.
    pub shards: Vec<String>,
}

/// Parses a sharded index. Shard names must be plain file names (the shards live beside the index).
pub fn parse_index(json: &str) -> Result<ShardIndex, ImportError> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| ImportError::new(format!("safetensors index is not valid JSON: {e}")))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| ImportError::new("safetensors index has no `weight_map` object"))?;
    let total_size = value
        .get("metadata")
        .and_then(|m| m.get("total_size"))
        .and_then(|t| t.as_u64().or_else(|| t.as_f64().map(|f| f as u64)));
    if map.len() > MAX_TENSORS {
        return Err(ImportError::new(format!(
            "safetensors index lists {} tensors, more than the {MAX_TENSORS} accepted",
            map.len()
        )));
    }
    let mut index = ShardIndex {
        total_size,
        ..ShardIndex::default()
    };
    // Linear time: a set of the shards seen so far (a list made 100,000 shards take seconds).
    let mut seen: HashSet<&str> = HashSet::new();
    for (tensor, shard) in map {
        let Some(shard) = shard.as_str() else {
            return Err(ImportError::new(format!(
                "safetensors index: shard of `{}` is not a string",
                echo(tensor)
            )));
        };
        if shard.is_empty() || shard.contains(['/', '\\', '\0']) || shard == ".." || shard == "." {
            return Err(ImportError::new(format!(
                "safetensors index: shard \"{}\" is not a file name beside the index",
                echo(shard)
            )));
        }
        if seen.insert(shard) {
            if seen.len() > MAX_SHARDS {
                return Err(ImportError::new(format!(
                    "safetensors index names more than {MAX_SHARDS} shards"
                )));
            }
            index.shards.push(shard.to_owned());
        }
        index.weight_map.push((tensor.clone(), shard.to_owned()));
    }
    if index.shards.is_empty() {
        return Err(ImportError::new("safetensors index lists no tensors"));
    }
    Ok(index)
}

/// Counts a sharded checkpoint: every tensor of the index must be in the shard it names.
pub fn combine(
    index: &ShardIndex,
    shards: &[(String, SafetensorsHeader)],
) -> Result<ParamSummary, ImportError> {
    // Linear time: the shards by name, and each shard's tensor names in a set.
    let by_name: HashMap<&str, HashSet<&str>> = shards
        .iter()
        .map(|(name, h)| {
            let names = h.tensors.iter().map(|t| t.name.as_str()).collect();
            (name.as_str(), names)
        })
        .collect();
    for (tensor, shard) in &index.weight_map {
        let Some(names) = by_name.get(shard.as_str()) else {
            return Err(ImportError::new(format!(
                "safetensors index names shard \"{}\", which was not read",
                echo(shard)
            )));
        };
        if !names.contains(tensor.as_str()) {
            return Err(ImportError::new(format!(
                "safetensors index puts `{}` in \"{}\", which does not hold it",
                echo(tensor),
                echo(shard)
            )));
        }
    }
    let mut summary = ParamSummary::try_of(shards.iter().flat_map(|(_, h)| h.tensors.iter()))?;
    let listed = index.weight_map.len() as u64;
    if summary.tensors != listed {
        summary.notes.push(format!(
            "The shards hold {} tensors, the index lists {listed}: all are counted",
            summary.tensors
        ));
    }
    if let Some(total) = index.total_size.filter(|t| *t != summary.bytes) {
        summary.notes.push(format!(
            "Index `total_size` is {total} bytes, the shards' tensors take {}",
            summary.bytes
        ));
    }
    Ok(summary)
}
