//! Element types: how many bits a tensor's element takes in memory.

use serde::{Deserialize, Serialize};

listed_enum! {
    /// An element type as stored in memory.
    ///
    /// TF32 is a compute mode of FP32 tensors on NVIDIA tensor cores: storage stays 4 bytes
    /// (NVIDIA A100 whitepaper, "TF32 … uses the same 10-bit mantissa as FP16 … stored as FP32").
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Dtype {
        #[default]
        Fp32,
        Tf32,
        Fp16,
        Bf16,
        Fp8E4M3,
        Fp8E5M2,
        Int8,
        Int4,
    }
}

impl Dtype {
    /// Bits of storage per element (scales of block formats are accounted separately).
    pub const fn bits(self) -> u32 {
        match self {
            Dtype::Fp32 | Dtype::Tf32 => 32,
            Dtype::Fp16 | Dtype::Bf16 => 16,
            Dtype::Fp8E4M3 | Dtype::Fp8E5M2 | Dtype::Int8 => 8,
            Dtype::Int4 => 4,
        }
    }

    /// Bytes of storage per element (0.5 for INT4).
    pub const fn bytes(self) -> f64 {
        self.bits() as f64 / 8.0
    }

    pub const fn label(self) -> &'static str {
        match self {
            Dtype::Fp32 => "FP32",
            Dtype::Tf32 => "TF32",
            Dtype::Fp16 => "FP16",
            Dtype::Bf16 => "BF16",
            Dtype::Fp8E4M3 => "FP8 E4M3",
            Dtype::Fp8E5M2 => "FP8 E5M2",
            Dtype::Int8 => "INT8",
            Dtype::Int4 => "INT4",
        }
    }
}
