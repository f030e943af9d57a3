//! `model_type` → the family that reads it.

use super::hf_config::{Built, Reader};
use super::{
    hf_decoders as dec, hf_encdec, hf_families, hf_llama4, hf_moe, hf_multimodal, hf_qwen3_next,
    hf_ssm,
};

/// Every `model_type` understood.
pub const SUPPORTED: [&str; 30] = [
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "qwen3_next",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "glm4_moe",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gpt_oss",
    "llama4",
    "llama4_text",
    "phi3",
    "mamba",
    "mamba2",
    "jamba",
    "nemotron_h",
    "t5",
    "whisper",
    "qwen2_5_vl",
    "qwen2_5_vl_text",
    "llava",
    "bert",
    "roberta",
];

/// Builds `model_type` from `r` into `out`; false when the type is not understood. (`gpt2` is
/// understood too, as before.)
pub(super) fn build(r: &mut Reader, model_type: &str, out: &mut Built) -> bool {
    match model_type {
        "llama" => dec::llama(r, out),
        "mistral" => dec::mistral(r, out),
        "qwen2" | "qwen3" | "qwen2_5_vl_text" => dec::qwen(r, out, model_type),
        "phi3" => dec::phi3(r, out),
        "gemma2" => dec::gemma(r, out, false),
        "gemma3_text" => dec::gemma(r, out, true),
        "mixtral" => hf_moe::mixtral(r, out),
        "qwen2_moe" => hf_moe::qwen_moe(r, out, false),
        "qwen3_moe" => hf_moe::qwen_moe(r, out, true),
        "gpt_oss" => hf_moe::gpt_oss(r, out),
        "deepseek_v2" => hf_moe::deepseek(r, out, true),
        "deepseek_v3" | "kimi_k2" => hf_moe::deepseek(r, out, false),
        "glm4_moe" => hf_moe::glm4_moe(r, out),
        "mamba" => hf_ssm::mamba(r, out),
        "mamba2" => hf_ssm::mamba2(r, out),
        "jamba" => hf_ssm::jamba(r, out),
        "nemotron_h" => hf_ssm::nemotron_h(r, out),
        "qwen3_next" => hf_qwen3_next::qwen3_next(r, out),
        "llama4_text" => hf_llama4::llama4_text(r, out),
        "llama4" => hf_llama4::llama4(r, out),
        "llava" => hf_multimodal::llava(r, out),
        "gemma3" => hf_multimodal::gemma3(r, out),
        "qwen2_5_vl" => hf_multimodal::qwen2_5_vl(r, out),
        "t5" => hf_encdec::t5(r, out),
        "whisper" => hf_encdec::whisper(r, out),
        "gpt2" => out.t = hf_families::gpt2(r),
        "bert" | "roberta" => out.t = hf_families::bert(r, &mut out.notes),
        _ => return false,
    }
    true
}
