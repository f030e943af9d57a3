//! The tensor inventory: the parameter tensors one pipeline stage holds on one GPU, as groups that
//! each know their element count, how they are stored, whether they train, and how ZeRO shards
//! them. Weights, gradients, master weights and optimizer states are read from it
//! (`states::model_states`); LoRA and quantisation are properties of its groups, not adjustments
//! threaded through the state arithmetic. docs/design-blocks.md describes where this goes next
//! (groups per block kind).

use super::ctx::Ctx;
use super::peft::{Ext, layer_matrix_elems};
use crate::estimator::model::ResolvedModel;
use crate::scenario::{ModelFamily, PruneKind};
use crate::tensor::StorageFormat;

/// What a group of parameter tensors is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Role {
    /// The layers' dense weight matrices (attention projections, dense MLP, router): what weight
    /// quantisation stores in its format and what LoRA targets.
    #[default]
    Matrices,
    /// The routed experts of mixture-of-experts layers stored on this GPU (⌈E/ep⌉ of them).
    Experts,
    /// The layers' norms and biases: kept in the weight type.
    Vectors,
    /// Embedding tables, the LM/MLM head, the final norm and the pooler.
    EmbeddingsAndHead,
    /// LoRA adapters (A and B of every targeted matrix).
    Adapters,
    /// The stacks beside the language model: an encoder-decoder's encoder, a vision tower and its
    /// projector (`model::tower_shape`); on the first pipeline stage, not split by TP (the Hugging
    /// Face towers are single-device modules), dense in the weight type.
    Towers,
    /// A CNN's or recommender's parameters, counted as one group.
    Whole,
}

impl Role {
    pub const fn label(self) -> &'static str {
        match self {
            Role::Matrices => "layer matrices",
            Role::Experts => "routed experts",
            Role::Vectors => "norms and biases",
            Role::EmbeddingsAndHead => "embeddings and head",
            Role::Adapters => "LoRA adapters",
            Role::Towers => "encoder / vision tower",
            Role::Whole => "parameters",
        }
    }
}

/// A group of parameter tensors of one stage on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Group {
    pub role: Role,
    /// Elements on this GPU after TP, the stage's layers, expert parallelism, pruning and weight
    /// sharing; before ZeRO.
    pub elems: f64,
    /// How the weights are stored (`tensor::StorageFormat`: a dense type or a quantised format).
    pub storage: StorageFormat,
    /// Stored bytes per element: the storage format's bits ÷ 8 (scales included), plus unstructured
    /// pruning's mask (training) or sparse index (inference).
    pub weight_bytes: f64,
    /// Receives gradients and optimizer state (false: a frozen LoRA base).
    pub trainable: bool,
    /// Element bytes of the parameter as a dense tensor (its type, before quantised storage).
    pub param_bytes: f64,
    /// Element bytes of the gradients, the master copy (0: none) and the optimizer states.
    pub grad_bytes: f64,
    pub master_bytes: f64,
    pub state_bytes: f64,
    /// The ZeRO degree that shards this group: DP, or DP × TP / ETP / ep for routed experts
    /// (DeepSpeed-MoE, Rajbhandari et al. 2022 §4, and Megatron-Core's `intra_expt_dp_group`:
    /// experts are sharded over the expert-data-parallel group; DP/ep at the default ETP = TP).
    pub zero_dp: f64,
    /// Parameter tensors of the group (Adam's per-tensor step counters).
    pub tensors: f64,
    /// Elements of its largest tensor (a single-tensor optimizer's temporaries).
    pub largest: f64,
    /// Weights stay on the GPU even under parameter offload (LoRA adapters).
    pub pinned: bool,
    /// Optimizer states paged to the host (bitsandbytes paged optimizers).
    pub paged: bool,
}

/// Most groups one stage holds.
pub const MAX_GROUPS: usize = 8;

/// The groups of one stage on one GPU; a fixed array, filled in place (no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Inventory {
    groups: [Group; MAX_GROUPS],
    len: usize,
}

impl Inventory {
    fn push(&mut self, g: Group) {
        if g.elems > 0.0
            && let Some(slot) = self.groups.get_mut(self.len)
        {
            *slot = g;
            self.len += 1;
        }
    }

    /// An inventory of this one's `i`-th group alone (to explain each group's share).
    pub fn only(&self, i: usize) -> Inventory {
        let mut one = Inventory::default();
        if let Some(g) = self.groups().get(i) {
            one.push(*g);
        }
        one
    }

