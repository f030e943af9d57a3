//! The Hugging Face family's own settings (issue 12, docs/frameworks/{transformers,peft,
//! bitsandbytes,trl,unsloth-liger}.md): Transformers' attention implementation, the trainer loop,
//! a fused loss kernel, and bitsandbytes' 4-bit quantization as the loader sets it.

use serde::{Deserialize, Serialize};

use super::{AttentionKernel, Dtype};

/// Transformers' `attn_implementation` (transformers 5.24 `modeling_utils.py`; the kernels in
/// `integrations/sdpa_attention.py`, `integrations/flash_attention.py`, the eager path in each
/// model's `eager_attention_forward`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HfAttention {
    /// `eager`: `matmul(q, kᵀ)`, `softmax(dtype=float32)`, dropout, `matmul(p, v)` — autograd saves
    /// the b·a·s² softmax output (and the dropout mask when attention dropout is on) and the
    /// `repeat_kv` copies of k and v.
    Eager,
    /// `sdpa` (the default): torch's fused kernels save q, k, v, the output and the FP32
    /// log-sum-exp (b·a·s), never b·a·s² (torch 2.15 `_scaled_dot_product_flash_attention`,
    /// `_efficient_attention`).
    #[default]
    Sdpa,
    /// `flash_attention_2`: `flash_attn_func` saves q, k, v, out, softmax_lse and the RNG state
    /// (flash-attn 2.x `flash_attn_interface.py`, `FlashAttnFunc.forward`); k and v are not repeated
    /// over the query heads.
    FlashAttention2,
}

impl HfAttention {
    pub const ALL: [HfAttention; 3] = [
        HfAttention::Eager,
        HfAttention::Sdpa,
        HfAttention::FlashAttention2,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            HfAttention::Eager => "eager",
            HfAttention::Sdpa => "SDPA",
            HfAttention::FlashAttention2 => "FlashAttention-2",
        }
    }

    /// What the kernel keeps for backward, as the memory model's two attention kinds.
    pub const fn kernel(self) -> AttentionKernel {
        match self {
            HfAttention::Eager => AttentionKernel::Materialized,
            HfAttention::Sdpa | HfAttention::FlashAttention2 => AttentionKernel::Flash,
        }
    }
}

/// The loop that runs the step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HfTrainer {
    /// A plain loop or `transformers.Trainer`: the model's own loss (`ForCausalLMLoss`: FP32
    /// b·s·V log-softmax).
    #[default]
    Transformers,
    /// TRL 1.16 `SFTTrainer`: its fused, chunked LM head (`trl/trainer/utils.py`
    /// `add_fused_lm_head`, `trl/kernels/chunked_logprob.py`) never materialises b·s·V logits, and
    /// `SFTConfig.gradient_checkpointing` defaults to true (`sft_config.py` line 132: set
    /// `strategies.checkpointing` to match).
    TrlSft,
}

impl HfTrainer {
    pub const ALL: [HfTrainer; 2] = [HfTrainer::Transformers, HfTrainer::TrlSft];

    pub const fn label(self) -> &'static str {
        match self {
            HfTrainer::Transformers => "Transformers (plain loop / Trainer)",
            HfTrainer::TrlSft => "TRL SFTTrainer",
        }
    }
}

/// A fused linear + cross-entropy kernel that replaces the model's loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FusedLoss {
    /// The trainer's own loss.
    #[default]
    Off,
    /// Liger-Kernel `LigerFusedLinearCrossEntropyLoss` (`liger_kernel/ops/fused_linear_cross_entropy.py`):
    /// the head and the loss in chunks of tokens, the input gradient computed in the forward; no
    /// b·s·V tensor.
    Liger,
    /// Unsloth's loss: Apple's Cut Cross-Entropy, credited in Unsloth's README (2025.1) — the head
    /// and the loss fused, no b·s·V logits. From its README, not read from its code; its other
    /// kernels (fused LoRA MLP, CPU-offloaded checkpoints) are not modelled.
    Unsloth,
}

impl FusedLoss {
    pub const ALL: [FusedLoss; 3] = [FusedLoss::Off, FusedLoss::Liger, FusedLoss::Unsloth];

