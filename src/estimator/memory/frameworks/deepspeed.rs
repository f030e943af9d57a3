//! DeepSpeed ZeRO 0.19.8: the buffers its ZeRO optimizers add to a step. Derivation and
//! measurements: docs/frameworks/deepspeed.md (`deepspeed/runtime/zero/stage_1_and_2.py`,
//! `stage3.py`, `config.py` at 0.19.8); tests/data/measured/deepspeed-cpu-steps.json (world size 1,
//! FP32), held within 1 % per phase by tests/framework_stack.rs.

use super::super::ctx::Ctx;
use super::super::states::ModelStates;
use super::super::training::Parts;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{OptimizerKind, Sharding, ZeroStage};

/// Whether DeepSpeed's ZeRO optimizer runs the step.
pub fn applies(c: &Ctx) -> bool {
    c.framework.sharding == Sharding::DeepSpeed && c.zero != ZeroStage::None
}

/// Gradient elements this GPU's partition holds, from the stage's gradient bytes `grads`
/// (already divided by DP under stages 2–3; stage 1 partitions only the optimizer side).
fn partition_elems(c: &Ctx, grads: f64) -> f64 {
    let g = if c.e_grads > 0.0 {
        grads / c.e_grads
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
/// stages 1–2 clone it (`stage_1_and_2.py` lines 449–450), and so does stage 3 on a GPU. Its
/// branch that would reuse a BF16 parameter partition as the master (`stage3.py` lines 981–986)
/// compares the partition's `torch.device` with `self.device`, the string
/// `current_device_name()` returns (`'cuda:0'`), and a `torch.device` never equals a string, so
/// `converted.clone()` runs (the published end-of-training allocation of the BF16 example holds
/// that copy). With `bf16_optimizer_states` the Adam moments are `zeros_like` that BF16
/// partition (`ops/adam/fused_adam.py` lines 155–157): 2 B per state element.
///
/// The master partition and optimizer states of `s` (a stage's, or one tensor group's) as
/// DeepSpeed holds them ([`parts`]).
pub fn states(c: &Ctx, s: ModelStates) -> ModelStates {
    if !applies(c) {
        return s;
    }
    let ds = c.framework.deepspeed;
    let mut out = s;
    // The master partition's elements: each group's trainable parameters ÷ its ZeRO degree
    // (`ModelStates::partition`; DeepSpeed-MoE partitions an expert group over DP / ep,
    // `stage_1_and_2.py` `real_dp_process_group` per parameter group). Counted from the
    // parameters, not the gradients: stage 1's are whole, and a LoRA base's context has none.
    if c.e_master <= 0.0 {
        out.master = 4.0 * s.partition;
    }
    if ds.bf16_master_weights_and_grads {
        let master = master_bytes(c) * s.partition;
        // A scenario master narrower than BF16 is not a DeepSpeed configuration: keep it.
        out.master = out.master.min(master);
        if ds.bf16_optimizer_states && c.e_states > 2.0 {
            out.optimizer = s.optimizer * 2.0 / c.e_states;
        }
    }
    out
}

/// Stage 3's gathered parameters ([`stage3_gathered`]) replace the generic rule's two full layers;
/// parameter offload without stage 3 keeps the (1 − 1/DP) of them not held locally.
pub fn parts(c: &Ctx, m: &ResolvedModel, p: Parts) -> Parts {
    if !applies(c) {
        return p;
    }
    let mut out = p;
    out.states = states(c, p.states);
    out.gathered = if c.zero == ZeroStage::Stage3 {
        stage3_gathered(c, m)
    } else {
        p.gathered * (1.0 - 1.0 / c.dp.max(1.0))
    };
    out.opt_temp = step_temporaries(c, m, p.opt_temp, p.states.grads);
    // ZeRO reduces through its own buckets ([`buffers`]); the engine does not wrap the model in
    // DDP, whose buckets `comm` stands for.
    out.comm = 0.0;
    out
}

/// The most parameter bytes stage 3 holds gathered at once beside the rank's partitions, in the
/// weights' compute type (deepspeed 0.19.8 `runtime/zero/partitioned_param_coordinator.py`; docs/
/// frameworks/deepspeed.md "Stage 3 at world size > 1"). Stage 3 all-gathers each module's own
/// parameters into full-size tensors before its forward or backward and releases them after it,
/// except where `__params_to_release` keeps them: a parameter used again within
/// `stage3_max_reuse_distance` elements of parameter traffic stays. In a training step a module's
/// next use is its backward, after every module behind it has run forward and backward, so a
/// module stays gathered from forward to backward when the parameters behind it total less than
/// half the distance: the head always, and with the 1e9 default every module of a model under
/// about 5e8 parameters (measured at world size 2: the whole non-persistent model, 73,990,144 B
/// of the tiny FP32 Llama; at a distance of 2e7 the head and three blocks' MLP matrices, exact).
/// That set is held at the loss and into the backward; during the backward of the other blocks
/// the module being computed and the prefetched one (up to `stage3_prefetch_bucket_size`, within
/// `stage3_max_live_parameters`) are gathered, so the larger of the two is charged. Parameters of
/// at most `stage3_param_persistence_threshold` elements are never partitioned, so never
/// gathered. At world size 1 nothing is gathered beside the partition (measured).
pub fn stage3_gathered(c: &Ctx, m: &ResolvedModel) -> f64 {
    if c.dp <= 1.0 {
        return 0.0;
    }
    let z = &c.framework.deepspeed;
    let keep = |n: f64| {
        if n > z.stage3_param_persistence_threshold {
            n
        } else {
            0.0
        }
    };
    let tp = c.tp.max(1.0);
    let (h, v) = (f64::from(m.hidden), f64::from(m.vocab));
    let modules = layer_modules(c, m);
    let layer: f64 = modules.iter().sum();
    let layer_kept: f64 = modules.iter().map(|n| keep(*n)).sum();
    let half = z.stage3_max_reuse_distance / 2.0;
    // Walk the modules from the head back; `after` is what runs behind the module looked at.
    let (mut after, mut held) = (0.0, 0.0);
    let visit = |n: f64, after: &mut f64, held: &mut f64| {
        if *after < half {
            *held += keep(n);
        }
        *after += n;
    };
    visit(v * h / tp, &mut after, &mut held);
    visit(h, &mut after, &mut held);
    let layers = f64::from(m.layers);
    if after < half && layer > 0.0 {
        // Whole blocks every module of which starts within half the distance, then the block
        // that straddles it module by module.
        let whole = ((half - after) / layer).floor().clamp(0.0, layers);
        held += whole * layer_kept;
        after += whole * layer;
        if whole < layers {
            for n in modules {
                visit(n, &mut after, &mut held);
            }
        }
    }
    if after < half && !m.tied_embeddings {
        held += keep(v * h / tp);
    }
    // The block window: the largest matrix, and the prefetch behind it, which adds whole
    // parameters until the bucket (or the live limit) is reached, so at least one; never more than
    // the model holds partitioned.
    let edges = keep(v * h / tp) * if m.tied_embeddings { 1.0 } else { 2.0 };
    let all = layers * layer_kept + edges;
    let largest = modules.iter().map(|n| keep(*n)).fold(0.0, f64::max);
    let cap = z
        .stage3_prefetch_bucket_size
        .min(z.stage3_max_live_parameters - largest);
    let ahead = if cap > 0.0 { cap.max(largest) } else { 0.0 };
    held.max((largest + ahead).min(all)) * c.ec
}

/// One block's parameter tensors, in reverse forward order, as one tensor-parallel rank holds
/// them (Hugging Face's Llama / GPT modules: down, up, gate, norm, o, v, k, q, norm; a fused QKV
/// as one), scaled to [`inventory::rank_block_params`] (pruning, replicated K/V heads, biases), elements.
/// A block of another shape (experts, patterns, a mixer whose sizes the standard split misses by
/// more than a quarter) is one tensor of that many elements.
fn layer_modules(c: &Ctx, m: &ResolvedModel) -> [f64; 9] {
    let tp = c.tp.max(1.0);
    let (h, f) = (f64::from(m.hidden), f64::from(m.ffn));
    let q = f64::from(m.heads) * f64::from(m.head_dim);
    let kv = f64::from(m.kv_heads) * f64::from(m.head_dim);
    let glu = m.ffn_kind == crate::scenario::FfnKind::SwiGlu;
    let (qkv_fused, kq, kk, kv_) = if m.fused_qkv {
        (h * (q + 2.0 * kv) / tp, 0.0, 0.0, 0.0)
    } else {
        (0.0, h * q / tp, h * kv / tp, h * kv / tp)
    };
    let standard = [
        f * h / tp,
        h * f / tp,
        if glu { h * f / tp } else { 0.0 },
        h,
        q * h / tp,
        kv_ + qkv_fused,
        kk,
        kq,
        h,
    ];
    let whole = crate::estimator::memory::inventory::rank_block_params(c, m);
    let sum: f64 = standard.iter().sum();
    // Structured pruning, K/V heads replicated over TP and biases change the sizes, not the
    // order: the standard split scaled to the block's stored parameters.
    if m.blocks.is_flat() && m.moe.experts == 0 && (sum - whole).abs() <= 0.25 * whole {
        standard.map(|n| n * whole / sum)
    } else {
        [whole, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    }
}

/// The optimizer step's temporaries beside [`step_gradients`]: [`optimizer_temp`], less what the
/// gradient copies already charge. [`step_gradients`] is charged at the cast, where the held
/// partition ([`step_held`]), the flattened copy and the cast are alive; the optimizer then runs
/// beside what stays the master's `.grad` (the cast, or the flattened copy itself when the types
/// match and `.to()` returns it), with stage 1–2's held partition freed first
/// ([`step_gradient_copies`]). The step holds the larger of the two moments, charged as the
/// gradients plus the excess.
pub fn step_temporaries(c: &Ctx, m: &ResolvedModel, generic: f64, grads: f64) -> f64 {
    let temp = optimizer_temp(c, m, generic, grads);
    match step_gradient_copies(c, m, grads) {
        Some((flat, cast)) => {
            let at_cast = step_held(c, grads) + flat + cast;
            let kept = if cast > 0.0 { cast } else { flat };
            (kept + temp - at_cast).max(0.0)
        }
        None => temp,
    }
}

/// The step's temporaries when DeepSpeed owns the optimizer, which steps ZeRO's flat partitions,
/// not the module's tensors. Adam/AdamW with `foreach` off is DeepSpeed's own optimizer: an
/// `"Adam"` / `"AdamW"` config on a GPU builds `FusedAdam` (`engine.py`
/// `_configure_basic_optimizer`, unless `torch_adam`), one multi-tensor kernel over the partition,
/// no temporaries (`ops/adam/fused_adam.py`). With `foreach` on it is a client torch optimizer:
/// its one parameter-sized temporary (the generic rule), which stage 3 needs only for the
/// sub-group being stepped (the other sub-groups' partitions have no `.grad` then; measured at
/// world size 1 with one sub-group: `deepspeed-cpu-steps.json`); Lion's foreach temporary scales
/// the same way. Other optimizers keep the generic rule (their temporaries follow their largest
/// matrices, not the partition). `generic` is the scenario's rule over the stage's tensors,
/// `grads` its gradient bytes.
fn optimizer_temp(c: &Ctx, m: &ResolvedModel, generic: f64, grads: f64) -> f64 {
    let adam = matches!(c.optimizer, OptimizerKind::Adam | OptimizerKind::AdamW);
    if adam && !c.foreach {
        return 0.0;
    }
    let per_partition = c.foreach && (adam || c.optimizer == OptimizerKind::Lion);
    let elems = partition_elems(c, grads);
    if c.zero == ZeroStage::Stage3 && per_partition && elems > 0.0 {
        generic * (sub_group_elems(c, m, grads) / elems).min(1.0)
    } else {
        generic
    }
}

/// Elements of stage 3's largest sub-group: `_create_fp16_sub_groups` adds whole parameters until
/// the sub-group reaches `sub_group_size`, so it may overshoot by up to one parameter's partition
/// (bounded here by the largest tensor's), and never exceeds the partition.
fn sub_group_elems(c: &Ctx, m: &ResolvedModel, grads: f64) -> f64 {
    let largest = m.largest_tensor / c.tp / c.dp.max(1.0);
    partition_elems(c, grads).min(c.framework.deepspeed.sub_group_size + largest)
}

/// (every phase, backward only): stage 3 allocates its reduce bucket once at initialisation
/// (`stage3.py` line 782) and keeps the reduced gradients in one partition buffer for the whole
/// run (`grad_partitions_flat_buffer`, line 620, `torch.zeros` in `gradient_accumulation_dtype`:
/// the model's type unless `data_types.grad_accum_dtype` is set, `engine.py` `get_data_types`);
/// stages 1–2 allocate the bucket (two with `overlap_comm`) at the first gradient of each backward
/// (`setup_buckets`, lines 3266–3277) and free it after the step.
pub fn buffers(c: &Ctx, grads: f64) -> (f64, f64) {
    if !applies(c) {
        return (0.0, 0.0);
    }
    let ds = c.framework.deepspeed;
    let bucket = ds.reduce_bucket_size * c.e_grads.max(2.0);
    match c.zero {
        ZeroStage::Stage3 => (bucket + c.e_grads * partition_elems(c, grads), 0.0),
        _ => (0.0, bucket * if ds.overlap_comm { 2.0 } else { 1.0 }),
    }
}

/// Gradient bytes of the optimizer step under DeepSpeed's ZeRO (stages 1–3), or `None` elsewhere:
/// [`step_held`] plus the flattened copy and its cast ([`step_gradient_copies`]), charged at the
/// cast, where all three are alive.
pub fn step_gradients(c: &Ctx, m: &ResolvedModel, grads: f64) -> Option<f64> {
    step_gradient_copies(c, m, grads).map(|(flat, cast)| step_held(c, grads) + flat + cast)
}

/// Whether stage 3 runs the step: its reduced gradients live in the partition buffer of
/// [`buffers`] in every phase, so it has no gradient tensors of its own.
pub fn grads_in_partition_buffer(c: &Ctx) -> bool {
    applies(c) && c.zero == ZeroStage::Stage3
}

/// Stage 1–2's reduced gradient partition at the step, bytes: `grads_in_partition`, one tensor
/// of `self.dtype` (the model's type) for every group's parameters in this rank's partition
/// (`stage_1_and_2.py` line 1678, `copy_grads_in_partition`), into which each such parameter's
/// reduced gradient is copied and re-pointed (line 1687; stage 1 too with `contiguous_gradients`,
/// the default, lines 1753–1754). The epilogue (`independent_gradient_partition_epilogue`)
/// collects views of those gradients into `averaged_gradients[i]` (line 946,
/// `get_flat_partition(..., return_tensor_list=True)`: a list, narrowed views, no copy), then drops
/// `self.grads_in_partition` (`_release_ipg_buffers`, line 960, which also frees the reduce
/// buckets) and every `param.grad` (`_clear_param_grad_only`, line 966): the views keep the one
/// storage alive until the step sets the last group's `averaged_gradients` to `None` (line 2372).
/// Stage 1's gradients are full-size until `reduce_gradients` at the end of backward moves each
/// into the bucket (line 1234) and the partition's into this tensor; the others die with their
/// `param.grad`, so at the step stage 1 holds what stage 2 holds. The gradient bytes ÷ DP (stage 2's
/// `grads` already are); 0 under stage 3, whose partition buffer is in [`buffers`], and under
/// optimizer offload ([`step_gradient_copies`]).
pub fn step_held(c: &Ctx, grads: f64) -> f64 {
    if !applies(c) || c.zero == ZeroStage::Stage3 || offloaded(c) {
        0.0
    } else {
        c.e_grads * partition_elems(c, grads)
    }
}

/// ZeRO-Offload of the optimizer: stage 1–2's step takes the FP32 gradients it copied to the host
/// in backward (`stage_1_and_2.py` line 2323, `cpu_offload` branch), no device copies.
fn offloaded(c: &Ctx) -> bool {
    c.offload_optimizer != crate::scenario::OffloadTarget::None
}

/// The step's gradient copies, (the flattened copy in the gradients' type, its cast to the
/// master's type: 0 when the types match, where `.to()` returns the copy itself), bytes, under
/// stages 1–3, `None` elsewhere.
///
/// Stage 3 steps its partition one sub-group at a time (`sub_group_size` elements,
/// `_create_fp16_sub_groups`), and `_prepare_fp32_grad_for_sub_group` (`stage3.py` line 1980)
/// flattens the sub-group's gradients and casts the copy to the master's type; the cast is the
/// master's `.grad` until `_release_sub_group`.
///
/// Stages 1–2 (`stage_1_and_2.py` `step`, read at deepspeed commit edaa722, `version.txt` 0.19.6;
/// the same statements in v0.19.5) step one optimizer param group `i` at a time, outside
/// optimizer offload: `_get_preflattened_grad_partition(i)` (line 2350) is `None` unless a
/// DeepCompile pass gave `averaged_gradients[i]` a `flat_partition` (`compile/init_z1_and_2.py`),
/// so `self.flatten(self.averaged_gradients[i])` (line 2360; `flatten_dense_tensors_aligned` on
/// the last rank, line 2357) — torch's `_flatten_dense_tensors`, a `cat` of the group's gradient
/// views, a new tensor in the gradients' type (a view only for a one-tensor list) — then
/// `flat_grad_partition.to(master dtype)` (line 2361), `del flat_grad_partition` (line 2362), the
/// cast set as the master partition's `.grad` (line 2367), `averaged_gradients[i] = None` (line
/// 2372), `_optimizer_step(i)` (line 2380), the `.grad` set to `None` (line 2382). At the cast
/// the held partition ([`step_held`]), the flattened copy and the cast are alive; through the
/// optimizer the cast (or the copy it is) and, while a later group still holds views into it,
/// the held partition.
///
/// The optimizer's param groups are not a setting: one group, the whole partition, as
/// DeepSpeed's own optimizer over `model_parameters` and the measured client AdamW over
/// `model.parameters()` have (tests/data/measured/deepspeed-cpu-steps.json: FP32 at world size 1,
/// where the step peaks at 2 × the gradient partition, the held partition + its flattened copy,
/// then the copy + a foreach temporary). Several groups (a client optimizer's weight-decay /
/// no-decay groups, DeepSpeed-MoE's expert groups) size the copies by the stepped group and keep
/// the held partition through every group's step but the last's; not modelled
/// (docs/frameworks/deepspeed.md).
pub fn step_gradient_copies(c: &Ctx, m: &ResolvedModel, grads: f64) -> Option<(f64, f64)> {
    if !applies(c) {
        return None;
    }
    let elems = match c.zero {
        ZeroStage::Stage3 => sub_group_elems(c, m, grads),
        _ if offloaded(c) => return None,
        _ => partition_elems(c, grads),
    };
    let master = master_bytes(c);
    let cast = if master == c.e_grads { 0.0 } else { master };
    Some((c.e_grads * elems, cast * elems))
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
