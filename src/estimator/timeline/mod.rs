//! The step's memory over time, at layer granularity: live tensor bytes per [`Component`] at each
//! point of one step (training: forward layer by layer, the loss, backward layer by layer, the
//! optimizer step; inference: prefill layer by layer, then decode steps).
//!
//! It is drawn from the estimate's own phase breakdowns ([`PhasePeaks`], `estimator/memory.rs`),
//! never from a second model: each phase's breakdown appears as one point of the timeline, and
//! every other point of that phase is bounded by it (see [`build`]), so the largest point of each
//! phase *equals* that phase's peak and the largest point overall equals `tensor_peak`. Between the
//! phases' points the bytes are interpolated layer by layer: saved activations grow linearly
//! through forward and shrink through backward (Korthikanti et al. 2022 §4: every layer saves the
//! same bytes; the backward of layer ℓ frees layer ℓ's saved tensors), gradients appear layer by
//! layer in backward (PyTorch accumulate-grad hooks fire per parameter as its gradient is ready),
//! the KV cache grows per layer in prefill and per token in decode (kipply 2022). The short-lived
//! buffers between phase points are the smallest transient any phase holds (the part every phase
//! keeps: autocast copies, inputs), an assumption: the layer-level temporaries are not drawn.
//!
//! It allocates (a `Vec` of points) and is not on the per-frame hot path of [`estimate`](super::estimate).

mod build;

pub use build::build;

use super::{Breakdown, Phase};
use crate::units::Bytes;

/// Where in the step a point is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Before this micro-batch's forward (model states; other micro-batches' activations in flight).
    Start,
    /// After the forward of layer `n` (1-based, of this pipeline stage).
    ForwardLayer(u32),
    /// The loss: end of forward, logits live (the estimate's forward phase).
    Loss,
    /// The loss backward: the logits' gradient (the estimate's loss-backward phase).
    LossBackward,
    /// During the backward of layer `n` (1-based, counted from the last layer).
    BackwardLayer(u32),
    /// The optimizer step.
    OptimizerStep,
    /// After the prefill of layer `n` (1-based).
    PrefillLayer(u32),
    /// After decode step `n` (1-based generated token).
    DecodeToken(u32),
    /// A post-training run's rollout: the policy (or its co-located engine) generating.
    Generation,
    /// A post-training run's reference / reward scoring (DPO: inside the step, after the loss).
    Scoring,
}

impl Step {
    /// A short label for tables and hover text.
    pub fn label(self) -> String {
        match self {
            Step::Start => "start".to_owned(),
            Step::ForwardLayer(n) => format!("forward layer {n}"),
            Step::Loss => "loss".to_owned(),
            Step::LossBackward => "loss backward".to_owned(),
            Step::BackwardLayer(n) => format!("backward layer {n}"),
            Step::OptimizerStep => "optimizer step".to_owned(),
            Step::PrefillLayer(n) => format!("prefill layer {n}"),
            Step::DecodeToken(n) => format!("decode token {n}"),
            Step::Generation => "generation".to_owned(),
            Step::Scoring => "scoring".to_owned(),
        }
    }
}

/// One point of the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub step: Step,
    /// The estimate's phase this point belongs to.
    pub phase: Phase,
    /// The micro-batch of the step (1-based; 1 for inference).
    pub micro_batch: u32,
    /// Live tensor bytes per component (CUDA context and allocator reserve are zero here).
    pub bytes: Breakdown,
}

/// The step's timeline on the peak pipeline stage.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub points: Vec<Point>,
    /// Index of the largest point (first wins ties); `None` when there are no points.
    pub peak: Option<usize>,
    /// The pipeline stage drawn (the estimate's `peak_stage`, 0-based).
    pub stage: u32,
    /// Layers of that stage.
    pub layers: u32,
    /// Micro-batches whose activations are held at once on that stage (1F1B warm-up; 1 without PP).
    pub in_flight: f64,
    /// NCCL buffers, CUDA context and allocator reserve at the peak (what nvidia-smi adds to the tensor
    /// bytes).
    pub overhead: Bytes,
    /// Micro-batches of the step (gradient accumulation without pipeline parallelism; 1 otherwise).
    /// At most three are drawn: all of them, or the first and the last.
    pub micro_batches: u32,
}

impl Timeline {
    /// The largest point of `phase` (first wins ties), if the phase has points.
    pub fn phase_max(&self, phase: Phase) -> Option<&Point> {
        let mut best: Option<&Point> = None;
        for p in self.points.iter().filter(|p| p.phase == phase) {
            let t = p.bytes.tensor_total().get();
            if best.is_none_or(|b| t > b.bytes.tensor_total().get()) {
                best = Some(p);
            }
        }
        best
    }

    /// The phases in order with the index range `[start, end)` of their points (contiguous runs;
    /// each micro-batch drawn has its own).
    pub fn phase_spans(&self) -> Vec<(Phase, usize, usize)> {
        let mut out: Vec<(Phase, usize, usize)> = Vec::new();
        let mut mb = 0;
        for (i, p) in self.points.iter().enumerate() {
            match out.last_mut() {
                Some(last) if last.0 == p.phase && mb == p.micro_batch => last.2 = i + 1,
                _ => out.push((p.phase, i, i + 1)),
            }
            mb = p.micro_batch;
        }
        out
    }

    /// The micro-batches drawn, each with the index range `[start, end)` of its points.
    pub fn micro_batch_spans(&self) -> Vec<(u32, usize, usize)> {
        let mut out: Vec<(u32, usize, usize)> = Vec::new();
        for (i, p) in self.points.iter().enumerate() {
            match out.last_mut() {
                Some(last) if last.0 == p.micro_batch => last.2 = i + 1,
                _ => out.push((p.micro_batch, i, i + 1)),
            }
        }
        out
    }
}
