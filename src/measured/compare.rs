//! A measurement held against the estimate: one row per statistic with the error, and the
//! calibration of the adjustable overheads (`scenario.overheads`) that the measurement implies.
//!
//! What each statistic is compared with (`estimator/memory_types.rs`): `max_memory_allocated` with
//! the peak tensor bytes (`tensor_peak`); `max_memory_reserved` with tensor bytes plus the
//! allocator reserve (`reserved_peak`: `gpu_total` − CUDA context − NCCL buffers); nvidia-smi with
//! `gpu_total`; vLLM's lines with the figures vLLM prints at startup as the estimate computes them
//! (`EngineFigures`, `estimator/engines/figures.rs`): the weights as loaded, the profile run's
//! activation peak (not the transient buffers of the served batch), the non-torch memory the budget
//! charges, and the KV budget ("Available KV cache memory": what the pool may take, not the KV
//! cache a batch fills). A scenario vLLM does not serve holds only the weights against them; its
//! other vLLM rows say so and carry no error.

use super::attribution::Kind;
use super::{LightMeasurement, MeasuredTimeline, Measurement, Statistic};
use crate::estimator::engines::EngineKind;
use crate::estimator::{Component, Estimate};
use crate::scenario::Scenario;
use crate::units::MIB;

/// One compared statistic.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// What was measured, e.g. "max_memory_allocated".
    pub statistic: String,
    /// What it is compared with in the estimate.
    pub against: &'static str,
    pub measured: f64,
    pub estimated: f64,
    /// Whether the estimate has a figure of the same meaning; when not (a vLLM activation peak
    /// against a scenario vLLM does not serve), `estimated` is 0 and there is no error.
    pub comparable: bool,
}

impl Row {
    /// (estimated − measured) / measured; `None` when nothing was measured or nothing estimated
    /// means the same.
    pub fn error(&self) -> Option<f64> {
        (self.comparable && self.measured > 0.0)
            .then(|| (self.estimated - self.measured) / self.measured)
    }
}

fn row(statistic: &str, against: &'static str, measured: f64, estimated: f64) -> Row {
    Row {
        statistic: statistic.to_owned(),
        against,
        measured,
        estimated,
        comparable: true,
    }
}

/// What a vLLM row without a counterpart is compared with.
pub const NOT_SERVED_BY_VLLM: &str = "— (the scenario is not served by vLLM)";

/// Estimated reserved bytes: tensor bytes plus the allocator reserve.
fn est_reserved(est: &Estimate) -> f64 {
    est.memory.reserved_peak().get()
}

/// The rows of a measurement against `est`.
pub fn rows(m: &Measurement, est: &Estimate) -> Vec<Row> {
    match m {
        Measurement::Snapshot(t) => snapshot_rows(t, est),
        Measurement::Light(l) => light_rows(l, est),
    }
}

fn snapshot_rows(t: &MeasuredTimeline, est: &Estimate) -> Vec<Row> {
    let mem = &est.memory;
    let mut out = vec![
        row(
            "snapshot allocated peak",
            "tensor peak",
            t.allocated_peak,
            mem.tensor_peak.get(),
        ),
        row(
            "snapshot reserved peak",
            "tensor peak + allocator reserve",
            t.reserved_peak,
            est_reserved(est),
        ),
        row(
            "snapshot fragmentation at the peak",
            "allocator reserve",
            t.fragmentation,
            mem.peak.get(Component::AllocatorReserve).get(),
        ),
    ];
    for k in Kind::ALL {
        if let Some(c) = k.component() {
            let measured = t.at_peak[k as usize];
            let estimated = mem.peak.get(c).get();
            if measured > 0.0 || estimated > 0.0 {
                out.push(row(
                    &format!("at the peak: {}", k.label()),
                    c.label(),
                    measured,
                    estimated,
                ));
            }
        }
    }
    for k in [Kind::BeforeRecording, Kind::Unattributed] {
        let measured = t.at_peak[k as usize];
        if measured > 0.0 {
            out.push(row(
                &format!("at the peak: {}", k.label()),
                "—",
                measured,
                0.0,
            ));
        }
    }
    out
}

fn light_rows(l: &LightMeasurement, est: &Estimate) -> Vec<Row> {
    l.values
        .iter()
        .map(|(s, v)| match light_against(*s, est) {
            Some((against, e)) => row(s.label(), against, *v, e),
            None => Row {
                comparable: false,
                ..row(s.label(), NOT_SERVED_BY_VLLM, *v, 0.0)
            },
        })
        .collect()
}

