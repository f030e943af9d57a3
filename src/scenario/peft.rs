//! Parameter-efficient fine-tuning: LoRA adapters on a frozen base, and QLoRA (the same on a 4-bit
//! NF4 base).

use serde::{Deserialize, Serialize};

/// How the model's weights are trained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PeftMethod {
    /// Every parameter is trained (full fine-tuning or pre-training).
    #[default]
    Full,
    /// LoRA (Hu et al. 2021, arXiv:2106.09685): the base is frozen; each targeted matrix W (d_out × d_in)
    /// gets a trainable B·A with A: r × d_in and B: d_out × r.
    Lora,
    /// QLoRA (Dettmers et al. 2023, arXiv:2305.14314): LoRA on a base whose layer matrices are stored
    /// in 4-bit NormalFloat (NF4) with block-wise scales, de-quantized to the compute type per matmul.
    Qlora,
}

impl PeftMethod {
    pub const ALL: [PeftMethod; 3] = [PeftMethod::Full, PeftMethod::Lora, PeftMethod::Qlora];

    pub const fn label(self) -> &'static str {
        match self {
            PeftMethod::Full => "Full (all parameters)",
            PeftMethod::Lora => "LoRA",
            PeftMethod::Qlora => "QLoRA (NF4 base)",
        }
    }
}

/// Which of a layer's matrices get adapters (Hugging Face PEFT `target_modules`: `q_proj` …).
#[allow(
    clippy::struct_excessive_bools,
    reason = "one switch per targetable matrix, as PEFT names them in target_modules"
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoraTargets {
    pub q: bool,
    pub k: bool,
    pub v: bool,
    pub o: bool,
    /// Gated MLPs only (SwiGLU `gate_proj`).
    pub gate: bool,
    /// `up_proj` (SwiGLU) or the first MLP matrix (GELU `fc1` / `c_fc`).
    pub up: bool,
    /// `down_proj` (SwiGLU) or the second MLP matrix (GELU `fc2` / `c_proj`).
    pub down: bool,
}

impl Default for LoraTargets {
    /// q and v: the original LoRA paper's choice (§7.1) and PEFT's default for LLaMA.
    fn default() -> Self {
        LoraTargets {
            q: true,
            k: false,
            v: true,
            o: false,
            gate: false,
            up: false,
            down: false,
        }
    }
}

impl LoraTargets {
    /// Every linear layer of the blocks (QLoRA §4: "LoRA on all linear transformer block layers").
    pub const ALL_LINEAR: LoraTargets = LoraTargets {
        q: true,
        k: true,
        v: true,
        o: true,
        gate: true,
        up: true,
        down: true,
    };
}

/// Parameter-efficient fine-tuning settings (training only; inference ignores them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Peft {
    pub method: PeftMethod,
    /// LoRA rank r. Memory does not depend on alpha (a scalar). Valid: 1 ..= 65536.
    pub rank: u32,
    pub targets: LoraTargets,
    /// bitsandbytes double quantization (`bnb_4bit_use_double_quant`), for QLoRA and for NF4 / FP4
    /// inference alike: the FP32 block scales are themselves quantized to 8 bits in blocks of 256
    /// (Dettmers et al. 2023 §3): 0.127 instead of 0.5 bits per parameter. bitsandbytes' default
    /// (`load_in_4bit=True` alone) is off.
    pub double_quant: bool,
    /// Paged optimizer (bitsandbytes `paged_adamw`): optimizer states in CUDA unified memory, evicted
    /// to host RAM under memory pressure (QLoRA §3). Counted as host memory here.
    pub paged_optimizer: bool,
    /// PEFT `lora_dropout`: each adapter applies its own `nn.Dropout(p)` to its own copy of the
    /// input (peft 0.21.2 `tuners/lora/layer.py`), which then saves the dropped copy and a mask.
    /// Valid: [0, 0.99].
    pub lora_dropout: f64,
    /// Inference runs the PEFT model as trained, adapters unmerged (FP32) on the base (NF4 under
    /// QLoRA); off: inference ignores these settings (a merged or plain model).
    pub inference_adapters: bool,
}

impl Default for Peft {
    fn default() -> Self {
        Peft {
            method: PeftMethod::Full,
            rank: 8,
            targets: LoraTargets::default(),
            double_quant: true,
            paged_optimizer: false,
            lora_dropout: 0.0,
            inference_adapters: false,
        }
    }
}
