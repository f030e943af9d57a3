//! The result types of the bandwidth/time side: what the UI, the CLI and the tests read.
//! Every time is in seconds, every rate per second, FLOPs as plain counts; `f64` fields are always
//! finite (non-negative unless stated).

use serde::Serialize;

use crate::units::{Bytes, BytesPerSec, FlopsPerSec};

/// What limits a phase or a step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Bound {
    /// Arithmetic: the compute units are the bottleneck.
    #[default]
    Compute,
    /// Memory bandwidth: the units wait for data (roofline left of the ridge).
    Memory,
    /// Collectives between GPUs (exposed communication is the largest term).
    Communication,
    /// Host/NVMe offload or a second memory tier.
    Offload,
    /// Fixed per-forward costs: kernel floors, ops issued from Python, `generate`'s loop
    /// (inference; `performance::launch`).
    Overhead,
}

impl Bound {
    pub const fn label(self) -> &'static str {
        match self {
            Bound::Compute => "compute-bound",
            Bound::Memory => "memory-bound",
            Bound::Communication => "communication-bound",
            Bound::Offload => "offload-bound",
            Bound::Overhead => "overhead-bound",
        }
    }
}

/// The roofline of one phase on one GPU (Williams, Waterman, Patterson, CACM 52(4), 2009).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PhaseRoofline {
    /// FLOPs the phase executes on one GPU (hardware FLOPs: recomputation included).
    pub flops: f64,
    /// Bytes moved between the GPU's memory and its chip.
    pub bytes: Bytes,
    /// Arithmetic (operational) intensity, FLOP per byte.
    pub intensity: f64,
    /// Ridge point of the GPU for the compute type: peak FLOP/s ÷ peak B/s.
    pub ridge: f64,
    /// min(achievable peak, achievable bandwidth × intensity).
    pub attainable: FlopsPerSec,
    /// attainable ÷ achievable peak, in [0, 1]: how busy the compute units can be.
    pub saturation: f64,
    /// 1 − saturation: the share of time the compute units idle waiting for memory.
    pub idle_share: f64,
    /// FLOPs ÷ (peak × compute efficiency).
    pub compute_time_s: f64,
    /// Bytes ÷ (bandwidth × memory efficiency).
    pub memory_time_s: f64,
    /// max(compute, memory): the phase's time on one GPU, before communication.
    pub time_s: f64,
    pub bound: Bound,
}

/// Collectives between GPUs, per step (training) or per forward (inference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Communication {
    /// Gradient bytes each GPU all-reduces per optimizer step (after ZeRO-3 and compression factors):
    /// the dense part over DP × CP, a mixture's routed experts over their expert-data-parallel group.
    pub dp_bytes: Bytes,
    /// nccl-tests bus factor 2(n−1)/n for the DP all-reduce (the dense part's group, DP × CP).
    pub dp_bus_factor: f64,
    /// Per-direction bandwidth the DP collective runs at (intra- or inter-node, × link efficiency).
    pub dp_bandwidth: BytesPerSec,
    /// Whether the DP group crosses nodes.
    pub dp_internode: bool,
    /// Latency term of a ring all-reduce, 2(n−1)·α (with a mixture's experts, the expert group's added).
    pub dp_ring_latency_s: f64,
    /// Latency term of a tree all-reduce, 2·log₂n·α (with a mixture's experts, the expert group's added).
    pub dp_tree_latency_s: f64,
    /// Bandwidth term + the chosen algorithm's latency term.
    pub dp_time_s: f64,
    /// The part not hidden behind backward compute: dp_time × (1 − overlap).
    pub dp_exposed_s: f64,
    /// The step's data-parallel volume in all-reduces of the gradients, counted before types
    /// (`training::DpCollectives::allreduces`): 1 for one all-reduce per step (DDP, ZeRO-1),
    /// ZeRO-2 (m + 1)/2 and ZeRO-3 1.5·m for m micro-batches (they reduce-scatter, and ZeRO-3
    /// gathers, in every micro-batch), 1 under FSDP2 with a pipeline.
    pub zero_factor: f64,
    /// 1-bit compression's overall volume reduction, 1/(w + (1−w)/r); 1 when off.
    pub compression_ratio: f64,
    /// Tensor-parallel all-reduces per micro-batch per GPU (4 per layer in training, 6 with full
    /// recomputation, up to one more with Megatron's sequence parallelism; 2 in inference), rounded.
    pub tp_allreduces: u32,
    /// Total tensor-parallel all-reduce time per step (exposed: on the critical path).
    pub tp_time_s: f64,
    /// The latency (α) part of `tp_time_s`.
    pub tp_latency_s: f64,
    /// Per-direction bandwidth the TP all-reduces run at (× link efficiency).
    pub tp_bandwidth: BytesPerSec,
    /// Exposed pipeline point-to-point sends per step (parts model; 0 otherwise).
    pub pp_p2p_s: f64,
    /// Pipeline bubble fraction (p−1)/(m·v) of the ideal time.
    pub bubble_fraction: f64,
    pub bubble_s: f64,
    /// Expert-parallel all-to-all bytes each GPU sends per step (MoE: 2 per layer in forward, 2 in
    /// backward; GShard §2.2).
    pub ep_bytes: Bytes,
    /// Their time per step, on the critical path.
    pub ep_time_s: f64,
    /// Context-parallel bytes each GPU sends per step (ring: K/V chunks; Ulysses: all-to-alls).
    pub cp_bytes: Bytes,
    /// Their time per step not hidden behind the attention core (`performance::context_parallel`).
    pub cp_time_s: f64,
}