    pub fn groups(&self) -> &[Group] {
        self.groups.get(..self.len).unwrap_or(&[])
    }

    /// Elements of the groups that are not adapters: the stage's share of the model on this GPU.
    pub fn base_elems(&self) -> f64 {
        self.groups()
            .iter()
            .filter(|g| g.role != Role::Adapters)
            .map(|g| g.elems)
            .sum()
    }

    /// The stage holding `layers` layers (`first`/`last`: the embedding and head live there), on one
    /// GPU of the layout `c`, with LoRA and quantisation from `x`.
    pub fn stage(
        c: &Ctx,
        x: &Ext,
        m: &ResolvedModel,
        layers: f64,
        first: bool,
        last: bool,
    ) -> Inventory {
        let mut inv = Inventory::default();
        let base = Group {
            storage: StorageFormat::Dense(c.weights),
            weight_bytes: c.e_weights,
            param_bytes: c.e_weights,
            trainable: !x.lora(),
            grad_bytes: c.e_grads,
            master_bytes: c.e_master,
            state_bytes: c.e_states,
            zero_dp: c.dp,
            ..Group::default()
        };
        if m.family != ModelFamily::Transformer {
            whole_model(&mut inv, c, m, base);
            return inv;
        }
        // Each part per rank (experts split by TP, matrices split but for the replicated ones,
        // vectors the rest), so the replicated parameters stay in their own group.
        // The routed experts as TP would split them (to take them out of the layer's matrices),
        // and as this GPU holds them: split over the expert TP degree instead.
        let expert_at_tp = stage_params_of(c, m, expert_params_stored(m) / c.tp, layers);
        let expert_part = stage_params_of(c, m, expert_params_stored(m) / c.etp, layers);
        let layer_part = stage_params(c, m, layers, false, false) - (expert_part - expert_at_tp);
        let matrices = rank_matrix_elems(c, m, layer_matrix_elems(m).min(layer_params_stored(m)));
        let matrix_part = stage_params_of(c, m, matrices, layers).min(layer_part);
        let quant = x.layer_bits.map_or(c.e_weights, |bits| bits / 8.0);
        let (prune_train, prune_keep) = unstructured(c);
        let layer_bytes = |b: f64| match c.mode {
            crate::scenario::Mode::Training => b + prune_train,
            crate::scenario::Mode::Inference => prune_keep.map_or(b, |k| k * (b + 4.0)),
        };
        // EP ranks come out of the ZeRO group's ranks × TP / ETP (`ctx::expert_ranks`; DP at the
        // default ETP = TP).
        let edp = super::ctx::expert_ranks(c.dp, c.tp, c.etp);
        let ep = f64::from(m.moe.ep.max(1)).min(edp);
        // Everything but the head's tensors lives in the layers (Adam's counters are per tensor).
        let tensors = m.param_tensors;
        let quantised = x.layer_storage.unwrap_or(StorageFormat::Dense(c.weights));
        // `quantization.experts_only` (gpt-oss): attention, routers and dense MLPs stay dense.
        let (dense_storage, dense_bytes) = if x.experts_only {
            (StorageFormat::Dense(c.weights), c.e_weights)
        } else {
            (quantised, quant)
        };
        // An FP8 recipe's weight copies (transposes, block scales) for the GEMMs of the layers.
        let fp8 = super::states::fp8_weight_copy_bytes(c.fp8);
        inv.push(Group {
            role: Role::Matrices,
            storage: dense_storage,
            elems: (matrix_part - expert_at_tp).max(0.0),
            weight_bytes: layer_bytes(dense_bytes) + fp8,
            tensors,
            largest: m.largest_tensor / c.tp,
            ..base
        });
        inv.push(Group {
            role: Role::Experts,
            storage: quantised,
            elems: expert_part,
            weight_bytes: layer_bytes(quant) + fp8,
            zero_dp: edp / ep,
            ..base
        });
        inv.push(Group {
            role: Role::Vectors,
            elems: (layer_part - matrix_part).max(0.0),
            weight_bytes: layer_bytes(c.e_weights),
            ..base
        });
        edges(&mut inv, c, x, m, (first, last), base, (quantised, quant));
        if first {
            towers(&mut inv, c, m, base);
        }
        if x.lora() {
            inv.push(adapters(c, x, m, layers, base));
        }
        inv
    }
}

