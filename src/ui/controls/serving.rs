//! Serving features of an inference scenario (issue 15 items 2–3): speculative decoding, prefix
//! caching, chunked prefill, sequences per prompt, KV and weight offload. Edits
//! `inference.features` only; the formulas are the estimator's (`memory/serving.rs`).

use egui::Ui;

use crate::scenario::{Sampling, Scenario, SpeculativeMethod};
use crate::ui::widgets::{Choice, choice, int_slider, opt, percent_slider, real_slider};

const METHODS: [Choice<SpeculativeMethod>; 4] = [
    opt(
        SpeculativeMethod::Off,
        "Off",
        "One token per target forward.",
    ),
    opt(
        SpeculativeMethod::DraftModel,
        "Draft model",
        "A smaller model proposes k tokens; its weights and its own KV cache sit beside the target's (vLLM --speculative-config model).",
    ),
    opt(
        SpeculativeMethod::Mtp,
        "MTP module",
        "DeepSeek-V3 multi-token prediction: one extra target-shaped block and a projection, sharing embedding and head; one layer of KV.",
    ),
    opt(
        SpeculativeMethod::Eagle,
        "EAGLE head",
        "One decoder layer over the target's features, sharing embedding and LM head; one layer of KV.",
    ),
];

const SAMPLING: [Choice<Sampling>; 2] = [
    opt(
        Sampling::Parallel,
        "Parallel samples",
        "n samples of one prompt (vLLM n, HF num_return_sequences).",
    ),
    opt(
        Sampling::Beam,
        "Beam search",
        "n beams (HF num_beams); each beam keeps its own KV.",
    ),
];

pub fn ui(ui: &mut Ui, s: &mut Scenario) {
    let dynamic = s.inference.dynamic_batching;
    let x = &mut s.inference.features;
    speculative_ui(ui, &mut x.speculative);
    if dynamic {
        percent_slider(
            ui,
            &mut x.shared_prefix_fraction,
            0.0..=1.0,
            "Shared prefix",
            "Share of the prompt every request shares (system prompt): its full KV blocks are stored once and not prefilled again (vLLM prefix caching, SGLang RadixAttention).",
        );
    }
    int_slider(
        ui,
        &mut x.prefill_chunk_tokens,
        0..=65_536,
        false,
        "Prefill chunk",
        "tokens",
        "Chunked prefill (vLLM max_num_batched_tokens): one forward holds a chunk's activations; each chunk re-reads the weights. 0 = whole prompt.",
    );
    int_slider(
        ui,
        &mut x.sequences_per_prompt,
        1..=64,
        false,
        "Sequences per prompt",
        "sequences",
        "n samples or beams: HF generate expands the batch × n (KV replicated); paged engines share the prompt's full blocks.",
    );
    if x.sequences_per_prompt > 1 {
        choice(
            ui,
            &mut x.sampling,
            &SAMPLING,
            "Sampling",
            "How the sequences of one prompt are produced.",
        );
    }
    percent_slider(
        ui,
        &mut x.kv_offload_fraction,
        0.0..=1.0,
        "KV offloaded",
        "Share of the KV cache in host memory, read over the host link by every decode step.",
    );
    percent_slider(
        ui,
        &mut x.weights_offload_fraction,
        0.0..=1.0,
        "Weights offloaded",
        "Share of the weights in host memory, streamed over the host link by every forward (vLLM --cpu-offload-gb).",
    );
}

fn speculative_ui(ui: &mut Ui, spec: &mut crate::scenario::Speculative) {
    choice(
        ui,
        &mut spec.method,
        &METHODS,
        "Speculative decoding",
        "Draft k tokens, verify them in one target forward: (1 − α^(k+1))/(1 − α) tokens per verify step (Leviathan et al. 2023).",
    );
    if spec.method != SpeculativeMethod::Off {
        int_slider(
            ui,
            &mut spec.num_speculative_tokens,
            1..=16,
            false,
            "Draft tokens",
            "tokens",
            "num_speculative_tokens k: each sequence reserves k more KV slots; the verify pass scores k + 1 positions.",
        );
        percent_slider(
            ui,
            &mut spec.acceptance_rate,
            0.0..=1.0,
            "Acceptance rate",
            "α: the chance the target accepts a draft token (vLLM reports it as the draft acceptance rate).",
        );
    }
    if spec.method == SpeculativeMethod::DraftModel {
        draft_ui(ui, spec);
    }
}

fn draft_ui(ui: &mut Ui, spec: &mut crate::scenario::Speculative) {
    real_slider(
        ui,
        &mut spec.draft_params_b,
        0.01..=100.0,
        "Draft parameters",
        "B",
        "Draft model size, billions of parameters (Llama-3.2-1B: 1.236).",
    );
    int_slider(
        ui,
        &mut spec.draft_layers,
        1..=128,
        false,
        "Draft layers",
        "layers",
        "The draft's layers (its KV cache per token: 2 × layers × KV heads × head dim × bytes).",
    );
    int_slider(
        ui,
        &mut spec.draft_kv_heads,
        1..=128,
        false,
        "Draft KV heads",
        "heads",
        "The draft's key/value heads.",
    );
    int_slider(
        ui,
        &mut spec.draft_head_dim,
        1..=512,
        false,
        "Draft head dim",
        "",
        "The draft's head dimension.",
    );
}
