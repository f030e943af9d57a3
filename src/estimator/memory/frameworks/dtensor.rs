//! PyTorch's DTensor tensor parallelism as torchtitan runs its output layer and loss: the head is
//! `ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False)`
//! (torchtitan 9dec370 `parallelize_llama.py`) and the loss is
//! `F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))` inside `loss_parallel()`,
//! with `del pred` before `loss.backward()` (`train.py`). `loss_parallel()`
//! (`torch/distributed/tensor/parallel/loss.py`, torch 2.6.0 and 2.15.0 alike) replaces aten's fused
//! log-softmax by its decomposition with two all-reduces (`_log_softmax`: `x − max`, `exp`, `sum`,
//! `log`, `shifted − logsumexp`) and fuses the NLL and log-softmax backward
//! (`_nll_loss_and_log_softmax_backward`: `zeros_like`, a scatter, `(grad_input + exp(x)) ·
//! grad_output`). Measured on CPU with gloo at world size 2 (scripts/measure/loss_parallel.py,
//! tests/data/measured/dtensor-loss-parallel-cpu.json), to the byte per logit.

use super::super::activations::Sizes;
use super::super::ctx::Ctx;
use super::Loss;

/// Per local logit (b·s·V/t): saved, the log-probabilities (FP32); beside them in forward, the
/// 16-bit logits, their FP32 copy (none when the logits are FP32: `.float()` returns them), the
/// shifted logits and `exp(shifted)` (then the result in its place): e_c + 4 + 4 bytes, 14 in all
/// for BF16 logits; in the loss backward, `grad_input`, `exp(x)` and their sum (then the product):
/// 12 bytes, 16 in all. (Under sequence parallelism the head's input is all-gathered from its
/// sequence shards and the linear saves the whole b·s·h, `ColwiseParallel` with `Shard(1)` input:
/// counted with the final norm's output, `activations::hf_norm`.)
pub fn loss(c: &Ctx, z: &Sizes) -> Loss {
    let upcast = if c.ec < 4.0 { 4.0 } else { 0.0 };
    Loss {
        saved: 4.0 * z.bsv,
        forward: (c.ec + upcast + 4.0) * z.bsv,
        backward: 12.0 * z.bsv,
    }
}

/// Whether the loss is DTensor's `loss_parallel()`: set under the Hugging Face profile, with the
/// logits sharded over TP > 1 ranks.
pub fn applies(c: &Ctx) -> bool {
    c.framework.loss_parallel && c.tp > 1.0
}