/// The embedding and head of a stage: dense, but a head LitGPT QLoRA stores in the layers' 4-bit
/// format (`Ext::head_4bit`) as a group of its own.
fn edges(
    inv: &mut Inventory,
    c: &Ctx,
    x: &Ext,
    m: &ResolvedModel,
    (first, last): (bool, bool),
    base: Group,
    (quantised, quant): (StorageFormat, f64),
) {
    let edges = stage_params(c, m, 0.0, first, last);
    let head_4bit = if x.head_4bit && last {
        (m.params.head / c.tp).min(edges)
    } else {
        0.0
    };
    inv.push(Group {
        role: Role::EmbeddingsAndHead,
        elems: edges - head_4bit,
        ..base
    });
    inv.push(Group {
        role: Role::EmbeddingsAndHead,
        storage: quantised,
        elems: head_4bit,
        weight_bytes: quant,
        ..base
    });
}

/// The towers beside the language model (`model::tower_shape`), on the first stage: trainable, and
/// frozen (Whisper's sinusoidal encoder positions).
fn towers(inv: &mut Inventory, c: &Ctx, m: &ResolvedModel, base: Group) {
    // An encoder-decoder's encoder blocks are split over TP like the decoder's (Megatron's T5;
    // DeepSpeed AutoTP slices every block of `encoder.block` as of `decoder.block`). A vision
    // tower stays whole on every GPU (not derived for any engine yet).
    let tp = if m.towers.has_encoder() { c.tp } else { 1.0 };
    let frozen = m.towers.frozen.min(m.towers.params);
    inv.push(Group {
        role: Role::Towers,
        elems: (m.towers.params - frozen) / tp,
        ..base
    });
    inv.push(Group {
        role: Role::Towers,
        elems: frozen / tp,
        trainable: false,
        ..base
    });
}

/// A model that is not a transformer: one group of every parameter, except those with
/// requires_grad=False (DiT's fixed sin-cos `pos_embed`, facebookresearch/DiT models.py
/// `DiT.__init__`): a frozen tensor of their own, with no gradient and no optimizer state.
fn whole_model(inv: &mut Inventory, c: &Ctx, m: &ResolvedModel, base: Group) {
    let frozen = if m.params.trainable > 0.0 {
        (m.params.total - m.params.trainable).clamp(0.0, m.params.total)
    } else {
        0.0
    };
    let frozen_tensors = f64::from(u8::from(frozen > 0.0));
    inv.push(Group {
        role: Role::Whole,
        elems: (m.params.total - frozen) / c.tp,
        tensors: m.param_tensors - frozen_tensors,
        largest: m.largest_tensor / c.tp,
        ..base
    });
    if frozen > 0.0 {
        inv.push(Group {
            role: Role::Whole,
            elems: frozen / c.tp,
            tensors: frozen_tensors,
            largest: frozen / c.tp,
            trainable: false,
            ..base
        });
    }
}

/// The LoRA adapters of a stage's `layers`: trainable, FP32 (LitGPT, torchtune: the model's
/// type, `memory::frameworks::adapter_bytes`), kept on the GPU.
fn adapters(c: &Ctx, x: &Ext, m: &ResolvedModel, layers: f64, base: Group) -> Group {
    if let Some(e) = super::frameworks::adapter_bytes(c) {
        return Group {
            storage: StorageFormat::Dense(c.weights),
            weight_bytes: e,
            param_bytes: e,
            grad_bytes: e,
            state_bytes: e,
            ..adapters_fp32(c, x, m, layers, base)
        };
    }
    adapters_fp32(c, x, m, layers, base)
}

/// The adapters as this GPU holds them (`lora::rank_adapters_per_layer`: its experts' share, split
/// over TP as trained or served adapters are).
fn adapters_fp32(c: &Ctx, x: &Ext, m: &ResolvedModel, layers: f64, base: Group) -> Group {
    let per_layer = if x.adapters_per_layer > 0.0 {
        crate::estimator::model::lora::rank_adapters_per_layer(m, x.rank, x.targets, c.tp, c.mode)
    } else {
        0.0
    };
    Group {
        role: Role::Adapters,
        elems: per_layer * layers,
        // PEFT `autocast_adapter_dtype=True` keeps adapters, their gradients and the
        // optimizer's states in FP32 over a 16-bit base.
        storage: StorageFormat::Dense(crate::tensor::Dtype::Fp32),
        weight_bytes: 4.0,
        param_bytes: 4.0,
        trainable: true,
        grad_bytes: 4.0,
        master_bytes: 0.0,
        state_bytes: 4.0,
        tensors: x.adapter_tensors_per_layer * layers,
        largest: x.adapter_largest,
        pinned: true,
        paged: x.paged,
        ..base
    }
}

