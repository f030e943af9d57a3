//! What serves an inference scenario. A separate notion from the training framework
//! (`implementation.profile`, what a training step keeps alive): a serving engine decides what is
//! reserved up front and how the cache grows. Issue 15 adds vLLM, SGLang and llama.cpp here.

use serde::{Deserialize, Serialize};

use super::Profile;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServingEngine {
    /// Hugging Face Transformers `generate`: eager PyTorch ops and a `DynamicCache` that grows by
    /// `torch.cat` (while a layer's cache is re-allocated its old copy is still live;
    /// transformers `cache_utils.py` `DynamicLayer.update`).
    #[default]
    HfGenerate,
    /// A cache allocated once at its full length, written in place (Megatron-LM's inference
    /// engine, Transformers `StaticCache`): no copy when it grows.
    Preallocated,
}

impl ServingEngine {
    /// The engine a file that names none meant: the one its training profile's code base serves
    /// with (Hugging Face → `generate`; Megatron, LitGPT, torchtune → a preallocated cache).
    pub const fn following(profile: Profile) -> ServingEngine {
        match profile {
            Profile::HuggingFace => ServingEngine::HfGenerate,
            // LitGPT `set_kv_cache` (docs/frameworks/litgpt.md) and torchtune's `KVCache` allocate
            // the cache at its full length.
            Profile::Megatron | Profile::LitGpt | Profile::Torchtune => ServingEngine::Preallocated,
        }
    }
}
