//! The framework the user runs (issue 12) and the Hugging Face profile's own settings: attention
//! implementation, trainer, fused loss, bitsandbytes. Hover texts say what each keeps alive.

use egui::Ui;

use crate::scenario::{
    Bnb4bitType, BnbVersion, DropoutMask, Dtype, FusedLoss, HfAttention, HfTrainer, PeftMethod,
    Profile, Scenario, WeightFormat,
};
use crate::ui::widgets::{Choice, choice, opt, toggle};

const PROFILES: [Choice<Profile>; 4] = [
    opt(
        Profile::HuggingFace,
        "Hugging Face (Transformers, PEFT, bitsandbytes, TRL)",
        "Transformers' PyTorch modules: FP32 logits and loss, PEFT adapters, bitsandbytes 4-bit layers (docs/frameworks/transformers.md).",
    ),
    opt(
        Profile::Megatron,
        "Megatron-Core",
        "Megatron's fused kernels: 16-bit activations, 1-byte dropout masks, vocab-parallel cross-entropy (docs/frameworks/megatron-core.md).",
    ),
    opt(
        Profile::LitGpt,
        "LitGPT",
        "LitGPT 0.5.13: chunked LM head whose logits stay alive through backward and the \
         optimizer step, K/V repeated before SDPA, FP32 RMSNorm, preallocated KV cache.",
    ),
    opt(
        Profile::Torchtune,
        "torchtune",
        "torchtune 0.6.1: chunked output with an FP32 per-chunk loss, logits freed before \
         backward, torchao NF4 QLoRA.",
    ),
];

const ATTENTION: [Choice<Option<HfAttention>>; 4] = [
    opt(
        None,
        "As the strategy says",
        "Follow Strategies → attention kernel (files made before the framework settings).",
    ),
    opt(
        Some(HfAttention::Eager),
        "eager",
        "attn_implementation=\"eager\": saves the b·a·s² FP32 softmax (and the dropout mask) per layer.",
    ),
    opt(
        Some(HfAttention::Sdpa),
        "SDPA",
        "attn_implementation=\"sdpa\" (Transformers' default): q, k, v, output and log-sum-exp; no s² tensor.",
    ),
    opt(
        Some(HfAttention::FlashAttention2),
        "FlashAttention-2",
        "attn_implementation=\"flash_attention_2\": the same saved set as SDPA; FP16/BF16 only.",
    ),
];

const TRAINERS: [Choice<HfTrainer>; 2] = [
    opt(
        HfTrainer::Transformers,
        "Transformers loop / Trainer",
        "The model's own loss: FP32 b·s·V log-softmax kept for backward.",
    ),
    opt(
        HfTrainer::TrlSft,
        "TRL SFTTrainer",
        "TRL 1.16's fused, chunked LM head (no b·s·V logits); its config turns gradient checkpointing on by default (set it under Strategies).",
    ),
];

const LOSSES: [Choice<FusedLoss>; 3] = [
    opt(FusedLoss::Off, "None", "The trainer's own loss."),
    opt(
        FusedLoss::Liger,
        "Liger fused linear cross-entropy",
        "Liger-Kernel: head and loss in token chunks, no b·s·V logits.",
    ),
    opt(
        FusedLoss::Unsloth,
        "Unsloth (cut cross-entropy)",
        "Unsloth's fused loss: no b·s·V logits. Its other kernels are not modelled.",
    ),
];

const COMPUTE: [Choice<Dtype>; 3] = [
    opt(Dtype::Bf16, "BF16", "bnb_4bit_compute_dtype=bfloat16."),
    opt(Dtype::Fp16, "FP16", "bnb_4bit_compute_dtype=float16."),
    opt(
        Dtype::Fp32,
        "FP32",
        "bnb_4bit_compute_dtype=float32 (the default without a config): each matmul de-quantizes one matrix to FP32.",
    ),
];

const VERSIONS: [Choice<BnbVersion>; 2] = [
    opt(
        BnbVersion::Current,
        "≥ 0.43.2",
        "The 4-bit matmul keeps only the packed weight for backward.",
    ),
    opt(
        BnbVersion::Legacy0_43_1,
        "≤ 0.43.1",
        "The 4-bit matmul kept its input (ctx.tensors = (A, B)) until its backward: one copy per layer linear.",
    ),
];

const QUANT_TYPES: [Choice<Bnb4bitType>; 2] = [
    opt(Bnb4bitType::Nf4, "NF4", "4-bit NormalFloat (QLoRA)."),
    opt(
        Bnb4bitType::Fp4,
        "FP4",
        "bitsandbytes' 4-bit float; the same storage as NF4.",
    ),
];

const MASKS: [Choice<DropoutMask>; 2] = [
    opt(
        DropoutMask::OneByte,
        "1 byte (CUDA fused)",
        "native_dropout saves a bool mask.",
    ),
    opt(
        DropoutMask::Float,
        "Activation type (CPU)",
        "The unfused path saves a mask of the input's own type.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let i = &mut s.implementation;
    choice(
        ui,
        &mut i.profile,
        &PROFILES,
        "Framework",
        "The framework that runs the step: what its kernels keep alive.",
    );
    choice(
        ui,
        &mut i.dropout_mask,
        &MASKS,
        "Dropout mask",
        "What a dropout saves per element for backward.",
    );
    super::framework_stack::ui(ui, s);
    let i = &mut s.implementation;
    if i.profile != Profile::HuggingFace {
        return;
    }
    let hf = &mut i.hf;
    choice(
        ui,
        &mut hf.attention,
        &ATTENTION,
        "Attention implementation",
        "Transformers' attn_implementation.",
    );
    choice(
        ui,
        &mut hf.trainer,
        &TRAINERS,
        "Trainer",
        "The loop that runs the step.",
    );
    choice(
        ui,
        &mut hf.fused_loss,
        &LOSSES,
        "Fused loss",
        "A fused head + cross-entropy kernel patched into the model.",
    );
    let four_bit =
        s.peft.method == PeftMethod::Qlora || s.quantization.weights == WeightFormat::Nf4;
    if four_bit {
        if s.peft.method != PeftMethod::Qlora {
            // Under QLoRA the Fine-tuning group shows it.
            toggle(
                ui,
                &mut s.peft.double_quant,
                "Double quantization",
                "bnb_4bit_use_double_quant: 4.127 instead of 4.5 bits per weight (off unless the loader asks).",
            );
        }
        let b = &mut hf.bitsandbytes;
        choice(
            ui,
            &mut b.quant_type,
            &QUANT_TYPES,
            "4-bit type",
            "bnb_4bit_quant_type.",
        );
        choice(
            ui,
            &mut b.compute_dtype,
            &COMPUTE,
            "4-bit compute type",
            "bnb_4bit_compute_dtype: the type of the de-quantized matrix.",
        );
        choice(
            ui,
            &mut b.version,
            &VERSIONS,
            "bitsandbytes",
            "The release: what its 4-bit matmul keeps for backward changed in 0.43.2.",
        );
    }
}
