//! Model states per GPU: weights, master weights, gradients, optimizer states, with ZeRO sharding,
//! CPU/NVMe offload, pruning and weight sharing; and the optimizer step's temporaries.

use super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{ModelFamily, OffloadTarget, OptimizerKind, PruneKind, ZeroStage};

/// Bytes per GPU of the four model-state components, plus what went to host and NVMe.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelStates {
    pub weights: f64,
    pub master: f64,
    pub grads: f64,
    pub optimizer: f64,
    pub host: f64,
    pub nvme: f64,
}

/// Per-GPU model-state bytes under ZeRO (Rajbhandari et al. 2020, §5 and Figure 1): with Ψ
/// parameters and N_d data-parallel ranks, stage 1 divides the optimizer states (incl. master
/// weights) by N_d, stage 2 also the gradients, stage 3 also the weights. Returns
/// (weights, master, grads, optimizer states).
///
/// ```
/// use vram_explorer::estimator::memory::states::zero_model_states;
/// use vram_explorer::scenario::ZeroStage;
/// // ZeRO Figure 1: Ψ = 7.5e9, N_d = 64, K = 12 (2 + 2 + 12 bytes/param) → 31.4 GB with P_os.
/// let (w, m, g, o) = zero_model_states(7.5e9, 2.0, 4.0, 2.0, 8.0, ZeroStage::Stage1, 64.0);
/// assert!(((w + m + g + o) / 1e9 - 31.41).abs() < 0.01);
/// ```
pub fn zero_model_states(
    params: f64,
    e_weights: f64,
    e_master: f64,
    e_grads: f64,
    state_bytes_per_param: f64,
    zero: ZeroStage,
    dp: f64,
) -> (f64, f64, f64, f64) {
    let n = dp.max(1.0);
    let (sw, sg, so) = match zero {
        ZeroStage::None => (1.0, 1.0, 1.0),
        ZeroStage::Stage1 => (1.0, 1.0, n),
        ZeroStage::Stage2 => (1.0, n, n),
        ZeroStage::Stage3 => (n, n, n),
    };
    (
        params * e_weights / sw,
        params * e_master / so,
        params * e_grads / sg,
        params * state_bytes_per_param / so,
    )
}

/// Optimizer state bytes per parameter.
/// - SGD 0; momentum 1 buffer; Adam/AdamW 2 moments (HF `model_memory_anatomy.md`; ZeRO §3.1),
///   plus a 4-byte step counter per parameter tensor (PyTorch keeps `step` as a tensor).
/// - 8-bit Adam: two 1-byte moments plus an FP32 absmax per 2,048-element block each (bitsandbytes
///   block-wise quantisation, Dettmers et al. 2021 arXiv:2110.02861).
/// - Adafactor (β1 = None): factored second moment, one row and one column vector per matrix, full
///   for vectors (Shazeer & Stern 2018, arXiv:1804.04235).
pub fn state_bytes_per_param(c: &Ctx, m: &ResolvedModel, params: f64) -> f64 {
    let p = params.max(1.0);
    let step = 4.0 * m.param_tensors / p;
    match c.optimizer {
        OptimizerKind::Sgd => 0.0,
        OptimizerKind::SgdMomentum => c.e_states,
        OptimizerKind::Adam | OptimizerKind::AdamW => 2.0 * c.e_states + step,
        OptimizerKind::Adam8bit => 2.0 + 2.0 * 4.0 / 2048.0 + step,
        OptimizerKind::Adafactor => c.e_states * adafactor_fraction(m),
    }
}

/// Adafactor state elements per parameter: vectors in full, each matrix by its rows + columns.
fn adafactor_fraction(m: &ResolvedModel) -> f64 {
    let total = m.params.total.max(1.0);
    if m.family != ModelFamily::Transformer {
        // Assumption: matrices dominate; ~1 % of elements in vectors and factors.
        return 0.01;
    }
    let (l, h, f, v) = (
        f64::from(m.layers),
        f64::from(m.hidden),
        f64::from(m.ffn),
        f64::from(m.vocab),
    );
    let mats = m.matmul_weights + m.params.embeddings;
    let vectors = (total - mats).max(0.0);
    let mlp_mats = if m.ffn_kind == crate::scenario::FfnKind::SwiGlu {
        3.0
    } else {
        2.0
    };
    let factors = l * (4.0 * 2.0 * h + mlp_mats * (h + f)) + 2.0 * (v + h);
    ((vectors + factors) / total).min(1.0)
}

