//! Megatron-Core 0.16.1: its vocab-parallel cross-entropy works in the logits' own storage.
//! Derivation and measurement: docs/frameworks/megatron-core.md
//! (`megatron/core/tensor_parallel/cross_entropy.py`: `calculate_logits_max` line 28 upcasts to
//! FP32, lines 45, 65 and 80 subtract the max, exponentiate and normalise in place, `forward` line
//! 187 saves that softmax, `backward` lines 192–217 turn it into the gradient in place);
//! tests/data/measured/megatron-core-cross-entropy.json, held within 1 % by
//! tests/framework_stack.rs.

use super::super::activations::Sizes;
use super::super::ctx::Ctx;
use super::Loss;
use crate::estimator::model::ResolvedModel;

/// Saved: the FP32 softmax, 4·b·s·V/t (the logits themselves when they are FP32). Beside it in
/// forward and in the loss backward: nothing more for FP32 logits; 16-bit logits stay alive beside
/// their FP32 copy (e_c·b·s·V/t). No b·s·V gradient is created: the backward writes into the saved
/// softmax.
pub fn loss(c: &Ctx, z: &Sizes) -> Loss {
    let logits16 = if c.ec < 4.0 { c.ec * z.bsv } else { 0.0 };
    Loss {
        saved: 4.0 * z.bsv,
        forward: logits16,
        backward: logits16,
    }
}

/// A Megatron mixture-of-experts layer's token-dispatcher tensors per micro-batch, beside the
/// experts' input rows and the router's top-k (`activations::moe_extra`), by how long they live.
/// Measured on CPU with Megatron-Core's own `MoELayer`, both dispatchers, TP 1 and TP 2 with
/// sequence parallelism, EP 1 and 2 (tests/data/measured/megatron-core-moe.json).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DispatcherTensors {
    /// Saved for backward only: freed by the layer's backward.
    pub saved: f64,
    /// Saved for backward and also an attribute of the dispatcher: outlives the layer's backward
    /// until its next forward ([`dispatcher_kept`]).
    pub saved_kept: f64,
    /// An attribute only: held from the layer's forward to its next one, so in every phase of a
    /// steady-state step ([`dispatcher_map`]).
    pub kept: f64,
}

/// [`DispatcherTensors`] of one MoE layer (0.16.1 `megatron/core/transformer/moe/`; E experts,
/// r routed rows per token, b·s the micro-batch's tokens — under ETP < TP those of the rank's ETP
/// group, b·s·ETP/TP ([`super::super::activations::expert_token_share`]) —, e the logits' bytes):
/// - `allgather` (`MoEAllGatherTokenDispatcher`), over the b·s tokens of the TP × EP group it
///   gathers: `masked_select` of the local experts' routing weights keeps its input and the bool map,
///   (e + 1)·b·s·E; `permute`'s int64 sorted indices and the selected weights the fused weighted
///   SwiGLU keeps, (8 + e)·r·b·s, both also attributes (`reversed_local_input_permutation_mapping`,
///   `local_probs`); the `local_map` attribute, b·s·E.
/// - `alltoall` (`MoEAlltoAllTokenDispatcher`), over the rank's own b·s/SP tokens: `permute` keeps
///   the transposed weights and map `masked_select` read, (e + 1)·b·s·E/SP, and its indices,
///   8·r·b·s/SP (an attribute too); the experts keep the weights all-gathered over TP, e·r·b·s;
///   the attributes `probs` and `routing_map`, (e + 1)·b·s·E/SP. Its token counts per expert move
///   to the host (`_maybe_dtoh_and_synchronize`): no device bytes.
pub fn dispatcher_tensors(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> DispatcherTensors {
    let rows = m.moe.routed_expert_rows_per_token();
    // The tokens the experts see: the TP group's, or under ETP < TP its ETP group's.
    let gathered = z.bs * super::super::activations::expert_token_share(c, z);
    let experts = f64::from(m.moe.experts);
    if c.framework.megatron_alltoall() {
        let own = z.bs / z.tr;
        DispatcherTensors {
            saved: (c.ec + 1.0) * own * experts + c.ec * rows * gathered,
            saved_kept: 8.0 * rows * own,
            kept: (c.ec + 1.0) * own * experts,
        }
    } else {
        DispatcherTensors {
            saved: (c.ec + 1.0) * gathered * experts,
            saved_kept: (8.0 + c.ec) * rows * gathered,
            kept: gathered * experts,
        }
    }
}

/// What one MoE layer's dispatcher saves for backward ([`DispatcherTensors`]' `saved` and
/// `saved_kept`).
pub fn dispatcher_saved(c: &Ctx, m: &ResolvedModel, z: &Sizes) -> f64 {
    let t = dispatcher_tensors(c, m, z);
    t.saved + t.saved_kept
}

/// MoE layers among a stage's `layers` (the pattern's share of MoE layers).
fn moe_layers(m: &ResolvedModel, layers: f64) -> f64 {
    layers * m.moe_layer_share()
}

/// The dispatcher's attributes that are not saved for backward ([`DispatcherTensors`]' `kept`: the
/// all-gather dispatcher's `local_map`; the all-to-all dispatcher's `probs` and `routing_map`),
/// set by each forward and dropped only by the layer's next one, so every MoE layer of the stage
/// holds them in every phase of a steady-state step. Measured: the record's end of backward.
pub fn dispatcher_map(c: &Ctx, m: &ResolvedModel, z: &Sizes, layers: f64) -> f64 {
    if c.profile != crate::scenario::Profile::Megatron {
        return 0.0;
    }
    moe_layers(m, layers) * dispatcher_tensors(c, m, z).kept
}

/// What Megatron-Core's persistent gather buffer serves on a stage, bytes in the compute type
/// (`megatron/core/utils.py` `GlobalMemoryBuffer`, name "mpu": allocated on first use, never
/// freed, regrown to the largest request, one per dtype). It holds the largest
/// ([`gather_buffer`]), in every phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GatherRequests {
    /// The all-gather dispatcher gathers the tokens of the TP × EP group into it whenever that
    /// group has more than one rank (`token_dispatch`: `gather_from_sequence_parallel_region(...,
    /// use_global_buffer=True)`, [S·B·EP, h]). The `alltoall` dispatcher does not use it: its TP
    /// all-gather (`dispatch_postprocess`) makes a fresh tensor (measured: no request at TP 2).
    pub dispatcher: f64,
    /// A Megatron `ColumnParallelLinear` under sequence parallelism gathers its input into it
    /// (`tensor_parallel/layers.py` lines 482 and 519, [S·B, h], forward and backward): every
    /// linear of Megatron's own layers (`--transformer-impl local`), and under Transformer Engine
    /// the output layer on the last stage (`GPTModel.output_layer` is Megatron's own). Trained
    /// weights only: a frozen one gathers into a fresh tensor.
    pub linears: f64,
    /// Megatron's own `DotProductAttention` takes its `baddbmm` input from it
    /// (`transformer/dot_product_attention.py` line 189, [b·np, sq, sk], np the rank's heads):
    /// the widest attention layer's, under `--transformer-impl local`.
    pub scores: f64,
}

