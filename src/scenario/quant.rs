//! Quantized weight formats with their real bits per weight (scales and zeros included), and FSDP's
//! names for the ZeRO stages.

use crate::tensor::{GgufFileType, GgufType, StorageFormat};
use serde::{Deserialize, Serialize};

use super::ZeroStage;

/// How the layers' weight matrices are stored. Embeddings, the LM head and norms stay in the
/// precision's weight type (GPTQ, AWQ, bitsandbytes and llama.cpp's usual recipes keep them ≥ 6 bit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WeightFormat {
    /// The precision's weight type, no scales.
    #[default]
    AsPrecision,
    /// INT8 with one FP16 scale per output channel (LLM.int8() storage, Dettmers et al. 2022 §3.1;
    /// weight-only INT8): 8 + 16 / d_in bits.
    Int8PerChannel,
    /// INT4 GPTQ / AWQ with `group_size` groups: an FP16 scale and a 4-bit packed zero per group
    /// (AutoGPTQ / AutoAWQ `QuantLinear`: `scales` FP16, `qzeros` int32 packing 8 zeros):
    /// 4 + (16 + 4) / g bits (4.156 at g = 128).
    Int4Group,
    /// GGUF Q4_K: super-blocks of 256 with FP16 d and dmin and 6-bit scales and mins: 144 bytes per 256
    /// weights = 4.5 bits (ggml `ggml-common.h` `block_q4_K`).
    GgufQ4K,
    /// GGUF Q8_0: blocks of 32 INT8 with one FP16 scale: 34 bytes per 32 = 8.5 bits (`block_q8_0`).
    GgufQ8_0,
    /// FP8 (E4M3) with a per-tensor scale: 8 bits (Micikevicius et al. 2022). Native on Hopper, Ada,
    /// Blackwell.
    Fp8,
    /// MXFP4: FP4 (E2M1) in blocks of 32 with an 8-bit power-of-two (E8M0) scale: 4 + 8/32 = 4.25 bits
    /// (OCP Microscaling Formats v1.0 §5). Native on Blackwell.
    Mxfp4,
    /// NVFP4: FP4 (E2M1) in blocks of 16 with an FP8 E4M3 scale (+ one FP32 per tensor): 4 + 8/16 = 4.5
    /// bits (NVIDIA Blackwell NVFP4). Native on Blackwell.
    Nvfp4,
    /// NF4 (bitsandbytes, QLoRA): 4-bit NormalFloat in blocks of 64 with an FP32 absmax: 4.5 bits;
    /// with double quantization 4 + 8/64 + 32/(64·256) = 4.127 bits (Dettmers et al. 2023 §3).
    Nf4,
    /// A GGUF file of this type (`llama-quantize`'s Q4_K_M, Q8_0, F16, …): each tensor in the type
    /// its role and layer get (`estimator::engines::llamacpp::tensor_types`, llama.cpp
    /// `src/llama-quant.cpp`). The llama.cpp engine counts it tensor by tensor; elsewhere the
    /// matrices count at the file type's base type (Q4_K for Q4_K_M).
    GgufFile(GgufFileType),
}

