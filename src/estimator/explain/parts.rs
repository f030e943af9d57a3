//! One explainer per component: the formula, the numbers that fill it, and the named terms
//! recomputed with the estimator's own helpers (the caller adds the remainder).

use super::{Stage, show};
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::memory::frameworks::torchtune;
use crate::estimator::memory::inventory::Inventory;
use crate::estimator::memory::{activations as act, inference, peft, states};
use crate::estimator::{Component, Estimate, Phase, ResolvedModel};
use crate::scenario::{Checkpointing, Mode, ModelFamily, Profile, ZeroStage};
use crate::units::{Bytes, fmt_sig};

/// What one component's explainer returns (before the remainder is added).
pub(super) struct Parts {
    pub formula: String,
    pub lead: String,
    pub terms: Vec<(String, Bytes)>,
    pub source: &'static str,
    pub assumption: &'static str,
    /// What the remainder holds when it is positive.
    pub rest: &'static str,
}

const ZERO_SOURCE: &str = "Rajbhandari et al. 2020 (ZeRO) §5, Figure 1; docs/model.md §5";

fn rank(z: ZeroStage) -> u8 {
    match z {
        ZeroStage::None => 0,
        ZeroStage::Stage1 => 1,
        ZeroStage::Stage2 => 2,
        ZeroStage::Stage3 => 3,
    }
}

/// The gathered weights beside a phase's transients: FSDP's units (inside a block in forward, or
/// in the first layer's backward), DeepSpeed stage 3's own rule, else two ZeRO-3 layers.
fn gathered_term(
    c: &Ctx,
    m: &ResolvedModel,
    st: &Stage,
    phase: Option<Phase>,
    ds: bool,
) -> (String, Bytes) {
    use crate::estimator::memory::frameworks::fsdp;
    if let Some(units) = fsdp::backward_gathered(c, m, *st) {
        let (label, bytes) = match (phase, fsdp::forward_gathered(c, m, *st)) {
            (Some(Phase::Forward), Some(f)) => ("inside a block in forward", f),
            _ => ("in the first layer's backward", units),
        };
        return (
            format!(
                "FSDP units unsharded {label} (with the root; docs/frameworks/fsdp.md \
                 \"Inside the blocks\")"
            ),
            Bytes(bytes),
        );
    }
    if ds && c.zero == ZeroStage::Stage3 {
        use crate::estimator::memory::frameworks::deepspeed;
        return (
            "parameters DeepSpeed stage 3 holds gathered: those stage3_max_reuse_distance keeps \
             from forward to backward (the head; a small model's every parameter), or a block's \
             largest matrix and its prefetch (docs/frameworks/deepspeed.md \"Stage 3 at world \
             size > 1\")"
                .to_owned(),
            Bytes(deepspeed::stage3_gathered(c, m)),
        );
    }
    let held = if ds { 1.0 - 1.0 / c.dp.max(1.0) } else { 1.0 };
    (
        "two gathered layers (ZeRO-3 / parameter offload)".to_owned(),
        Bytes(gathered(c, m) * held),
    )
}

/// ZeRO-3 or parameter offload: two layers gathered in the compute type (DeepSpeed prefetch; as
/// `memory.rs` computes it). Part of the weights in inference, of the transient buffers in training.
fn gathered(c: &Ctx, m: &ResolvedModel) -> f64 {
    let zero3 =
        c.zero == ZeroStage::Stage3 || c.offload_params != crate::scenario::OffloadTarget::None;
    if zero3 {
        2.0 * crate::estimator::memory::inventory::rank_block_params(c, m) * c.ec
    } else {
        0.0
    }
}

fn inventory(c: &Ctx, x: &peft::Ext, m: &ResolvedModel, st: &Stage) -> Inventory {
    Inventory::stage(c, x, m, st.layers, st.first, st.last)
}

