//! Reading what the pure parsers need from disk: only the header bytes of each safetensors file,
//! never the tensors. Errors name the problem first and the path last.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::safetensors::{SafetensorsHeader, header_len, parse_header};
use super::{ImportError, ParamSummary, combine, parse_index};

fn at(e: ImportError, path: &Path) -> ImportError {
    ImportError::new(format!("{}: {}", e.message, path.display()))
}

fn io(e: std::io::Error, what: &str, path: &Path) -> ImportError {
    ImportError::new(format!("{what}: {e}: {}", path.display()))
}

/// Reads and validates one file's header (8 + N bytes of it).
pub fn read_safetensors_header(path: &Path) -> Result<SafetensorsHeader, ImportError> {
    let mut f = File::open(path).map_err(|e| io(e, "cannot open safetensors file", path))?;
    let len = f
        .metadata()
        .map_err(|e| io(e, "cannot read safetensors file size", path))?
        .len();
    let mut first8 = [0u8; 8];
    let got = f
        .read(&mut first8)
        .map_err(|e| io(e, "cannot read safetensors header", path))?;
    let n = header_len(first8.get(..got).unwrap_or(&[]), Some(len)).map_err(|e| at(e, path))?;
    let n_usize = usize::try_from(n).map_err(|_| at(ImportError::new("header too large"), path))?;
    let mut json = vec![0u8; n_usize];
    f.read_exact(&mut json)
        .map_err(|e| io(e, "safetensors header is truncated", path))?;
    parse_header(&json, len - 8 - n).map_err(|e| at(e, path))
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
        return Ok(ParamSummary::of(header.tensors.iter()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| io(e, "cannot read index", path))?;
    let index = parse_index(&text).map_err(|e| at(e, path))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut shards = Vec::with_capacity(index.shards.len());
    for name in &index.shards {
        shards.push((name.clone(), read_safetensors_header(&dir.join(name))?));
    }
    combine(&index, &shards).map_err(|e| at(e, path))
}