/// Unstructured pruning: (extra bytes per weight in training — a 1-byte mask over dense weights —,
/// kept fraction in inference, which stores the kept values sparse with a 4-byte column index, CSR).
fn unstructured(c: &Ctx) -> (f64, Option<f64>) {
    if c.prune_kind != PruneKind::Unstructured || c.prune_fraction <= 0.0 {
        return (0.0, None);
    }
    (1.0, Some(1.0 - c.prune_fraction))
}

/// Parameters stored on this GPU's stage after TP, structured pruning and weight sharing.
pub fn stage_params(
    c: &Ctx,
    m: &ResolvedModel,
    layers_on_stage: f64,
    first: bool,
    last: bool,
) -> f64 {
    stage_block_params(c, m, layers_on_stage) + rank_edge_params(c, m, first, last)
}

/// [`edge_params`] on a tensor-parallel rank: the word embeddings and the head split over the
/// vocabulary, the position and token-type tables whole on every rank (Megatron-Core's
/// `LanguageModelEmbedding` builds them as plain `torch.nn.Embedding`,
/// `megatron/core/models/common/embeddings/language_model_embedding.py` at d98e8a6; vLLM's and
/// Transformers' GPT-2 `wpe` likewise).
pub(crate) fn rank_edge_params(c: &Ctx, m: &ResolvedModel, first: bool, last: bool) -> f64 {
    let all = edge_params(m, [first, last], c.pp);
    let whole = if first {
        (m.params.embeddings - word_embeddings(m)).max(0.0)
    } else {
        0.0
    };
    (all - whole) / super::frameworks::deepspeed::vocab_tp(c) + whole
}

/// The whole model's parameters after structured pruning and weight sharing, every routed expert
/// counted and nothing split by tensor parallelism (what is trained, wherever it lives).
pub fn model_params_all_experts(c: &Ctx, m: &ResolvedModel) -> f64 {
    stage_params_of(c, m, m.params.per_layer, f64::from(m.layers))
        + edge_params(m, [true, true], c.pp)
}

/// One layer's parameters on a tensor-parallel rank, of `per_layer` stored before TP: the split
/// part ÷ TP, the replicated part whole (the norms, a latent attention's down projections, a
/// router: `LayerKind::replicated`), and the K/V heads a rank holds beyond kv / TP when TP
/// exceeds them (vLLM's `QKVParallelLinear` replicates them; `tp_does_not_divide_kv_heads`).
pub fn rank_layer_params(c: &Ctx, m: &ResolvedModel, per_layer: f64) -> f64 {
    rank_share(c, m, per_layer, m.replicated_per_layer())
}

/// `per_layer` on a tensor-parallel rank: `replicated` of it whole, the rest ÷ TP, and the K/V
/// heads a rank holds beyond kv / TP.
fn rank_share(c: &Ctx, m: &ResolvedModel, per_layer: f64, replicated: f64) -> f64 {
    if c.tp <= 1.0 {
        return per_layer;
    }
    let replicated = replicated.min(per_layer);
    (per_layer - replicated) / c.tp
        + replicated
        + 2.0 * f64::from(m.hidden) * m.kv_replicated_width(c.tp)
}

/// One layer's matrix elements on a tensor-parallel rank, of `per_layer` stored before TP: split
/// but for the replicated matrices (`ResolvedModel::replicated_matmul_per_layer`) and the K/V heads
/// beyond kv / TP, as [`rank_layer_params`].
fn rank_matrix_elems(c: &Ctx, m: &ResolvedModel, per_layer: f64) -> f64 {
    rank_share(c, m, per_layer, m.replicated_matmul_per_layer())
}

/// `layers_on_stage` layers of `per_layer` parameters each, after structured pruning and weight
/// sharing.
fn stage_params_of(c: &Ctx, m: &ResolvedModel, per_layer: f64, layers_on_stage: f64) -> f64 {
    let l = f64::from(m.layers.max(1));
    let unique_layers = (l * (1.0 - c.sharing_fraction)).max(1.0) / l;
    layers_on_stage * per_layer * unique_layers * structured_keep(c)
}