/// Weights, master weights, gradients, optimizer states: ZeRO's Ψ × bytes ÷ N_d, one term per
/// tensor group of the stage (layer matrices, experts, norms and biases, embeddings and head, LoRA
/// adapters), each with its own element bytes and sharding degree.
pub(super) fn model_state(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    st: &Stage,
    k: Component,
) -> Parts {
    let inv = inventory(c, x, m, st);
    let (formula, from, name) = state_formula(k);
    let mut terms = Vec::new();
    for (i, g) in inv.groups().iter().enumerate() {
        let s = crate::estimator::memory::frameworks::deepspeed::states(
            c,
            states::model_states(c, m, &inv.only(i), x.optimizer),
        );
        let bytes = match k {
            Component::Weights => s.weights,
            Component::MasterWeights => s.master,
            Component::Gradients => s.grads,
            _ => s.optimizer,
        };
        if bytes > 0.0 {
            let div = if rank(c.zero) >= from { g.zero_dp } else { 1.0 };
            // Weights name their storage format ("BF16", "GGUF Q4_K"); the other states are dense.
            let stored = if k == Component::Weights {
                format!(" ({})", g.storage.label())
            } else {
                String::new()
            };
            // Bytes per element as held (the weights' storage, else this state's own type).
            let per = if k == Component::Weights || g.elems <= 0.0 {
                g.weight_bytes
            } else {
                bytes * div / g.elems
            };
            let label = format!(
                "{} of the {}{}: {:.4e} × {} B ÷ {}",
                name,
                g.role.label(),
                stored,
                g.elems,
                fmt_sig(per),
                fmt_sig(div)
            );
            terms.push((label, Bytes(bytes)));
        }
    }
    if k == Component::Weights && c.mode == Mode::Inference && m.family == ModelFamily::Transformer
    {
        terms.push((
            "two gathered layers (ZeRO-3 / parameter offload)".to_owned(),
            Bytes(gathered(c, m)),
        ));
    }
    let lead = format!(
        "Ψ_stage = {:.4e} parameters (after TP = {}, {} layers on this stage) in {} groups, ZeRO \
         divisor ÷ {}",
        inv.base_elems(),
        c.tp,
        st.layers,
        inv.groups().len(),
        if rank(c.zero) >= from { c.dp } else { 1.0 }
    );
    Parts {
        formula: formula.to_owned(),
        lead,
        terms,
        source: ZERO_SOURCE,
        assumption: "Element types from the precision setting (Megatron under --bf16 keeps FP32 \
                     gradients with ZeRO none or 1); offloaded states live off the GPU; a LoRA/QLoRA base has no \
                     gradients, master copy or optimizer state.",
        rest: "not attributed to a tensor group",
    }
}

/// A model state's formula, the lowest ZeRO stage that shards it and its name in the terms.
fn state_formula(k: Component) -> (&'static str, u8, &'static str) {
    match k {
        Component::Weights => ("Σ groups Ψ_g × e_w,g ÷ N_d (ZeRO-3)", 3, "weights"),
        Component::MasterWeights => (
            "Σ trainable groups Ψ_g × e_master ÷ N_d (ZeRO ≥ 1)",
            1,
            "master copy",
        ),
        Component::Gradients => (
            "Σ trainable groups Ψ_g × e_g ÷ N_d (ZeRO ≥ 2)",
            2,
            "gradients",
        ),
        _ => (
            "Σ trainable groups Ψ_g × K_g ÷ N_d (ZeRO ≥ 1) + 4 B per tensor (Adam's step), K = \
             optimizer state bytes per parameter",
            1,
            "optimizer states",
        ),
    }
}

/// A layer-table CNN's activations: the op-by-op walk of `model::cnn` (docs/cnn.md).
fn cnn_walk(c: &Ctx, m: &ResolvedModel, assumption: &'static str) -> Parts {
    Parts {
        formula: "Σ over layers of the tensors each op saves for backward (walked op by op)"
            .to_owned(),
        lead: format!(
            "{}, b = {}, side = {} px, e_c = {} B",
            m.cnn.network.label(),
            c.b,
            m.cnn.resolution,
            c.ec
        ),
        terms: Vec::new(),
        source: "torchvision / DiT module source and autograd derivatives.yaml; docs/cnn.md",
        assumption,
        rest: "feature maps saved for backward (inference: the live working set)",
    }
}