/// Parameters stored on this GPU's stage after TP, pruning and weight sharing: (stored, layer part).
pub fn stage_params(
    c: &Ctx,
    m: &ResolvedModel,
    layers_on_stage: f64,
    first: bool,
    last: bool,
) -> f64 {
    let l = f64::from(m.layers.max(1));
    let unique_layers = (l * (1.0 - c.sharing_fraction)).max(1.0) / l;
    let keep = match c.prune_kind {
        PruneKind::Structured => 1.0 - c.prune_fraction,
        PruneKind::Unstructured => 1.0,
    };
    let layer_part = layers_on_stage * layer_params_stored(m) * unique_layers * keep;
    let emb = if first || (last && m.tied_embeddings && c.pp > 1.0) {
        m.params.embeddings
    } else {
        0.0
    };
    let head = if last { m.params.head } else { 0.0 };
    (layer_part + emb + head) / c.tp
}

/// Parameters of one layer stored on a GPU before TP: with expert parallelism only ⌈E/ep⌉ of the
/// routed experts (DeepSpeed-MoE, Rajbhandari et al. 2022 §4: experts partitioned over EP ranks,
/// everything else replicated).
pub fn layer_params_stored(m: &ResolvedModel) -> f64 {
    let routed = m.moe.routed_params_per_layer;
    m.params.per_layer - routed * (1.0 - m.moe.stored_expert_fraction())
}

/// Model states of one stage on one GPU.
pub fn model_states(c: &Ctx, m: &ResolvedModel, params: f64) -> ModelStates {
    let training = c.mode == crate::scenario::Mode::Training;
    let state = if training {
        state_bytes_per_param(c, m, params)
    } else {
        0.0
    };
    let (e_g, e_m) = if training {
        (c.e_grads, c.e_master)
    } else {
        (0.0, 0.0)
    };
    let (mut w, mut mw, mut g, mut o) =
        zero_model_states(params, c.e_weights, e_m, e_g, state, c.zero, c.dp);
    w += unstructured_overhead(c, m, params);
    let mut st = ModelStates::default();
    if c.offload_optimizer != OffloadTarget::None && training {
        let moved = mw + o + g;
        put(&mut st, c.offload_optimizer, moved);
        (mw, o, g) = (0.0, 0.0, 0.0);
    }
    if c.offload_params != OffloadTarget::None {
        put(&mut st, c.offload_params, w);
        w = 0.0;
    }
    st.weights = w;
    st.master = mw;
    st.grads = g;
    st.optimizer = o;
    st
}

fn put(st: &mut ModelStates, target: OffloadTarget, bytes: f64) {
    match target {
        OffloadTarget::Cpu => st.host += bytes,
        OffloadTarget::Nvme => st.nvme += bytes,
        OffloadTarget::None => {}
    }
}

/// Unstructured pruning: inference stores the kept layer weights sparse (CSR: the value plus a
/// 4-byte column index per kept value) instead of dense; training keeps them dense plus a 1-byte
/// mask per weight. Returns the change in weight bytes versus dense, of this GPU's shard (ZeRO-3
/// shards the sparse layers like the dense ones), so the weights stay ≥ 0.
fn unstructured_overhead(c: &Ctx, m: &ResolvedModel, params: f64) -> f64 {
    if c.prune_kind != PruneKind::Unstructured || c.prune_fraction <= 0.0 {
        return 0.0;
    }
    let layer = (params - (m.params.embeddings + m.params.head) / c.tp).max(0.0);
    let keep = 1.0 - c.prune_fraction;
    let shard = if c.zero == ZeroStage::Stage3 {
        c.dp
    } else {
        1.0
    };
    match c.mode {
        crate::scenario::Mode::Training => layer / shard,
        crate::scenario::Mode::Inference => {
            layer / shard * (keep * (c.e_weights + 4.0) - c.e_weights)
        }
    }
}

/// The optimizer step's temporaries on the GPU.
/// - foreach Adam/AdamW: one parameter-sized buffer in the state type (`_foreach_sqrt` of
///   `exp_avg_sq`; measured: `created_in_optimizer` = parameter bytes in every record).
/// - single-tensor Adam: two temporaries of the largest parameter (`exp_avg_sq.sqrt()` and its
///   quotient by the bias correction are live together; measured `_forloop` record).
/// - momentum / plain SGD foreach without weight decay: in place, none.
/// - 8-bit Adam: fused kernel, none. Adafactor: two of the largest tensor (update, its square).
pub fn optimizer_temp(c: &Ctx, m: &ResolvedModel, params: f64) -> f64 {
    if c.mode != crate::scenario::Mode::Training || c.offload_optimizer != OffloadTarget::None {
        return 0.0;
    }
    let shard = if c.zero == ZeroStage::None { 1.0 } else { c.dp };
    let largest = m.largest_tensor / c.tp;
    match c.optimizer {
        OptimizerKind::Adam | OptimizerKind::AdamW if c.foreach => {
            params * c.e_states.max(c.e_weights) / shard
        }
        OptimizerKind::Adam | OptimizerKind::AdamW => 2.0 * largest * c.e_states.max(c.e_weights),
        OptimizerKind::Adafactor => 2.0 * largest * c.e_states,
        _ => 0.0,
    }
}