/// [`GatherRequests`] of a stage of `layers` layers (`last`: it holds the output layer).
pub fn gather_requests(
    c: &Ctx,
    m: &ResolvedModel,
    z: &Sizes,
    layers: f64,
    last: bool,
) -> GatherRequests {
    if c.profile != crate::scenario::Profile::Megatron {
        return GatherRequests::default();
    }
    let ep = f64::from(m.moe.ep.max(1));
    let gathers = !c.framework.megatron_alltoall();
    // Over the expert TP × EP group (`tp_ep_group`): TP × EP ranks at the default ETP = TP.
    let group = c.etp.min(c.tp) * ep;
    let dispatcher = if gathers && moe_layers(m, layers) > 0.0 && group > 1.0 {
        z.bs * super::super::activations::expert_token_share(c, z) * ep * f64::from(m.hidden)
    } else {
        0.0
    };
    let local = c.framework.megatron_local;
    // A frozen weight (a LoRA base, the output layer under LoRA) takes `linear_with_frozen_weight`,
    // which gathers into a fresh tensor (`tensor_parallel/layers.py` `linear_with_frozen_weight`).
    let trained = !c.framework.lora;
    let linears = if c.sp && (local || last) && trained {
        z.bsh
    } else {
        0.0
    };
    let scores = if local && c.attention == crate::scenario::AttentionKernel::Materialized {
        // Megatron's own attention refuses context parallelism (`megatron_local_layers_without_cp`):
        // the score of the rank's own keys.
        super::super::layer_kinds::widest_sizes(c, m, c.b, c.s).bas2 / c.cp
    } else {
        0.0
    };
    GatherRequests {
        dispatcher: c.ec * dispatcher,
        linears: c.ec * linears,
        scores: c.attention_bytes() * scores,
    }
}

/// Megatron-Core's persistent gather buffer on a stage: the largest of its [`GatherRequests`] of
/// each type (the buffer is one tensor per type: FP32 scores beside 16-bit gathers are two).
/// Measured: the record's TP 2 rows (tests/data/measured/megatron-core-moe.json records each
/// layer's largest request).
pub fn gather_buffer(c: &Ctx, m: &ResolvedModel, z: &Sizes, layers: f64, last: bool) -> f64 {
    let r = gather_requests(c, m, z, layers, last);
    let gathers = r.dispatcher.max(r.linears);
    // FP32 scores (`attention_bytes`) are a tensor of their own beside the 16-bit gathers.
    if c.attention_bytes() == c.ec {
        gathers.max(r.scores)
    } else {
        gathers + r.scores
    }
}

/// Whether the dispatcher's indices and weights count beside every phase rather than after the
/// backward: a layer recomputed whole saves nothing in its forward (run under `no_grad`), but its
/// dispatcher still stores them as attributes.
fn attributes_always(c: &Ctx) -> bool {
    c.checkpointing.recomputes_whole_layers()
}

/// The dispatcher's attributes held beside a stage in every phase: those not saved for backward
/// ([`dispatcher_map`]), and under whole-layer recomputation the saved ones too.
pub fn dispatcher_held(c: &Ctx, m: &ResolvedModel, z: &Sizes, layers: f64) -> f64 {
    let saved_kept = if attributes_always(c) {
        moe_layers(m, layers) * dispatcher_tensors(c, m, z).saved_kept
    } else {
        0.0
    };
    dispatcher_map(c, m, z, layers) + saved_kept
}

/// The dispatcher attributes that are also saved for backward ([`DispatcherTensors`]'
/// `saved_kept`): after a layer's backward frees its saved tensors they stay, through the end of
/// backward and the optimizer step, until the layer's next forward. (Under whole-layer
/// recomputation: [`dispatcher_held`].)
pub fn dispatcher_kept(c: &Ctx, m: &ResolvedModel, z: &Sizes, layers: f64) -> f64 {
    if c.profile != crate::scenario::Profile::Megatron || attributes_always(c) {
        return 0.0;
    }
    moe_layers(m, layers) * dispatcher_tensors(c, m, z).saved_kept
}
