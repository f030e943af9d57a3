//! One step's time by part, as the window and the report show it (issue 13: "the window shows the
//! step-time breakdown (compute, exposed communication, bubble, recompute, optimizer, offload)").
//! A view of [`Performance`], not a second model: the parts add up to `step.total_s` (a test), so
//! what is shown is exactly what the step time is made of. Formulas: docs/time-model.md (training
//! parts model) and docs/bandwidth.md (the flat roofline, inference).

use super::{Bound, Performance};

/// A part of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepPart {
    /// A post-training step's rollout: generating the completions (GRPO, PPO).
    RolloutGeneration,
    /// A post-training step's scoring forwards (reference, reward model, critic, old policy).
    Scoring,
    /// A post-training step's host copies of states offloaded between phases (verl, OpenRLHF).
    PhaseSwap,
    /// Forward + backward matrix multiplies of the layers and the LM head (parts model).
    Gemm,
    /// The attention core, forward + backward (parts model).
    Attention,
    /// Norms, activations, dropout, residual adds and the loss: timed by bytes moved (fused
    /// kernels).
    Elementwise,
    /// The same work as eager PyTorch runs it, every op a kernel of its own
    /// (`timing.parts.elementwise`, `parts::eager_elementwise`).
    EagerElementwise,
    /// The forward computed again under activation checkpointing.
    Recompute,
    /// Forward + backward on the flat roofline (families the parts model does not time).
    ForwardBackward,
    /// The prompt's forward (inference).
    Prefill,
    /// Every decode step of the request batch (inference).
    Decode,
    /// Inference: kernel floors, ops issued from Python and `generate`'s loop (`launch.rs`).
    Launch,
    /// Tensor-parallel collectives not hidden behind compute.
    TensorParallel,
    /// Data-parallel gradient reduction (and ZeRO gathers) not hidden behind backward.
    DataParallel,
    /// Expert-parallel all-to-all.
    ExpertParallel,
    /// Context-parallel K/V exchange (ring) or all-to-alls (Ulysses) not hidden.
    ContextParallel,
    /// Pipeline point-to-point sends not hidden.
    PipelineSends,
    /// Pipeline bubble: stages idle at the start and end of the schedule.
    Bubble,
    /// The optimizer update (memory-bound).
    Optimizer,
    /// The optimizer update on the host's CPUs (optimizer offloaded).
    HostOptimizer,
    /// Host / NVMe offload traffic not hidden behind compute.
    Offload,
    /// Host-to-device copy of the input batches not hidden.
    Input,
}

/// What kind of time a part is (the chart colours by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartClass {
    /// Kernels doing the model's arithmetic.
    Compute,
    /// Kernels bound by memory bandwidth (elementwise work, the optimizer).
    Memory,
    /// Recomputation: arithmetic done twice.
    Recompute,
    /// Exposed collectives and sends between GPUs.
    Communication,
    /// GPUs waiting (the pipeline bubble).
    Idle,
    /// Host transfers (offload, input) and host work (the offloaded optimizer).
    Host,
}