/// The activations' profile name and source.
fn profile_source(c: &Ctx) -> (&'static str, &'static str) {
    match c.framework.profile {
        Profile::LitGpt => (
            "LitGPT profile",
            "LitGPT 0.5.13 source, measured on CPU; docs/frameworks/litgpt.md",
        ),
        Profile::Torchtune => (
            "torchtune profile",
            "torchtune 0.6.1 source, measured on CPU; docs/frameworks/torchtune.md",
        ),
        Profile::Megatron => (
            "Megatron profile",
            "Korthikanti et al. 2022 (arXiv:2205.05198) §4.1, Table 2; docs/model.md §4",
        ),
        Profile::HuggingFace => (
            "Hugging Face profile",
            "Measured HF eager autograd (shared/reference/measured); docs/model.md §3",
        ),
    }
}

/// Saved activations: per-layer terms × layers × micro-batches in flight, plus stage extras.
pub(super) fn activations(c: &Ctx, m: &ResolvedModel, e: &Estimate, st: &Stage) -> Parts {
    let assumption =
        "Saved in forward, alive until the layer's backward; inference (no_grad) saves nothing.";
    if m.family == ModelFamily::Cnn && m.cnn.network != crate::scenario::CnnNetwork::Aggregate {
        return cnn_walk(c, m, assumption);
    }
    if m.family != ModelFamily::Transformer {
        return Parts {
            formula: "b × activation bytes per sample (FP32) × e_c / 4".to_owned(),
            lead: format!("b = {}, e_c = {} B", c.b, c.ec),
            terms: Vec::new(),
            source: "Per-family activation bytes per sample (docs/model.md §2)",
            assumption,
            rest: "feature maps saved for backward",
        };
    }
    let (profile, source) = profile_source(c);
    let (l, f) = (st.layers, st.in_flight);
    let mut formula =
        format!("L_stage × in flight × (attention + MLP + norms + masks) per layer, {profile}");
    let mut lead = format!("L_stage = {l}, micro-batches in flight = {}", fmt_sig(f));
    if c.profile == Profile::Megatron {
        korthikanti_closed_form(c, m, &mut formula, &mut lead);
    }
    let p = &e.memory.per_layer;
    // torchtune's activation offloading keeps one layer's saved tensors on the GPU
    // (`memory::frameworks::on_device`).
    let kept = crate::estimator::memory::frameworks::on_device(c, l, l);
    if kept < l {
        formula.push_str(
            "; torchtune's activation offloading moves every saved tensor to the host and keeps \
             one layer's on the GPU (torchtune/training/_activation_offloading.py)",
        );
    }
    let terms = match c.checkpointing {
        Checkpointing::None => {
            let k = kept * f;
            let t = |what: &str, b: Bytes| (format!("{kept} × {} × {what}", fmt_sig(f)), b * k);
            vec![
                t("attention", p.attention_activations),
                t("MLP", p.mlp_activations),
                t("norms", p.norm_activations),
                t("dropout masks", p.dropout_masks),
            ]
        }
        Checkpointing::Selective => {
            formula.push_str(
                "; selective recomputation drops the attention-score terms (5as²b) and \
                 recomputes them in backward (Korthikanti §4.1)",
            );
            Vec::new()
        }
        Checkpointing::PerOp => {
            formula.push_str(
                "; torchtitan's per-op policy keeps each layer's input, every other matmul's output \
                 (Q, V, MLP gate and down) and the fused attention's output, and recomputes the \
                 rest in backward (torchtitan 9dec370 parallelize_llama.py)",
            );
            Vec::new()
        }
        Checkpointing::Full | Checkpointing::EveryK => {
            checkpointed_inputs(c, m, st, kept / l.max(1.0), &mut formula)
        }
    };
    Parts {
        formula,
        lead,
        terms,
        source,
        assumption,
        rest: if c.checkpointing == Checkpointing::Selective {
            "layer activations without the score terms, plus stage extras"
        } else if c.checkpointing == Checkpointing::PerOp {
            "the tensors the per-op policy keeps, plus stage extras"
        } else {
            "stage extras: embedding mask, final norm, logits/loss inputs"
        },
    }
}

