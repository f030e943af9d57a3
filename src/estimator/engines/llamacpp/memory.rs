//! The llama.cpp buffers as the estimate's per-GPU phases: the GPU with the most bytes holds its
//! model buffer (weights), KV buffer (KV cache) and compute buffer (transient) through prefill
//! and decode alike (llama.cpp reserves all three at load); the host's share is reported as
//! offloaded to host memory.

use super::Buffers;
use crate::estimator::{Breakdown, Component, Phase, PhasePeaks, Resolved};
use crate::units::Bytes;

/// The phases of a llama.cpp scenario and its host bytes (`None` for other engines).
pub fn phases(r: &Resolved) -> Option<(PhasePeaks, f64)> {
    let b = super::buffers(r)?;
    Some((of(&b), b.host_total() as f64))
}

/// The phases of these buffers.
pub fn of(b: &Buffers) -> PhasePeaks {
    let mut out = PhasePeaks::default();
    let mut bd = Breakdown::default();
    if let Some((_, g)) = b.largest_gpu() {
        bd.set(Component::Weights, Bytes(g.model as f64));
        bd.set(Component::KvCache, Bytes(g.kv as f64));
        bd.set(Component::Transient, Bytes(g.compute as f64));
    }
    out.set(Phase::Prefill, bd);
    out.set(Phase::Decode, bd);
    out
}
