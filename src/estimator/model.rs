//! Transformer dimensions ↔ parameter counts, and the other model families (memory work owns this).

use super::{Diagnostics, ParamCounts};
use crate::scenario::{FfnKind, ModelFamily, ModelSpec};

/// A model with its shape resolved (derived from the parameter count when asked) and counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResolvedModel {
    pub family: ModelFamily,
    pub layers: u32,
    pub hidden: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub head_dim: u32,
    pub ffn: u32,
    pub ffn_kind: FfnKind,
    pub vocab: u32,
    pub params: ParamCounts,
}

pub fn resolve(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    let _ = diagnostics;
    let t = &spec.transformer;
    ResolvedModel {
        family: spec.family,
        layers: t.layers,
        hidden: t.hidden,
        heads: t.heads,
        kv_heads: t.kv_heads,
        head_dim: t.head_dim(),
        ffn: t.ffn,
        ffn_kind: t.ffn_kind,
        vocab: t.vocab,
        params: ParamCounts::default(),
    }
}
