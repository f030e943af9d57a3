//! One import, as the CLI (`vram-explorer import`) and the window do it: locate the config (file,
//! model directory, or Hub id in the local cache), parse it, read the safetensors index's
//! `metadata.total_size` as a cross-check (described with the counts by `report::import`).

use super::files::{MAX_INDEX_BYTES, read_config};
use super::source::{HubEnv, Located, locate};
use super::{ImportError, ImportedConfig, from_hf_config, parse_index};
use crate::presets::input::read_regular;
use crate::presets::text::escape_controls;
use crate::scenario::ModelSpec;

/// A model imported from disk.
#[derive(Clone, Debug)]
pub struct ModelImport {
    pub config: ImportedConfig,
    pub located: Located,
    /// `metadata.total_size` of `model.safetensors.index.json` (bytes of all tensors), if any.
    pub total_size: Option<u64>,
}

/// Locates, reads and parses `arg` (see [`locate`]); the model's other fields come from `base`.
pub fn import_model(arg: &str, base: &ModelSpec, env: &HubEnv) -> Result<ModelImport, ImportError> {
    let located = locate(arg, env)?;
    let text = read_config(&located.config)?;
    let config = from_hf_config(&text, base).map_err(|e| {
        ImportError::new(format!(
            "{e}: {}",
            escape_controls(&located.config.display().to_string())
        ))
    })?;
    let total_size = match &located.index {
        Some(path) => index_total_size(path)?,
        None => None,
    };
    Ok(ModelImport {
        config,
        located,
        total_size,
    })
}

fn index_total_size(path: &std::path::Path) -> Result<Option<u64>, ImportError> {
    let at = |m: String| {
        ImportError::new(format!(
            "{m}: {}",
            escape_controls(&path.display().to_string())
        ))
    };
    let bytes = read_regular(path, MAX_INDEX_BYTES)
        .map_err(|e| at(format!("cannot read the safetensors index: {e}")))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| at("safetensors index is not UTF-8 text".to_owned()))?;
    Ok(parse_index(text).map_err(|e| at(e.message))?.total_size)
}
