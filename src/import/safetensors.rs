//! `.safetensors` headers → exact parameter counts by element type. Pure: bytes in, counts out.
//!
//! Format (huggingface/safetensors `README.md`, "Format"): 8 bytes little-endian u64 N, then N bytes
//! of UTF-8 JSON (may be padded with spaces): `{"__metadata__": {str: str}, "<tensor>": {"dtype":
//! "BF16", "shape": [..], "data_offsets": [begin, end]}, ...}`, then the data; offsets are relative to
//! the data and the tensors cover it exactly, without holes or overlap. The header size limit is the
//! reference implementation's (`MAX_HEADER_SIZE` = 100,000,000 bytes in `safetensors/src/tensor.rs`).
//! JSON nesting is bounded by `serde_json`'s recursion limit (128 levels, `Deserializer::
//! disable_recursion_limit` documents it), the tensor count by [`super::MAX_TENSORS`]; parsing is
//! linear in the header but for one sort of the tensors' offsets.

use serde_json::Value;

use super::ImportError;
use crate::presets::text::echo;

/// Largest header accepted, bytes.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Element types of the format (`Dtype` in huggingface/safetensors `safetensors/src/tensor.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StDtype {
    Bool,
    F4,
    F6E2M3,
    F6E3M2,
    U8,
    I8,
    F8E5M2,
    F8E4M3,
    F8E8M0,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

impl StDtype {
    /// The type named in a header, if the format defines it.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "BOOL" => StDtype::Bool,
            "F4" => StDtype::F4,
            "F6_E2M3" => StDtype::F6E2M3,
            "F6_E3M2" => StDtype::F6E3M2,
            "U8" => StDtype::U8,
            "I8" => StDtype::I8,
            "F8_E5M2" => StDtype::F8E5M2,
            "F8_E4M3" => StDtype::F8E4M3,
            "F8_E8M0" => StDtype::F8E8M0,
            "I16" => StDtype::I16,
            "U16" => StDtype::U16,
            "F16" => StDtype::F16,
            "BF16" => StDtype::BF16,
            "I32" => StDtype::I32,
            "U32" => StDtype::U32,
            "F32" => StDtype::F32,
            "C64" => StDtype::C64,
            "F64" => StDtype::F64,
            "I64" => StDtype::I64,
            "U64" => StDtype::U64,
            _ => return None,
        })
    }

    /// Bits per element.
    pub const fn bits(self) -> u64 {
        match self {
            StDtype::F4 => 4,
            StDtype::F6E2M3 | StDtype::F6E3M2 => 6,
            StDtype::Bool | StDtype::U8 | StDtype::I8 => 8,
            StDtype::F8E5M2 | StDtype::F8E4M3 | StDtype::F8E8M0 => 8,
            StDtype::I16 | StDtype::U16 | StDtype::F16 | StDtype::BF16 => 16,
            StDtype::I32 | StDtype::U32 | StDtype::F32 => 32,
            StDtype::C64 | StDtype::F64 | StDtype::I64 | StDtype::U64 => 64,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            StDtype::Bool => "BOOL",
            StDtype::F4 => "F4",
            StDtype::F6E2M3 => "F6_E2M3",
            StDtype::F6E3M2 => "F6_E3M2",
            StDtype::U8 => "U8",
            StDtype::I8 => "I8",
            StDtype::F8E5M2 => "F8_E5M2",
            StDtype::F8E4M3 => "F8_E4M3",
            StDtype::F8E8M0 => "F8_E8M0",
            StDtype::I16 => "I16",
            StDtype::U16 => "U16",
            StDtype::F16 => "F16",
            StDtype::BF16 => "BF16",
            StDtype::I32 => "I32",
            StDtype::U32 => "U32",
            StDtype::F32 => "F32",
            StDtype::C64 => "C64",
            StDtype::F64 => "F64",
            StDtype::I64 => "I64",
            StDtype::U64 => "U64",
        }
    }
}

/// One tensor of a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: StDtype,
    /// Elements (product of the shape; 1 for a scalar).
    pub numel: u64,
    /// Byte range in the data section.
    pub begin: u64,
    pub end: u64,
}

/// A parsed, validated header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SafetensorsHeader {
    /// In header order.
    pub tensors: Vec<TensorInfo>,
    /// `__metadata__` pairs.
    pub metadata: Vec<(String, String)>,
}

/// Reads N from the first 8 bytes and checks it against the limit and, when known, the file size.
pub fn header_len(first8: &[u8], file_len: Option<u64>) -> Result<u64, ImportError> {
    let Some(bytes) = first8.get(..8).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
        return Err(ImportError::new(format!(
            "safetensors file too short: {} bytes, the header length alone takes 8",
            first8.len()
        )));
    };
    let n = u64::from_le_bytes(bytes);
    if n > MAX_HEADER_BYTES {
        return Err(ImportError::new(format!(
            "safetensors header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit (not a \
             safetensors file?)"
        )));
    }
    if let Some(len) = file_len
        && n > len.saturating_sub(8)
    {
        return Err(ImportError::new(format!(
            "safetensors header length {n} runs past the end of the {len}-byte file"
        )));
    }
    Ok(n)
}

