//! The CNN / vision-model section of a scenario: a network described layer by layer from its
//! standard definition (`network`), or the older sourced per-image aggregate (`Aggregate`).

use serde::{Deserialize, Serialize};

/// Which vision network the CNN section describes. Every variant but `Aggregate` is a fixed layer
/// table in `estimator::model::cnn` (exact parameters, saved activations, inference working set and
/// MACs per layer; docs/cnn.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CnnNetwork {
    /// The sourced per-image figures of this section (`params`, `activation_bytes_per_image_fp32`,
    /// `reference_resolution`, `macs_per_image`): the behaviour of files written before the layer
    /// tables existed.
    #[default]
    Aggregate,
    /// torchvision `resnet18` (BasicBlock × [2, 2, 2, 2]), 1,000 classes.
    ResNet18,
    /// torchvision `resnet50` (Bottleneck × [3, 4, 6, 3], stride on the 3×3 conv: "ResNet v1.5").
    ResNet50,
    /// torchvision `resnet101` (Bottleneck × [3, 4, 23, 3]).
    ResNet101,
    /// torchvision `vit_b_16` (patch 16, 12 layers, width 768, 12 heads, MLP 3,072).
    VitB16,
    /// torchvision `vit_l_16` (patch 16, 24 layers, width 1,024, 16 heads, MLP 4,096).
    VitL16,
    /// DiT-XL/2 (Peebles & Xie 2023; facebookresearch/DiT `models.py`): 28 blocks, width 1,152,
    /// 16 heads, patch 2 on the 4-channel VAE latent (image side ÷ 8), learned sigma.
    DitXl2,
    /// The Stable Diffusion 1.5 UNet (diffusers `UNet2DConditionModel`, runwayml/stable-diffusion-v1-5
    /// `unet/config.json`) on the 4-channel VAE latent (image side ÷ 8), conditioned on 77 CLIP
    /// text states of width 768 (the text encoder and the VAE are not counted).
    Sd15Unet,
}

impl CnnNetwork {
    pub const ALL: [CnnNetwork; 8] = [
        CnnNetwork::Aggregate,
        CnnNetwork::ResNet18,
        CnnNetwork::ResNet50,
        CnnNetwork::ResNet101,
        CnnNetwork::VitB16,
        CnnNetwork::VitL16,
        CnnNetwork::DitXl2,
        CnnNetwork::Sd15Unet,
    ];

    pub fn label(self) -> &'static str {
        match self {
            CnnNetwork::Aggregate => "Per-image aggregate",
            CnnNetwork::ResNet18 => "ResNet-18",
            CnnNetwork::ResNet50 => "ResNet-50",
            CnnNetwork::ResNet101 => "ResNet-101",
            CnnNetwork::VitB16 => "ViT-B/16",
            CnnNetwork::VitL16 => "ViT-L/16",
            CnnNetwork::DitXl2 => "DiT-XL/2",
            CnnNetwork::Sd15Unet => "SD 1.5 UNet",
        }
    }
}

/// A CNN or vision model: a network from its layer table (`network`), or, with
/// `network = Aggregate`, sourced per-image figures (ResNet-50 by default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CnnSpec {
    /// The network's layer table; `Aggregate` (the default, so older files load unchanged) uses the
    /// figures below instead.
    pub network: CnnNetwork,
    /// Parameters (`Aggregate` only). ResNet-50: 25,557,032 (torchvision `ResNet50_Weights` meta).
    pub params: f64,
    /// Forward feature-map bytes per image in FP32 at `resolution` (`Aggregate` only). ResNet-50 at
    /// 224²: 103 MB (albanie/convnet-burden `reports/resnet50.md`).
    pub activation_bytes_per_image_fp32: f64,
    /// Resolution (pixels per side) the figure above was measured at; activations scale with its
    /// square (`Aggregate` only).
    pub reference_resolution: u32,
    /// Resolution of the scenario's images, pixels per side (a latent model's latent is ÷ 8).
    pub resolution: u32,
    /// Forward multiply-accumulates per image at the reference resolution (`Aggregate` only).
    /// ResNet-50: 4.089e9 (torchvision).
    pub macs_per_image: f64,
}

impl Default for CnnSpec {
    fn default() -> Self {
        CnnSpec {
            network: CnnNetwork::Aggregate,
            params: 25_557_032.0,
            activation_bytes_per_image_fp32: 103e6,
            reference_resolution: 224,
            resolution: 224,
            macs_per_image: 4.089e9,
        }
    }
}
