//! A serving engine's memory as the GPU holds it. vLLM and SGLang allocate their whole KV pool at
//! startup and keep it (as llama.cpp keeps its KV buffer of `n_ctx` cells), so the scenario's
//! requests live inside that pool: what `nvidia-smi` shows, what another process on the GPU can
//! still have, and whether the engine starts are the pool's, not the requests'.
//!
//! - Every phase's KV cache is the pool: vLLM `num_gpu_blocks` × bytes per block, SGLang
//!   `(max_total_num_tokens + page) × cell` plus its recurrent-state pool (`EngineFigures::kv_pool`,
//!   `state_pool`; docs/engines/vllm.md §1, sglang.md §1). Requests beyond the pool wait
//!   (`Diagnostic::RequestsBeyondEnginePool`). With pipeline stages, vLLM's every stage class holds
//!   the common block count × its own bytes per block (`EngineFigures::stages`, vllm.md §8), and
//!   the reported peak is the class that then holds the most. SGLang's ranks' pools are not
//!   modelled: its limiting stage shows the larger of the pool and the requests' KV, the other
//!   classes the requests' KV.
//! - vLLM: the instance holds what its budget charged: the weights, the profiled activation peak,
//!   non-torch memory, CUDA graphs and the pool (vllm.md §1 step 5; about `total ×
//!   gpu_memory_utilization`, less where 0.34's margin rule cuts it), beside the CUDA context (its
//!   baseline is taken after the context exists). The part no tensor of the step fills is shown as
//!   allocator reserve.
//! - SGLang reserves `mem_fraction_static` of the free memory for weights and pools and leaves the
//!   rest to activations and CUDA graphs (sglang.md §1): the step's own transients and the usual
//!   allocator reserve stay as the memory estimate counts them.
//! - Neither spills to a second memory tier (`strategies.second_tier`): requests beyond the pool
//!   wait for free blocks.

use super::figures::{EngineFigures, EngineKind};
use crate::estimator::resolve::Resolved;
use crate::estimator::{Component, Diagnostic, Diagnostics, MemoryEstimate};
use crate::hardware::GpuId;
use crate::scenario::{GpuChoice, Overheads};
use crate::units::Bytes;

/// Rewrites an engine scenario's memory to what the engine holds (see the module doc), then its
/// fit: the reserved total against the usable memory, and the engine starting at all
/// (`EngineFigures::too_small`, marked by `refusals::check`).
pub fn apply(f: &EngineFigures, r: &Resolved, m: &mut MemoryEstimate, d: &mut Diagnostics) {
    let o = &r.scenario.overheads;
    if f.stages.iter().any(Option::is_some) {
        per_stage_pools(f, r, m, d);
    } else {
        one_pool(f, o, m, d);
    }
    m.offloaded.second_tier = Bytes(0.0);
    d.remove(Diagnostic::FitsOnlyWithSecondTier);
    m.tensor_peak = m.peak.tensor_total();
    m.gpu_total = m.peak.total();
    m.headroom = Bytes(m.capacity.get() - m.gpu_total.get());
    m.fits = m.headroom.get() >= 0.0 && !f.too_small;
    if m.headroom.get() >= 0.0 {
        d.remove(Diagnostic::DoesNotFit);
    } else {
        d.insert(Diagnostic::DoesNotFit);
    }
}

/// Every phase's KV is `pool`; whether a phase's requests needed more.
fn pool_phases(phases: &mut crate::estimator::PhasePeaks, pool: f64) -> bool {
    let mut beyond = false;
    for b in phases.0.iter_mut().flatten() {
        beyond |= b.get(Component::KvCache).get() > pool * (1.0 + 1e-9);
        b.set(Component::KvCache, Bytes(pool));
    }
    beyond
}

/// One pool for the reported GPU: without pipeline stages, and SGLang's (whose ranks' pools are not
/// modelled: with stages, the other classes keep the requests' own KV, so the shown KV never drops
/// below it and the limiting stage stays the largest).
fn one_pool(f: &EngineFigures, o: &Overheads, m: &mut MemoryEstimate, d: &mut Diagnostics) {
    let pool = f.kv_pool.get() + f.state_pool.get();
    let staged = m.stages.iter().any(Option::is_some);
    let mut beyond = false;
    for b in m.phases.0.iter_mut().flatten() {
        let live = b.get(Component::KvCache).get();
        beyond |= live > pool * (1.0 + 1e-9);
        let shown = if staged { live.max(pool) } else { pool };
        b.set(Component::KvCache, Bytes(shown));
    }
    if beyond {
        d.insert(Diagnostic::RequestsBeyondEnginePool);
    }
    let Some((phase, mut peak)) = m.phases.peak() else {
        return;
    };
    let tensor_peak = peak.tensor_total().get();
    let reserve = match f.kind {
        EngineKind::Vllm => (held_by_vllm(f) - tensor_peak).max(0.0),
        EngineKind::Sglang => crate::estimator::memory::reserve_bytes(o, tensor_peak, 0.0),
    };
    peak.set(Component::NcclBuffers, m.peak.get(Component::NcclBuffers));
    peak.set(Component::CudaContext, f.context);
    peak.set(Component::AllocatorReserve, Bytes(reserve));
    m.peak_phase = Some(phase);
    m.peak = peak;
    // The limiting stage class is the reported peak: its entry in `stages` shows the engine's
    // memory too.
    let limiting = m.limiting_stage().map(|c| c.first);
    for c in m.stages.iter_mut().flatten() {
        if Some(c.first) == limiting {
            c.peak = peak;
            c.peak_phase = Some(phase);
        }
    }
}

