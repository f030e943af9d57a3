//! Memory-saving strategies (each hover says what it saves and what it costs) and parallelism.

use egui::Ui;

use crate::scenario::{
    AttentionKernel, Checkpointing, OffloadTarget, PruneKind, Scenario, SecondTier, ZeroStage,
};
use crate::ui::widgets::{
    self, Choice, choice, int_slider, opt, percent_slider, real_slider, toggle,
};

const CHECKPOINTING: [Choice<Checkpointing>; 5] = [
    opt(
        Checkpointing::None,
        "None",
        "Keep every activation for backward. Fastest, most memory.",
    ),
    opt(
        Checkpointing::Selective,
        "Selective",
        "Recompute only the attention core (Korthikanti et al. 2022). Saves the s² terms; costs ~2–3 % more compute.",
    ),
    opt(
        Checkpointing::Full,
        "Full",
        "Keep each layer's input only, recompute the layer in backward. Saves most activations; costs ~33 % more compute.",
    ),
    opt(
        Checkpointing::EveryK,
        "Every k layers",
        "Keep every k-th layer's input (k = √L by default, Chen et al. 2016). Memory ∝ √L; costs one extra forward.",
    ),
    opt(
        Checkpointing::PerOp,
        "Per-op (torchtitan)",
        "torchtitan's selective_ac_option = \"op\": keep each layer's input, every other matmul's output and the fused attention's output; recompute the rest. Costs about a third of the layers' matmuls again.",
    ),
];

const ATTENTION: [Choice<AttentionKernel>; 2] = [
    opt(
        AttentionKernel::Flash,
        "FlashAttention",
        "Never materialises the s × s scores. Saves memory quadratic in sequence length; no extra cost on supported GPUs.",
    ),
    opt(
        AttentionKernel::Materialized,
        "Materialised (eager)",
        "Scores and softmax saved per head: memory grows with s².",
    ),
];

const ZERO: [Choice<ZeroStage>; 4] = [
    opt(
        ZeroStage::None,
        "Off",
        "Each data-parallel rank holds everything (DDP; FSDP NO_SHARD).",
    ),
    opt(
        ZeroStage::Stage1,
        "ZeRO-1",
        "Shard optimizer states over DP ranks. Same communication as plain DP. No FSDP counterpart.",
    ),
    opt(
        ZeroStage::Stage2,
        "ZeRO-2 / SHARD_GRAD_OP",
        "Shard optimizer states and gradients (FSDP SHARD_GRAD_OP). Same communication as plain DP per micro-batch, but the gradients are reduce-scattered after every micro-batch, not once per step.",
    ),
    opt(
        ZeroStage::Stage3,
        "ZeRO-3 / FSDP",
        "Shard parameters too (FSDP FULL_SHARD; HYBRID_SHARD = this within a node: set DP to the GPUs per node). Costs 1.5× the communication of plain DP (gathers in forward and backward), in every micro-batch.",
    ),
];

const OFFLOAD: [Choice<OffloadTarget>; 3] = [
    opt(OffloadTarget::None, "None", "Keep it on the GPU."),
    opt(
        OffloadTarget::Cpu,
        "Host DRAM",
        "Move it to host memory over PCIe. Frees GPU memory; costs PCIe transfers every step.",
    ),
    opt(
        OffloadTarget::Nvme,
        "NVMe",
        "Move it to NVMe through the host (ZeRO-Infinity). Frees the most; the slowest.",
    ),
];

const PRUNE: [Choice<PruneKind>; 2] = [
    opt(
        PruneKind::Structured,
        "Structured",
        "Remove whole blocks: smaller dense matrices, no index overhead.",
    ),
    opt(
        PruneKind::Unstructured,
        "Unstructured",
        "Zero single weights, store them sparse: a 4-byte index per kept value.",
    ),
];

