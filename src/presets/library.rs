//! The bundled preset library: `presets/*.ron`, embedded in the binary so the app and the CLI work
//! from any directory. Each file is also a test fixture (tests/presets.rs).

use std::sync::OnceLock;

use super::from_ron_str;
use crate::scenario::Scenario;

/// A scenario shipped with the program.
#[derive(Clone, Debug, PartialEq)]
pub struct BundledPreset {
    /// The scenario's `name` (the file stem if the file failed to parse, which tests forbid).
    pub name: String,
    /// File name without `.ron`, e.g. `bert-base-fp32`; also accepted by [`bundled_scenario`].
    pub id: &'static str,
    /// Menu group, e.g. "Seed article", "Current practice".
    pub group: &'static str,
    /// The scenario's `notes` (hover text).
    pub notes: String,
    /// The RON text as shipped.
    pub ron: &'static str,
}

impl BundledPreset {
    /// Parses the embedded text.
    pub fn scenario(&self) -> Result<Scenario, super::PresetError> {
        from_ron_str(self.ron)
    }
}

/// Group of the seed article's scenarios.
pub const SEED_ARTICLE: &str = "Seed article";
/// Group of today's common setups.
pub const CURRENT_PRACTICE: &str = "Current practice";
/// Group of the presets of issue 14: today's architectures (MLA, sliding window, MoE variants,
/// Mamba hybrids, vision-language), each imported from a published config.json.
pub const TODAYS_MODELS: &str = "Today's models";

macro_rules! preset {
    ($group:expr, $id:literal) => {
        (
            $group,
            $id,
            include_str!(concat!("../../presets/", $id, ".ron")),
        )
    };
}

/// (group, id, text) in menu order.
const FILES: &[(&str, &str, &str)] = &[
    preset!(SEED_ARTICLE, "bert-base-fp32"),
    preset!(SEED_ARTICLE, "gpt3-175b-mp8-a100"),
    preset!(SEED_ARTICLE, "gpt3-175b-mp32-a100"),
    preset!(SEED_ARTICLE, "gpt3-175b-zero3-a100"),
    preset!(SEED_ARTICLE, "gpt-1.3b-amp-checkpointing"),
    preset!(SEED_ARTICLE, "resnet50-batch32"),
    preset!(SEED_ARTICLE, "resnet50-batch128"),
    preset!(SEED_ARTICLE, "resnet50-input-pipeline"),
    preset!(SEED_ARTICLE, "bert-tiny-snapdragon865"),
    preset!(SEED_ARTICLE, "recommender-hbm-a100"),
    preset!(SEED_ARTICLE, "recommender-gddr6x-rtx3090"),
    preset!(SEED_ARTICLE, "zero-3d-parallel-cluster"),
    preset!(SEED_ARTICLE, "one-bit-adam"),
    preset!(CURRENT_PRACTICE, "llama3-8b-full-finetune-h100"),
    preset!(CURRENT_PRACTICE, "llama3-70b-zero3-8xh100"),
    preset!(CURRENT_PRACTICE, "llama2-70b-inference-gqa-2xa100"),
    preset!(CURRENT_PRACTICE, "llama2-7b-rtx4090"),
    preset!(CURRENT_PRACTICE, "llama3-8b-lora-rtx4090"),
    preset!(CURRENT_PRACTICE, "litgpt-llama3-8b-lora-l40s"),
    preset!(CURRENT_PRACTICE, "torchtune-llama3.2-3b-full-a100"),
    preset!(CURRENT_PRACTICE, "llama2-70b-qlora-l40s"),
    preset!(CURRENT_PRACTICE, "llama3-8b-qlora-trl-rtx4090"),
    preset!(CURRENT_PRACTICE, "llama3.1-8b-dpo-8xh100"),
    preset!(CURRENT_PRACTICE, "qwen2.5-7b-grpo-vllm-colocate-8xh100"),
    preset!(CURRENT_PRACTICE, "qwen2.5-7b-grpo-verl-colocate-8xh100"),
    preset!(CURRENT_PRACTICE, "mixtral-8x7b-inference-2xh100"),
    preset!(CURRENT_PRACTICE, "llama2-70b-4bit-rtx4090"),
    preset!(CURRENT_PRACTICE, "llama3.1-8b-vllm-h100-8k"),
    preset!(CURRENT_PRACTICE, "llama3.1-8b-eagle-prefix-vllm-h100"),
    preset!(CURRENT_PRACTICE, "llama3.1-70b-fp8-vllm-4xh100-tp4"),
    preset!(CURRENT_PRACTICE, "qwen2.5-7b-sglang-rtx4090"),
    preset!(CURRENT_PRACTICE, "llama31-8b-q4km-llamacpp-12gb"),
    preset!(CURRENT_PRACTICE, "gemma3-27b-q4km-llamacpp-24gb"),
    preset!(CURRENT_PRACTICE, "qwen3-30b-a3b-q4km-llamacpp-12gb"),
    preset!(CURRENT_PRACTICE, "llama31-8b-q4km-llamacpp-cpu"),
    preset!(CURRENT_PRACTICE, "vit-b16-training-a100"),
    preset!(CURRENT_PRACTICE, "dit-xl2-training-a100"),
    preset!(CURRENT_PRACTICE, "llama3-8b-128k-cp8-64xh100"),
    preset!(TODAYS_MODELS, "deepseek-v3-inference-8xh200-fp8"),
    preset!(TODAYS_MODELS, "qwen3-235b-a22b-inference-8xh100"),
    preset!(TODAYS_MODELS, "glm-4.5-air-inference-4xh100"),
    preset!(TODAYS_MODELS, "gpt-oss-120b-inference-h100-mxfp4"),
    preset!(TODAYS_MODELS, "llama4-scout-int4-h100"),
    preset!(TODAYS_MODELS, "gemma3-27b-128k-h200"),
    preset!(TODAYS_MODELS, "nemotron-h-8b-128k-h100"),
    preset!(TODAYS_MODELS, "qwen2.5-vl-7b-images-l40s"),
    preset!(TODAYS_MODELS, "whisper-large-v3-inference-rtx4090"),
    preset!(TODAYS_MODELS, "sd15-unet-finetune-a100"),
];

/// Every bundled preset, in menu order (parsed once, on first use).
pub fn bundled() -> &'static [BundledPreset] {
    static LIBRARY: OnceLock<Vec<BundledPreset>> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        FILES
            .iter()
            .map(|&(group, id, ron)| {
                let parsed = from_ron_str(ron).ok();
                BundledPreset {
                    name: parsed
                        .as_ref()
                        .map_or_else(|| id.to_owned(), |s| s.name.clone()),
                    id,
                    group,
                    notes: parsed.map(|s| s.notes).unwrap_or_default(),
                    ron,
                }
            })
            .collect()
    })
}

/// A bundled scenario by its name or id (case-insensitive), if there is one and it parses.
pub fn bundled_scenario(name: &str) -> Option<Scenario> {
    bundled()
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name) || p.id.eq_ignore_ascii_case(name))
        .and_then(|p| p.scenario().ok())
}