/// The fraction of every matrix structured pruning keeps (1 without it).
fn structured_keep(c: &Ctx) -> f64 {
    match c.prune_kind {
        PruneKind::Structured => 1.0 - c.prune_fraction,
        PruneKind::Unstructured => 1.0,
    }
}

/// One block's parameters as this GPU holds them: ⌈E/ep⌉ of its routed experts
/// ([`layer_params_stored`]), split as a tensor-parallel rank holds it ([`rank_layer_params`]),
/// after structured pruning. What ZeRO-3 or an FSDP unit all-gathers for one block: the experts
/// are sharded over the expert-data-parallel group only (DeepSpeed-MoE, Rajbhandari et al. 2022
/// §4; torchtitan's `parallelize_llama` shards a MoE layer's experts over `dp_shard_mod_ep`), so a
/// gather never brings in another expert-parallel rank's experts.
pub fn rank_block_params(c: &Ctx, m: &ResolvedModel) -> f64 {
    (rank_layer_params(c, m, layer_params_stored(m)) + expert_tp_excess(c, m)) * structured_keep(c)
}

/// The routed experts' parameters a tensor-parallel rank holds per layer beyond TP's split of them:
/// they are split over the expert TP degree instead (`Ctx::etp`, Megatron-Core
/// `expert_tensor_parallel_size`); 0 at the default ETP = TP.
pub fn expert_tp_excess(c: &Ctx, m: &ResolvedModel) -> f64 {
    super::ctx::expert_tp_excess(expert_params_stored(m) / c.tp, c.tp, c.etp)
}

/// The blocks of a stage as this GPU holds them, before any ZeRO/FSDP sharding: `layers_on_stage`
/// of [`rank_block_params`], weight sharing counted once.
pub fn stage_block_params(c: &Ctx, m: &ResolvedModel, layers_on_stage: f64) -> f64 {
    stage_params_of(
        c,
        m,
        rank_layer_params(c, m, layer_params_stored(m)) + expert_tp_excess(c, m),
        layers_on_stage,
    )
}

/// The embedding (on the first stage) and head (last stage) parameters, before any split. A tied
/// head under a pipeline keeps a copy of the word embeddings on the last stage, not of the
/// position or token-type tables (Megatron-Core `LanguageModule.setup_embeddings_and_output_layer`:
/// the output layer's weight is the copy; the position embedding lives in the first stage's
/// `LanguageModelEmbedding` alone).
fn edge_params(m: &ResolvedModel, [first, last]: [bool; 2], pp: f64) -> f64 {
    let emb = if first {
        m.params.embeddings
    } else if last && m.tied_embeddings && pp > 1.0 {
        word_embeddings(m)
    } else {
        0.0
    };
    let head = if last { m.params.head } else { 0.0 };
    emb + head
}

/// The word-embedding table's parameters (V × h, no more than the embeddings hold): what a tied
/// head copies and what tensor parallelism splits over the vocabulary.
pub(crate) fn word_embeddings(m: &ResolvedModel) -> f64 {
    (f64::from(m.vocab) * f64::from(m.hidden)).min(m.params.embeddings)
}

/// Parameters of one layer stored on a GPU before TP: with expert parallelism only ⌈E/ep⌉ of the
/// routed experts (DeepSpeed-MoE, Rajbhandari et al. 2022 §4: experts partitioned over EP ranks,
/// everything else replicated).
pub fn layer_params_stored(m: &ResolvedModel) -> f64 {
    m.params.per_layer - m.moe.routed_params_per_layer + expert_params_stored(m)
}

