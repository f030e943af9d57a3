//! Workload (mode, batch, sequence, accumulation), precision and optimizer controls.

use egui::Ui;

use crate::scenario::{Dtype, Mode, PrecisionMode, Scenario};
use crate::ui::widgets::{self, Choice, choice, int_slider, opt, percent_slider, toggle};

const MODES: [Choice<Mode>; 2] = [
    opt(
        Mode::Training,
        "Training",
        "Forward, backward and optimizer step: weights, gradients, optimizer states and saved activations.",
    ),
    opt(
        Mode::Inference,
        "Inference",
        "Prefill of the prompt, then decode token by token with a KV cache.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    choice(
        ui,
        &mut s.mode,
        &MODES,
        "Mode",
        "Training step or inference.",
    );
    let family = crate::ui::family::view(s.model.family);
    let w = &mut s.workload;
    int_slider(
        ui,
        &mut w.micro_batch,
        widgets::documented("workload.micro_batch", 1..=4096),
        true,
        "Micro-batch",
        family.items_short,
        family.batch_hover,
    );
    match s.mode {
        Mode::Training => training_ui(ui, s),
        Mode::Inference => inference_ui(ui, s),
    }
}

fn training_ui(ui: &mut Ui, s: &mut Scenario) {
    let sequences = crate::ui::family::view(s.model.family).sequences;
    let w = &mut s.workload;
    if sequences {
        int_slider(
            ui,
            &mut w.seq_len,
            16..=1_048_576,
            true,
            "Sequence length",
            "tokens",
            "Tokens per sequence. Activations grow linearly (quadratically for materialised attention).",
        );
    }
    int_slider(
        ui,
        &mut w.grad_accum_steps,
        widgets::documented("workload.grad_accum_steps", 1..=1024),
        true,
        "Accumulation",
        "steps",
        "Micro-batches accumulated per optimizer step: a larger global batch at no extra memory, more time per step.",
    );
    toggle(
        ui,
        &mut w.dropout,
        "Dropout",
        "Dropout layers active: each saves a mask for backward (costs 1 byte per element).",
    );
}

fn inference_ui(ui: &mut Ui, s: &mut Scenario) {
    // Prompt, generation, KV cache and request batching are a sequence model's.
    if !crate::ui::family::view(s.model.family).sequences {
        return;
    }
    let inf = &mut s.inference;
    int_slider(
        ui,
        &mut inf.prompt_tokens,
        1..=1_048_576,
        true,
        "Prompt",
        "tokens",
        "Prompt length processed at prefill; the KV cache holds prompt + generated tokens.",
    );
    int_slider(
        ui,
        &mut inf.generated_tokens,
        1..=131_072,
        true,
        "Generated",
        "tokens",
        "Tokens decoded one at a time after the prompt.",
    );
    toggle(
        ui,
        &mut inf.dynamic_batching,
        "Dynamic batching",
        "Continuous batching: serve many requests at once with a paged KV cache. Costs scheduling overhead; saves padding.",
    );
    if inf.dynamic_batching {
        int_slider(
            ui,
            &mut inf.concurrent_requests,
            widgets::documented("inference.concurrent_requests", 1..=4096),
            true,
            "Concurrent requests",
            "requests",
            "Requests in flight at once; each holds its KV cache.",
        );
        int_slider(
            ui,
            &mut inf.kv_block_tokens,
            0..=256,
            false,
            "KV block",
            "tokens",
            "Paged KV block size (vLLM: 16); 0 = contiguous per request at the maximum length.",
        );
    }
    percent_slider(
        ui,
        &mut inf.mean_length_fraction,
        0.01..=1.0,
        "Mean length",
        "Mean request length as a share of the maximum: sets the KV cache in use and the padding a static batch wastes.",
    );
    toggle(
        ui,
        &mut inf.all_logits,
        "Logits for every position",
        "A plain forward returns logits for every prompt token (vocab × prompt floats); generation needs only the last.",
    );
}

const PRECISIONS: [Choice<PrecisionMode>; 4] = [
    opt(
        PrecisionMode::Uniform,
        "Uniform",
        "Everything in the compute type (FP32 training, or pure BF16).",
    ),
    opt(
        PrecisionMode::Amp,
        "Autocast (AMP)",
        "FP32 weights, gradients and states; 16-bit activations and weight copies during forward.",
    ),
    opt(
        PrecisionMode::MasterWeights,
        "16-bit + FP32 master",
        "Megatron/ZeRO mixed precision: 2 + 2 + 12 bytes per parameter with Adam (Megatron under \
         --bf16 with DDP or its distributed optimizer keeps FP32 gradients: 2 + 4 + 12).",
    ),
    opt(
        PrecisionMode::Custom,
        "Custom",
        "Choose every element type separately.",
    ),
];

pub(super) const DTYPES: [Choice<Dtype>; 8] = [
    opt(Dtype::Fp32, "FP32", "4 bytes."),
    opt(
        Dtype::Tf32,
        "TF32",
        "Stored as FP32 (4 bytes); tensor cores compute with a 10-bit mantissa.",
    ),
    opt(
        Dtype::Fp16,
        "FP16",
        "2 bytes; needs loss scaling in training.",
    ),
    opt(Dtype::Bf16, "BF16", "2 bytes; FP32's range."),
    opt(
        Dtype::Fp8E4M3,
        "FP8 E4M3",
        "1 byte; needs per-tensor scales.",
    ),
    opt(
        Dtype::Fp8E5M2,
        "FP8 E5M2",
        "1 byte; wider range, used for gradients.",
    ),
    opt(
        Dtype::Int8,
        "INT8",
        "1 byte; weight-only or W8A8 quantisation.",
    ),
    opt(
        Dtype::Int4,
        "INT4",
        "Half a byte; weight-only quantisation (GPTQ/AWQ).",
    ),
];

pub fn precision_ui(ui: &mut Ui, s: &mut Scenario) {
    let p = &mut s.precision;
    choice(
        ui,
        &mut p.mode,
        &PRECISIONS,
        "Precision",
        "How element types are assigned to a step's tensors.",
    );
    choice(
        ui,
        &mut p.compute,
        &DTYPES,
        "Compute type",
        "The 16-bit (or compute) type of Uniform, AMP and master-weight modes.",
    );
    if p.mode == PrecisionMode::Custom {
        choice(ui, &mut p.weights, &DTYPES, "Weights", "Stored weights.");
        choice(
            ui,
            &mut p.gradients,
            &DTYPES,
            "Gradients",
            "Gradient buffers.",
        );
        choice(
            ui,
            &mut p.optimizer_states,
            &DTYPES,
            "Optimizer states",
            "Adam moments etc.",
        );
        choice(
            ui,
            &mut p.activations,
            &DTYPES,
            "Activations",
            "Activations saved for backward.",
        );
        let mut master = p.master_weights.is_some();
        if toggle(
            ui,
            &mut master,
            "FP32 master weights",
            "Keep an FP32 copy of the weights for the update (4 bytes per parameter).",
        )
        .changed()
        {
            p.master_weights = master.then_some(Dtype::Fp32);
        }
    }
    choice(
        ui,
        &mut p.kv_cache,
        &DTYPES,
        "KV cache type",
        "Element type of the inference KV cache (FP8 halves it).",
    );
    toggle(
        ui,
        &mut p.attention_fp32,
        "Attention in FP32",
        "Keep attention in FP32 while the FFN runs 16-bit: more stable, doubles attention activations.",
    );
}
