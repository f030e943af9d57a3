//! The scenario: the document a user edits, saves as a preset and the estimator reads.
//!
//! Every field has a default (`#[serde(default)]`), so a preset names only what differs and older
//! files keep loading as fields are added. Unknown fields are errors (`deny_unknown_fields`): a typo
//! must not be silently ignored. Ranges are checked by [`validate`](validate::validate).

mod axis;
mod blocks;
mod cnn;
mod engine;
pub mod engine_args;
mod engine_args_flags;
pub mod engine_args_llamacpp;
pub mod engine_args_overrides;
mod engine_llamacpp;
mod engine_sglang;
mod engine_vllm;
mod framework_hf;
mod framework_stack;
mod gpu;
mod implementation;
mod inference_features;
mod input;
mod model;
mod moe;
mod parallel;
mod peft;
mod post_training;
mod precision;
mod quant;
mod strategies;
mod timing;
mod towers;
pub mod validate;
mod workload;

pub use axis::Axis;
pub use blocks::*;
pub use cnn::*;
pub use engine::ServingEngine;
pub use engine_llamacpp::{CacheType, FlashAttn, LlamaCpp, MAX_SPLIT};
pub use engine_sglang::*;
pub use engine_vllm::*;
pub use framework_hf::*;
pub use framework_stack::*;
pub use gpu::*;
pub use implementation::*;
pub use inference_features::*;
pub use input::*;
pub use model::*;
pub use moe::*;
pub use parallel::*;
pub use peft::*;
pub use post_training::*;
pub use precision::*;
pub use quant::*;
pub use strategies::*;
pub use timing::*;
pub use towers::*;
pub use workload::*;

use serde::{Deserialize, Serialize};

/// The default scenario's name (it describes only that scenario: see [`Scenario::title`]).
pub const DEFAULT_NAME: &str = "Llama-3-8B inference on one H100";

/// The current scenario format version. Bump it when a field is renamed, and migrate in `presets`.
pub const FORMAT_VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scenario {
    pub version: u32,
    pub name: String,
    /// Free text: what the scenario is for, what a source claimed.
    pub notes: String,
    pub mode: Mode,
    pub model: ModelSpec,
    pub workload: Workload,
    pub inference: Inference,
    pub precision: PrecisionSpec,
    pub optimizer: Optimizer,
    pub strategies: Strategies,
    pub parallel: Parallelism,
    pub gpu: GpuChoice,
    pub implementation: Implementation,
    pub overheads: Overheads,
    pub timing: Timing,
    /// Input batches on the GPU, prefetch and host staging (seed article §2.2).
    pub input: InputPipeline,
    /// LoRA / QLoRA fine-tuning (training only).
    pub peft: Peft,
    /// Quantized storage of the layers' weight matrices.
    pub quantization: Quantization,
    /// Post-training with several models: DPO, GRPO, PPO (training only).
    pub post_training: PostTraining,
}

impl Default for Scenario {
    /// Llama-3-8B inference in BF16 on one H100 SXM (80 GB): fits with visible headroom.
    fn default() -> Self {
        Scenario {
            version: FORMAT_VERSION,
            name: DEFAULT_NAME.to_owned(),
            notes: String::new(),
            mode: Mode::Inference,
            model: ModelSpec::default(),
            workload: Workload::default(),
            inference: Inference::default(),
            // Inference serves 16-bit weights as stored, not autocast over FP32 weights.
            precision: PrecisionSpec {
                mode: PrecisionMode::Uniform,
                ..PrecisionSpec::default()
            },
            optimizer: Optimizer::default(),
            strategies: Strategies::default(),
            parallel: Parallelism::default(),
            gpu: GpuChoice::default(),
            implementation: Implementation::default(),
            overheads: Overheads::default(),
            timing: Timing::default(),
            input: InputPipeline::default(),
            peft: Peft::default(),
            quantization: Quantization::default(),
            post_training: PostTraining::default(),
        }
    }
}

impl Scenario {
    /// The element types the estimator reads: `precision` resolved, with the framework's own
    /// rule on top. Megatron-LM under `--bf16` accumulates and reduces gradients in FP32
    /// (`megatron/training/arguments.py` at d98e8a6, l. 1204–1217, sets
    /// `accumulate_allreduce_grads_in_fp32`; Megatron-Core's `param_and_grad_buffer.py` then
    /// makes the `main_grad` buffer FP32), so BF16 master-weight training under the Megatron
    /// profile has 4-byte gradients unless `implementation.megatron_grad_reduce_in_bf16`. Under
    /// `--fp16` the flag defaults off and the gradients stay FP16, as the mode says. Only the
    /// DDP and distributed-optimizer buffer reads the flag (ZeRO none or 1 here): Megatron-FSDP's
    /// gradients take `--megatron-fsdp-main-grads-dtype` (`auto`: the parameters' type).
    pub fn precision_types(&self) -> ResolvedPrecision {
        let mut r = self.precision.resolve();
        let i = &self.implementation;
        if self.mode == Mode::Training
            && matches!(self.strategies.zero, ZeroStage::None | ZeroStage::Stage1)
            && i.profile == Profile::Megatron
            && self.precision.mode == PrecisionMode::MasterWeights
            && self.precision.compute == Dtype::Bf16
            && !i.megatron_grad_reduce_in_bf16
        {
            r.gradients = Dtype::Fp32;
        }
        r
    }