/// Traffic to the host, NVMe or a second memory tier per step, and the part prefetch hides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct OffloadTraffic {
    /// ZeRO-Offload / ZeRO-Infinity bytes over the host link per step (both directions added).
    pub host_bytes: Bytes,
    /// Host link per direction, pinned or pageable.
    pub host_bandwidth: BytesPerSec,
    pub host_time_s: f64,
    /// Bytes read from / written to the second tier per step (spill beyond GPU memory).
    pub tier_bytes: Bytes,
    pub tier_bandwidth: BytesPerSec,
    pub tier_time_s: f64,
    /// Share hidden by prefetch (Timing::offload_overlap).
    pub hidden_share: f64,
    /// What remains on the critical path.
    pub exposed_s: f64,
    /// Step time with the tier ÷ without (1 when nothing spills).
    pub tier_slowdown: f64,
}

/// Time of one step and what makes it up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StepTime {
    /// Forward + backward (training) or prefill + all decode steps (inference), roofline time.
    pub compute_phase_s: f64,
    /// Optimizer update (memory-bound), training only.
    pub optimizer_s: f64,
    /// The optimizer's update on the host when it is offloaded (training; `training.rs`
    /// `host_optimizer_s`: the update's bytes at `timing.host_optimizer_gb_s`, shared by a node's
    /// GPUs), s.
    pub host_optimizer_s: f64,
    /// Exposed DP + TP communication.
    pub communication_s: f64,
    pub bubble_s: f64,
    pub offload_s: f64,
    /// Exposed host-to-device copy of the input batches (training; `article::input_pipeline`:
    /// pinned vs pageable bandwidth, hidden only when prefetched from pinned memory).
    pub input_s: f64,
    /// Post-training: generating the step's completions (GRPO, PPO; `post_training.rs`), s.
    pub rollout_generation_s: f64,
    /// Post-training: the reference / reward / critic / old-policy scoring forwards, s.
    pub scoring_s: f64,
    /// Post-training (verl, OpenRLHF): host-link copies of the states offloaded between phases
    /// (`phase_swap.rs`), s.
    pub phase_swap_s: f64,
    /// Inference: what kernel floors, ops issued from Python and `generate`'s loop add over the
    /// roofline across the request batch (`performance::launch`), s.
    pub launch_s: f64,
    /// The part of `launch_s` inside the time to first token, s.
    pub launch_prefill_s: f64,
    /// Everything: one optimizer step (training) or one request batch (inference).
    pub total_s: f64,
    /// The largest contributor.
    pub bound: Bound,
}