/// Routed-expert parameters of one layer stored on a GPU (before TP).
fn expert_params_stored(m: &ResolvedModel) -> f64 {
    m.moe.routed_params_per_layer * m.moe.stored_expert_fraction()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under tensor parallelism each group is counted per rank: DeepSeek-V3's routed experts split
    /// 8 ways, its replicated down projections, routers and norms whole in the matrix and vector
    /// groups (splitting the rank's total by the model's ratios moved 0.88 B replicated elements
    /// into the experts' group, which ZeRO shards over DP ÷ EP).
    #[test]
    fn each_group_is_counted_per_rank() {
        let mut s = crate::presets::bundled_scenario("deepseek-v3-inference-8xh200-fp8").unwrap();
        s.mode = crate::scenario::Mode::Training;
        let m = crate::estimator::model::resolve(&s.model, &mut Default::default());
        let group = |tp: u32, role: Role| {
            let mut sc = s.clone();
            sc.parallel.tp = tp;
            let c = Ctx::new(&sc, &m, &mut Default::default());
            let x = super::super::peft::Ext::new(&sc, &m);
            let inv = Inventory::stage(&c, &x, &m, 61.0, false, false);
            inv.groups()
                .iter()
                .filter(|g| g.role == role)
                .map(|g| g.elems)
                .sum::<f64>()
        };
        let experts = (group(1, Role::Experts), group(8, Role::Experts));
        assert!(
            (experts.1 * 8.0 / experts.0 - 1.0).abs() < 1e-12,
            "{experts:?}"
        );
        // The matrices gain 7/8 of the down projections and routers over an even split.
        let replicated_w = 61.0 * 7168.0 * (1536.0 + 576.0) + 58.0 * 7168.0 * 256.0;
        let matrices = (group(1, Role::Matrices), group(8, Role::Matrices));
        let expected = matrices.0 / 8.0 + replicated_w * 7.0 / 8.0;
        assert!(
            (matrices.1 / expected - 1.0).abs() < 1e-12,
            "{matrices:?} vs {expected}"
        );
    }

    /// LoRA adapters on a tensor-parallel rank: Llama-2-7B, r = 8 on q and v at TP 4. Trained
    /// (Megatron Bridge) both A and B ÷ 4: 32 · 2 · 8 · 8192 / 4; served (vLLM) A whole and B's
    /// rank columns: 32 · 2 · 8 · (4096 + 1024).
    #[test]
    fn lora_adapters_split_along_their_base_layers() {
        let mut s = crate::scenario::Scenario {
            mode: crate::scenario::Mode::Training,
            ..Default::default()
        };
        let t = &mut s.model.transformer;
        (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (32, 4096, 32, 32, 11008);
        s.peft.method = crate::scenario::PeftMethod::Lora;
        s.peft.rank = 8;
        s.parallel.tp = 4;
        let m = crate::estimator::model::resolve(&s.model, &mut Default::default());
        let adapters = |s: &crate::scenario::Scenario| -> f64 {
            let c = Ctx::new(s, &m, &mut Default::default());
            let x = super::super::peft::Ext::new(s, &m);
            let inv = Inventory::stage(&c, &x, &m, 32.0, true, true);
            inv.groups()
                .iter()
                .filter(|g| g.role == Role::Adapters)
                .map(|g| g.elems)
                .sum()
        };
        assert_eq!(adapters(&s), 32.0 * 2.0 * 8.0 * 8192.0 / 4.0);
        s.mode = crate::scenario::Mode::Inference;
        s.peft.inference_adapters = true;
        assert_eq!(adapters(&s), 32.0 * 2.0 * 8.0 * (4096.0 + 1024.0));
    }

    /// What ZeRO-3 or an FSDP unit gathers for one block holds only its expert-parallel rank's
    /// experts, and structured pruning shrinks it (both gathered every expert, unpruned, before).
    #[test]
    fn a_gathered_block_holds_its_rank_experts() {
        let mut s = crate::presets::bundled_scenario("mixtral-8x7b-inference-2xh100").unwrap();
        s.mode = crate::scenario::Mode::Training;
        s.parallel.tp = 1;
        s.parallel.dp = 8;
        let block = |ep: u32, prune: f64| {
            let mut sc = s.clone();
            sc.model.moe.ep = ep;
            sc.strategies.prune_fraction = prune;
            let m = crate::estimator::model::resolve(&sc.model, &mut Default::default());
            let c = Ctx::new(&sc, &m, &mut Default::default());
            (rank_block_params(&c, &m), m.moe.routed_params_per_layer)
        };
        let ((all, routed), (eighth, _)) = (block(1, 0.0), block(8, 0.0));
        // Mixtral 8x7B: eight experts of 3 · 4096 · 14336 weights each.
        assert_eq!(routed, 8.0 * 3.0 * 4096.0 * 14336.0);
        assert!(((all - eighth) / (routed * 7.0 / 8.0) - 1.0).abs() < 1e-12);
        assert!((block(8, 0.5).0 / eighth - 0.5).abs() < 1e-12);
    }
}
