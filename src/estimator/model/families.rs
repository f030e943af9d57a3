//! The seed article's other model families: a CNN and an embedding-heavy recommender.

use super::{MAX_PARAMS, ResolvedModel};
use crate::estimator::{Diagnostic, Diagnostics, ParamCounts};
use crate::scenario::{ModelFamily, ModelSpec};

/// A CNN from its sourced figures: parameters as given; saved activations per image scale with the
/// square of the resolution (feature maps are H × W × C at every stage).
/// Source: albanie/convnet-burden `reports/resnet50.md` (103 MB per 224² image, FP32, forward maps).
/// The figures are in range (`estimator::resolve`).
pub(super) fn cnn(spec: &ModelSpec) -> ResolvedModel {
    let c = &spec.cnn;
    let (params, act) = (c.params, c.activation_bytes_per_image_fp32);
    let r_ref = f64::from(c.reference_resolution.max(1));
    let r = f64::from(c.resolution);
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
/// taken as twice the looked-up width (an assumption, small next to the tables). The figures are in
/// range (`estimator::resolve`); the tables' product is capped at [`MAX_PARAMS`] (diagnosed).
pub(super) fn recommender(spec: &ModelSpec, diagnostics: &mut Diagnostics) -> ResolvedModel {
    let r = &spec.recommender;
    let (tables, rows) = (f64::from(r.tables), r.rows_per_table);
    let (d, dense) = (f64::from(r.dim), r.dense_params);
    let emb = (tables * rows * d).min(MAX_PARAMS);
    if tables * rows * d > MAX_PARAMS {
        diagnostics.insert(Diagnostic::InputClamped);
    }
    let total = emb + dense;
    let lookups = f64::from(r.lookups_per_sample);
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
