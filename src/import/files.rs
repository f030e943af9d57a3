//! Reading what the pure parsers need from disk: only the header bytes of each safetensors file,
//! never the tensors. Errors name the problem first and the path last.
//!
//! Every file goes through [`crate::presets::input`]: opened without blocking, checked on the opened
//! file to be a regular file (symbolic links, as in the Hugging Face cache, are followed), and read
//! no further than its limit, whatever its metadata says.

use std::io::Read;
use std::path::Path;

use super::hf_config::MAX_CONFIG_BYTES;
use super::safetensors::{MAX_HEADER_BYTES, SafetensorsHeader, header_len, parse_header};
use super::{ImportError, MAX_TENSORS, ParamSummary, combine, parse_index};
use crate::presets::input::{InputError, open_regular, read_at_most, read_regular};
use crate::presets::text::escape_controls;

/// Largest `*.safetensors.index.json` accepted: 64 MiB (a 405B-parameter checkpoint's index is
/// about 100 KB; the limit leaves room for a million tensors).
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

fn at(e: ImportError, path: &Path) -> ImportError {
    ImportError::new(format!(
        "{}: {}",
        e.message,
        escape_controls(&path.display().to_string())
    ))
}

fn input(e: InputError, what: &str, path: &Path) -> ImportError {
    at(ImportError::new(format!("{what}: {e}")), path)
}

/// Reads a Hugging Face `config.json` (at most [`MAX_CONFIG_BYTES`], a regular file) as text.
pub fn read_config(path: &Path) -> Result<String, ImportError> {
    let bytes = read_regular(path, MAX_CONFIG_BYTES as u64)
        .map_err(|e| input(e, "cannot read config.json", path))?;
    String::from_utf8(bytes).map_err(|e| {
        at(
            ImportError::new(format!(
                "config.json is not UTF-8 text (bad byte at offset {})",
                e.utf8_error().valid_up_to()
            )),
            path,
        )
    })
}

/// Reads and validates one file's header (8 + N bytes of it).
pub fn read_safetensors_header(path: &Path) -> Result<SafetensorsHeader, ImportError> {
    let mut f = open_regular(path).map_err(|e| input(e, "cannot open safetensors file", path))?;
    let len = f
        .metadata()
        .map_err(|e| input(InputError::Io(e), "cannot read safetensors file size", path))?
        .len();
    let first8 = read_at_most((&mut f).take(8), 8)
        .map_err(|e| input(e, "cannot read safetensors header", path))?;
    let n = header_len(&first8, Some(len)).map_err(|e| at(e, path))?;
    let json = read_at_most((&mut f).take(n), MAX_HEADER_BYTES)
        .map_err(|e| input(e, "cannot read safetensors header", path))?;
    if (json.len() as u64) < n {
        return Err(at(
            ImportError::new(format!(
                "safetensors header is truncated ({} of {n} bytes)",
                json.len()
            )),
            path,
        ));
    }
    parse_header(&json, len.saturating_sub(8).saturating_sub(n)).map_err(|e| at(e, path))
}

/// Counts one `.safetensors` file, or a sharded checkpoint given its `*.index.json` (the shards are
/// read beside it).
pub fn read_checkpoint(path: &Path) -> Result<ParamSummary, ImportError> {
    let is_index = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".json"));
    if !is_index {
        let header = read_safetensors_header(path)?;
        return ParamSummary::try_of(header.tensors.iter()).map_err(|e| at(e, path));
    }
    let bytes = read_regular(path, MAX_INDEX_BYTES)
        .map_err(|e| input(e, "cannot read the safetensors index", path))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        at(
            ImportError::new("safetensors index is not UTF-8 text"),
            path,
        )
    })?;
    let index = parse_index(text).map_err(|e| at(e, path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut shards = Vec::with_capacity(index.shards.len());
    let mut tensors = 0usize;
    for name in &index.shards {
        let header = read_safetensors_header(&dir.join(name))?;
        // Bounded over all shards, not only within each: memory stays proportional to the limit.
        tensors = tensors.saturating_add(header.tensors.len());
        if tensors > MAX_TENSORS {
            let msg = format!("the shards hold more than {MAX_TENSORS} tensors in all");
            return Err(at(ImportError::new(msg), path));
        }
        shards.push((name.clone(), header));
    }
    combine(&index, &shards).map_err(|e| at(e, path))
}