impl StepPart {
    pub const fn label(self) -> &'static str {
        match self {
            StepPart::RolloutGeneration => "Rollout generation",
            StepPart::Scoring => "Scoring",
            StepPart::PhaseSwap => "Offload between phases",
            StepPart::Gemm => "Matrix multiplies",
            StepPart::Attention => "Attention",
            StepPart::Elementwise => "Elementwise and loss",
            StepPart::EagerElementwise => "Eager elementwise and loss",
            StepPart::Recompute => "Recompute",
            StepPart::ForwardBackward => "Forward + backward",
            StepPart::Prefill => "Prefill",
            StepPart::Decode => "Decode",
            StepPart::Launch => "Kernel launches and host",
            StepPart::TensorParallel => "Tensor-parallel communication",
            StepPart::DataParallel => "Data-parallel communication",
            StepPart::ExpertParallel => "Expert token dispatch",
            StepPart::ContextParallel => "Context-parallel communication",
            StepPart::PipelineSends => "Pipeline sends",
            StepPart::Bubble => "Pipeline bubble",
            StepPart::Optimizer => "Optimizer step",
            StepPart::HostOptimizer => "Optimizer step on the host",
            StepPart::Offload => "Offload",
            StepPart::Input => "Input copy",
        }
    }

    pub const fn hover(self) -> &'static str {
        match self {
            StepPart::RolloutGeneration => {
                "Generating the step's completions (HF generate or vLLM, co-located or on other GPUs): the inference model's prefill and decode of micro-batch × accumulation completions (docs/frameworks/trl-rl.md)."
            }
            StepPart::Scoring => {
                "No-grad forwards over the step's sequences by the reference, the reward model and critic (PPO) and the policy after a vLLM rollout."
            }
            StepPart::Gemm => {
                "Forward and backward GEMMs after tensor parallelism, each at an efficiency that depends on its size and the GPU generation (docs/time-model.md)."
            }
            StepPart::Attention => {
                "The attention core: materialised (two batched GEMMs + softmax over every key) or a flash kernel at its own efficiency, skipping the masked blocks it can (the causal half; a sliding window's outside only in banded kernels, not PyTorch SDPA)."
            }
            StepPart::Elementwise => {
                "Norms, rotary embedding, activations, dropout, residual adds and the loss: timed by the bytes they move, not FLOPs, in fused kernels (timing.parts.elementwise)."
            }
            StepPart::EagerElementwise => {
                "Norms, rotary embedding, activations, residual adds and the loss as eager PyTorch runs them: every op a kernel of its own, with FP32 upcasts, timed by the bytes they move (timing.parts.elementwise; Auto follows the framework)."
            }
            StepPart::Recompute => {
                "The forward run again in backward under activation checkpointing (full: the layer; selective: the attention core)."
            }
            StepPart::ForwardBackward => {
                "Forward and backward on the roofline with the flat achievable efficiency (timing.compute_efficiency)."
            }
            StepPart::Prefill => {
                "Time to first token: the prompt's forward pass, with its collectives and offload share."
            }
            StepPart::Decode => {
                "One forward per generated token over the growing KV cache, with its collectives and offload share."
            }
            StepPart::Launch => {
                "Each forward's fixed cost beyond its FLOPs and bytes: every kernel's floor on the GPU (timing.parts.kernel_floor_us), in eager PyTorch the host issuing each op from Python when that is slower (eager_op_us), and Hugging Face generate's loop per token (generate_step_us). A CUDA graph removes the issuing (timing.parts.cuda_graphs; vLLM enforce_eager, SGLang disable_cuda_graph)."
            }
            StepPart::TensorParallel => {
                "Per-layer all-reduces (or reduce-scatter + all-gather with sequence parallelism, where Megatron all-gathers each column-parallel input again in backward) not hidden by overlap, plus the compute the hidden ones slow down (15 % of their time on NVLink, calculon's processor_usage)."
            }
            StepPart::DataParallel => {
                "Gradient reduction (ZeRO: also parameter gathers; a mixture's routed experts over their expert-data-parallel group, DP × CP × TP ÷ (ETP × EP) GPUs) not hidden behind backward (timing.comm_overlap), plus the compute the hidden part slows down (2 % of its time over InfiniBand, 15 % over NVLink)."
            }
            StepPart::ExpertParallel => {
                "Tokens sent to and from their experts' GPUs: all-to-alls, or under Megatron-Core's default all-gather dispatcher the expert group's gathers and reduce-scatters (implementation.megatron_moe_dispatcher), not hidden behind compute."
            }
            StepPart::ContextParallel => {
                "Ring attention's K/V chunks passed between context-parallel ranks beyond what the attention core hides, or Ulysses' four all-to-alls per layer and pass (docs/context-parallel.md)."
            }
            StepPart::PipelineSends => {
                "Activations and their gradients sent between pipeline stages, not hidden: the warm-up's and cool-down's always, the steady phase's unless overlapped (timing.parts.pp_overlap)."
            }
            StepPart::Bubble => {
                "Pipeline stages idle while the schedule fills and drains: (PP − 1) ÷ (micro-batches × virtual stages) of the stage's work."
            }
            StepPart::Optimizer => {
                "Reading and writing weights, gradients and optimizer states once: memory-bound."
            }
            StepPart::HostOptimizer => {
                "The offloaded optimizer's update on the host's CPUs after backward (CPU-Adam, Megatron's --optimizer-cpu-offload): the update's bytes at the node's memory bandwidth (timing.host_optimizer_gb_s), shared by its GPUs."
            }
            StepPart::PhaseSwap => {
                "verl / OpenRLHF: states offloaded outside the phases that use them (param_offload, optimizer_offload, --ds.enable_sleep, the reference's host copy, vLLM sleep level 1) copied over the host link each step (docs/frameworks/verl-openrlhf.md)."
            }
            StepPart::Offload => {
                "Host or NVMe transfers of offloaded states not hidden behind compute."
            }
            StepPart::Input => "The input batches copied to the GPU, not hidden by prefetching.",
        }
    }

    pub const fn class(self) -> PartClass {
        match self {
            StepPart::Gemm
            | StepPart::Attention
            | StepPart::ForwardBackward
            | StepPart::Prefill
            | StepPart::Decode
            | StepPart::RolloutGeneration
            | StepPart::Scoring => PartClass::Compute,
            StepPart::Elementwise | StepPart::EagerElementwise | StepPart::Optimizer => {
                PartClass::Memory
            }
            StepPart::Recompute => PartClass::Recompute,
            StepPart::TensorParallel
            | StepPart::DataParallel
            | StepPart::ExpertParallel
            | StepPart::ContextParallel
            | StepPart::PipelineSends => PartClass::Communication,
            StepPart::Bubble => PartClass::Idle,
            StepPart::Offload
            | StepPart::HostOptimizer
            | StepPart::Input
            | StepPart::PhaseSwap
            | StepPart::Launch => PartClass::Host,
        }
    }
}