/// What the estimate holds a light statistic against: vLLM's lines against the scenario's vLLM
/// figures (`EngineFigures`: what vLLM prints, computed by the rules of its release), `None` for
/// those a scenario vLLM does not serve has no figure for (its weights are the same bytes).
fn light_against(s: Statistic, est: &Estimate) -> Option<(&'static str, f64)> {
    let mem = &est.memory;
    let vllm = est.engine.as_ref().filter(|f| f.kind == EngineKind::Vllm);
    Some(match s {
        Statistic::Allocated => ("tensor peak", mem.tensor_peak.get()),
        Statistic::Reserved => ("tensor peak + allocator reserve", est_reserved(est)),
        Statistic::NvidiaSmi => ("GPU total", mem.gpu_total.get()),
        Statistic::VllmWeights => match vllm {
            Some(f) => ("vLLM weights as loaded", f.weights.get()),
            None => ("weights", mem.peak.get(Component::Weights).get()),
        },
        Statistic::VllmActivations => (
            "vLLM profile-run activation peak",
            vllm?.activation_peak.get(),
        ),
        Statistic::VllmNonTorch => ("vLLM non-torch memory", vllm?.non_torch.get()),
        Statistic::VllmKvCache => (
            "vLLM KV budget (Available KV cache memory)",
            vllm?.kv_budget.get(),
        ),
    })
}

/// One proposed change of an overhead assumption.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The scenario field (`overheads.…`).
    pub field: &'static str,
    pub from: f64,
    pub to: f64,
    /// Why, in one line.
    pub why: String,
}

/// The overhead changes the measurement implies (empty when it says nothing about them):
/// allocator reserve fraction = (reserved − allocated − the estimate's FSDP stream pools) /
/// allocated at the peak; CUDA context =
/// nvidia-smi − reserved − the NCCL buffers of `est`, the scenario's estimate (when both were
/// measured: both live outside the allocator); workspaces = the snapshot's NCCL/cuBLAS blocks.
pub fn calibration(m: &Measurement, sc: &Scenario, est: &Estimate) -> Vec<Change> {
    let o = &sc.overheads;
    let (allocated, reserved, smi, workspaces) = match m {
        Measurement::Snapshot(t) => (
            Some(t.allocated_peak),
            Some(t.reserved_at_peak),
            None,
            Some(t.at_peak[Kind::Workspaces as usize]),
        ),
        Measurement::Light(l) => (
            l.get(Statistic::Allocated),
            l.get(Statistic::Reserved),
            l.get(Statistic::NvidiaSmi),
            None,
        ),
    };
    let mut out = Vec::new();
    // llama.cpp has no caching allocator: the fraction does not apply to it
    // (`memory::reserve_fraction`).
    if let (Some(a), Some(r)) = (allocated, reserved)
        && a > 0.0
        && r >= a
        && !sc.runs_on_llamacpp()
    {
        // What the estimate reserves beyond the fraction and the workspace (FSDP's side-stream
        // pools) is already counted: the fraction takes the rest.
        let m = &est.memory;
        let plain = crate::estimator::memory::reserve_bytes(o, m.tensor_peak.get(), 0.0);
        let pools = (m.peak.get(Component::AllocatorReserve).get() - plain).max(0.0);
        let f = ((r - a - pools) / a).clamp(0.0, 1.0);
        out.push(Change {
            field: "overheads.allocator_reserve_fraction",
            from: o.allocator_reserve_fraction,
            to: f,
            why: if pools > 0.0 {
                format!(
                    "measured reserved − allocated, less the estimate's FSDP stream pools = {:.1} \
                     % of allocated",
                    f * 100.0
                )
            } else {
                format!(
                    "measured reserved − allocated = {:.1} % of allocated",
                    f * 100.0
                )
            },
        });
    }
    if let (Some(r), Some(n)) = (reserved, smi)
        && n > r
    {
        let nccl = est.memory.peak.get(Component::NcclBuffers).get();
        out.push(Change {
            field: "overheads.cuda_context_mib",
            from: o.cuda_context_mib,
            to: ((n - r - nccl) / MIB - o.cuda_kernels_mib).max(0.0),
            why: "nvidia-smi − max_memory_reserved − the NCCL buffers − the kernels loaded during the run (overheads.cuda_kernels_mib): the rest of what lives outside the allocator".to_owned(),
        });
    }
    if let Some(w) = workspaces.filter(|w| *w > 0.0) {
        out.push(Change {
            field: "overheads.workspace_mib",
            from: o.workspace_mib,
            to: w / MIB,
            why: "NCCL / cuBLAS workspace blocks live at the measured peak".to_owned(),
        });
    }
    out.retain(|c| (c.to - c.from).abs() > 1e-9 * c.from.abs().max(1.0));
    out
}

/// Applies `changes` to `sc` (the caller records the undo step).
pub fn apply(changes: &[Change], sc: &mut Scenario) {
    for c in changes {
        match c.field {
            "overheads.allocator_reserve_fraction" => {
                sc.overheads.allocator_reserve_fraction = c.to
            }
            "overheads.cuda_context_mib" => sc.overheads.cuda_context_mib = c.to,
            "overheads.workspace_mib" => sc.overheads.workspace_mib = c.to,
            _ => {}
        }
    }
}
