//! The fixed cost of one inference forward beyond its FLOPs and bytes (issue 13: "a served request
//! has a fixed overhead besides its FLOPs and bytes"), docs/time-model.md "Fixed overhead per
//! forward". Two sources of it:
//! - every kernel costs the GPU a floor beyond its bytes (launch, ramp-up, tail):
//!   `timing.parts.kernel_floor_us` per kernel, whatever runs it;
//! - eager PyTorch issues every op from Python: the host needs `timing.parts.eager_op_us` per op,
//!   and a step lasts at least that long (the GPU runs ahead of nothing). A CUDA graph replays the
//!   whole forward from one launch, so under graphs the host term is gone.
//!
//! Hugging Face `generate` adds its own loop per token (`timing.parts.generate_step_us`), which
//! synchronises with the GPU every step (its stopping check reads the sequences' state), so it
//! adds to the step instead of overlapping it.

use crate::scenario::{ModelFamily, Scenario, ServingEngine};

/// Kernels of one decoder layer in a fused engine: vLLM 0.34 `model_executor/models/llama.py`
/// `LlamaDecoderLayer.forward` runs input norm (fused residual add), QKV GEMM, rotary embedding,
/// the KV-cache write and the attention kernel (`Attention` → `reshape_and_cache_flash` +
/// flash attention), output GEMM, post-attention norm, gate-up GEMM, SiLU-and-mul, down GEMM.
/// Tensor-parallel all-reduces are timed as collectives (`comm`).
pub const FUSED_LAYER_KERNELS: f64 = 10.0;
/// Outside the layers: embedding, final norm, LM head.
pub const FUSED_OUTSIDE_KERNELS: f64 = 3.0;
/// Ops one eager Transformers decoder layer dispatches per decode step (BF16, SDPA; each a kernel
/// on a GPU), and the forward's ops outside the layers: measured, transformers 5.24.0
/// (tests/data/measured/hf-decode-ops.json). A preallocated cache run eagerly (Megatron, LitGPT,
/// torchtune) is given the same counts: not measured for those code bases.
pub const EAGER_LAYER_OPS: f64 = 40.0;
pub const EAGER_OUTSIDE_OPS: f64 = 22.0;
/// Ops one eager Transformers decoder layer with a mixture-of-experts MLP dispatches per decode
/// step: measured on Mixtral, transformers 5.24.0 with its default `grouped_mm` experts (router,
/// top-k, the tokens sorted and counted per expert, two grouped GEMMs, the weighted sum back), the
/// same for 8–64 experts and top-1–8 (tests/data/measured/hf-moe-decode-ops.json). Other MoE blocks
/// (shared experts, gates) are given the same count: not measured.
pub const EAGER_MOE_LAYER_OPS: f64 = 59.0;

/// The fixed part of one pipeline stage's forward.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Launch {
    /// Kernels one stage's forward runs.
    pub kernels: f64,
    /// Their GPU time beyond bytes and FLOPs: kernels × floor, s.
    pub gpu_s: f64,
    /// Host time to issue them from Python (0 when replayed from a CUDA graph), s.
    pub issue_s: f64,
    /// Host time per generated token outside the forward (Hugging Face `generate`'s loop), s.
    pub loop_s: f64,
    /// The forward is replayed from a CUDA graph.
    pub graphs: bool,
}

impl Launch {
    /// One stage's forward of roofline time `roof_s` split into `chunks` forwards: the GPU's
    /// kernels and floors, or the host's issuing when that is slower.
    pub fn stage_s(&self, roof_s: f64, chunks: f64) -> f64 {
        (roof_s + chunks * self.gpu_s).max(chunks * self.issue_s)
    }
}

/// [`of`] for a transformer; nothing for the other families (their forwards are not counted).
pub fn of_family(s: &Scenario, family: ModelFamily, stage_layers: f64, moe_share: f64) -> Launch {
    if family == ModelFamily::Transformer {
        of(s, stage_layers, moe_share)
    } else {
        Launch::default()
    }
}

/// The fixed part of a forward of `stage_layers` layers, `moe_share` of them with a mixture of
/// experts, as `s`'s engine runs it. llama.cpp is not covered (its ggml graph's nodes per layer are
/// not counted): zero there. The floor is an A100 figure, applied to every device. A fused engine's
/// MoE layer is given the dense layer's kernel count (its fused-MoE kernels are not counted).
pub fn of(s: &Scenario, stage_layers: f64, moe_share: f64) -> Launch {
    let p = &s.timing.parts;
    let floor = p.kernel_floor_us * 1e-6;
    let op = p.eager_op_us * 1e-6;
    let engine = s.inference.engine.unwrap_or_default();
    let (graphs, fused, loop_us) = match engine {
        ServingEngine::HfGenerate => (p.cuda_graphs, p.cuda_graphs, p.generate_step_us),
        ServingEngine::Preallocated => (p.cuda_graphs, p.cuda_graphs, 0.0),
        ServingEngine::Vllm(v) => (!v.enforce_eager, true, 0.0),
        ServingEngine::Sglang(g) => (!g.disable_cuda_graph, true, 0.0),
        ServingEngine::LlamaCpp(_) => return Launch::default(),
    };
    let kernels = if fused {
        stage_layers * FUSED_LAYER_KERNELS + FUSED_OUTSIDE_KERNELS
    } else {
        let moe = moe_share.clamp(0.0, 1.0);
        stage_layers * (EAGER_LAYER_OPS + moe * (EAGER_MOE_LAYER_OPS - EAGER_LAYER_OPS))
            + EAGER_OUTSIDE_OPS
    };
    Launch {
        kernels,
        gpu_s: kernels * floor,
        issue_s: if graphs { 0.0 } else { kernels * op },
        loop_s: loop_us * 1e-6,
        graphs,
    }
}
