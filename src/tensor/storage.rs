//! Storage formats: how a weight matrix is laid out in memory, with its scales, zeros and block
//! headers counted. Exact bits per element for every format the estimator knows; the scenario's
//! `quantization.weights` (`scenario::WeightFormat`) is a spelling of one of these.

use super::Dtype;

/// A GGUF tensor type (ggml `ggml-common.h`, the `block_*` structs; llama.cpp b4xxx–b6xxx).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgufType {
    F32,
    F16,
    Bf16,
    /// 32 weights: FP16 scale + 16 B of nibbles = 18 B.
    Q4_0,
    /// 32 weights: FP16 scale and min + 16 B = 20 B.
    Q4_1,
    /// 32 weights: FP16 scale + 4 B high bits + 16 B = 22 B.
    Q5_0,
    /// 32 weights: FP16 scale and min + 4 B + 16 B = 24 B.
    Q5_1,
    /// 32 weights: FP16 scale + 32 B = 34 B.
    Q8_0,
    /// 256 weights: 16 B scales + 64 B quants + FP16 d and dmin = 84 B.
    Q2K,
    /// 256 weights: 32 B high mask + 64 B quants + 12 B scales + FP16 d = 110 B.
    Q3K,
    /// 256 weights: FP16 d and dmin + 12 B scales + 128 B quants = 144 B.
    Q4K,
    /// 256 weights: FP16 d and dmin + 12 B scales + 32 B high bits + 128 B quants = 176 B.
    Q5K,
    /// 256 weights: 128 B low bits + 64 B high bits + 16 B scales + FP16 d = 210 B.
    Q6K,
    /// 32 weights: FP16 scale + 16 B of non-linear 4-bit indices = 18 B (`block_iq4_nl`; a
    /// llama.cpp KV-cache type, `-ctk iq4_nl`).
    Iq4Nl,
}

impl GgufType {
    /// The name ggml gives it.
    pub const fn name(self) -> &'static str {
        match self {
            GgufType::F32 => "F32",
            GgufType::F16 => "F16",
            GgufType::Bf16 => "BF16",
            GgufType::Q4_0 => "Q4_0",
            GgufType::Q4_1 => "Q4_1",
            GgufType::Q5_0 => "Q5_0",
            GgufType::Q5_1 => "Q5_1",
            GgufType::Q8_0 => "Q8_0",
            GgufType::Q2K => "Q2_K",
            GgufType::Q3K => "Q3_K",
            GgufType::Q4K => "Q4_K",
            GgufType::Q5K => "Q5_K",
            GgufType::Q6K => "Q6_K",
            GgufType::Iq4Nl => "IQ4_NL",
        }
    }

    /// Whether ggml counts it as quantized (`ggml_is_quantized`: block size > 1).
    pub const fn is_quantized(self) -> bool {
        self.block().0 > 1
    }

    /// Bytes of `n` elements (`ggml_row_size`: `n / blck × type_size`; `n` a multiple of the block).
    ///
    /// ```
    /// use vram_explorer::tensor::GgufType;
    /// assert_eq!(GgufType::Q4K.bytes(4096 * 4096), 9_437_184);
    /// assert_eq!(GgufType::Q8_0.bytes(1024), 1088);
    /// ```
    pub const fn bytes(self, n: u64) -> u64 {
        let (blck, size) = self.block();
        n / blck as u64 * size as u64
    }

    /// (weights per block, bytes per block): ggml `ggml.c` `type_traits[]` (`blck_size`,
    /// `type_size`), the `block_*` structs of `ggml-common.h` (llama.cpp@0c1e57098).
    pub const fn block(self) -> (u32, u32) {
        match self {
            GgufType::F32 => (1, 4),
            GgufType::F16 | GgufType::Bf16 => (1, 2),
            GgufType::Q4_0 => (32, 18),
            GgufType::Q4_1 => (32, 20),
            GgufType::Q5_0 => (32, 22),
            GgufType::Q5_1 => (32, 24),
            GgufType::Q8_0 => (32, 34),
            GgufType::Q2K => (256, 84),
            GgufType::Q3K => (256, 110),
            GgufType::Q4K => (256, 144),
            GgufType::Q5K => (256, 176),
            GgufType::Q6K => (256, 210),
            GgufType::Iq4Nl => (32, 18),
        }
    }
}

