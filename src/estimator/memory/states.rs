//! Model states per GPU: weights, master weights, gradients, optimizer states, with ZeRO sharding,
//! CPU/NVMe offload, pruning and weight sharing; and the optimizer step's temporaries.

use super::ctx::Ctx;
use super::inventory::{Group, Inventory, Role};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{ModelFamily, OffloadTarget, OptimizerKind, ZeroStage};

/// Bytes per GPU of the four model-state components, plus what went to host and NVMe.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelStates {
    pub weights: f64,
    pub master: f64,
    pub grads: f64,
    pub optimizer: f64,
    pub host: f64,
    pub nvme: f64,
    /// Trainable elements of this GPU's optimizer partition kept on the GPU: each group's ÷ its
    /// ZeRO degree (DP, or DP / ep for routed experts) under ZeRO 1–3, whole without ZeRO; 0 when
    /// the optimizer is offloaded. What DeepSpeed's master partition holds.
    pub partition: f64,
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

/// Optimizer state bytes per element of a trainable group, besides Adam's per-tensor step counters
/// (see [`step_counter_bytes`]). `e_states` is the group's state element type.
/// - SGD 0; momentum 1 buffer; Adam/AdamW 2 moments (HF `model_memory_anatomy.md`; ZeRO §3.1).
/// - 8-bit Adam: two 1-byte moments plus an FP32 absmax per 2,048-element block each (bitsandbytes
///   block-wise quantisation, Dettmers et al. 2021 arXiv:2110.02861).
/// - Adafactor (β1 = None): factored second moment, one row and one column vector per matrix, full
///   for vectors (Shazeer & Stern 2018, arXiv:1804.04235); `adafactor` is that element fraction.
/// - Lion: one momentum buffer, `exp_avg` (Chen et al. 2023, arXiv:2302.06675, Algorithm 1: only
///   m_t is carried between steps; lucidrains/lion-pytorch@05258c9 `state['exp_avg']`).
/// - Muon: one momentum buffer (`momentum_buffer = zeros_like(p)`) for the hidden weight matrices
///   (`role` Matrices, Experts, Adapters, and the towers' and CNNs' groups, which are nearly all
///   matrices or conv filters viewed as matrices); AdamW's two moments for the embeddings, the head,
///   norms and biases (KellerJordan/Muon@1430c34 `muon.py` `MuonWithAuxAdam`: "The input
///   embedding, final output layer, and any internal gains or biases should be optimized using a
///   standard method such as AdamW"; Moonlight, Liu et al. 2025 §2 the same split).
/// - `StateBytes`: the scenario's bytes per parameter (`custom`), whatever the state type.
pub fn state_bytes_per_elem(
    optimizer: OptimizerKind,
    e_states: f64,
    adafactor: f64,
    role: Role,
    custom: f64,
) -> f64 {
    match optimizer {
        OptimizerKind::Sgd => 0.0,
        OptimizerKind::SgdMomentum | OptimizerKind::Lion => e_states,
        OptimizerKind::Adam | OptimizerKind::AdamW => 2.0 * e_states,
        OptimizerKind::Adam8bit => 2.0 + 2.0 * 4.0 / 2048.0,
        OptimizerKind::Adafactor => e_states * adafactor,
        OptimizerKind::Muon if muon_matrices(role) => e_states,
        OptimizerKind::Muon => 2.0 * e_states,
        OptimizerKind::StateBytes => custom,
    }
}

/// Whether Muon itself (not its auxiliary AdamW) steps a group of this role.
fn muon_matrices(role: Role) -> bool {
    !matches!(role, Role::Vectors | Role::EmbeddingsAndHead)
}

/// PyTorch's Adam keeps `step` as a 4-byte tensor per parameter tensor (and bitsandbytes' 8-bit
/// Adam its own per tensor). Muon's auxiliary AdamW keeps a Python int (`state["step"] = 0`,
/// KellerJordan/Muon `muon.py`), Lion none.
pub fn step_counter_bytes(optimizer: OptimizerKind, tensors: f64) -> f64 {
    match optimizer {
        OptimizerKind::Adam | OptimizerKind::AdamW | OptimizerKind::Adam8bit => 4.0 * tensors,
        _ => 0.0,
    }
}

