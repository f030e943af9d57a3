//! `torch_dtype` / `dtype` and `quantization_config` of a `config.json` → the scenario's weight type
//! and `quantization` section, where it has a matching format; otherwise a note naming what was not
//! carried over. Formats (Transformers 5.25 quantizer configs, `utils/quantization_config.py`):
//! MXFP4 (`quant_method` "mxfp4", gpt-oss), FP8 block-wise ("fp8", `weight_block_size`, DeepSeek-V3),
//! AWQ and GPTQ (`bits`, `group_size`), bitsandbytes (`load_in_4bit` with `bnb_4bit_quant_type`,
//! `load_in_8bit`).

use serde_json::{Map, Value};

use super::hf_config::{Reader, echo_json};
use crate::presets::text::echo;
use crate::scenario::{Dtype, Quantization, WeightFormat};

/// What the config says about storage.
pub(super) struct Precision {
    pub dtype: Option<Dtype>,
    pub quantization: Option<Quantization>,
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
    let quantization = r
        .object("quantization_config")
        .and_then(|q| quantization(q, notes));
    Precision {
        dtype,
        quantization,
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
    if flag("load_in_4bit") && kind.unwrap_or("fp4") == "nf4" {
        if flag("bnb_4bit_use_double_quant") {
            notes.push(
                "bitsandbytes NF4 with double quantization: the scenario counts NF4's single-level \
                 scales (4.5 bits; double quantization stores 4.127)"
                    .to_owned(),
            );
        }
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
