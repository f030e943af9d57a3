//! Fine-tuning method (LoRA / QLoRA), quantized weight storage, and mixture-of-experts controls.

use egui::Ui;

use crate::scenario::{ModelFamily, PeftMethod, Scenario, WeightFormat};
use crate::tensor::GgufFileType;
use crate::ui::widgets::{Choice, choice, int_slider, opt, real_slider, toggle};

const METHODS: [Choice<PeftMethod>; 3] = [
    opt(
        PeftMethod::Full,
        "Full",
        "Every parameter is trained: gradients and optimizer states for all of them.",
    ),
    opt(
        PeftMethod::Lora,
        "LoRA",
        "Frozen base plus small trainable B·A adapters (Hu et al. 2021): gradients and optimizer states only for the adapters; activations still flow through the whole model.",
    ),
    opt(
        PeftMethod::Qlora,
        "QLoRA (NF4 base)",
        "LoRA on a 4-bit NF4 base (Dettmers et al. 2023): ~4.1–4.5 bits per base weight; costs de-quantization time per matmul.",
    ),
];

const FORMATS: [Choice<WeightFormat>; 10] = [
    opt(
        WeightFormat::AsPrecision,
        "As the precision",
        "The precision's weight type, no scales.",
    ),
    opt(
        WeightFormat::Int8PerChannel,
        "INT8 per-channel",
        "8 bits + an FP16 scale per output channel (LLM.int8() storage).",
    ),
    opt(
        WeightFormat::Int4Group,
        "INT4 GPTQ/AWQ",
        "4 bits + FP16 scale and 4-bit zero per group: ~4.16 bits at group 128. Small accuracy cost.",
    ),
    opt(
        WeightFormat::GgufQ4K,
        "GGUF Q4_K",
        "llama.cpp super-blocks: 4.5 bits per weight.",
    ),
    opt(
        WeightFormat::GgufQ8_0,
        "GGUF Q8_0",
        "llama.cpp blocks of 32 INT8 + FP16 scale: 8.5 bits per weight.",
    ),
    opt(
        WeightFormat::Fp8,
        "FP8",
        "8 bits with a per-tensor scale; native on Hopper, Ada, Blackwell.",
    ),
    opt(
        WeightFormat::Mxfp4,
        "MXFP4",
        "FP4 in blocks of 32 with an 8-bit scale: 4.25 bits; native on Blackwell.",
    ),
    opt(
        WeightFormat::Nvfp4,
        "NVFP4",
        "FP4 in blocks of 16 with an FP8 scale: 4.5 bits; native on Blackwell.",
    ),
    opt(
        WeightFormat::Nf4,
        "NF4 (bitsandbytes)",
        "4-bit NormalFloat in blocks of 64: 4.5 bits (4.13 with double quantization).",
    ),
    opt(
        WeightFormat::GgufFile(GgufFileType::Q4KM),
        "GGUF file (Q4_K_M, …)",
        "A llama-quantize file type: each tensor in the type its role and layer get; choose the type under Serving engine → llama.cpp.",
    ),
];

pub fn peft_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.peft;
    choice(
        ui,
        &mut p.method,
        &METHODS,
        "Fine-tuning",
        "Which parameters are trained (training only).",
    );
    if p.method == PeftMethod::Full {
        return;
    }
    int_slider(
        ui,
        &mut p.rank,
        1..=1024,
        true,
        "LoRA rank",
        "r",
        "Rank r of each adapter: adapter parameters grow linearly with it.",
    );
    ui.label("Adapted matrices")
        .on_hover_text("Hugging Face PEFT target_modules.");
    ui.horizontal_wrapped(|ui| {
        let t = &mut p.targets;
        let hover = "Adds an adapter to this matrix in every layer.";
        for (value, label) in [
            (&mut t.q, "q"),
            (&mut t.k, "k"),
            (&mut t.v, "v"),
            (&mut t.o, "o"),
            (&mut t.gate, "gate"),
            (&mut t.up, "up"),
            (&mut t.down, "down"),
        ] {
            toggle(ui, value, label, hover);
        }
    });
    if p.method == PeftMethod::Qlora {
        toggle(
            ui,
            &mut p.double_quant,
            "Double quantization",
            "Quantize NF4's FP32 block scales to 8 bits: 0.127 instead of 0.5 bits per parameter.",
        );
    }
    real_slider(
        ui,
        &mut p.lora_dropout,
        0.0..=0.99,
        "Adapter dropout",
        "p",
        "PEFT lora_dropout: each adapter drops its own copy of the input, which it then saves with a mask.",
    );
    toggle(
        ui,
        &mut p.inference_adapters,
        "Serve with adapters",
        "Inference runs the PEFT model as trained: adapters unmerged (FP32) on the base (NF4 under QLoRA).",
    );
    toggle(
        ui,
        &mut p.paged_optimizer,
        "Paged optimizer",
        "bitsandbytes paged AdamW: optimizer states in unified memory, evicted to host RAM under pressure; costs page-in time.",
    );
}

