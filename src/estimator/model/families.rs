//! The seed article's other model families: a CNN and an embedding-heavy recommender.

use super::{MAX_PARAMS, ResolvedModel};
use crate::estimator::{Diagnostic, Diagnostics, ParamCounts};
use crate::scenario::{ModelFamily, ModelSpec};

fn finite_pos(x: f64, lo: f64, hi: f64, diagnostics: &mut Diagnostics) -> f64 {
    if !x.is_finite() || x < lo || x > hi {
        diagnostics.insert(Diagnostic::InputClamped);
        if x.is_finite() { x.clamp(lo, hi) } else { lo }
    } else {
        x
    }
}

/// A CNN from its sourced figures: parameters as given; saved activations per image scale with the
/// square of the resolution (feature maps are H × W × C at every stage).
/// Source: albanie/convnet-burden `reports/resnet50.md` (103 MB per 224² image, FP32, forward maps).
pub(super) fn cnn(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    let c = &spec.cnn;
    let params = finite_pos(c.params, 1.0, MAX_PARAMS, diagnostics);
    let act = finite_pos(c.activation_bytes_per_image_fp32, 0.0, 1e15, diagnostics);
    let r_ref = f64::from(c.reference_resolution.max(1));
    let r = f64::from(c.resolution.clamp(1, 1 << 16));
    ResolvedModel {
        family: ModelFamily::Cnn,
        layers: 1,
        params: ParamCounts {
            total: params,
            per_layer: params,
            trainable: params,
            active: params,
            ..ParamCounts::default()
        },
        matmul_weights: params,
        largest_tensor: params / 50.0,
        param_tensors: 161.0,
        act_bytes_per_sample_fp32: act * (r / r_ref).powi(2),
        ..ResolvedModel::default()
    }
}

/// An embedding-heavy recommender (seed article §3.2): tables × rows × dim plus a dense MLP. Saved
/// activations per sample: the looked-up vectors (lookups × dim) plus the dense part's inputs,
/// taken as twice the looked-up width (an assumption, small next to the tables).
pub(super) fn recommender(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    let r = &spec.recommender;
    let tables = f64::from(r.tables.clamp(1, 100_000));
    let rows = finite_pos(r.rows_per_table, 1.0, 1e12, diagnostics);
    let d = f64::from(r.dim.clamp(1, 1 << 16));
    let dense = finite_pos(r.dense_params, 0.0, MAX_PARAMS, diagnostics);
    let emb = (tables * rows * d).min(MAX_PARAMS);
    if tables * rows * d > MAX_PARAMS {
        diagnostics.insert(Diagnostic::InputClamped);
    }
    let total = emb + dense;
    let lookups = f64::from(r.lookups_per_sample.clamp(1, 1 << 20));
    ResolvedModel {
        family: ModelFamily::Recommender,
        layers: 1,
        hidden: d as u32,
        params: ParamCounts {
            total,
            embeddings: emb,
            per_layer: dense,
            trainable: total,
            active: total,
            ..ParamCounts::default()
        },
        matmul_weights: dense,
        largest_tensor: rows * d,
        param_tensors: tables + 8.0,
        act_bytes_per_sample_fp32: 3.0 * lookups * d * 4.0,
        ..ResolvedModel::default()
    }
}