/// Megatron's per-layer closed form, Korthikanti et al. 2022 Table 2, filled with the scenario.
fn korthikanti_closed_form(c: &Ctx, m: &ResolvedModel, formula: &mut String, lead: &mut String) {
    formula.push_str(
        "; Table 2 per layer: s·b·h·(34 + 5as/h) bytes (t = 1, 16-bit, MHA, GeLU), and the two \
         norms' FP32 statistics the paper leaves out (16·s·b for LayerNorm, 8·s·b for RMSNorm)",
    );
    let (h, a) = (f64::from(m.hidden), f64::from(m.heads));
    let closed = c.s * c.b * h * (34.0 + 5.0 * a * c.s / h.max(1.0));
    lead.push_str(&format!(
        "; s·b·h·(34 + 5as/h) = {}·{}·{}·(34 + 5·{}·{}/{}) = {} per layer",
        c.s,
        c.b,
        h,
        a,
        c.s,
        h,
        show(Bytes(closed))
    ));
}

/// Full or every-k checkpointing: the saved layer inputs, e·b·s·h each (Chen et al. 2016 §4.3).
fn checkpointed_inputs(
    c: &Ctx,
    m: &ResolvedModel,
    st: &Stage,
    on_device: f64,
    formula: &mut String,
) -> Vec<(String, Bytes)> {
    let z = act::sizes(c, m, c.b, c.s);
    // The residual stream: FP32 under HF autocast, 16-bit in Megatron's kernels (as training.rs).
    let e_in = if c.profile == Profile::Megatron {
        c.ec
    } else {
        c.er
    };
    let input = e_in * z.bsh / z.tr * c.saved_scale();
    let kept = if c.checkpointing == Checkpointing::Full {
        st.layers
    } else {
        (st.layers / c.checkpoint_every.min(st.layers.max(1.0))).ceil()
    } * on_device;
    formula.push_str(
        "; checkpointing keeps only each checkpointed layer's input, e·b·s·h, and recomputes \
         the layer in backward (Chen et al. 2016 §4.3)",
    );
    vec![(
        format!(
            "{kept} × {} × checkpointed layer input",
            fmt_sig(st.in_flight)
        ),
        Bytes(input * kept * st.in_flight),
    )]
}

/// What Megatron-Core keeps beside a stage outside autograd: its persistent gather buffer and the
/// MoE dispatcher's attributes (`memory::frameworks::megatron`).
fn megatron_terms(
    c: &Ctx,
    m: &ResolvedModel,
    z: &act::Sizes,
    st: &Stage,
    phase: Option<Phase>,
    terms: &mut Vec<(String, Bytes)>,
) {
    use crate::estimator::memory::frameworks::megatron;
    let buffer = megatron::gather_buffer(c, m, z, st.layers, st.last);
    if buffer > 0.0 {
        terms.push((
            "Megatron's global gather buffer (the largest of the MoE dispatcher's gathered tokens, \
             a sequence-parallel linear's gathered input, Megatron attention's score input)"
                .to_owned(),
            Bytes(buffer),
        ));
    }
    // Past the backward: the optimizer step (at the end of backward too, when that moment is the
    // backward's peak; it then falls in the rest).
    let after = if phase == Some(Phase::OptimizerStep) {
        megatron::dispatcher_kept(c, m, z, st.layers)
    } else {
        0.0
    };
    let held = megatron::dispatcher_held(c, m, z, st.layers) + after;
    if held > 0.0 {
        terms.push((
            "MoE dispatcher's attributes (the routing maps, with all-to-all the router's weights; \
             the indices, with all-gather the weights, once a layer's backward is done, or always \
             under whole-layer recomputation)"
                .to_owned(),
            Bytes(held),
        ));
    }
}

