//! Image bytes per encoding: dense tensors, RGBA8 and Direct3D block compression (BCn).
//!
//! Source: Microsoft, "Texture Block Compression in Direct3D 11" (learn.microsoft.com, Direct3D 11
//! graphics docs): BC1 stores a 4×4 block in 64 bits (4 bits per pixel), BC7 in 128 bits (8 bits per
//! pixel); images are stored as whole blocks, so each side is rounded up to a multiple of 4. RGBA8 is
//! 4 × 8 = 32 bits per pixel. The seed article's "BCn cuts memory 75 % while keeping over 98 % of the
//! accuracy" is its claim: only the memory half is computed here.

use crate::scenario::{Dtype, ImageEncoding};

/// Bits per pixel of an encoding (`channels` × the dtype's bits for a dense tensor).
pub const fn bits_per_pixel(encoding: ImageEncoding, channels: u32, dtype: Dtype) -> f64 {
    match encoding {
        ImageEncoding::Tensor => channels as f64 * dtype.bits() as f64,
        ImageEncoding::Rgba8 => 32.0,
        ImageEncoding::Bc1 => 4.0,
        ImageEncoding::Bc7 => 8.0,
    }
}

/// Bytes of a 4×4 block of a block-compressed encoding (`None` for uncompressed ones).
pub const fn block_bytes(encoding: ImageEncoding) -> Option<f64> {
    match encoding {
        ImageEncoding::Bc1 => Some(8.0),
        ImageEncoding::Bc7 => Some(16.0),
        ImageEncoding::Tensor | ImageEncoding::Rgba8 => None,
    }
}

/// Bytes of one `height` × `width` image. Block formats round each side up to a multiple of 4.
///
/// ```
/// use vram_explorer::estimator::article::textures::image_bytes;
/// use vram_explorer::scenario::{Dtype, ImageEncoding};
/// assert_eq!(image_bytes(224, 224, ImageEncoding::Rgba8, 3, Dtype::Fp32), 200_704.0);
/// assert_eq!(image_bytes(224, 224, ImageEncoding::Bc7, 3, Dtype::Fp32), 50_176.0);
/// assert_eq!(image_bytes(5, 5, ImageEncoding::Bc1, 3, Dtype::Fp32), 32.0); // 2×2 blocks
/// ```
pub fn image_bytes(
    height: u32,
    width: u32,
    encoding: ImageEncoding,
    channels: u32,
    dtype: Dtype,
) -> f64 {
    let (h, w) = (f64::from(height), f64::from(width));
    match block_bytes(encoding) {
        Some(block) => (h / 4.0).ceil() * (w / 4.0).ceil() * block,
        None => h * w * bits_per_pixel(encoding, channels, dtype) / 8.0,
    }
}

/// Share of input bytes an encoding saves against RGBA8 (0.75 for BC7, 0.875 for BC1; negative
/// when the encoding is larger, e.g. an FP32 tensor).
pub fn saving_vs_rgba8(encoding: ImageEncoding, channels: u32, dtype: Dtype) -> f64 {
    1.0 - bits_per_pixel(encoding, channels, dtype) / 32.0
}
