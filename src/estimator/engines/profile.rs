//! vLLM's profiling run: the activation peak of a dummy batch of `max_num_batched_tokens` tokens
//! with attention skipped, and of the sampler on one row per dummy request (docs/engines/vllm.md
//! §2.2). The two run one after the other, so the peak is the larger.

use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// Bytes per logit the sampler holds at its peak: the logits in the model's type (2 B), their FP32
/// copy, the FP32 probabilities, and the sort's FP32 values and int64 indices of the top-p / top-k
/// path the dummy sampling parameters enable (V0 `model_executor/layers/sampler.py`
/// `_apply_top_k_top_p`; V1 `v1/sample/ops/topk_topp_sampler.py`): 2 + 4 + 4 + 4 + 8 = 22 B.
/// Counted from the source's tensors, not measured.
pub const SAMPLER_BYTES_PER_LOGIT: f64 = 22.0;

/// Tokens fused MoE processes at once (`VLLM_FUSED_MOE_CHUNK_SIZE`, vllm `envs.py`: 32,768).
pub const FUSED_MOE_CHUNK: f64 = 32_768.0;

/// The forward's peak bytes for `tokens` tokens on one GPU of `tp`, in element bytes `e`.
///
/// Dense MLP: vLLM's `LlamaMLP.forward` (`model_executor/models/llama.py`) binds `gate_up`, then
/// `x = act_fn(gate_up)`, then `down_proj(x)`: while the down projection runs, `gate_up` (2f/tp),
/// the activation (f/tp), the MLP's input and the residual (h each) and the output (h) are live:
/// `(3h + 3f/tp) · e` per token (GELU MLPs: one f/tp for the up projection, so `3h + 2f/tp`). The
/// two vLLM #10517 logs check it: 17.06 − 14.99 GiB at 20,000 tokens and 17.98 − 14.99 at 29,000 for
/// Llama-3.1-8B, (3 · 4096 + 3 · 14336) · 2 B = 110,592 B per token → 2.06 and 2.99 GiB.
///
/// Mixture of experts: fused MoE's three caches per token and routed expert (`fused_moe.py`
/// `fused_experts_impl`: `intermediate_cache1` 2f/tp, `cache2` f/tp, `cache3` h) over at most
/// [`FUSED_MOE_CHUNK`] tokens, plus the residual, input and output (3h) of every token.
pub fn forward_peak(m: &ResolvedModel, tokens: f64, tp: f64, e: f64) -> f64 {
    let h = f64::from(m.hidden);
    let residual = 3.0 * h * tokens * e;
    if m.moe.experts > 0 {
        let f = f64::from(m.moe.ffn) / tp;
        let k = f64::from(m.moe.top_k.max(1));
        let chunk = tokens.min(FUSED_MOE_CHUNK);
        return residual + chunk * k * (3.0 * f + h) * e;
    }
    let f = f64::from(m.ffn) / tp;
    let widths = match m.ffn_kind {
        FfnKind::SwiGlu => 3.0,
        FfnKind::Gelu | FfnKind::SquaredRelu => 2.0,
    };
    residual + widths * f * tokens * e
}

/// The sampler's peak for `rows` sampled rows over the full vocabulary (gathered over TP).
pub fn sampler_peak(m: &ResolvedModel, rows: f64) -> f64 {
    rows * f64::from(m.vocab) * SAMPLER_BYTES_PER_LOGIT
}
