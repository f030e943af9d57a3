//! What serves an inference scenario. A separate notion from the training framework
//! (`implementation.profile`, what a training step keeps alive): a serving engine decides what is
//! reserved up front and how the cache grows. Issue 15 adds vLLM, SGLang and llama.cpp here.

use serde::{Deserialize, Serialize};

use super::{Profile, Sglang, Vllm};

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum ServingEngine {
    /// Hugging Face Transformers `generate`: eager PyTorch ops and a `DynamicCache` that grows by
    /// `torch.cat` (while a layer's cache is re-allocated its old copy is still live;
    /// transformers `cache_utils.py` `DynamicLayer.update`).
    #[default]
    HfGenerate,
    /// A cache allocated once at its full length, written in place (Megatron-LM's inference
    /// engine, Transformers `StaticCache`): no copy when it grows.
    Preallocated,
    /// vLLM: a paged KV pool sized at startup from `gpu_memory_utilization` minus what its profiling
    /// run measured (docs/engines/vllm.md).
    Vllm(Vllm),
    /// SGLang: a token pool sized from `mem_fraction_static` of the free memory before the weights
    /// (docs/engines/sglang.md).
    Sglang(Sglang),
    /// llama.cpp (`llama-server`, `llama-cli`, llama-cpp-python, Ollama's llama runner): GGUF
    /// weights placed by `-ngl`, a KV cache of `-c` cells per device, a compute buffer reserved
    /// for the worst-case graph (docs/engines/llamacpp.md).
    LlamaCpp(super::LlamaCpp),
}

impl ServingEngine {
    /// The llama.cpp settings, if this is llama.cpp.
    pub const fn llamacpp(&self) -> Option<&super::LlamaCpp> {
        match self {
            ServingEngine::LlamaCpp(l) => Some(l),
            _ => None,
        }
    }

    /// A llama.cpp CPU build (`-dev none`): no GPU is used at all.
    pub const fn cpu_only(&self) -> bool {
        matches!(self, ServingEngine::LlamaCpp(l) if l.cpu_only)
    }

    /// Whether the engine sizes its KV cache at startup whatever the load (vLLM, SGLang,
    /// llama.cpp): that cache bounds the requests at once.
    pub const fn budgets_at_startup(&self) -> bool {
        matches!(
            self,
            ServingEngine::Vllm(_) | ServingEngine::Sglang(_) | ServingEngine::LlamaCpp(_)
        )
    }

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