/// Adafactor state elements per parameter: vectors in full, each matrix by its rows + columns.
fn adafactor_fraction(m: &ResolvedModel, total: f64) -> f64 {
    let total = total.max(1.0);
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

/// Model states of one stage on one GPU: each inventory group's weights, and for trainable groups
/// gradients, master copy and optimizer states, ZeRO-sharded by the group's degree; then CPU/NVMe
/// offload and paged optimizer states moved off the GPU. `optimizer` is the scenario's (a frozen
/// base has none: its groups are not trainable).
pub fn model_states(
    c: &Ctx,
    m: &ResolvedModel,
    inv: &Inventory,
    optimizer: OptimizerKind,
) -> ModelStates {
    let training = c.mode == crate::scenario::Mode::Training;
    let mut st = ModelStates::default();
    for g in inv.groups() {
        let trains = training && g.trainable;
        let (e_g, e_m, rate, counters) = if trains {
            let ada = adafactor_fraction(m, adafactor_total(m, g));
            (
                g.grad_bytes,
                g.master_bytes,
                state_bytes_per_elem(
                    optimizer,
                    g.state_bytes,
                    ada,
                    g.role,
                    c.state_bytes_per_param,
                ),
                step_counter_bytes(optimizer, g.tensors),
            )
        } else {
            (0.0, 0.0, 0.0, 0.0)
        };
        let (mut w, mut mw, mut gr, mut o) =
            zero_model_states(g.elems, g.weight_bytes, e_m, e_g, rate, c.zero, g.zero_dp);
        o += counters
            / if c.zero == ZeroStage::None {
                1.0
            } else {
                g.zero_dp.max(1.0)
            };
        let on_gpu = c.offload_optimizer == OffloadTarget::None;
        if trains && on_gpu {
            st.partition += g.elems
                / if c.zero == ZeroStage::None {
                    1.0
                } else {
                    g.zero_dp.max(1.0)
                };
        }
        if trains && !on_gpu && c.framework.sharding.megatron_optimizer(c.framework.profile) {
            // Megatron's hybrid device optimizer (`--optimizer-cpu-offload`,
            // `megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py`, d98e8a6) steps pinned
            // FP32 host copies of its shard (`param.detach().clone().cpu()`, `.float()`) with an
            // FP32 host gradient per copy (`cpu_copy_map_grad`); the data-parallel gradient
            // buffer (`main_grad`) stays on the GPU.
            let copy = 4.0 * g.elems
                / if c.zero == ZeroStage::None {
                    1.0
                } else {
                    g.zero_dp.max(1.0)
                };
            put(&mut st, c.offload_optimizer, mw + o + copy);
            (mw, o) = (0.0, 0.0);
        } else if trains && !on_gpu {
            put(&mut st, c.offload_optimizer, mw + o + gr);
            (mw, o, gr) = (0.0, 0.0, 0.0);
        } else if trains && g.paged {
            st.host += o;
            o = 0.0;
        }
        if c.offload_params != OffloadTarget::None && !g.pinned {
            put(&mut st, c.offload_params, w);
            w = 0.0;
        }
        st.weights += w;
        st.master += mw;
        st.grads += gr;
        st.optimizer += o;
    }
    st
}

/// The parameter count Adafactor's factored fraction is taken over: the model's for its own groups,
/// the adapters' own count for LoRA adapters.
fn adafactor_total(m: &ResolvedModel, g: &Group) -> f64 {
    if g.role == Role::Adapters {
        g.elems
    } else {
        m.params.total
    }
}

fn put(st: &mut ModelStates, target: OffloadTarget, bytes: f64) {
    match target {
        OffloadTarget::Cpu => st.host += bytes,
        OffloadTarget::Nvme => st.nvme += bytes,
        OffloadTarget::None => {}
    }
}

/// The optimizer step's temporaries on the GPU, over the trainable groups.
/// - foreach Adam/AdamW: one parameter-sized buffer in the state type (`_foreach_sqrt` of
///   `exp_avg_sq`; measured: `created_in_optimizer` = parameter bytes in every record).
/// - single-tensor Adam: two temporaries of the largest parameter (`exp_avg_sq.sqrt()` and its
///   quotient by the bias correction are live together; measured `_forloop` record).
/// - momentum / plain SGD foreach without weight decay: in place, none.
/// - 8-bit Adam: bitsandbytes' fused kernel, none; torchao's compiled step per parameter
///   ([`TORCHAO_8BIT_STEP_BYTES`]) that many bytes an element of the largest tensor. Adafactor: two of the largest tensor (update, its square).
/// - Lion: foreach (lucidrains/lion-pytorch@05258c9 `foreach.py`: `updates = [t.clone() for t in
///   exp_avgs]`, then in place) one parameter-sized buffer; per tensor (`lion_pytorch.py`
///   `update_fn`: `exp_avg.clone().mul_(β1).add(grad, …)`, the clone and the sum live together) two
///   of the largest tensor.
/// - Muon: its matrices are stepped one at a time (`muon.py` `SingleDeviceMuon.step`), the largest
///   holds the Newton–Schulz transient ([`newton_schulz_temp`]); the auxiliary AdamW steps per
///   tensor (`adam_update`: `grad.square()`, the two bias-corrected moments and the quotient), about
///   four of its largest tensor (the embedding), in the state type. The larger of the two.
/// - `StateBytes`: unknown; none counted.
///
/// Muon's largest hidden matrix is the largest of the layer kinds' (`LayerKind::largest`), its
/// AdamW's the embedding or head matrix (V × h), each ÷ TP: under tensor parallelism the shard is
/// taken (Moonlight's distributed Muon gathers whole matrices first: not counted).
/// - paged optimizer states (bitsandbytes) and optimizer offload: the step runs off the GPU.
///
/// Beside any of them, Megatron's mixed-precision optimizer hands each FP32 master parameter
/// `main_grad.float()` (`megatron/core/optimizer/optimizer.py` `_copy_model_grads_to_main_grads`;
/// the distributed optimizer's shard, `distrib_optimizer.py` l. 2792; d98e8a6): a copy when the
/// `main_grad` buffer is 16-bit (`--fp16`, or `--bf16 --grad-reduce-in-bf16`), freed by the next
/// `zero_grad`, so alive through the step ([`megatron_fp32_grad_copy`]). Megatron-FSDP (ZeRO-3
/// here) makes the same copy in `update_main_grads` (`optimizer_grad.to(param.dtype)`,
/// `megatron_fsdp/param_and_grad_buffer.py`); `--use-precision-aware-optimizer` hands the 16-bit
/// shard over instead (no copy; not a setting here).
pub fn optimizer_temp(
    c: &Ctx,
    m: &ResolvedModel,
    inv: &Inventory,
    optimizer: OptimizerKind,
) -> f64 {
    if c.mode != crate::scenario::Mode::Training || c.offload_optimizer != OffloadTarget::None {
        return 0.0;
    }
    let mut out = 0.0;
    let (mut ns, mut aux) = (0.0_f64, 0.0_f64);
    for g in inv.groups().iter().filter(|g| g.trainable && !g.paged) {
        let shard = if c.zero == ZeroStage::None {
            1.0
        } else {
            g.zero_dp.max(1.0)
        };
        let e = g.state_bytes.max(g.param_bytes);
        out += megatron_fp32_grad_copy(c, g) / shard;
        out += match optimizer {
            OptimizerKind::Adam | OptimizerKind::AdamW if c.foreach => g.elems * e / shard,
            OptimizerKind::Adam | OptimizerKind::AdamW => 2.0 * g.largest * e,
            OptimizerKind::Adafactor => 2.0 * g.largest * g.state_bytes,
            OptimizerKind::Lion if c.foreach => g.elems * e / shard,
            OptimizerKind::Adam8bit
                if c.eight_bit_library == crate::scenario::EightBitLibrary::Torchao =>
            {
                TORCHAO_8BIT_STEP_BYTES * g.largest / shard
            }
            OptimizerKind::Lion => 2.0 * g.largest * e,
            OptimizerKind::Muon if g.elems > 0.0 => {
                let h = f64::from(m.hidden);
                match g.role {
                    Role::Matrices => ns = ns.max(newton_schulz_temp(layer_largest(m) / c.tp, h)),
                    Role::Vectors => aux = aux.max(4.0 * h * e),
                    Role::EmbeddingsAndHead => {
                        let table = f64::from(m.vocab) * h / c.tp;
                        aux = aux.max(4.0 * table.min(g.elems) * e);
                    }
                    _ => ns = ns.max(newton_schulz_temp(g.largest, h)),
                }
                0.0
            }
            _ => 0.0,
        };
    }
    out + ns.max(aux)
}

/// Whether [`optimizer_temp`] is one tensor's (a step that goes parameter by parameter) rather than
/// a share of every parameter's (foreach Adam, AdamW and Lion).
pub fn temp_is_per_tensor(c: &Ctx) -> bool {
    !(c.foreach
        && matches!(
            c.optimizer,
            OptimizerKind::Adam | OptimizerKind::AdamW | OptimizerKind::Lion
        ))
}

/// Bytes an element of the parameter being stepped that torchao's 8-bit AdamW holds beside the
/// model states: its compiled `single_param_adam` (torchao 0.6.1 `prototype/low_bit_optim/adam.py`,
/// one `torch.compile` per parameter) materialises the two dequantized moments and the update as
/// FP32 buffers of the parameter's size, and the two re-quantized moments' block scales (one FP32
/// per 256 elements each). Measured with torch 2.5.1's inductor on CPU: the allocator's step peak
/// and the generated wrapper's buffers agree, 12 + 8/256 B an element at three shapes
/// (`tests/data/measured/torchao-adamw8bit-step.json`, `scripts/measure/probe_torchao_adamw8bit.py`).
/// Inductor realises these buffers before it generates code for a device; a CUDA build was not run.
pub const TORCHAO_8BIT_STEP_BYTES: f64 = TORCHAO_8BIT_BUFFER_BYTES + 8.0 / 256.0;

/// The three FP32 parameter-sized buffers of [`TORCHAO_8BIT_STEP_BYTES`], bytes an element.
pub const TORCHAO_8BIT_BUFFER_BYTES: f64 = 3.0 * 4.0;

/// The FP32 copy of a group's 16-bit gradients Megatron's optimizer steps with (see
/// [`optimizer_temp`]), before ZeRO sharding: groups with an FP32 master copy only (FP32
/// parameters take `main_grad` itself).
fn megatron_fp32_grad_copy(c: &Ctx, g: &super::inventory::Group) -> f64 {
    let f = &c.framework;
    if f.sharding
        .megatron_fp32_grad_copy(f.profile, g.master_bytes, g.grad_bytes)
    {
        g.elems * 4.0
    } else {
        0.0
    }
}

/// The largest weight matrix of the layers (elements), over the layer kinds.
fn layer_largest(m: &ResolvedModel) -> f64 {
    m.blocks
        .kinds()
        .iter()
        .map(|k| k.largest)
        .fold(0.0, f64::max)
}

/// The Newton–Schulz transient of Muon's step for a matrix of `elems` elements whose smaller side
/// is r (taken as min(h, elems / h): a hidden matrix has the hidden size on one side), in BF16
/// (KellerJordan/Muon@1430c34 `zeropower_via_newtonschulz5`: `X = G.bfloat16()`, then per
/// iteration `A = X @ X.mT` (r × r), `B = b*A + c*A@A`, `X = a*X + B@X`). Live at its largest, the
/// X update: X, `a*X`, `B@X` and the sum (4 × elems) with A and B (2 r²). 2 bytes each.
///
/// ```
/// use vram_explorer::estimator::memory::states::newton_schulz_temp;
/// // A 4096 × 14336 MLP matrix (Llama-3-8B): 2 · (4 · 58.7M + 2 · 4096²) B ≈ 537 MB.
/// assert_eq!(newton_schulz_temp(4096.0 * 14336.0, 4096.0), 2.0 * (4.0 * 4096.0 * 14336.0 + 2.0 * 4096.0 * 4096.0));
/// ```
pub fn newton_schulz_temp(elems: f64, hidden: f64) -> f64 {
    if elems <= 0.0 {
        return 0.0;
    }
    let h = hidden.max(1.0);
    let r = h.min(elems / h);
    2.0 * (4.0 * elems + 2.0 * r * r)
}

/// Bytes per layer weight-matrix element an FP8 recipe keeps beside the weights for its GEMMs:
/// - Transformer Engine (delayed or current scaling): the FP8 weight and its transpose (Hopper's
///   FP8 GEMMs take K-major operands only, so Wᵀ for dgrad is a second FP8 tensor; TE 1.x
///   `Float8Tensor` caches both across micro-batches): 2 B.
/// - DeepSeek-V3 block-wise (tech report §3.3.1): the FP8 weight, one FP32 scale per 128 × 128
///   block, which quantises W and Wᵀ alike: 1 + 4 / 16,384 B.
///
/// ```
/// use vram_explorer::estimator::memory::states::fp8_weight_copy_bytes;
/// use vram_explorer::scenario::Fp8Recipe;
/// assert_eq!(fp8_weight_copy_bytes(Fp8Recipe::TeDelayed), 2.0);
/// assert_eq!(fp8_weight_copy_bytes(Fp8Recipe::DeepSeekBlockwise), 1.000244140625);
/// ```
pub fn fp8_weight_copy_bytes(recipe: crate::scenario::Fp8Recipe) -> f64 {
    use crate::scenario::Fp8Recipe;
    match recipe {
        Fp8Recipe::None => 0.0,
        Fp8Recipe::TeDelayed | Fp8Recipe::TeCurrent => 2.0,
        Fp8Recipe::DeepSeekBlockwise => 1.0 + 4.0 / (128.0 * 128.0),
    }
}

/// Transformer Engine's FP8 metadata for `layers` layers: 4 GEMMs per layer (`LayerNormLinear` qkv,
/// `Linear` proj, `LayerNormMLP` fc1 and fc2), each with 3 forward FP8 tensors (input, weight,
/// output) and 2 backward (grad output, grad input); per tensor FP32 scale and scale_inv, and under
/// delayed scaling an amax history of 1024 FP32 values (`DelayedScaling.amax_history_len = 1024`,
/// transformer_engine/common/recipe/__init__.py, TE 1.x; Megatron-Core's `fp8_amax_history_len`
/// default is the same), under current scaling one amax. DeepSeek-V3's block scales are counted
/// with the weights ([`fp8_weight_copy_bytes`]).
///
/// ```
/// use vram_explorer::estimator::memory::states::fp8_meta_bytes;
/// use vram_explorer::scenario::Fp8Recipe;
/// // 80 layers × 4 GEMMs × 5 tensors × (1024 + 2) × 4 B = 6.57 MB.
/// assert_eq!(fp8_meta_bytes(Fp8Recipe::TeDelayed, 80.0), 80.0 * 4.0 * 5.0 * 1026.0 * 4.0);
/// ```
pub fn fp8_meta_bytes(recipe: crate::scenario::Fp8Recipe, layers: f64) -> f64 {
    use crate::scenario::Fp8Recipe;
    let per_tensor = match recipe {
        Fp8Recipe::TeDelayed => 1024.0 + 2.0,
        Fp8Recipe::TeCurrent => 3.0,
        Fp8Recipe::None | Fp8Recipe::DeepSeekBlockwise => 0.0,
    };
    layers * 4.0 * 5.0 * per_tensor * 4.0
}
