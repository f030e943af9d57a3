//! One import, as the CLI (`vram-explorer import`) and the window do it: locate the config (file,
//! model directory, or Hub id in the local cache), parse it, read the safetensors index's
//! `metadata.total_size` as a cross-check, and describe the counts.

use std::fmt::Write as _;

use super::files::{MAX_INDEX_BYTES, read_config};
use super::source::{HubEnv, Located, locate};
use super::{ImportError, ImportedConfig, from_hf_config, parse_index};
use crate::estimator::model::blocks::{MixerShape, MlpShape};
use crate::estimator::model::towers;
use crate::estimator::{Diagnostics, estimate};
use crate::presets::input::read_regular;
use crate::presets::text::escape_controls;
use crate::scenario::{ModelSpec, Scenario, Tower};

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

fn mixer_label(m: &MixerShape) -> String {
    match m {
        MixerShape::Empty => "no mixer".to_owned(),
        MixerShape::Attention { window, .. } if *window > 0.0 => {
            format!("local attention (window {window})")
        }
        MixerShape::Attention { .. } => "attention".to_owned(),
        MixerShape::Mla { .. } => "latent attention (MLA)".to_owned(),
        MixerShape::Mamba { version, .. } => format!("{version:?}"),
        MixerShape::DeltaNet { .. } => "gated DeltaNet".to_owned(),
    }
}

fn mlp_label(m: &MlpShape) -> &'static str {
    match m {
        MlpShape::None => "no MLP",
        MlpShape::Dense { .. } => "dense MLP",
        MlpShape::Moe => "MoE",
    }
}

/// What the import wrote, for standard error (and the window's notice): the parameter counts in
/// all and per layer kind and tower, whether MTP layers and a vision tower are included, the index's
/// bytes per parameter, the notes.
pub fn summary(m: &ModelImport, s: &Scenario) -> String {
    let e = estimate(s);
    let p = &e.model.params;
    let mut out = String::new();
    let c = &m.config;
    let _ = writeln!(
        out,
        "Imported {} from {}",
        escape_controls(&c.model_type),
        escape_controls(&m.located.config.display().to_string())
    );
    let _ = writeln!(
        out,
        "Parameters (= sum(p.numel()) of the Transformers 5.25 class): total {:.0}, active {:.0}, \
         embeddings {:.0}, head {:.0}",
        p.total, p.active, p.embeddings, p.head
    );
    for k in e.model.blocks.kinds() {
        let _ = writeln!(
            out,
            "  {} layers of {} + {}: {:.0} each, {:.0} in all",
            k.count,
            mixer_label(&k.mixer),
            mlp_label(&k.mlp),
            k.params,
            f64::from(k.count) * k.params
        );
    }
    for t in &s.model.towers {
        let n = towers::params(std::slice::from_ref(t), &mut Diagnostics::default());
        let what = match t {
            Tower::Vision(_) => "vision tower and projector (included)",
            Tower::Encoder(_) => "encoder stack (included)",
        };
        let _ = writeln!(out, "  {what}: {n:.0}");
    }
    let _ = writeln!(
        out,
        "Vision tower: {}",
        if c.vision { "included" } else { "none" }
    );
    let _ = writeln!(
        out,
        "MTP layers: {}",
        if c.mtp_layers > 0 {
            format!(
                "{} in the checkpoint, not included (Transformers does not build them)",
                c.mtp_layers
            )
        } else {
            "none".to_owned()
        }
    );
    if let Some(total) = m.total_size {
        let dtype = c
            .dtype
            .map_or(String::from("no dtype given"), |d| format!("{d:?}"));
        let _ = writeln!(
            out,
            "Index total_size {total} bytes = {:.3} bytes per parameter ({dtype})",
            total as f64 / p.total.max(1.0)
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "- {n}");
    }
    out
}
