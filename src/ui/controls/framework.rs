//! The training framework (`implementation.profile`) and the settings of the stack lane's
//! profiles: LitGPT, torchtune, DeepSpeed ZeRO (docs/frameworks/).

use egui::Ui;

use crate::scenario::{Profile, Scenario, Sharding};
use crate::ui::widgets::{Choice, choice, documented, int_slider, opt, toggle};

const PROFILES: [Choice<Profile>; 4] = [
    opt(
        Profile::HuggingFace,
        "Hugging Face Transformers",
        "Eager / SDPA PyTorch: FP32 log-softmax loss, what the measured Hugging Face steps keep.",
    ),
    opt(
        Profile::Megatron,
        "Megatron-Core",
        "Fused kernels (Korthikanti et al. 2022), vocab-parallel cross-entropy in place, a \
         gradient buffer alive for the whole run.",
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

const SHARDING: [Choice<Sharding>; 2] = [
    opt(
        Sharding::Generic,
        "ZeRO paper",
        "States divided by the data-parallel degree, no buffers of an implementation.",
    ),
    opt(
        Sharding::DeepSpeed,
        "DeepSpeed ZeRO",
        "DeepSpeed 0.19.8: FP32 master partition even for FP32 models, reduce buckets \
         (5e8 elements by default), stage 3's persistent bucket and gradient partition.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let i = &mut s.implementation;
    choice(
        ui,
        &mut i.profile,
        &PROFILES,
        "Framework",
        "The training framework you run: what a step keeps alive depends on its code.",
    );
    match i.profile {
        Profile::LitGpt => {
            int_slider(
                ui,
                &mut i.litgpt.lm_head_chunk_tokens,
                documented("implementation.litgpt.lm_head_chunk_tokens", 0..=4096),
                false,
                "LM-head chunk",
                "tokens",
                "lm_head_chunk_size of fit() (128); 0 = one logits tensor.",
            );
        }
        Profile::Torchtune => {
            let t = &mut i.torchtune;
            int_slider(
                ui,
                &mut t.output_chunks,
                documented("implementation.torchtune.output_chunks", 1..=64),
                false,
                "Output chunks",
                "",
                "CEWithChunkedOutputLoss num_output_chunks (8).",
            );
            toggle(
                ui,
                &mut t.activation_offloading,
                "Activation offloading",
                "Saved tensors go to pinned CPU memory; one layer's stay on the GPU (derived).",
            );
            toggle(
                ui,
                &mut t.optimizer_in_backward,
                "Optimizer in backward",
                "Each parameter steps from its gradient hook: one gradient alive at a time \
                 (derived).",
            );
        }
        Profile::HuggingFace | Profile::Megatron => {}
    }
    choice(
        ui,
        &mut i.sharding,
        &SHARDING,
        "ZeRO implementation",
        "Whose code shards the model states when a ZeRO stage is on.",
    );
    if i.sharding == Sharding::DeepSpeed {
        toggle(
            ui,
            &mut i.deepspeed.overlap_comm,
            "overlap_comm",
            "A second reduce bucket in stages 1–2.",
        );
    }
}