pub fn quantization_ui(ui: &mut Ui, s: &mut Scenario) {
    let q = &mut s.quantization;
    // Every GGUF file type shows as the one "GGUF file" entry; choosing it again keeps the type.
    let file = matches!(q.weights, WeightFormat::GgufFile(_));
    let mut shown = if file {
        WeightFormat::GgufFile(GgufFileType::Q4KM)
    } else {
        q.weights
    };
    choice(
        ui,
        &mut shown,
        &FORMATS,
        "Weight format",
        "Storage of the layers' weight matrices (inference and the frozen LoRA base; full training ignores it).",
    );
    if !(file && matches!(shown, WeightFormat::GgufFile(_))) {
        q.weights = shown;
    }
    if q.weights == WeightFormat::Int4Group {
        int_slider(
            ui,
            &mut q.group_size,
            1..=65536,
            true,
            "Group size",
            "weights",
            "Weights sharing one scale and zero (128 is common): smaller groups cost more bits, lose less accuracy.",
        );
    }
}

pub fn moe_ui(ui: &mut Ui, s: &mut Scenario) {
    if s.model.family != ModelFamily::Transformer {
        ui.label("Mixture of experts applies to transformers.");
        return;
    }
    let m = &mut s.model.moe;
    int_slider(
        ui,
        &mut m.experts,
        0..=256,
        false,
        "Experts",
        "per layer",
        "Routed experts per layer; 0 = dense MLP. Every expert's weights are stored; only top-k compute per token.",
    );
    if !m.is_moe() {
        return;
    }
    let k_max = m.experts.max(m.top_k).max(1);
    int_slider(
        ui,
        &mut m.top_k,
        1..=k_max,
        false,
        "Top-k",
        "experts",
        "Experts each token is routed to.",
    );
    int_slider(
        ui,
        &mut m.shared_experts,
        0..=16,
        false,
        "Shared experts",
        "experts",
        "Experts every token goes through besides the routed ones (DeepSeekMoE).",
    );
    int_slider(
        ui,
        &mut m.expert_ffn,
        0..=131_072,
        true,
        "Expert FFN size",
        "values",
        "Intermediate size of one expert; 0 = the model's FFN size.",
    );
    real_slider(
        ui,
        &mut m.capacity_factor,
        0.0..=4.0,
        "Capacity factor",
        "×",
        "Most tokens an expert takes, relative to an even share; 0 = dropless. Higher costs activation memory.",
    );
    int_slider(
        ui,
        &mut m.ep,
        1..=256,
        true,
        "Expert parallel",
        "GPUs",
        "Split each layer's experts over this many GPUs (carved out of data parallel): divides expert weights; costs all-to-all traffic.",
    );
    // Read in training only: serving engines split every expert over TP.
    if s.mode != crate::scenario::Mode::Training {
        return;
    }
    let m = &mut s.model.moe;
    int_slider(
        ui,
        &mut m.etp,
        0..=64,
        false,
        "Expert TP",
        "GPUs (0 = TP)",
        "Split each expert over this many of the tensor-parallel GPUs instead of all of them \
         (Megatron --expert-tensor-parallel-size; 0 = the TP degree). 1 keeps each expert whole \
         on its GPU, which then sees only its own sequence shard's tokens; must divide TP.",
    );
}