    pub const fn label(self) -> &'static str {
        match self {
            FusedLoss::Off => "none (the trainer's loss)",
            FusedLoss::Liger => "Liger fused linear cross-entropy",
            FusedLoss::Unsloth => "Unsloth chunked cross-entropy",
        }
    }
}

/// bitsandbytes' 4-bit data type (`bnb_4bit_quant_type`): both pack two weights per byte with an
/// FP32 absmax per 64 (same storage); they differ only in the code table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bnb4bitType {
    #[default]
    Nf4,
    Fp4,
}

/// The bitsandbytes release, where what its 4-bit matmul keeps for backward changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BnbVersion {
    /// ≤ 0.43.1: `MatMul4Bit.forward` keeps `ctx.tensors = (A, B)`, the layer's input in the compute
    /// type, outside `save_for_backward` (bitsandbytes `autograd/_functions.py` before commit
    /// 9e753741, PR #1270): every frozen 4-bit linear keeps its input alive until its backward.
    Legacy0_43_1,
    /// ≥ 0.43.2 (current 0.50.2): `ctx.tensors = (None, B)` — nothing but the packed weight.
    #[default]
    Current,
}

/// bitsandbytes' `BitsAndBytesConfig` for a 4-bit base (QLoRA or 4-bit inference).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Bitsandbytes {
    pub quant_type: Bnb4bitType,
    /// `bnb_4bit_compute_dtype`: the type each matmul de-quantizes one weight matrix to (and, for the
    /// legacy releases, the type of the input they keep).
    pub compute_dtype: Dtype,
    pub version: BnbVersion,
}

impl Default for Bitsandbytes {
    fn default() -> Self {
        Bitsandbytes {
            quant_type: Bnb4bitType::Nf4,
            compute_dtype: Dtype::Bf16,
            version: BnbVersion::Current,
        }
    }
}

/// The Hugging Face profile's own settings (`implementation.hf`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HfFramework {
    /// Transformers' attention implementation. `None` (files before issue 12): the kernel is
    /// `strategies.attention`'s.
    pub attention: Option<HfAttention>,
    pub trainer: HfTrainer,
    pub fused_loss: FusedLoss,
    pub bitsandbytes: Bitsandbytes,
}

impl HfFramework {
    /// The attention kernel the step runs: the framework's when set, else the strategy's.
    pub fn attention_kernel(&self, strategy: AttentionKernel) -> AttentionKernel {
        self.attention.map_or(strategy, HfAttention::kernel)
    }

    /// The loss never materialises the b·s·V logits (TRL's fused head, Liger, Unsloth).
    pub const fn fused_head(&self) -> bool {
        !matches!(self.fused_loss, FusedLoss::Off) || matches!(self.trainer, HfTrainer::TrlSft)
    }
}

/// What the report calls the framework of `i`: the profile and, for Hugging Face, the settings that
/// change the estimate (CLI `estimate`, JSON `scenario.framework.label`).
pub fn framework_label(i: &super::Implementation, peft: &super::Peft) -> String {
    if i.profile != super::Profile::HuggingFace {
        return format!("{:?}", i.profile);
    }
    let hf = &i.hf;
    let mut parts = vec![match hf.attention {
        Some(a) => format!("attention {}", a.label()),
        None => "attention as the strategy".to_owned(),
    }];
    if hf.trainer != HfTrainer::Transformers {
        parts.push(hf.trainer.label().to_owned());
    }
    if hf.fused_loss != FusedLoss::Off {
        parts.push(hf.fused_loss.label().to_owned());
    }
    if peft.method == super::PeftMethod::Qlora {
        let b = &hf.bitsandbytes;
        let version = match b.version {
            BnbVersion::Legacy0_43_1 => "<= 0.43.1",
            BnbVersion::Current => ">= 0.43.2",
        };
        parts.push(format!(
            "bitsandbytes {version} {:?} compute {:?}",
            b.quant_type, b.compute_dtype
        ));
    }
    format!("Hugging Face ({})", parts.join(", "))
}