/// Short-lived buffers of the peak phase.
pub(super) fn transient(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    st: &Stage,
    phase: Option<Phase>,
) -> Parts {
    let mut terms = Vec::new();
    let training = c.mode == Mode::Training && m.family == ModelFamily::Transformer;
    if training {
        let z = act::sizes(c, m, c.b, c.s);
        // `Ctx::input_bytes`: the input pipeline's bytes per sample (tokens: 16 B each for ids,
        // labels and mask by default) × b, for every batch prefetched to the GPU as well.
        terms.push((
            "input batches on the GPU (ids, labels, mask; prefetched ones too)".to_owned(),
            Bytes(c.input_bytes),
        ));
        let rope = crate::estimator::memory::frameworks::buffers(c, m, st.first);
        if rope > 0.0 {
            terms.push((
                "RoPE caches, FP32 max_positions × d_head (torchtune's builders)".to_owned(),
                Bytes(rope),
            ));
        }
        megatron_terms(c, m, &z, st, phase, &mut terms);
        let loss = match phase {
            Some(Phase::Forward) if st.last => act::loss_forward_transient(c, m, &z),
            Some(Phase::LossBackward) if st.last => act::loss_backward_transient(c, m, &z),
            _ => 0.0,
        };
        terms.push(("logits and loss buffers".to_owned(), Bytes(loss)));
        if phase == Some(Phase::Forward) && c.cp > 1.0 {
            // The forward holds the larger of the loss buffers and CP's exchange buffers
            // (`memory::context_parallel`).
            let (cp_fwd, _) =
                crate::estimator::memory::context_parallel::attention_transients(c, &z);
            terms.push((
                "context-parallel exchange beyond the loss buffers (ring: cp K/V chunks and partial outputs; all-to-all: two copies of q)".to_owned(),
                Bytes((cp_fwd - loss).max(0.0)),
            ));
        }
        let ds = crate::estimator::memory::frameworks::deepspeed::applies(c);
        if phase != Some(Phase::OptimizerStep) {
            terms.push(gathered_term(c, m, st, phase, ds));
        }
        let inv = inventory(c, x, m, st);
        let grads = states::model_states(c, m, &inv, x.optimizer).grads;
        if ds {
            let (partition, _) = crate::estimator::memory::frameworks::deepspeed::buffers(c, grads);
            terms.push((
                "DeepSpeed stage 3's reduce bucket and reduced-gradient partition".to_owned(),
                Bytes(partition),
            ));
        }
        if phase == Some(Phase::OptimizerStep) {
            let mut temp = states::optimizer_temp(c, m, &inv, x.optimizer);
            if ds {
                temp = crate::estimator::memory::frameworks::deepspeed::step_temporaries(
                    c, m, temp, grads,
                );
            }
            // torchtune's optimizer in backward steps one parameter at a time, as the memory does.
            if torchtune::steps_in_backward(c) {
                let one = torchtune::gradient_in_backward(c, m, grads);
                let share = if grads > 0.0 { one / grads } else { 0.0 };
                temp = torchtune::step_temp_in_backward(c, temp, share);
            }
            terms.push(("optimizer step temporaries".to_owned(), Bytes(temp)));
        }
    }
    Parts {
        formula: "input batches + logits/loss buffers + optimizer temporaries + autocast weight \
                  copies + gathered ZeRO-3 layers + recomputation + framework buffers (whichever \
                  the peak phase holds)"
            .to_owned(),
        lead: format!("b = {}, s = {}, e_c = {} B", c.b, c.s, c.ec),
        terms,
        source: "Measured PyTorch phases (docs/model.md §3, §5 optimizer temporaries, §7 inference)",
        assumption: "Only the buffers of the peak phase are live at once; each phase is modelled separately.",
        rest: "autocast copies, gathered layers, recomputation, layer gradients, logits",
    }
}

