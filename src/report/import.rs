//! What an import made (`vram-explorer import`'s standard error, the window's notice): the parameter
//! counts in all and per layer kind and tower, whether MTP layers and a vision tower are included,
//! the safetensors index's bytes per parameter, the import's notes. Pure: a string out.

use std::fmt::Write as _;

use crate::estimator::model::blocks::{MixerShape, MlpShape};
use crate::estimator::model::towers;
use crate::estimator::{Diagnostics, estimate};
use crate::import::flow::ModelImport;
use crate::presets::text::escape_controls;
use crate::scenario::{Scenario, Tower};

fn mixer_label(m: &MixerShape) -> String {
    match m {
        MixerShape::Empty => "no mixer".to_owned(),
        MixerShape::Attention {
            window,
            chunked: true,
            ..
        } if *window > 0.0 => format!("chunked local attention (chunk {window})"),
        MixerShape::Attention { window, .. } if *window > 0.0 => {
            format!("local attention (window {window})")
        }
        MixerShape::Attention { .. } => "attention".to_owned(),
        MixerShape::Mla(_) => "latent attention (MLA)".to_owned(),
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
