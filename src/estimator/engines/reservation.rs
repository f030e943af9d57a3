//! A serving engine's memory as the GPU holds it. vLLM and SGLang allocate their whole KV pool at
//! startup and keep it (as llama.cpp keeps its KV buffer of `n_ctx` cells), so the scenario's
//! requests live inside that pool: what `nvidia-smi` shows, what another process on the GPU can
//! still have, and whether the engine starts are the pool's, not the requests'.
//!
//! - Every phase's KV cache is the pool: vLLM `num_gpu_blocks` × bytes per block, SGLang
//!   `(max_total_num_tokens + page) × cell` plus its recurrent-state pool (`EngineFigures::kv_pool`,
//!   `state_pool`; docs/engines/vllm.md §1, sglang.md §1). Requests beyond the pool wait
//!   (`Diagnostic::RequestsBeyondEnginePool`). With pipeline stages the limiting stage shows the
//!   larger of the pool and the requests' KV, and the other stage classes keep the requests' KV
//!   (each stage's own pool is not modelled yet).
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
use crate::units::{Bytes, MIB};

/// Rewrites an engine scenario's memory to what the engine holds (see the module doc), then its
/// fit: the reserved total against the usable memory, and the engine starting at all
/// (`EngineFigures::too_small`, marked by `refusals::check`).
pub fn apply(f: &EngineFigures, o: &Overheads, m: &mut MemoryEstimate, d: &mut Diagnostics) {
    let pool = f.kv_pool.get() + f.state_pool.get();
    // With pipeline stages the other stage classes keep the requests' own KV (their pools are not
    // modelled), so the shown KV never drops below it and the limiting stage stays the largest.
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
    // Requests beyond the pool wait for blocks; nothing spills to a second memory tier (the spill
    // the memory estimate computed is the requests' own memory over the GPU).
    m.offloaded.second_tier = Bytes(0.0);
    d.remove(Diagnostic::FitsOnlyWithSecondTier);
    let Some((phase, mut peak)) = m.phases.peak() else {
        return;
    };
    let tensor_peak = peak.tensor_total();
    let usual_reserve = o.allocator_reserve_fraction * tensor_peak.get() + o.workspace_mib * MIB;
    let reserve = match f.kind {
        EngineKind::Vllm => (held_by_vllm(f) - tensor_peak.get()).max(0.0),
        EngineKind::Sglang => usual_reserve,
    };
    peak.set(Component::CudaContext, m.peak.get(Component::CudaContext));
    peak.set(Component::AllocatorReserve, Bytes(reserve));
    m.peak_phase = Some(phase);
    m.peak = peak;
    // The limiting stage class is the reported peak (the other classes keep the requests' KV, as
    // the module doc says): its entry in `stages` shows the engine's memory too.
    let limiting = m.limiting_stage().map(|c| c.first);
    for c in m.stages.iter_mut().flatten() {
        if Some(c.first) == limiting {
            c.peak = peak;
            c.peak_phase = Some(phase);
        }
    }
    m.tensor_peak = tensor_peak;
    m.gpu_total = peak.total();
    m.headroom = Bytes(m.capacity.get() - m.gpu_total.get());
    m.fits = m.headroom.get() >= 0.0 && !f.too_small;
    if m.headroom.get() >= 0.0 {
        d.remove(Diagnostic::DoesNotFit);
    } else {
        d.insert(Diagnostic::DoesNotFit);
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
    apply(&f, &r.scenario.overheads, &mut m, &mut d);
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