/// KV cache: 2 · L · k/t · d · e_kv per token × tokens held at the peak phase.
pub(super) fn kv_cache(c: &Ctx, m: &ResolvedModel, st: &Stage, phase: Option<Phase>) -> Parts {
    let kv = (f64::from(m.kv_heads) / c.tp).ceil();
    let (prefill, decode) = inference::cached_tokens(c, m);
    let tokens = if phase == Some(Phase::Prefill) {
        prefill
    } else {
        decode
    };
    let per_token = inference::kv_bytes_per_token(st.layers, kv, f64::from(m.head_dim), c.e_kv);
    // The closed form holds for plain K and V of every layer; latent, windowed, chunked or
    // recurrent caches, and caches in another type, are explained kind by kind.
    let seqs = inference::cache_sequences(c);
    let exact = m.cache_bytes(&inference::cache_shape(c, st.layers), seqs, tokens / seqs)
        + crate::estimator::memory::blocks::cache_extra(c, m, st.layers, seqs, tokens / seqs);
    let closed = per_token * tokens;
    if (exact - closed).abs() > 1e-9 * exact.abs().max(closed.abs()).max(1.0) {
        return kv_cache_by_kind(c, m, st, tokens);
    }
    Parts {
        formula: "2 · L_stage · ⌈k/t⌉ · d_head · e_kv per token × tokens held".to_owned(),
        lead: format!(
            "2 · {} · {} · {} · {} B = {} B per token × {} tokens",
            st.layers,
            kv,
            m.head_dim,
            c.e_kv,
            fmt_sig(per_token),
            fmt_sig(tokens)
        ),
        terms: vec![(
            "K and V of every token held".to_owned(),
            Bytes(per_token * tokens),
        )],
        source: "kipply 2022 (inference arithmetic); GQA Ainslie et al. 2023; vLLM Kwon et al. 2023 §4; docs/model.md §7",
        assumption: "Static batches pad to prompt + generated; paged KV rounds each request up to a block.",
        rest: "HF DynamicCache torch.cat copy of one layer's V",
    }
}

/// KV cache and recurrent state of a model whose layers differ: one term per layer kind.
fn kv_cache_by_kind(c: &Ctx, m: &ResolvedModel, st: &Stage, tokens: f64) -> Parts {
    let seqs = inference::cache_sequences(c);
    let len = tokens / seqs;
    let shape = inference::cache_shape(c, st.layers);
    let l = f64::from(m.layers.max(1));
    let terms = m
        .blocks
        .kinds()
        .iter()
        .map(|k| {
            let mut one = *m;
            one.blocks = crate::estimator::model::blocks::Blocks::default();
            one.blocks.add(*k, k.count);
            let layers = st.layers * f64::from(k.count) / l;
            let bytes = one.cache_bytes(
                &crate::estimator::model::CacheShape { layers, ..shape },
                seqs,
                len,
            );
            (
                format!(
                    "{} layers of {}: {} tokens cached each{}",
                    fmt_sig(layers),
                    k.mixer_label(),
                    fmt_sig(k.cached_tokens(len)),
                    if k.state_per_sequence() > 0.0 {
                        format!(
                            " (fixed state {} elements per sequence)",
                            fmt_sig(k.state_per_sequence_rank(c.tp))
                        )
                    } else {
                        String::new()
                    }
                ),
                Bytes(bytes),
            )
        })
        .collect::<Vec<_>>();
    let mut terms = terms;
    let wider = crate::estimator::memory::blocks::cache_extra(c, m, st.layers, seqs, len);
    if wider > 0.0 {
        terms.push((
            "FP32 elements autocast caches beyond e_kv (RoPE's key, MLA's latent and roped key)"
                .to_owned(),
            Bytes(wider),
        ));
    }
    Parts {
        formula: "Σ over layer kinds: L_kind · (KV per token · min(tokens, window or chunk) + recurrent state) per sequence"
            .to_owned(),
        lead: format!(
            "{} sequences of {} tokens, e_kv = {} B, state in {} B",
            fmt_sig(seqs),
            fmt_sig(len),
            c.e_kv,
            c.ec
        ),
        terms,
        source: "GQA Ainslie et al. 2023; MLA DeepSeek-V2 §2.1 (latent d_c + d_h^R per token); Mistral 7B §2 (rolling window cache); Llama 4 chunked attention (transformers modeling_llama4.py: a chunk's cache); Mamba Gu & Dao 2023, Mamba-2 Dao & Gu 2024 (fixed state); docs/design-blocks.md",
        assumption: "Each pipeline stage holds the kinds in proportion to the whole model; recurrent state in the compute type.",
        rest: "",
    }
}

