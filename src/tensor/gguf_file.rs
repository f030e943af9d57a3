//! GGUF file types (`llama_ftype`, what `llama-quantize` is asked for: Q4_K_M, Q8_0, F16, …). A file
//! type is not one storage format: `llama-quantize` stores each tensor in a type chosen by its role
//! and layer (the estimator's `engines::llamacpp::tensor_types`). This is the vocabulary; the rules
//! live in the estimator.

use serde::{Deserialize, Serialize};

use super::GgufType;

/// A GGUF file type as `llama-quantize` names it (`llama.h` `enum llama_ftype`, llama.cpp@0c1e57098
/// as vendored in llama-cpp-python 0.3.36).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GgufFileType {
    F32,
    #[default]
    F16,
    Bf16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3KS,
    Q3KM,
    Q3KL,
    Q4KS,
    Q4KM,
    Q5KS,
    Q5KM,
    Q6K,
}

impl GgufFileType {
    pub const ALL: [GgufFileType; 17] = [
        GgufFileType::F32,
        GgufFileType::F16,
        GgufFileType::Bf16,
        GgufFileType::Q4_0,
        GgufFileType::Q4_1,
        GgufFileType::Q5_0,
        GgufFileType::Q5_1,
        GgufFileType::Q8_0,
        GgufFileType::Q2K,
        GgufFileType::Q3KS,
        GgufFileType::Q3KM,
        GgufFileType::Q3KL,
        GgufFileType::Q4KS,
        GgufFileType::Q4KM,
        GgufFileType::Q5KS,
        GgufFileType::Q5KM,
        GgufFileType::Q6K,
    ];

    /// The name in file names and in `llama-quantize`'s list ("Q4_K_M").
    pub const fn name(self) -> &'static str {
        match self {
            GgufFileType::F32 => "F32",
            GgufFileType::F16 => "F16",
            GgufFileType::Bf16 => "BF16",
            GgufFileType::Q4_0 => "Q4_0",
            GgufFileType::Q4_1 => "Q4_1",
            GgufFileType::Q5_0 => "Q5_0",
            GgufFileType::Q5_1 => "Q5_1",
            GgufFileType::Q8_0 => "Q8_0",
            GgufFileType::Q2K => "Q2_K",
            GgufFileType::Q3KS => "Q3_K_S",
            GgufFileType::Q3KM => "Q3_K_M",
            GgufFileType::Q3KL => "Q3_K_L",
            GgufFileType::Q4KS => "Q4_K_S",
            GgufFileType::Q4KM => "Q4_K_M",
            GgufFileType::Q5KS => "Q5_K_S",
            GgufFileType::Q5KM => "Q5_K_M",
            GgufFileType::Q6K => "Q6_K",
        }
    }

    /// The file type a name (or a file name containing it, case-insensitive) spells:
    /// "model-Q4_K_M.gguf" → Q4_K_M. The longest match wins (Q4_K_M before Q4_K).
    ///
    /// ```
    /// use vram_explorer::tensor::GgufFileType as F;
    /// assert_eq!(F::find("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"), Some(F::Q4KM));
    /// assert_eq!(F::find("qwen2.5-7b-instruct-q8_0.gguf"), Some(F::Q8_0));
    /// assert_eq!(F::find("model.gguf"), None);
    /// ```
    pub fn find(text: &str) -> Option<GgufFileType> {
        let upper = text.to_ascii_uppercase();
        GgufFileType::ALL
            .into_iter()
            .filter(|f| upper.contains(f.name()))
            .max_by_key(|f| f.name().len())
    }

    /// The type every quantizable matrix starts from (`llama-quant.cpp`
    /// `llama_ftype_get_default_type`) before the per-tensor rules.
    pub const fn base(self) -> GgufType {
        match self {
            GgufFileType::F32 => GgufType::F32,
            GgufFileType::F16 => GgufType::F16,
            GgufFileType::Bf16 => GgufType::Bf16,
            GgufFileType::Q4_0 => GgufType::Q4_0,
            GgufFileType::Q4_1 => GgufType::Q4_1,
            GgufFileType::Q5_0 => GgufType::Q5_0,
            GgufFileType::Q5_1 => GgufType::Q5_1,
            GgufFileType::Q8_0 => GgufType::Q8_0,
            GgufFileType::Q2K => GgufType::Q2K,
            GgufFileType::Q3KS | GgufFileType::Q3KM | GgufFileType::Q3KL => GgufType::Q3K,
            GgufFileType::Q4KS | GgufFileType::Q4KM => GgufType::Q4K,
            GgufFileType::Q5KS | GgufFileType::Q5KM => GgufType::Q5K,
            GgufFileType::Q6K => GgufType::Q6K,
        }
    }
}