    /// Whether the training framework runs pipeline stages: LitGPT (0.5.13) and torchtune (0.6.1)
    /// have no pipeline schedule (`Diagnostic::FrameworkWithoutPipeline`).
    pub fn framework_pipelines(&self) -> bool {
        self.mode != Mode::Training
            || !matches!(
                self.implementation.profile,
                Profile::LitGpt | Profile::Torchtune
            )
    }

    /// Whether the framework can split the attention over `tp` tensor-parallel ranks: the heads
    /// must divide, and under Megatron-Core the KV heads too (its `Attention.__init__` divides
    /// `num_query_groups` by TP and asserts it divides; `megatron/core/transformer/attention.py`).
    /// Elsewhere K/V heads beyond kv / TP are replicated (vLLM's `QKVParallelLinear`).
    pub fn tp_splits_attention(&self, tp: u32) -> bool {
        let t = &self.model.transformer;
        t.heads.max(1).is_multiple_of(tp)
            && (self.implementation.profile != Profile::Megatron
                || t.kv_heads.max(1).is_multiple_of(tp))
    }

    /// Megatron-Core trains a mixture of experts with tensor parallelism only under sequence
    /// parallelism (`MoELayer.forward` raises otherwise, megatron/core/transformer/moe/moe_layer.py
    /// 0.16.1): whether this scenario is such a training run (the solvers turn sequence
    /// parallelism on with TP > 1).
    pub fn megatron_moe_needs_sp(&self) -> bool {
        self.mode == Mode::Training
            && self.implementation.profile == Profile::Megatron
            && self.model.moe.experts > 0
    }

    /// An inference scenario served by an engine that sizes its KV cache at startup (vLLM,
    /// SGLang, llama.cpp): its largest batch and context are the engine's, not the peak's
    /// (`solver::max_fitting`).
    pub fn served_from_a_startup_kv_cache(&self) -> bool {
        self.mode == Mode::Inference
            && self
                .inference
                .engine
                .is_some_and(|e| e.budgets_at_startup())
    }

    /// An inference scenario whose memory is llama.cpp's buffers: a transformer served by
    /// llama.cpp (`engines::llamacpp::buffers_of`; another family keeps PyTorch's rules). ggml
    /// allocates the buffers at their exact sizes, outside PyTorch's caching allocator.
    pub fn runs_on_llamacpp(&self) -> bool {
        self.mode == Mode::Inference
            && self.model.family == ModelFamily::Transformer
            && self
                .inference
                .engine
                .is_some_and(|e| e.llamacpp().is_some())
    }

    /// An inference scenario on a llama.cpp CPU build (`-dev none`): no GPU is used at all.
    pub fn runs_on_cpu_only(&self) -> bool {
        self.mode == Mode::Inference && self.inference.engine.is_some_and(|e| e.cpu_only())
    }

    /// The name to show: `name`, unless it is empty, or it is the default scenario's name on a
    /// scenario that is no longer the default one (a file that omits `name` gets the default's; a
    /// model switched to a parameter count keeps it). Then a description of what it is, e.g.
    /// "7B-parameter transformer training on one H100 SXM".
    pub fn title(&self) -> String {
        let stale = self.name == DEFAULT_NAME
            && (self.model != ModelSpec::default()
                || self.mode != Mode::Inference
                || self.gpu != GpuChoice::default());
        if !self.name.is_empty() && !stale {
            return self.name.clone();
        }
        let t = &self.model.transformer;
        let model = match (self.model.family, self.model.shape) {
            (ModelFamily::Transformer, ShapeSource::ParamCount) => {
                format!("{}-parameter transformer", count(self.model.params))
            }
            (ModelFamily::Transformer, ShapeSource::Dimensions) => {
                // A layer pattern, when given, is what sets the layer count.
                let layers = if self.model.pattern.is_empty() {
                    u64::from(t.layers)
                } else {
                    blocks::pattern_layers(&self.model.pattern)
                };
                format!("{layers}-layer transformer (hidden {})", t.hidden)
            }
            (ModelFamily::Cnn, _) => "CNN".to_owned(),
            (ModelFamily::Recommender, _) => "Recommender".to_owned(),
        };
        let mode = match self.mode {
            Mode::Training => "training",
            Mode::Inference => "inference",
        };
        let gpu = match &self.gpu {
            GpuChoice::Catalog(id) => id.name(),
            GpuChoice::Custom(c) => c.name.as_str(),
        };
        match self.parallel.gpus() {
            1 => format!("{model} {mode} on one {gpu}"),
            n => format!("{model} {mode} on {n} × {gpu}"),
        }
    }
}

/// A count with an SI-style suffix: 7e9 → "7B", 1.3e9 → "1.3B", 125e6 → "125M".
fn count(x: f64) -> String {
    let (v, unit) = match x {
        x if x >= 1e12 => (x / 1e12, "T"),
        x if x >= 1e9 => (x / 1e9, "B"),
        x if x >= 1e6 => (x / 1e6, "M"),
        x if x >= 1e3 => (x / 1e3, "K"),
        x => (x, ""),
    };
    // Two decimals at most; Display drops trailing zeros (7.0 → "7").
    format!("{}{unit}", (v * 100.0).round() / 100.0)
}