/// FSDP2 under a pipeline: the stage's unsharded gradients, accumulated over its micro-batches
/// until the reduce-scatters after the last (`memory::frameworks::fsdp::pipeline_gradients`). The
/// optimizer step's shards are the ZeRO terms; the remainder then is "not live".
pub(super) fn pipeline_gradients(c: &Ctx, m: &ResolvedModel, st: &Stage) -> Option<Parts> {
    use crate::estimator::memory::frameworks::fsdp;
    let stage = *st;
    let bytes = fsdp::pipeline_gradients(c, m, stage)?;
    let elems = fsdp::stage_gradient_elements(c, m, stage);
    let (formula, what) = if c.framework.lora {
        (
            "layers × the LoRA adapters a rank holds per layer × e_acc, no DP divisor: FSDP2 \
             under a pipeline reduce-scatters only after the last micro-batch, and only the \
             parameters with a gradient (the frozen base has none)",
            "adapter parameters",
        )
    } else {
        (
            "(layers × Ψ_layer,rank + (embedding or head on the end stages) ÷ TP) × e_acc, no DP \
             divisor: FSDP2 under a pipeline reduce-scatters only after the last micro-batch \
             (Ψ_layer,rank: the layer's split parameters ÷ TP, its norms and other replicated \
             ones whole)",
            "parameters",
        )
    };
    Some(Parts {
        formula: formula.to_owned(),
        lead: format!(
            "Ψ_stage = {elems:.4e} {what} (after TP = {}, {} layers on this stage), unsharded",
            c.tp, st.layers
        ),
        terms: vec![(
            format!(
                "unsharded gradients accumulated over the micro-batches: {elems:.4e} × {} B",
                fmt_sig(fsdp::e_accumulated(c))
            ),
            Bytes(bytes),
        )],
        source: "torch/distributed/pipelining/stage.py backward_maybe_with_nosync; \
                 _fsdp_param_group.py _set_unsharded_grad_dtypes; docs/frameworks/fsdp.md",
        assumption: "accumulated in the reduce-scatter's type, at least the parameters' (torch \
                     2.15: reduce_dtype, else the sharded parameters' type)",
        rest: "not attributed to a tensor group",
    })
}

/// Gradients under torchtune's optimizer in backward, or `None` elsewhere: each parameter is
/// stepped and its gradient freed in its post-accumulate-grad hook, so one gradient is alive at a
/// time (`memory::frameworks::torchtune::optimizer_in_backward`); at a moment between two hooks
/// (`value` 0: in forward, at the loss) none.
pub(super) fn gradients_stepped_in_backward(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    st: &Stage,
    value: Bytes,
) -> Option<Parts> {
    use crate::estimator::memory::frameworks::torchtune;
    // Only a transformer's step runs the framework rules (`memory::training`).
    if m.family != ModelFamily::Transformer || c.mode != Mode::Training {
        return None;
    }
    if !torchtune::steps_in_backward(c) {
        return None;
    }
    let total = states::model_states(c, m, &inventory(c, x, m, st), x.optimizer).grads;
    let one = torchtune::gradient_in_backward(c, m, total);
    let term = if one < total {
        format!(
            "the largest parameter's gradient: {:.4e} ÷ TP {} × {} B",
            m.largest_tensor,
            c.tp,
            fmt_sig(c.e_grads)
        )
    } else {
        "all of this GPU's gradients (less than the largest parameter's)".to_owned()
    };
    Some(Parts {
        formula: "one parameter's gradient at a time: torchtune steps each parameter in its \
                  post-accumulate-grad hook and frees its gradient (optimizer_in_bwd)"
            .to_owned(),
        lead: format!(
            "Ψ_largest = {:.4e}, e_g = {} B",
            m.largest_tensor, c.e_grads
        ),
        terms: if value.get() > 0.0 {
            vec![(term, Bytes(one))]
        } else {
            Vec::new()
        },
        source: "torchtune/training/memory.py register_optim_in_bwd_hooks; \
                 docs/frameworks/torchtune.md",
        assumption: "the largest parameter's gradient stands for the one alive at each moment",
        rest: "not attributed",
    })
}

/// The stage's gradient bytes as backward leaves them (before any framework's step copies).
pub(super) fn stage_gradients(c: &Ctx, x: &peft::Ext, m: &ResolvedModel, st: &Stage) -> f64 {
    states::model_states(c, m, &inventory(c, x, m, st), x.optimizer).grads
}

