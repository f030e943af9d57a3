//! `torch_dtype` / `dtype` and `quantization_config` of a `config.json` → the scenario's weight type
//! and `quantization` section, where it has a matching format; otherwise a note naming what was not
//! carried over. Formats (Transformers 5.25 quantizer configs, `utils/quantization_config.py`):
//! MXFP4 (`quant_method` "mxfp4", gpt-oss), FP8 block-wise ("fp8", `weight_block_size`, DeepSeek-V3),
//! AWQ and GPTQ (`bits`, `group_size`), bitsandbytes (`load_in_4bit` with `bnb_4bit_quant_type`,
//! `load_in_8bit`).

use serde_json::{Map, Value};

use super::hf_config::{Reader, echo_json};
use crate::presets::text::echo;
use crate::scenario::{Bitsandbytes, Bnb4bitType, Dtype, Quantization, WeightFormat};

/// What the config says about storage.
pub(super) struct Precision {
    pub dtype: Option<Dtype>,
    pub quantization: Option<Quantization>,
    pub bitsandbytes: Option<BnbLoad>,
}

/// A 4-bit bitsandbytes `BitsAndBytesConfig` as saved in `quantization_config` (Transformers
/// `utils/quantization_config.py` `BitsAndBytesConfig`: `bnb_4bit_quant_type` default "fp4",
/// `bnb_4bit_use_double_quant` default false, `bnb_4bit_compute_dtype` default float32).
#[derive(Clone, Debug, PartialEq)]
pub struct BnbLoad {
    /// `bnb_4bit_use_double_quant` (the scenario's `peft.double_quant`).
    pub double_quant: bool,
    /// The data type and compute dtype (the scenario's `implementation.hf.bitsandbytes`; the
    /// release is not in the file and stays the scenario's).
    pub quant_type: Bnb4bitType,
    pub compute_dtype: Dtype,
}

impl BnbLoad {
    /// Writes the loader's settings into the scenario's bitsandbytes settings.
    pub fn apply(&self, b: &mut Bitsandbytes, double_quant: &mut bool) {
        b.quant_type = self.quant_type;
        b.compute_dtype = self.compute_dtype;
        *double_quant = self.double_quant;
    }
}

fn bnb_load(q: &Map<String, Value>, notes: &mut Vec<String>) -> Option<BnbLoad> {
    let method = q.get("quant_method").and_then(Value::as_str);
    let four_bit = q.get("load_in_4bit").and_then(Value::as_bool) == Some(true);
    if method != Some("bitsandbytes") || !four_bit {
        return None;
    }
    let quant_type = match q.get("bnb_4bit_quant_type").and_then(Value::as_str) {
        Some("nf4") => Bnb4bitType::Nf4,
        _ => Bnb4bitType::Fp4,
    };
    let compute_dtype = match q.get("bnb_4bit_compute_dtype").and_then(Value::as_str) {
        Some("bfloat16") => Dtype::Bf16,
        Some("float16") => Dtype::Fp16,
        Some("float32") | None => Dtype::Fp32,
        Some(other) => {
            notes.push(format!(
                "`bnb_4bit_compute_dtype` \"{}\" has no scenario dtype: float32 assumed",
                echo(other)
            ));
            Dtype::Fp32
        }
    };
    Some(BnbLoad {
        double_quant: q.get("bnb_4bit_use_double_quant").and_then(Value::as_bool) == Some(true),
        quant_type,
        compute_dtype,
    })
}

pub(super) fn read(r: &mut Reader<'_>, notes: &mut Vec<String>) -> Precision {
    let name = r.text("torch_dtype").or_else(|| r.text("dtype"));
    let dtype = name.and_then(|n| match n {
        "float32" => Some(Dtype::Fp32),
        "float16" => Some(Dtype::Fp16),
        "bfloat16" => Some(Dtype::Bf16),
        other => {
            notes.push(format!(
                "`torch_dtype` \"{}\" has no scenario dtype: the weight type is unchanged",
                echo(other)
            ));
            None
        }
    });
    let config = r.object("quantization_config");
    let quantization = config.and_then(|q| quantization(q, notes));
    let bitsandbytes = config.and_then(|q| bnb_load(q, notes));
    Precision {
        dtype,
        quantization,
        bitsandbytes,
    }
}

fn quantization(q: &Map<String, Value>, notes: &mut Vec<String>) -> Option<Quantization> {
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    let bits = q.get("bits").and_then(Value::as_u64);
    let group = q
        .get("group_size")
        .and_then(Value::as_u64)
        .and_then(|g| u32::try_from(g).ok())
        .filter(|g| (1..=65_536).contains(g));
    let format = |weights, group_size: Option<u32>| {
        Some(Quantization {
            weights,
            group_size: group_size.unwrap_or(128),
            experts_only: false,
        })
    };
    match method {
        "mxfp4" => {
            let skip = q.get("modules_to_not_convert");
            let attention_kept = skip.and_then(Value::as_array).is_some_and(|list| {
                list.iter()
                    .any(|m| m.as_str().is_some_and(|m| m.contains("self_attn")))
            });
            if let Some(skip) = skip {
                notes.push(format!(
                    "MXFP4 weights (`quantization_config`); modules kept unquantized: {}{}",
                    echo_json(skip),
                    if attention_kept {
                        " (the scenario stores only the routed experts in MXFP4: `quantization.experts_only`)"
                    } else {
                        " (the scenario quantizes every layer matrix)"
                    }
                ));
            }
            format(WeightFormat::Mxfp4, None).map(|q| Quantization {
                experts_only: attention_kept,
                ..q
            })
        }
        "fp8" => {
            if let Some(block) = q.get("weight_block_size") {
                notes.push(format!(
                    "FP8 weights with block-wise scales ({} blocks, one FP32 scale each) are counted \
                     as FP8 with a per-tensor scale (the scales add under 0.01 bit per weight)",
                    echo_json(block)
                ));
            }
            format(WeightFormat::Fp8, None)
        }
        "awq" | "gptq" if bits == Some(4) => format(WeightFormat::Int4Group, group),
        "awq" | "gptq" if bits == Some(8) => {
            notes.push(format!(
                "{method} 8-bit groups are counted as INT8 with a per-channel scale"
            ));
            format(WeightFormat::Int8PerChannel, None)
        }
        "bitsandbytes" => bitsandbytes(q, notes),
        _ => {
            notes.push(format!(
                "`quantization_config` ({} {}) has no matching weight format: set it by hand",
                echo(method),
                bits.map_or(String::new(), |b| format!("{b}-bit"))
            ));
            None
        }
    }
}

fn bitsandbytes(q: &Map<String, Value>, notes: &mut Vec<String>) -> Option<Quantization> {
    let flag = |k: &str| q.get(k).and_then(Value::as_bool).unwrap_or(false);
    if flag("load_in_8bit") {
        return Some(Quantization {
            weights: WeightFormat::Int8PerChannel,
            ..Quantization::default()
        });
    }
    let kind = q.get("bnb_4bit_quant_type").and_then(Value::as_str);
    if flag("load_in_4bit") && matches!(kind.unwrap_or("fp4"), "nf4" | "fp4") {
        // NF4 and FP4 store the same: two weights per byte, an absmax per 64 (double
        // quantization, when the config asks, is `peft.double_quant`: `BnbLoad`).
        return Some(Quantization {
            weights: WeightFormat::Nf4,
            ..Quantization::default()
        });
    }
    notes.push(format!(
        "bitsandbytes `{}` quantization has no matching weight format: set it by hand",
        echo(kind.unwrap_or("fp4"))
    ));
    None
}