/// Parses a whole file held in memory (tests, small files).
pub fn parse_file(bytes: &[u8]) -> Result<SafetensorsHeader, ImportError> {
    let len = bytes.len() as u64;
    let n = header_len(bytes, Some(len))?;
    let json = usize::try_from(n)
        .ok()
        .and_then(|n| bytes.get(8..8 + n))
        .ok_or_else(|| ImportError::new("safetensors header is truncated"))?;
    parse_header(json, len - 8 - n)
}

/// Parses and validates the JSON header; `data_len` is the file size − 8 − N.
pub fn parse_header(json: &[u8], data_len: u64) -> Result<SafetensorsHeader, ImportError> {
    if json.first() != Some(&b'{') {
        return Err(ImportError::new(
            "safetensors header does not start with '{' (not a safetensors file?)",
        ));
    }
    let text = std::str::from_utf8(json)
        .map_err(|e| ImportError::new(format!("safetensors header is not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text.trim_end_matches(' '))
        .map_err(|e| ImportError::new(format!("safetensors header is not valid JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(ImportError::new("safetensors header is not a JSON object"));
    };
    if obj.len() > super::MAX_TENSORS {
        return Err(ImportError::new(format!(
            "safetensors header lists {} entries, more than the {} tensors accepted",
            obj.len(),
            super::MAX_TENSORS
        )));
    }
    let mut header = SafetensorsHeader::default();
    for (name, v) in &obj {
        if name == "__metadata__" {
            header.metadata = metadata(v)?;
            continue;
        }
        header.tensors.push(tensor(name, v)?);
    }
    check_layout(&header.tensors, data_len)?;
    Ok(header)
}

fn metadata(v: &Value) -> Result<Vec<(String, String)>, ImportError> {
    let Value::Object(m) = v else {
        return Err(ImportError::new(
            "safetensors `__metadata__` is not an object",
        ));
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(ImportError::new(format!(
                "safetensors `__metadata__.{}` is not a string",
                echo(k)
            ))),
        })
        .collect()
}

fn tensor(name: &str, v: &Value) -> Result<TensorInfo, ImportError> {
    let bad = |what: &str| ImportError::new(format!("safetensors tensor `{}`: {what}", echo(name)));
    let dtype_name = v
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("no `dtype` string"))?;
    let dtype = StDtype::parse(dtype_name)
        .ok_or_else(|| bad(&format!("dtype \"{}\" is not understood", echo(dtype_name))))?;
    let shape = v
        .get("shape")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `shape` array"))?;
    let mut numel: u64 = 1;
    for d in shape {
        let d = d.as_u64().ok_or_else(|| {
            let d = echo(&d.to_string());
            bad(&format!("shape entry {d} is not a non-negative integer"))
        })?;
        numel = numel.checked_mul(d).ok_or_else(|| bad("shape overflows"))?;
    }
    let offsets = v
        .get("data_offsets")
        .and_then(Value::as_array)
        .filter(|a| a.len() == 2)
        .ok_or_else(|| bad("no `data_offsets` pair"))?;
    let (Some(begin), Some(end)) = (
        offsets.first().and_then(Value::as_u64),
        offsets.get(1).and_then(Value::as_u64),
    ) else {
        return Err(bad("`data_offsets` are not non-negative integers"));
    };
    let bits = numel
        .checked_mul(dtype.bits())
        .ok_or_else(|| bad("size overflows"))?;
    if end < begin || end - begin != bits.div_ceil(8) || bits % 8 != 0 {
        return Err(bad(&format!(
            "data_offsets [{begin}, {end}] do not hold {numel} × {} elements",
            dtype.name()
        )));
    }
    Ok(TensorInfo {
        name: name.to_owned(),
        dtype,
        numel,
        begin,
        end,
    })
}

/// The tensors must tile `0 .. data_len` exactly (the reference implementation's validation).
fn check_layout(tensors: &[TensorInfo], data_len: u64) -> Result<(), ImportError> {
    let mut spans: Vec<(u64, u64, &str)> = tensors
        .iter()
        .map(|t| (t.begin, t.end, t.name.as_str()))
        .collect();
    spans.sort_unstable();
    let mut at = 0u64;
    for (begin, end, name) in spans {
        if begin != at {
            let what = if begin < at {
                "overlaps the previous tensor"
            } else {
                "leaves a gap before it"
            };
            return Err(ImportError::new(format!(
                "safetensors tensor `{}` at byte {begin} {what} (expected {at})",
                echo(name)
            )));
        }
        at = end;
    }
    if at != data_len {
        return Err(ImportError::new(format!(
            "safetensors offsets out of range: tensors end at byte {at} of a {data_len}-byte data \
             section"
        )));
    }
    Ok(())
}
