//! DeepSpeed ZeRO 0.19.8: the buffers its ZeRO optimizers add to a step. Derivation and
//! measurements: docs/frameworks/deepspeed.md (`deepspeed/runtime/zero/stage_1_and_2.py`,
//! `stage3.py`, `config.py` at 0.19.8); tests/data/measured/deepspeed-cpu-steps.json (world size 1,
//! FP32), held within 1 % per phase by tests/framework_stack.rs.

use super::super::ctx::Ctx;
use super::super::training::Parts;
use crate::scenario::{Sharding, ZeroStage};

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

/// Model states under DeepSpeed: the FP32 master partition exists even for an FP32 model
/// (`stage_1_and_2.py` line 577 `single_partition_of_fp32_groups`, `stage3.py`
/// `fp32_partitioned_groups_flat`: a copy of the flattened weights, 4 B per trainable parameter
/// / DP), where the generic rule has no master copy without mixed precision.
///
/// Stage 3 gathers a layer's parameters beside the GPU's own shard: the generic rule's two full
/// layers become the (1 − 1/DP) not held locally (at DP = 1 nothing is gathered; measured).
pub fn parts(c: &Ctx, p: Parts) -> Parts {
    if !applies(c) {
        return p;
    }
    let mut out = p;
    if c.e_master <= 0.0 {
        out.states.master = 4.0 * partition_elems(c, &p);
    }
    out.gathered = p.gathered * (1.0 - 1.0 / c.dp.max(1.0));
    out
}

/// (every phase, backward only): stage 3 allocates its reduce bucket once at initialisation
/// (`stage3.py` line 782) and keeps an FP32 gradient partition beside the parameters' gradients;
/// stages 1–2 allocate the bucket (two with `overlap_comm`) at the first gradient of each backward
/// (`setup_buckets`, lines 3266–3277) and free it after the step.
pub fn buffers(c: &Ctx, p: &Parts) -> (f64, f64) {
    if !applies(c) {
        return (0.0, 0.0);
    }
    let ds = c.framework.deepspeed;
    let bucket = ds.reduce_bucket_size * c.e_grads.max(2.0);
    match c.zero {
        ZeroStage::Stage3 => (bucket + 4.0 * partition_elems(c, p), 0.0),
        _ => (0.0, bucket * if ds.overlap_comm { 2.0 } else { 1.0 }),
    }
}