const TIERS: [Choice<SecondTier>; 3] = [
    opt(SecondTier::None, "None", "No second memory tier."),
    opt(
        SecondTier::Host,
        "Host DRAM",
        "Spill what does not fit to host memory over PCIe. Fits more; the spilled part runs at PCIe speed.",
    ),
    opt(
        SecondTier::Cxl,
        "CXL expander",
        "Spill to a CXL Type-3 memory expander. Fits more; slower than HBM, faster than paging to disk.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let family = s.model.family;
    let st = &mut s.strategies;
    choice(
        ui,
        &mut st.checkpointing,
        &CHECKPOINTING,
        "Checkpointing",
        "Activation (gradient) checkpointing: trade recomputation for activation memory.",
    );
    if st.checkpointing == Checkpointing::EveryK {
        int_slider(
            ui,
            &mut st.checkpoint_every,
            0..=64,
            false,
            "Checkpoint every",
            "layers",
            "k: keep every k-th layer's input; 0 = √L rounded up.",
        );
    }
    if crate::ui::family::view(family).attention {
        choice(
            ui,
            &mut st.attention,
            &ATTENTION,
            "Attention kernel",
            "How attention scores are computed and kept.",
        );
    }
    toggle(
        ui,
        &mut st.activation_compression_8bit,
        "8-bit activation compression",
        "Store saved activations in 8 bits with per-group scales (ActNN style). Saves ~half of 16-bit activations; costs quantisation time and some accuracy.",
    );
    sharding_ui(ui, s);
}

fn sharding_ui(ui: &mut Ui, s: &mut Scenario) {
    let st = &mut s.strategies;
    choice(
        ui,
        &mut st.zero,
        &ZERO,
        "ZeRO stage",
        "Shard training state across data-parallel ranks (needs DP > 1).",
    );
    if st.zero != ZeroStage::None {
        toggle(
            ui,
            &mut st.hybrid_shard,
            "Shard within a node only",
            "FSDP HYBRID_SHARD: shard over the data-parallel GPUs of one node, replicate across nodes. Saves inter-node traffic; costs memory (the shard is 1/(GPUs per node) instead of 1/DP).",
        );
    }
    choice(
        ui,
        &mut st.offload_optimizer,
        &OFFLOAD,
        "Offload optimizer",
        "Where optimizer states (and the update) live.",
    );
    choice(
        ui,
        &mut st.offload_params,
        &OFFLOAD,
        "Offload parameters",
        "Where parameters live between uses (ZeRO-3 offload).",
    );
    shrink_ui(ui, s);
}

fn shrink_ui(ui: &mut Ui, s: &mut Scenario) {
    let st = &mut s.strategies;
    percent_slider(
        ui,
        &mut st.prune_fraction,
        0.0..=0.99,
        "Pruned",
        "Share of weights removed. Saves weight memory; costs accuracy (and index overhead if unstructured).",
    );
    if st.prune_fraction > 0.0 {
        choice(
            ui,
            &mut st.prune_kind,
            &PRUNE,
            "Pruning kind",
            "How pruned weights are stored.",
        );
    }
    percent_slider(
        ui,
        &mut st.weight_sharing_fraction,
        0.0..=0.95,
        "Layers sharing weights",
        "Share of layers whose weights are shared with another layer (ALBERT). Saves weights; costs model quality.",
    );
    toggle(
        ui,
        &mut st.one_bit_comm,
        "1-bit communication",
        "1-bit Adam/LAMB: compress gradient all-reduce ~16–32×. Saves bandwidth, not memory; needs an uncompressed warm-up.",
    );
    if st.one_bit_comm {
        percent_slider(
            ui,
            &mut st.one_bit_warmup_fraction,
            0.0..=1.0,
            "Warm-up",
            "Share of steps run uncompressed before compression starts.",
        );
    }
    choice(
        ui,
        &mut st.second_tier,
        &TIERS,
        "Second memory tier",
        "A slower tier the step can spill to when the GPU is full.",
    );
    if st.second_tier != SecondTier::None {
        real_slider(
            ui,
            &mut st.second_tier_gib,
            0.0..=2048.0,
            "Tier capacity",
            "GiB",
            "Capacity of the second tier per GPU, GiB (2^30 B).",
        );
    }
}

pub fn parallel_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.parallel;
    int_slider(
        ui,
        &mut p.dp,
        widgets::documented("parallel.dp", 1..=4096),
        true,
        "Data parallel",
        "GPUs",
        "Replicas that each process part of the batch. With ZeRO they also shard the training state; costs a gradient all-reduce per step.",
    );
    int_slider(
        ui,
        &mut p.tp,
        widgets::documented("parallel.tp", 1..=64),
        true,
        "Tensor parallel",
        "GPUs",
        "Split each layer's matrices over GPUs (Megatron). Divides weights and most activations; costs two all-reduces per layer, best within a node. Should divide the heads.",
    );
    int_slider(
        ui,
        &mut p.pp,
        widgets::documented("parallel.pp", 1..=128),
        true,
        "Pipeline parallel",
        "GPUs",
        "Split the layers into stages. Divides weights; the first stage keeps up to PP micro-batches of activations; costs pipeline bubbles. Should divide the layers.",
    );
    toggle(
        ui,
        &mut p.sequence_parallel,
        "Sequence parallel",
        "Shard the norm and dropout activations along the sequence across TP ranks (Korthikanti et al. 2022). Saves activations; under Megatron the QKV and FC1 inputs are all-gathered again in backward (one all-reduce's bytes per layer more).",
    );
    super::context_parallel::cp_ui(ui, p);
    int_slider(
        ui,
        &mut p.pp_microbatches,
        0..=512,
        false,
        "Pipeline micro-batches",
        "",
        "Micro-batches per pipeline flush (0 = the accumulation steps). More shrink the bubble.",
    );
    int_slider(
        ui,
        &mut p.pp_interleave,
        1..=16,
        false,
        "Interleave",
        "stages/GPU",
        "Virtual pipeline stages per GPU: a smaller bubble, more communication.",
    );
    int_slider(
        ui,
        &mut p.gpus_per_node,
        1..=72,
        false,
        "GPUs per node",
        "GPUs",
        "Collectives inside a node use NVLink/PCIe, across nodes the network.",
    );
    let gpus = p.gpus();
    let total = crate::format::plural(gpus, "GPU", "GPUs");
    ui.label(format!("Total: {total} (DP × TP × PP × CP)"))
        .on_hover_text("GPUs in the layout.");
}
