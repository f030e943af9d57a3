//! Element types and how a scenario assigns them to the tensors of a step.

use serde::{Deserialize, Serialize};

pub use crate::tensor::Dtype;

/// How element types are assigned to a step's tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrecisionMode {
    /// Everything (weights, gradients, optimizer states, activations) in `compute`.
    /// `compute = Fp32` is plain FP32 training; `Bf16` is "pure bf16" training.
    Uniform,
    /// `torch.autocast`: FP32 weights, gradients and optimizer states; 16-bit (`compute`) copies of the
    /// weights made during forward and 16-bit activations where autocast casts them.
    #[default]
    Amp,
    /// Megatron/ZeRO mixed precision: 16-bit weights and gradients, FP32 master weights and
    /// optimizer states (2 + 2 + 12 bytes per parameter for Adam; ZeRO §3.1). Under the Megatron
    /// profile with BF16 the gradients are FP32 (`Scenario::precision_types`).
    MasterWeights,
    /// Every element type chosen separately below.
    Custom,
}

/// An FP8 training recipe on top of the precision mode: what FP8 GEMMs add to the model states
/// (training only; the activations keep the mode's types).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fp8Recipe {
    /// No FP8 GEMMs.
    #[default]
    None,
    /// Transformer Engine delayed scaling: an FP8 copy of every layer weight matrix and its
    /// transpose (1 B each per element), and per FP8 tensor an amax history of 1024 FP32 values.
    TeDelayed,
    /// Transformer Engine current (per-tensor) scaling: the FP8 copy and transpose, no history.
    TeCurrent,
    /// DeepSeek-V3's block-wise FP8 (tech report §3.3): FP8 weights with one FP32 scale per 128 × 128
    /// block (the same blocks serve W and Wᵀ), BF16 optimizer moments, FP32 master weights and
    /// gradients.
    DeepSeekBlockwise,
}

/// Element types of a scenario. Only the fields that `mode` reads matter; the rest keep their values so
/// switching modes back and forth loses nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrecisionSpec {
    pub mode: PrecisionMode,
    /// The compute / 16-bit type used by `Uniform`, `Amp` and `MasterWeights`.
    pub compute: Dtype,
    /// `Custom` only: stored weights.
    pub weights: Dtype,
    /// `Custom` only: gradients.
    pub gradients: Dtype,
    /// `Custom` only: optimizer states (8-bit Adam overrides this to INT8 with block scales).
    pub optimizer_states: Dtype,
    /// `Custom` only: an FP32 master copy of the weights, if any.
    pub master_weights: Option<Dtype>,
    /// `Custom` only: activations saved for backward.
    pub activations: Dtype,
    /// KV cache of inference, in every mode.
    pub kv_cache: Dtype,
    /// Seed article §4.1: keep attention in FP32 while the FFN runs 16-bit (per-layer precision).
    pub attention_fp32: bool,
    /// FP8 training recipe (training only): FP8 weight copies, scales and amax history, and for
    /// DeepSeek-V3's recipe BF16 moments with FP32 master weights and gradients.
    pub fp8_recipe: Fp8Recipe,
}

impl Default for PrecisionSpec {
    fn default() -> Self {
        PrecisionSpec {
            mode: PrecisionMode::Amp,
            compute: Dtype::Bf16,
            weights: Dtype::Bf16,
            gradients: Dtype::Bf16,
            optimizer_states: Dtype::Fp32,
            master_weights: Some(Dtype::Fp32),
            activations: Dtype::Bf16,
            kv_cache: Dtype::Bf16,
            attention_fp32: false,
            fp8_recipe: Fp8Recipe::None,
        }
    }
}

/// The element types after `mode` has been applied: what the estimator reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResolvedPrecision {
    pub weights: Dtype,
    /// 16-bit copies of FP32 weights that autocast makes during forward (`Amp` only).
    pub weight_compute_copies: Option<Dtype>,
    pub gradients: Dtype,
    pub optimizer_states: Dtype,
    pub master_weights: Option<Dtype>,
    pub activations: Dtype,
    pub kv_cache: Dtype,
    pub attention_fp32: bool,
}

impl PrecisionSpec {
    pub fn resolve(&self) -> ResolvedPrecision {
        let c = self.compute;
        let (weights, copies, gradients, states, master, acts) = match self.mode {
            PrecisionMode::Uniform => (c, None, c, c, None, c),
            PrecisionMode::Amp => {
                let copies = (c.bits() < 32).then_some(c);
                (Dtype::Fp32, copies, Dtype::Fp32, Dtype::Fp32, None, c)
            }
            PrecisionMode::MasterWeights => (c, None, c, Dtype::Fp32, Some(Dtype::Fp32), c),
            PrecisionMode::Custom => (
                self.weights,
                None,
                self.gradients,
                self.optimizer_states,
                self.master_weights,
                self.activations,
            ),
        };
        // DeepSeek-V3 §3.3.3: "we adopt BF16 instead of FP32 to track the first and second moments
        // in the AdamW optimizer"; "the master weights (stored by the optimizer) and gradients (used
        // for batch size accumulation) are still retained in FP32". The BF16 parameters the
        // non-FP8 modules compute with are the weights.
        let (weights, copies, gradients, states, master) =
            if self.fp8_recipe == Fp8Recipe::DeepSeekBlockwise {
                (
                    Dtype::Bf16,
                    None,
                    Dtype::Fp32,
                    Dtype::Bf16,
                    Some(Dtype::Fp32),
                )
            } else {
                (weights, copies, gradients, states, master)
            };
        ResolvedPrecision {
            weights,
            weight_compute_copies: copies,
            gradients,
            optimizer_states: states,
            master_weights: master,
            activations: acts,
            kv_cache: self.kv_cache,
            attention_fp32: self.attention_fp32,
        }
    }
}