/// Throughput and serving figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Throughput {
    /// Tokens per second over the whole job (training: all GPUs; inference: generated tokens).
    pub tokens_per_s: f64,
    /// Sequences (or images, or recommender samples) per second, all GPUs.
    pub samples_per_s: f64,
    /// Model FLOPs utilisation (PaLM App. B): model FLOPs ÷ (time × peak). Recomputation excluded.
    pub mfu: f64,
    /// Hardware FLOPs utilisation: recomputation included.
    pub hfu: f64,
    /// Time to first token: the prefill (inference).
    pub ttft_s: f64,
    /// Time per output token at the mean decode context (inference).
    pub tpot_s: f64,
    /// KV-cache bytes one token of one sequence holds on one GPU.
    pub kv_bytes_per_token: Bytes,
    /// Requests of (prompt + generated) tokens whose KV cache fits next to everything else.
    pub max_concurrent_requests: u32,
    /// Speculative decoding, chunked prefill, prefix caching and n sequences as timed (inference;
    /// neutral values when off).
    pub serving: super::serving::ServingTimes,
    /// The fixed part of one pipeline stage's inference forward (zero for training).
    pub launch: super::launch::Launch,
    /// What takes most of the decode steps' time (inference with generated tokens): their roofline's
    /// bound, their collectives, offload, or the fixed overhead per forward. `step.bound` is the
    /// whole request's, prefill included.
    pub decode_bound: Bound,
}

/// Training to a token budget (Timing::token_budget) at this step time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Cost {
    pub tokens_per_step: f64,
    pub steps: f64,
    pub time_s: f64,
    pub gpu_hours: f64,
    /// GPU board power × time (TDP taken as the draw); `None` when the TDP is unknown.
    pub energy_kwh: Option<f64>,
    /// gpu_hours × price per GPU-hour.
    pub money: f64,
    /// Energy of memory traffic per step on one GPU (bytes × 8 × pJ/bit); `None` when unsourced.
    pub memory_energy_per_step_j: Option<f64>,
}

/// The seed article's "future" items, evaluated on this scenario. Labelled projections, not data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Projections {
    /// Photonic interconnect at the article's 1.6 Tb/s (200 GB/s per direction) on every link:
    /// exposed communication and step time.
    pub photonic_comm_s: f64,
    pub photonic_step_s: f64,
    /// Processing-in-memory: memory-traffic energy per step if the article's "10× energy efficiency"
    /// held (`None` when today's pJ/bit is unsourced).
    pub pim_memory_energy_per_step_j: Option<f64>,
    /// A CXL 2.0 memory pool (PCIe 5.0 x16, 64 GB/s per direction) holding whatever does not fit:
    /// bytes that would live there and the step time with them streamed over CXL.
    pub cxl_pool_bytes: Bytes,
    pub cxl_pool_step_s: f64,
}

/// Roofline, time and cost of a scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Performance {
    /// Dense peak for the compute type (after falling back to wider units); 0 when unknown.
    pub peak: FlopsPerSec,
    /// Whether the GPU has a sourced peak for the compute type (else times are memory-only).
    pub peak_known: bool,
    /// Peak memory bandwidth.
    pub bandwidth: BytesPerSec,
    /// Forward + backward of one optimizer step on one GPU (training).
    pub training: Option<PhaseRoofline>,
    /// The optimizer update (training).
    pub optimizer: Option<PhaseRoofline>,
    /// Prefill of the prompt batch (inference).
    pub prefill: Option<PhaseRoofline>,
    /// One decode step of the batch at the mean context (inference).
    pub decode: Option<PhaseRoofline>,
    pub communication: Communication,
    pub offload: OffloadTraffic,
    pub step: StepTime,
    pub throughput: Throughput,
    pub cost: Cost,
    pub projections: Projections,
    /// Model FLOPs of one step on one GPU (no recomputation): the MFU numerator.
    pub model_flops: f64,
    /// Hardware FLOPs of one step on one GPU (with recomputation): the HFU numerator.
    pub hardware_flops: f64,
    /// The step-time parts model's breakdown (transformer training with a known peak;
    /// docs/time-model.md), else `None`.
    pub parts: Option<super::parts::StepParts>,
}