/// How a weight matrix is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StorageFormat {
    /// Plain elements of one type.
    Dense(Dtype),
    /// bitsandbytes 4-bit NormalFloat (NF4) or FP4 in blocks of 64 with an FP32 absmax; with double
    /// quantization the absmax is itself 8-bit in blocks of 256 with an FP32 second absmax
    /// (Dettmers et al. 2023 "QLoRA" §3; bitsandbytes `Params4bit`, blocksize 64).
    Bnb4 {
        double_quant: bool,
    },
    /// bitsandbytes LLM.int8(): INT8 with an FP32 absmax per output row (`Int8Params.SCB`;
    /// Dettmers et al. 2022 §3.1).
    BnbInt8,
    /// Weight-only INT8 with one FP16 scale per output channel.
    Int8PerChannel,
    /// GPTQ / AWQ INT4 in groups of `group` along the input: an FP16 scale and a 4-bit zero per group
    /// (AutoGPTQ / AutoAWQ `QuantLinear`: `scales` FP16, `qzeros` packed 8 per int32).
    Int4Group {
        group: u32,
    },
    /// FP8 (E4M3) with one scale per tensor (Micikevicius et al. 2022).
    Fp8PerTensor,
    /// FP8 (E4M3) with an FP32 scale per 128 × 128 block (DeepSeek-V3 §3.3.2,
    /// `weight_block_size = [128, 128]`).
    Fp8BlockWise,
    /// OCP MXFP4: E2M1 in blocks of 32 with an E8M0 scale (OCP Microscaling Formats v1.0 §5; gpt-oss).
    Mxfp4,
    /// NVFP4: E2M1 in blocks of 16 with an FP8 E4M3 scale, plus one FP32 per tensor (not counted).
    Nvfp4,
    Gguf(GgufType),
}

impl Default for StorageFormat {
    fn default() -> Self {
        StorageFormat::Dense(Dtype::default())
    }
}

impl StorageFormat {
    /// Bits per element, scales and zeros included; `d_in` is the matrix's input width (the per-row
    /// scale of the INT8 formats is spread over it).
    ///
    /// ```
    /// use vram_explorer::tensor::{Dtype, GgufType, StorageFormat as S};
    /// assert_eq!(S::Dense(Dtype::Bf16).bits_per_element(4096), 16.0);
    /// assert_eq!(S::Gguf(GgufType::Q4K).bits_per_element(4096), 4.5);
    /// assert_eq!(S::Gguf(GgufType::Q6K).bits_per_element(4096), 6.5625);
    /// assert_eq!(S::Gguf(GgufType::Q8_0).bits_per_element(4096), 8.5);
    /// assert_eq!(S::Mxfp4.bits_per_element(4096), 4.25);
    /// assert_eq!(S::Bnb4 { double_quant: false }.bits_per_element(4096), 4.5);
    /// assert_eq!(S::Int4Group { group: 128 }.bits_per_element(4096), 4.15625);
    /// ```
    pub fn bits_per_element(self, d_in: u32) -> f64 {
        let d = f64::from(d_in.max(1));
        match self {
            StorageFormat::Dense(t) => f64::from(t.bits()),
            StorageFormat::Bnb4 { double_quant: true } => 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0),
            StorageFormat::Bnb4 {
                double_quant: false,
            } => 4.0 + 32.0 / 64.0,
            StorageFormat::BnbInt8 => 8.0 + 32.0 / d,
            StorageFormat::Int8PerChannel => 8.0 + 16.0 / d,
            StorageFormat::Int4Group { group } => 4.0 + (16.0 + 4.0) / f64::from(group.max(1)),
            StorageFormat::Fp8PerTensor => 8.0,
            StorageFormat::Fp8BlockWise => 8.0 + 32.0 / (128.0 * 128.0),
            StorageFormat::Mxfp4 => 4.0 + 8.0 / 32.0,
            StorageFormat::Nvfp4 => 4.0 + 8.0 / 16.0,
            StorageFormat::Gguf(g) => {
                let (n, bytes) = g.block();
                f64::from(bytes) * 8.0 / f64::from(n)
            }
        }
    }

    /// A short name ("GGUF Q4_K", "NF4 (double quant)").
    pub fn label(self) -> String {
        match self {
            StorageFormat::Dense(t) => t.label().to_owned(),
            StorageFormat::Bnb4 { double_quant: true } => "NF4/FP4 (double quant)".to_owned(),
            StorageFormat::Bnb4 {
                double_quant: false,
            } => "NF4/FP4".to_owned(),
            StorageFormat::BnbInt8 => "LLM.int8()".to_owned(),
            StorageFormat::Int8PerChannel => "INT8 per-channel".to_owned(),
            StorageFormat::Int4Group { group } => format!("INT4 g{group} (GPTQ/AWQ)"),
            StorageFormat::Fp8PerTensor => "FP8".to_owned(),
            StorageFormat::Fp8BlockWise => "FP8 block-wise 128×128".to_owned(),
            StorageFormat::Mxfp4 => "MXFP4".to_owned(),
            StorageFormat::Nvfp4 => "NVFP4".to_owned(),
            StorageFormat::Gguf(g) => format!("GGUF {}", g.name()),
        }
    }
}
