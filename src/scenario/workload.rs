//! What a step does: training or inference, batch and sequence, and the optimizer.

use serde::{Deserialize, Serialize};

use super::{InferenceFeatures, ServingEngine};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    #[default]
    Training,
    /// Prefill of the prompt, then decode one token at a time with a KV cache.
    Inference,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Workload {
    /// Sequences per GPU per forward (micro-batch). Valid: 1 ..= 65536.
    pub micro_batch: u32,
    /// Tokens per sequence (training) — for inference see `Inference::prompt_tokens`. Valid: 1 ..= 10^7.
    /// For a CNN it is unused; for a recommender it is unused.
    pub seq_len: u32,
    /// Micro-batches accumulated before one optimizer step. Global batch = micro_batch × accumulation × DP.
    pub grad_accum_steps: u32,
    /// Dropout layers active (training). Dropout saves a mask per dropout for backward.
    pub dropout: bool,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            micro_batch: 1,
            seq_len: 2048,
            grad_accum_steps: 1,
            dropout: false,
        }
    }
}

/// Inference: one prefill of `prompt_tokens`, then `generated_tokens` decode steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Inference {
    pub prompt_tokens: u32,
    pub generated_tokens: u32,
    /// Dynamic (continuous) batching: requests served at once. When off, `Workload::micro_batch`
    /// sequences are padded to the longest.
    pub dynamic_batching: bool,
    /// Requests in flight with dynamic batching.
    pub concurrent_requests: u32,
    /// Mean request length as a fraction of the maximum (prompt + generated); sets KV in use and the
    /// padding a static batch wastes. Valid: [0.001, 1].
    pub mean_length_fraction: f64,
    /// KV cache block size in tokens for paged allocation (vLLM); 0 = contiguous per request at max length.
    pub kv_block_tokens: u32,
    /// Return logits for every prompt position at prefill (a plain forward does) or only the last one.
    pub all_logits: bool,
    /// The serving engine; absent = the one `implementation.profile`'s code base serves with
    /// (`ServingEngine::following`).
    pub engine: Option<ServingEngine>,
    /// Speculative decoding, prefix caching, chunked prefill, parallel sampling, offload (all off
    /// by default).
    pub features: InferenceFeatures,
}

impl Default for Inference {
    fn default() -> Self {
        Inference {
            prompt_tokens: 2048,
            generated_tokens: 256,
            dynamic_batching: false,
            concurrent_requests: 8,
            mean_length_fraction: 0.5,
            kv_block_tokens: 16,
            all_logits: false,
            engine: None,
            features: InferenceFeatures::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OptimizerKind {
    /// No state.
    Sgd,
    /// One momentum buffer.
    SgdMomentum,
    /// Two moments (exp_avg, exp_avg_sq) plus a step counter.
    Adam,
    #[default]
    AdamW,
    /// bitsandbytes 8-bit Adam: two 8-bit moments with block-wise scales (Dettmers et al. 2021).
    Adam8bit,
    /// Factored second moment (Shazeer & Stern 2018), no first moment.
    Adafactor,
    /// Lion: one momentum buffer, the update is its sign (Chen et al. 2023, arXiv:2302.06675,
    /// Algorithm 1).
    Lion,
    /// Muon: one momentum buffer per hidden weight matrix, orthogonalised by Newton–Schulz
    /// iterations at the step; embeddings, the head, norms and biases by AdamW (Jordan et al. 2024,
    /// github.com/KellerJordan/Muon `muon.py`; Moonlight, Liu et al. 2025, arXiv:2502.16982).
    Muon,
    /// Any other optimizer, given as `optimizer.state_bytes_per_param`.
    StateBytes,
}

/// Whose 8-bit Adam `OptimizerKind::Adam8bit` is. Their states are alike (8-bit codes and an FP32
/// scale per 256-element block, 32-bit below 4,096 elements); their steps differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum EightBitLibrary {
    /// bitsandbytes `AdamW8bit` / `Adam8bit`: one CUDA kernel updates the parameter and its states
    /// in place (`bitsandbytes/functional.py` `optimizer_update_8bit_blockwise`): no temporaries.
    #[default]
    Bitsandbytes,
    /// torchao `AdamW8bit` (0.6.1, `torchao/prototype/low_bit_optim/adam.py`): each parameter
    /// stepped by its own `torch.compile`d `single_param_adam`, which materialises three FP32
    /// buffers of the parameter's size (the two dequantized moments and the update) and two
    /// block-scale vectors: 12 + 8/256 B an element of the parameter being stepped (measured,
    /// `tests/data/measured/torchao-adamw8bit-step.json`).
    Torchao,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Optimizer {
    pub kind: OptimizerKind,
    /// `foreach=True` (PyTorch's CUDA default): Adam's step holds one parameter-sized temporary
    /// (measured). False = fused (apex/Megatron/`fused=True`) or per-tensor: at most the largest
    /// tensor's temporaries. Under DeepSpeed ZeRO (`implementation.sharding: DeepSpeed`), off is
    /// DeepSpeed's own `FusedAdam` (no temporaries) and on a client torch optimizer over the flat
    /// partitions (docs/frameworks/deepspeed.md).
    pub foreach: bool,
    /// `StateBytes` only: optimizer-state bytes per trainable parameter (e.g. 8 for FP32 Adam's two
    /// moments, 4 for one FP32 buffer, 2 for two BF16 moments), on the GPU unless offloaded. No step
    /// temporaries are counted for it.
    pub state_bytes_per_param: f64,
    /// `Adam8bit` only: whose 8-bit Adam steps (bitsandbytes' in-place kernel or torchao's compiled
    /// per-parameter step and its FP32 buffers).
    pub eight_bit_library: EightBitLibrary,
}

impl Default for Optimizer {
    fn default() -> Self {
        Optimizer {
            kind: OptimizerKind::AdamW,
            foreach: true,
            state_bytes_per_param: 8.0,
            eight_bit_library: EightBitLibrary::Bitsandbytes,
        }
    }
}