/// vLLM with pipeline stages: every class's phases with its own pool (`EngineFigures::stages`) and
/// what its instance holds; the reported peak is the class that then holds the most (under the
/// utilization budget the rank that set the common block count, which fills its budget; with
/// `kv_cache_memory_bytes` every rank's pool budget is the same and the rank with the most weights
/// or activations may hold more).
fn per_stage_pools(f: &EngineFigures, r: &Resolved, m: &mut MemoryEstimate, d: &mut Diagnostics) {
    let (context, nccl) = (f.context, m.peak.get(Component::NcclBuffers));
    let each = crate::estimator::memory::all_stage_phases(r, m);
    let mut best: Option<(u32, f64)> = None;
    let mut beyond = false;
    for (i, (slot, phases)) in f.stages.iter().zip(each).enumerate() {
        let (Some(share), Some(Some(class)), Some(mut phases)) =
            (slot, m.stages.get(i).copied(), phases)
        else {
            continue;
        };
        beyond |= pool_phases(&mut phases, share.pool.get());
        let Some((phase, mut peak)) = phases.peak() else {
            continue;
        };
        let reserve = (share.held.get() - peak.tensor_total().get()).max(0.0);
        peak.set(Component::CudaContext, context);
        peak.set(Component::NcclBuffers, nccl);
        peak.set(Component::AllocatorReserve, Bytes(reserve));
        let total = peak.total().get();
        if best.is_none_or(|(_, t)| total > t) {
            best = Some((class.first, total));
            m.phases = phases;
            m.peak = peak;
            m.peak_phase = Some(phase);
        }
        if let Some(c) = m.stages[i].as_mut() {
            c.peak = peak;
            c.peak_phase = Some(phase);
        }
    }
    if let Some((first, _)) = best {
        m.peak_stage = first;
    }
    if beyond {
        d.insert(Diagnostic::RequestsBeyondEnginePool);
    }
}

/// What a vLLM instance holds: every term its budget charged, and the pool it allocated.
fn held_by_vllm(f: &EngineFigures) -> f64 {
    f.weights.get()
        + f.activation_peak.get()
        + f.non_torch.get()
        + f.cudagraph.get()
        + f.kv_pool.get()
}

/// The memory an engine scenario holds on its own GPU: [`apply`] on a copy of `mem`, the memory
/// estimate before it (the requests' own memory). `None` unless served by vLLM or SGLang.
pub fn held(r: &Resolved, mem: &MemoryEstimate) -> Option<MemoryEstimate> {
    let f = super::figures::of(r, mem)?;
    let mut m = *mem;
    let mut d = Diagnostics::default();
    apply(&f, r, &mut m, &mut d);
    Some(m)
}

/// The same on another catalog GPU (the comparison's rows): the engine's figures with that GPU's
/// device memory, the fit against its usable memory (the weights and the KV per request do not
/// depend on the GPU).
pub fn on_gpu(r: &Resolved, mem: &MemoryEstimate, id: GpuId) -> Option<MemoryEstimate> {
    // Checked before the copy: the comparison asks for every catalog GPU of every scenario.
    if !super::figures::applies(r) {
        return None;
    }
    let mut other = r.clone();
    other.scenario.gpu = GpuChoice::Catalog(id);
    let mut m = *mem;
    m.capacity = crate::hardware::usable(id);
    held(&other, &m)
}

/// The same on a memory technology's what-if device (the comparison's technology rows), a GPU of
/// `capacity` bytes: the engine sizes its budget from that device as from a custom GPU's memory
/// (read whole, no runtime reserve), and the fit is against all of it.
pub fn on_capacity(
    r: &Resolved,
    mem: &MemoryEstimate,
    capacity: crate::units::Bytes,
) -> Option<MemoryEstimate> {
    if !super::figures::applies(r) {
        return None;
    }
    let mut other = r.clone();
    other.scenario.gpu = GpuChoice::Custom(crate::scenario::CustomGpu {
        memory_gb: capacity.get() / crate::units::GIB,
        ..crate::scenario::CustomGpu::unnamed()
    });
    let mut m = *mem;
    m.capacity = capacity;
    held(&other, &m)
}
