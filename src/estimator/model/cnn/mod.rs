//! CNNs and vision models layer by layer (issue 14 item 2): torchvision ResNet-18/50/101 walked op
//! by op ([`resnet_walk`]), ViT-B/16, ViT-L/16 and DiT-XL/2 from their block tables ([`vit`]),
//! the Stable Diffusion 1.5 UNet block by block ([`unet_walk`]).
//! Everything here is a fixed table of stages and arithmetic over it: no allocation. Derivations
//! and the measured comparison: docs/cnn.md.

pub mod resnet;
pub mod resnet_walk;
pub mod unet;
pub mod unet_walk;
pub mod vit;

use super::ResolvedModel;
use crate::estimator::ParamCounts;
use crate::scenario::{CnnNetwork, ModelFamily, ModelSpec};

/// The network a resolved CNN model walks, and its input side in pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CnnShape {
    pub network: CnnNetwork,
    pub resolution: f64,
    /// [`Counts::buffer_bytes`], kept so the memory estimate does not count again.
    pub buffer_bytes: f64,
}

/// Exact counts of a network at side `res`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counts {
    /// `sum(p.numel())` of the reference implementation.
    pub params: f64,
    /// Parameters with `requires_grad = False` (DiT's fixed position embedding).
    pub frozen: f64,
    pub tensors: f64,
    pub largest: f64,
    /// Conv and linear weights (what autocast copies to 16 bit).
    pub matmul_weights: f64,
    /// Buffer bytes (BatchNorm running mean and variance, FP32, and an int64 batch counter).
    pub buffer_bytes: f64,
    /// Forward multiply-accumulates per image.
    pub macs: f64,
}

/// Counts of `network` at side `res`; `None` for `Aggregate`. ResNet: stem conv 3·64·49 and BN,
/// every block's convs and BNs ([`resnet::Block`]), `fc` 512·expansion·1,000 + 1,000.
pub fn counts(network: CnnNetwork, res: f64) -> Option<Counts> {
    if let Some(t) = resnet::table(network) {
        let mut c = Counts {
            params: 3.0 * 64.0 * 49.0 + 128.0,
            tensors: 3.0,
            largest: 3.0 * 64.0 * 49.0,
            matmul_weights: 3.0 * 64.0 * 49.0,
            buffer_bytes: 64.0 * 8.0 + 8.0,
            macs: 3.0 * 64.0 * 49.0 * resnet::stem_sides(res).0.powi(2),
            ..Counts::default()
        };
        for i in 0..t.block_count() {
            let k = t.block(res, i);
            let w = k.conv_weights();
            let convs: f64 = w.iter().sum();
            c.params += convs + 2.0 * k.bn_channels();
            c.matmul_weights += convs;
            c.tensors += k.tensors();
            c.largest = w.iter().fold(c.largest, |a, &x| a.max(x));
            let bns = if k.bottleneck { 3.0 } else { 2.0 } + if k.downsample { 1.0 } else { 0.0 };
            c.buffer_bytes += k.bn_channels() * 8.0 + bns * 8.0;
            c.macs += k.macs();
        }
        let fc = t.final_channels() * resnet_walk::CLASSES;
        c.params += fc + resnet_walk::CLASSES;
        c.matmul_weights += fc;
        c.tensors += 2.0;
        c.largest = c.largest.max(fc);
        c.macs += fc;
        return Some(c);
    }
    if network == CnnNetwork::Sd15Unet {
        let (params, tensors, largest, macs) = unet_walk::counts(&unet_walk::SD15, res / 8.0);
        return Some(Counts {
            params,
            tensors,
            largest,
            // Convolutions and linears hold all but the norms' vectors.
            matmul_weights: params,
            macs,
            ..Counts::default()
        });
    }
    let v = vit::table(network)?;
    Some(Counts {
        params: v.params(res),
        frozen: v.frozen(res),
        tensors: v.tensors(),
        largest: v.largest(),
        matmul_weights: v.layers * v.block_params(),
        buffer_bytes: 0.0,
        macs: v.macs(res),
    })
}

/// A CNN section with a layer-table network (not `Aggregate`): exact counts, the shape the memory
/// walk needs, and (for the vision transformers) the saved activation bytes per image in FP32.
pub fn resolve(spec: &ModelSpec) -> Option<ResolvedModel> {
    let network = spec.cnn.network;
    let res = f64::from(spec.cnn.resolution.max(1));
    let c = counts(network, res)?;
    let trainable = c.params - c.frozen;
    let act = vit::table(network).map_or(0.0, |v| 4.0 * v.saved_elems(res) + v.saved_fp32(res));
    Some(ResolvedModel {
        family: ModelFamily::Cnn,
        layers: 1,
        params: ParamCounts {
            total: c.params,
            per_layer: c.params,
            trainable,
            active: c.params,
            ..ParamCounts::default()
        },
        matmul_weights: c.matmul_weights,
        largest_tensor: c.largest,
        param_tensors: c.tensors,
        act_bytes_per_sample_fp32: act,
        cnn: CnnShape {
            network,
            resolution: res,
            buffer_bytes: c.buffer_bytes,
        },
        ..ResolvedModel::default()
    })
}