/// The most parts one step has (post-training with the parts model).
pub const MAX_PARTS: usize = 17;

/// One step's parts, in the order a step runs them; only parts that take time are listed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepBreakdown {
    parts: [(StepPart, f64); MAX_PARTS],
    len: usize,
    /// The step time the parts add up to.
    pub total_s: f64,
    /// What bounds the step.
    pub bound: Bound,
}

impl StepBreakdown {
    /// The parts that take time, seconds each.
    pub fn parts(&self) -> &[(StepPart, f64)] {
        &self.parts[..self.len]
    }

    fn push(&mut self, part: StepPart, seconds: f64) {
        if seconds > 0.0 && seconds.is_finite() && self.len < MAX_PARTS {
            self.parts[self.len] = (part, seconds);
            self.len += 1;
        }
    }
}

/// The step's time by part: a training step (parts model, or the flat roofline), or an inference
/// request batch (first token, then decode). Allocation-free.
pub fn step_breakdown(p: &Performance) -> StepBreakdown {
    let step = &p.step;
    let mut b = StepBreakdown {
        parts: [(StepPart::Gemm, 0.0); MAX_PARTS],
        len: 0,
        total_s: step.total_s,
        bound: step.bound,
    };
    if p.training.is_some() {
        b.push(StepPart::RolloutGeneration, step.rollout_generation_s);
        b.push(StepPart::Scoring, step.scoring_s);
        b.push(StepPart::PhaseSwap, step.phase_swap_s);
        match &p.parts {
            Some(k) => {
                b.push(StepPart::Gemm, k.gemm_s);
                b.push(StepPart::Attention, k.attention_s);
                let elementwise = if k.eager_elementwise {
                    StepPart::EagerElementwise
                } else {
                    StepPart::Elementwise
                };
                b.push(elementwise, k.elementwise_s);
                b.push(StepPart::Recompute, k.recompute_s);
            }
            None => b.push(StepPart::ForwardBackward, step.compute_phase_s),
        }
        let c = &p.communication;
        b.push(StepPart::TensorParallel, c.tp_time_s);
        b.push(StepPart::ExpertParallel, c.ep_time_s);
        b.push(StepPart::ContextParallel, c.cp_time_s);
        b.push(StepPart::PipelineSends, c.pp_p2p_s);
        b.push(StepPart::DataParallel, c.dp_exposed_s);
        b.push(StepPart::Bubble, step.bubble_s);
        b.push(StepPart::Optimizer, step.optimizer_s);
        b.push(StepPart::HostOptimizer, step.host_optimizer_s);
        b.push(StepPart::Offload, step.offload_s);
        b.push(StepPart::Input, step.input_s);
    } else {
        // A request batch: time to first token, then every decode step; each carries its own
        // collectives and offload share (`inference.rs`: total = TTFT + generated × TPOT).
        // The fixed per-forward overhead is its own part (`launch.rs`), out of both phases.
        let first = p.throughput.ttft_s.min(step.total_s);
        let launch = step.launch_s.clamp(0.0, step.total_s);
        let launch_first = step.launch_prefill_s.clamp(0.0, first.min(launch));
        b.push(StepPart::Prefill, first - launch_first);
        b.push(
            StepPart::Decode,
            step.total_s - first - (launch - launch_first),
        );
        b.push(StepPart::Launch, launch);
    }
    b
}
