//! The input pipeline: what one batch of inputs is (tokens, or images at a type or block-compressed),
//! how many batches are prefetched onto the GPU, and how many are staged in host memory. Whether
//! host buffers are pinned is `Timing::pinned_host_memory` (one switch for every host transfer).
//! Seed article §2.2: prefetch on CUDA streams, `pin_memory=True`, BCn texture compression.

use serde::{Deserialize, Serialize};

use super::Dtype;

/// What one sample of input is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputKind {
    /// Token ids (and labels): `token_bytes` per token, tokens per sample from the workload.
    #[default]
    Tokens,
    /// One image of `image_height` × `image_width` × `image_channels` per sample.
    Images,
}

/// How an image is stored in GPU memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ImageEncoding {
    /// A dense tensor of `image_channels` elements per pixel at `image_dtype` (FP32 normalised is the
    /// PyTorch default after `ToTensor` + `Normalize`).
    #[default]
    Tensor,
    /// 8 bits per channel, 4 channels: 32 bits per pixel.
    Rgba8,
    /// BC1 (DXT1): 8 bytes per 4×4 block, 4 bits per pixel (Direct3D 11 block compression).
    Bc1,
    /// BC7: 16 bytes per 4×4 block, 8 bits per pixel (Direct3D 11 block compression).
    Bc7,
}

/// The input side of a step: batch bytes on the GPU, prefetch depth and host staging.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InputPipeline {
    pub kind: InputKind,
    /// Bytes per token of the input tensors: int64 ids and int64 labels = 16. Valid: 1 ..= 64.
    pub token_bytes: u32,
    /// Image height in pixels. Valid: 1 ..= 65536.
    pub image_height: u32,
    /// Image width in pixels. Valid: 1 ..= 65536.
    pub image_width: u32,
    /// Channels of a `Tensor` image (3 for RGB). Valid: 1 ..= 64.
    pub image_channels: u32,
    pub encoding: ImageEncoding,
    /// Element type of a `Tensor` image.
    pub image_dtype: Dtype,
    /// Batches copied to the GPU ahead of the one being computed, on a second CUDA stream
    /// (1 = double buffering). 0 = each batch is copied when needed, on the critical path.
    /// Valid: 0 ..= 64.
    pub gpu_prefetch_batches: u32,
    /// Batches staged in host memory (DataLoader `prefetch_factor` × workers; PyTorch's default
    /// prefetch_factor is 2 per worker). Valid: 0 ..= 4096.
    pub host_staging_batches: u32,
}

impl Default for InputPipeline {
    fn default() -> Self {
        InputPipeline {
            kind: InputKind::Tokens,
            token_bytes: 16,
            image_height: 224,
            image_width: 224,
            image_channels: 3,
            encoding: ImageEncoding::Tensor,
            image_dtype: Dtype::Fp32,
            gpu_prefetch_batches: 0,
            host_staging_batches: 2,
        }
    }
}
