//! DeepSpeed ZeRO 0.19.8: the buffers its ZeRO optimizers add to a step. Derivation and
//! measurements: docs/frameworks/deepspeed.md (`deepspeed/runtime/zero/stage_1_and_2.py`,
//! `stage3.py`, `config.py` at 0.19.8); tests/data/measured/deepspeed-cpu-steps.json (world size 1,
//! FP32), held within 1 % per phase by tests/framework_stack.rs.

use super::super::ctx::Ctx;
use super::super::training::Parts;
use crate::scenario::{Sharding, ZeroStage};
use crate::tensor::Dtype;

/// Whether DeepSpeed's ZeRO optimizer runs the step.
pub fn applies(c: &Ctx) -> bool {
    c.framework.sharding == Sharding::DeepSpeed && c.zero != ZeroStage::None
}

/// Gradient elements this GPU's partition holds (`grads` are already divided by DP under stages
/// 2–3; stage 1 partitions only the optimizer side).
fn partition_elems(c: &Ctx, p: &Parts) -> f64 {
    let g = if c.e_grads > 0.0 {
        p.states.grads / c.e_grads
    } else {
        0.0
    };
    if c.zero == ZeroStage::Stage1 {
        g / c.dp
    } else {
        g
    }
}

/// Bytes per element of DeepSpeed's master partition and step gradient partition:
/// `_configure_master_weights` (`deepspeed/runtime/base_optimizer.py`, 0.18.4) returns BF16 under
/// `bf16_master_weights_and_grads`, else FP32.
fn master_bytes(c: &Ctx) -> f64 {
    if c.framework.deepspeed.bf16_master_weights_and_grads {
        2.0
    } else {
        4.0
    }
}

/// Model states under DeepSpeed: the FP32 master partition exists even for an FP32 model
/// (`stage_1_and_2.py` line 577 `single_partition_of_fp32_groups`, `stage3.py`
/// `fp32_partitioned_groups_flat`: a copy of the flattened weights, 4 B per trainable parameter
/// / DP), where the generic rule has no master copy without mixed precision.
///
/// `bf16_master_weights_and_grads` (0.18.4) makes it BF16 whatever the scenario's master type:
/// stages 1–2 still clone it (`stage_1_and_2.py` lines 449–450), stage 3 reuses the BF16
/// parameter partition when the weights are already BF16 (`stage3.py` lines 981–986: "we don't
/// need another copy"). With `bf16_optimizer_states` the Adam moments are `zeros_like` that BF16
/// partition (`ops/adam/fused_adam.py` lines 155–157): 2 B per state element.
///
/// Stage 3 gathers a layer's parameters beside the GPU's own shard: the generic rule's two full
/// layers become the (1 − 1/DP) not held locally (at DP = 1 nothing is gathered; measured).
pub fn parts(c: &Ctx, p: Parts) -> Parts {
    if !applies(c) {
        return p;
    }
    let ds = c.framework.deepspeed;
    let mut out = p;
    if c.e_master <= 0.0 {
        out.states.master = 4.0 * partition_elems(c, &p);
    }
    if ds.bf16_master_weights_and_grads {
        let aliased = c.zero == ZeroStage::Stage3 && c.weights == Dtype::Bf16;
        let master = if aliased {
            0.0
        } else {
            master_bytes(c) * partition_elems(c, &p)
        };
        // A scenario master narrower than BF16 is not a DeepSpeed configuration: keep it.
        out.states.master = out.states.master.min(master);
        if ds.bf16_optimizer_states && c.e_states > 2.0 {
            out.states.optimizer = p.states.optimizer * 2.0 / c.e_states;
        }
    }
    out.gathered = p.gathered * (1.0 - 1.0 / c.dp.max(1.0));
    out
}

/// (every phase, backward only): stage 3 allocates its reduce bucket once at initialisation
/// (`stage3.py` line 782) and keeps a gradient partition of the master's type beside the
/// parameters' gradients (FP32; BF16 under `bf16_master_weights_and_grads`: 0.18.4 `stage3.py`
/// line 1122 `gradient_buffer` and line 1980 `_prepare_fp32_grad_for_sub_group` take the master
/// partition's dtype);
/// stages 1–2 allocate the bucket (two with `overlap_comm`) at the first gradient of each backward
/// (`setup_buckets`, lines 3266–3277) and free it after the step.
pub fn buffers(c: &Ctx, p: &Parts) -> (f64, f64) {
    if !applies(c) {
        return (0.0, 0.0);
    }
    let ds = c.framework.deepspeed;
    let bucket = ds.reduce_bucket_size * c.e_grads.max(2.0);
    match c.zero {
        ZeroStage::Stage3 => (bucket + master_bytes(c) * partition_elems(c, p), 0.0),
        _ => (0.0, bucket * if ds.overlap_comm { 2.0 } else { 1.0 }),
    }
}

/// Whether the vocabulary stays whole under TP: DeepSpeed-Inference's AutoTP
/// (`implementation.auto_tp`, inference, TP > 1). v0.8.2 `replace_module.py`: `replace_fn` runs
/// `replace_wo_policy` on each transformer block `AutoTP.tp_parser` found, whose
/// `_replace_module` slices the block's `nn.Linear` (`_replace`: column- or row-parallel) and
/// `nn.Embedding` (`_slice_embedding`) children only; the token and position embeddings, the final
/// norm and the head sit outside the blocks and are never sliced.
pub fn auto_tp(c: &Ctx) -> bool {
    c.framework.auto_tp && c.tp > 1.0
}

/// The TP degree the vocabulary (embeddings, head, logits) is split over: 1 under [`auto_tp`].
pub fn vocab_tp(c: &Ctx) -> f64 {
    if auto_tp(c) { 1.0 } else { c.tp }
}