/// Gradients under DeepSpeed's ZeRO, or `None` elsewhere. At the optimizer step the copies made
/// for it (`frameworks::deepspeed::step_gradients`): stage 3's one sub-group flattened and cast
/// to the master's type; stages 1–2's reduced gradient partition with the stepped group's
/// flattened copy and cast. In stage 3's other phases the reduced gradients are in the partition
/// buffer (a transient-buffer term), and only the unreduced one in flight (`value`, the head's)
/// is a gradient of its own; stages 1–2's other phases are the model-state rule's.
pub(super) fn deepspeed_gradients(
    c: &Ctx,
    x: &peft::Ext,
    m: &ResolvedModel,
    st: &Stage,
    phase: Option<Phase>,
    value: Bytes,
) -> Option<Parts> {
    use crate::estimator::memory::frameworks::deepspeed;
    // Only a transformer's step runs the framework rules (`memory::training`).
    if m.family != ModelFamily::Transformer {
        return None;
    }
    let grads = stage_gradients(c, x, m, st);
    let (flat, cast) = deepspeed::step_gradient_copies(c, m, grads)?;
    if !deepspeed::grads_in_partition_buffer(c) {
        return (phase == Some(Phase::OptimizerStep))
            .then(|| stage12_step_gradients(c, grads, flat, cast));
    }
    let source = "deepspeed/runtime/zero/stage3.py 0.18.4 _prepare_fp32_grad_for_sub_group, \
                  _release_sub_group, grad_partitions_flat_buffer; docs/frameworks/deepspeed.md";
    if phase != Some(Phase::OptimizerStep) {
        return Some(Parts {
            formula: "the gradient in flight before its reduction into the bucket; the reduced \
                      gradients are in the partition buffer (transient buffers)"
                .to_owned(),
            lead: "DeepSpeed stage 3".to_owned(),
            terms: vec![("the unreduced gradient in flight".to_owned(), value)],
            source,
            assumption: "the head's gradient, sharded, as the largest in flight",
            rest: "not attributed",
        });
    }
    let sub = c.framework.deepspeed.sub_group_size;
    Some(Parts {
        formula: "sub-group × (e_g + e_master if they differ): DeepSpeed steps its partition one \
                  sub-group at a time (up to sub_group_size plus one parameter's partition)"
            .to_owned(),
        lead: format!("sub_group_size = {}, e_g = {} B", fmt_sig(sub), c.e_grads),
        terms: vec![
            (
                "one sub-group's gradients flattened (a copy in the gradients' type)".to_owned(),
                Bytes(flat),
            ),
            (
                "their cast to the master's type (the master's .grad for its step)".to_owned(),
                Bytes(cast),
            ),
        ],
        source,
        assumption: "the reduced gradients stay in the partition buffer counted with the transient \
                     buffers",
        rest: "not attributed",
    })
}

/// Stage 1–2's optimizer-step gradients: the reduced partition `averaged_gradients` still holds,
/// and the stepped group's flattened copy and its cast (`frameworks::deepspeed::step_gradients`).
fn stage12_step_gradients(c: &Ctx, grads: f64, flat: f64, cast: f64) -> Parts {
    use crate::estimator::memory::frameworks::deepspeed;
    Parts {
        formula: "partition × e_g + group × (e_g + e_master if they differ): the optimizer's \
                  param group flattened from the reduced partition and cast to the master's type \
                  (one group, the whole partition)"
            .to_owned(),
        lead: format!("DeepSpeed stage {}, e_g = {} B", rank(c.zero), c.e_grads),
        terms: vec![
            (
                "the reduced gradient partition (grads_in_partition, viewed by \
                 averaged_gradients until the group's step)"
                    .to_owned(),
                Bytes(deepspeed::step_held(c, grads)),
            ),
            (
                "the group's gradients flattened (a copy in the gradients' type)".to_owned(),
                Bytes(flat),
            ),
            (
                "their cast to the master's type (the master's .grad for its step)".to_owned(),
                Bytes(cast),
            ),
        ],
        source: "deepspeed/runtime/zero/stage_1_and_2.py (edaa722, version.txt 0.19.6) step lines \
                 2350-2382, copy_grads_in_partition, independent_gradient_partition_epilogue; \
                 docs/frameworks/deepspeed.md",
        assumption: "one optimizer param group; the flattened copy is freed before the optimizer \
                     runs, and with one group the held partition too",
        rest: "not attributed",
    }
}