impl WeightFormat {
    pub const ALL: [WeightFormat; 9] = [
        WeightFormat::AsPrecision,
        WeightFormat::Int8PerChannel,
        WeightFormat::Int4Group,
        WeightFormat::GgufQ4K,
        WeightFormat::GgufQ8_0,
        WeightFormat::Fp8,
        WeightFormat::Mxfp4,
        WeightFormat::Nvfp4,
        WeightFormat::Nf4,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            WeightFormat::AsPrecision => "As the precision",
            WeightFormat::Int8PerChannel => "INT8 per-channel",
            WeightFormat::Int4Group => "INT4 GPTQ/AWQ",
            WeightFormat::GgufQ4K => "GGUF Q4_K",
            WeightFormat::GgufQ8_0 => "GGUF Q8_0",
            WeightFormat::Fp8 => "FP8",
            WeightFormat::Mxfp4 => "MXFP4",
            WeightFormat::Nvfp4 => "NVFP4",
            WeightFormat::Nf4 => "NF4 (bitsandbytes)",
            WeightFormat::GgufFile(_) => "GGUF file",
        }
    }

    /// Bits per weight including scales and zeros, or `None` for `AsPrecision` (the dtype decides).
    /// `group` is the INT4 group size, `d_in` the matrices' input width (INT8's per-row scale),
    /// `double_quant` NF4's second-level quantization of its scales.
    ///
    /// ```
    /// use vram_explorer::scenario::WeightFormat as W;
    /// assert_eq!(W::GgufQ4K.bits_per_weight(128, 4096, false), Some(4.5));
    /// assert_eq!(W::GgufQ8_0.bits_per_weight(128, 4096, false), Some(8.5));
    /// assert_eq!(W::Mxfp4.bits_per_weight(128, 4096, false), Some(4.25));
    /// assert_eq!(W::Nvfp4.bits_per_weight(128, 4096, false), Some(4.5));
    /// assert_eq!(W::Nf4.bits_per_weight(128, 4096, false), Some(4.5));
    /// assert_eq!(W::Int4Group.bits_per_weight(128, 4096, false), Some(4.0 + 20.0 / 128.0));
    /// ```
    pub fn bits_per_weight(self, group: u32, d_in: u32, double_quant: bool) -> Option<f64> {
        self.storage(group, double_quant)
            .map(|s| s.bits_per_element(d_in))
    }

    /// The storage format this choice names (`tensor::StorageFormat`), or `None` for `AsPrecision`.
    pub fn storage(self, group: u32, double_quant: bool) -> Option<StorageFormat> {
        Some(match self {
            WeightFormat::AsPrecision => return None,
            WeightFormat::Int8PerChannel => StorageFormat::Int8PerChannel,
            WeightFormat::Int4Group => StorageFormat::Int4Group {
                group: group.clamp(1, 1 << 20),
            },
            WeightFormat::GgufQ4K => StorageFormat::Gguf(GgufType::Q4K),
            WeightFormat::GgufQ8_0 => StorageFormat::Gguf(GgufType::Q8_0),
            WeightFormat::Fp8 => StorageFormat::Fp8PerTensor,
            WeightFormat::Mxfp4 => StorageFormat::Mxfp4,
            WeightFormat::Nvfp4 => StorageFormat::Nvfp4,
            WeightFormat::Nf4 => StorageFormat::Bnb4 { double_quant },
            WeightFormat::GgufFile(f) => StorageFormat::Gguf(f.base()),
        })
    }

    /// bitsandbytes de-quantizes a whole NF4 matrix to the compute type before each matmul (a transient
    /// of one matrix); the other formats' kernels (Marlin/ExLlama, llama.cpp, FP8/FP4 GEMMs) de-quantize
    /// in registers.
    pub const fn dequantizes_whole_matrix(self) -> bool {
        matches!(self, WeightFormat::Nf4)
    }
}

/// Weight quantization of a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quantization {
    /// Storage of the layers' weight matrices (inference, and the frozen base of LoRA). Full training
    /// ignores it; QLoRA uses NF4 whatever it says.
    pub weights: WeightFormat,
    /// Group size of INT4 GPTQ/AWQ. Valid: 1 ..= 65536 (128 is the common choice).
    pub group_size: u32,
    /// Only the routed experts are stored in `weights`; attention, routers and dense MLPs keep the
    /// precision's type (gpt-oss's MXFP4 checkpoints: `modules_to_not_convert` lists `self_attn`
    /// and `mlp.router`).
    pub experts_only: bool,
}

impl Default for Quantization {
    fn default() -> Self {
        Quantization {
            weights: WeightFormat::AsPrecision,
            group_size: 128,
            experts_only: false,
        }
    }
}

impl ZeroStage {
    /// PyTorch FSDP's `ShardingStrategy` that shards the same states (FSDP docs,
    /// `torch.distributed.fsdp.ShardingStrategy`): NO_SHARD = DDP; SHARD_GRAD_OP = ZeRO-2
    /// (gradients and optimizer states; parameters are kept after forward); FULL_SHARD = ZeRO-3.
    /// ZeRO-1 has no FSDP counterpart. HYBRID_SHARD is FULL_SHARD within a node and replication across
    /// nodes: ZeRO-3 with a data-parallel degree of GPUs per node.
    pub const fn fsdp_name(self) -> Option<&'static str> {
        match self {
            ZeroStage::None => Some("NO_SHARD"),
            ZeroStage::Stage1 => None,
            ZeroStage::Stage2 => Some("SHARD_GRAD_OP"),
            ZeroStage::Stage3 => Some("FULL_SHARD"),
        }
    }

    /// "ZeRO-3 (FSDP FULL_SHARD)", for menus.
    pub const fn label_with_fsdp(self) -> &'static str {
        match self {
            ZeroStage::None => "None: plain DP (DDP, FSDP NO_SHARD)",
            ZeroStage::Stage1 => "ZeRO-1: optimizer states",
            ZeroStage::Stage2 => "ZeRO-2: + gradients (FSDP SHARD_GRAD_OP)",
            ZeroStage::Stage3 => "ZeRO-3: + parameters (FSDP FULL_SHARD)",
        }
    }
}
