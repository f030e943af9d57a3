//! Serving engines' own sizing of the KV cache: what vLLM and SGLang print at startup
//! (docs/engines/). Each engine's rule is a file; `figures` is the entry point.

pub mod device;
pub mod figures;
pub mod layout;
pub mod llamacpp;
pub mod prefill_chunk;
pub mod profile;
pub mod refusals;
pub mod reservation;
pub mod resolve;
pub mod sglang;
pub mod vllm;

pub use figures::{EngineFigures, EngineKind};
