//! SGLang's token-pool sizing (docs/engines/sglang.md: §1 the startup sequence, §2 the cell size,
//! §3 the default `mem_fraction_static`). Allocation-free.

use super::device;
use super::figures::{EngineFigures, EngineKind};
use super::layout::{CacheBytes, CacheKind, Layout};
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::model::blocks::MixerShape;
use crate::estimator::num::ceil;
use crate::estimator::resolve::Resolved;
use crate::estimator::{Component, MemoryEstimate};
use crate::scenario::{Sglang, SglangVersion};
use crate::units::{Bytes, MIB};

/// `chunked_prefill_size` and the decode CUDA-graph `max_bs` by GPU size (sglang.md §3 table,
/// 0.5.23 `arg_groups/memory_hook.py`), for `gpu_mib` of nvidia-smi capacity and `tp`.
pub fn tier(gpu_mib: f64, tp: f64) -> (f64, f64) {
    let gib = gpu_mib / 1024.0;
    let wide = tp >= 4.0;
    if gib < 20.0 {
        (2048.0, 8.0)
    } else if gib < 35.0 {
        (4096.0, if wide { 160.0 } else { 48.0 })
    } else if gib < 60.0 {
        (4096.0, if wide { 160.0 } else { 32.0 })
    } else if gib < 160.0 {
        (8192.0, if wide { 512.0 } else { 256.0 })
    } else {
        (16_384.0, 512.0)
    }
}

/// Prefill CUDA-graph sizes captured up to `tokens` (0.5.23 `generate_prefill_cuda_graph_batch_sizes`:
/// 42 sizes up to 2,048 tokens, 50 up to 4,096, 58 up to 8,192, 74 up to 16,384).
fn prefill_graph_sizes(tokens: f64) -> f64 {
    if tokens <= 2048.0 {
        42.0
    } else if tokens <= 4096.0 {
        50.0
    } else if tokens <= 8192.0 {
        58.0
    } else {
        74.0
    }
}

/// The default `mem_fraction_static` (sglang.md §3): `round((gpu − reserved) / gpu, 3)`, MiB.
///
/// ```
/// use vram_explorer::estimator::engines::sglang::default_fraction;
/// use vram_explorer::scenario::SglangVersion;
/// // RTX 4090 (24,564 MiB), TP 1: 512 + 1.5 · 4096 + 128 + 2 · 48 + 8 · 50 = 7,280 MiB → 0.704.
/// assert_eq!(default_fraction(SglangVersion::V0_5_23, 24_564.0, 1.0, 1.0, false, true), 0.704);
/// // H100 80GB (81,559 MiB), TP 1: 13,904 MiB (above the 10 GiB floor) → 0.830.
/// assert_eq!(default_fraction(SglangVersion::V0_5_23, 81_559.0, 1.0, 1.0, false, true), 0.83);
/// ```
pub fn default_fraction(
    version: SglangVersion,
    gpu_mib: f64,
    tp: f64,
    pp: f64,
    mla: bool,
    graphs: bool,
) -> f64 {
    let parallel = tp * pp;
    let reserved = match version {
        SglangVersion::V0_4_9 => {
            let gib = gpu_mib / 1024.0;
            let r = if gib < 35.0 {
                2.8 + parallel / 10.0
            } else if gib < 90.0 {
                9.5 + parallel / 2.0
            } else if gib < 160.0 {
                12.0 + parallel / 2.0
            } else {
                32.0
            };
            r * 1024.0
        }
        SglangVersion::V0_5_23 => {
            let (chunked, max_bs) = tier(gpu_mib, tp);
            let graph = if !graphs {
                0.0
            } else if mla {
                2.0 * max_bs + 1536.0
            } else {
                2.0 * max_bs + 8.0 * prefill_graph_sizes(chunked)
            };
            let r = 512.0 + 1.5 * chunked.max(2048.0) + parallel / 8.0 * 1024.0 + graph;
            if gpu_mib > 60.0 * 1024.0 {
                r.max(10_240.0)
            } else {
                r
            }
        }
    };
    (((gpu_mib - reserved) / gpu_mib) * 1000.0).round() / 1000.0
}

/// nvidia-smi's capacity (MiB) and the driver's total (bytes): `gpu_memory_mib` if given (the total
/// then less the driver's reserve), else the catalog's (`device`).
fn device_memory(gpu: &crate::scenario::GpuChoice, s: &Sglang) -> (f64, f64) {
    let catalog = gpu.with_spec(|g| g.capacity.bytes().get());
    match s.gpu_memory_mib {
        Some(mib) => (
            mib,
            (mib * MIB - device::DRIVER_RESERVE_GIB * crate::units::GIB).max(0.0),
        ),
        None => (
            device::smi_total_mib(gpu, catalog),
            device::driver_total_bytes(gpu, catalog),
        ),
    }
}

/// Bytes one token costs across the GPU's layers (§2): full-attention layers whole,
/// sliding-window layers at `swa_full_tokens_ratio` (their pool is that share of the full one),
/// recurrent layers not at all (their state has its own pool).
fn cell_bytes(layout: &Layout, s: &Sglang) -> f64 {
    layout
        .buckets()
        .iter()
        .map(|b| match b.kind {
            CacheKind::Full | CacheKind::None => b.bytes * b.layers,
            CacheKind::Window(_) => s.swa_full_tokens_ratio * b.bytes * b.layers,
            CacheKind::State => 0.0,
        })
        .sum()
}

/// `max_total_num_tokens`: the budget over the cell, rounded down to whole pages, capped by
/// `--max-total-tokens` (§1 step 5). SGLang's integer division never overflows; here a vanishing
/// cell (every layer sliding-window at a near-zero `swa_full_tokens_ratio`) would give an
/// infinite count, so it stops at 2^53, the largest integer an `f64` holds exactly.
fn pool_tokens(budget: f64, cell: f64, page: f64, cap: u32) -> f64 {
    const MAX_TOKENS: f64 = 9_007_199_254_740_992.0;
    let tokens = if cell > 0.0 {
        ((budget / cell / page).floor() * page).min(MAX_TOKENS)
    } else {
        0.0
    };
    if cap > 0 {
        tokens.min(f64::from(cap))
    } else {
        tokens
    }
}

/// SGLang's figures for one GPU of the scenario.
pub fn figures(r: &Resolved, mem: &MemoryEstimate, s: &Sglang) -> EngineFigures {
    let (sc, m) = (&r.scenario, &r.model);
    let c = Ctx::of(r);
    let (gpu_mib, driver) = device_memory(&sc.gpu, s);
    // Free memory after the distributed initialisation: the driver's total less the CUDA context
    // and the communicators' NCCL buffers.
    let outside = sc.overheads.cuda_context_mib * MIB + mem.peak.get(Component::NcclBuffers).get();
    let pre = (driver - outside).max(0.0);
    let weights = mem.peak.get(Component::Weights).get();
    let (tier_chunked, _) = tier(gpu_mib, c.tp);
    let chunked = if s.chunked_prefill_size > 0 {
        f64::from(s.chunked_prefill_size)
    } else {
        tier_chunked
    };
    let mla = m
        .blocks
        .kinds()
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Mla(_)));
    let fraction = s.mem_fraction_static.unwrap_or_else(|| {
        default_fraction(s.version, gpu_mib, c.tp, c.pp, mla, !s.disable_cuda_graph)
    });
    let rest = (pre - weights - pre * (1.0 - fraction)).max(0.0);
    let e = CacheBytes {
        kv: s.kv_cache_dtype.bytes(c.ec),
        conv: c.ec,
        ssm: c.ec,
    };
    let stage_layers = ceil(f64::from(m.layers.max(1)) / f64::from(r.pp_stages.max(1)));
    let layout = Layout::of(m, stage_layers, c.tp, e);
    let cell = cell_bytes(&layout, s);
    let r_state = s.mamba_full_memory_ratio;
    let state_pool = if layout.state_bytes() > 0.0 {
        rest * r_state / (1.0 + r_state)
    } else {
        0.0
    };
    let kv_rest = rest - state_pool;
    let page = f64::from(s.page_size.max(1));
    let tokens = pool_tokens(kv_rest, cell, page, s.max_total_tokens);
    let context = if s.context_length > 0 {
        f64::from(s.context_length)
    } else {
        f64::from(sc.inference.prompt_tokens) + f64::from(sc.inference.generated_tokens)
    };
    let running = if s.max_running_requests > 0 {
        f64::from(s.max_running_requests)
    } else {
        (tokens / context.max(1.0) * 512.0)
            .floor()
            .clamp(2048.0, 4096.0)
    };
    EngineFigures {
        kind: EngineKind::Sglang,
        version: s.version.label(),
        device: Bytes(pre),
        fraction,
        requested: Bytes(pre * fraction),
        weights: Bytes(weights),
        activation_peak: Bytes(0.0),
        non_torch: Bytes(driver - pre),
        context: Bytes(sc.overheads.running_context_mib() * MIB),
        cudagraph: Bytes(0.0),
        state_pool: Bytes(state_pool),
        kv_budget: Bytes(rest),
        kv_pool: Bytes((tokens + page) * cell),
        block_tokens: page,
        block_bytes: cell,
        blocks: tokens / page,
        cpu_blocks: 0.0,
        tokens,
        max_model_len: context,
        max_concurrency: ((tokens / context.max(1.0)) * 100.0).round() / 100.0,
        max_requests: running.min((tokens / 2.0).floor()),
        batched_tokens: chunked,
        too_small: tokens < context,
        latent: mla,
        stages: [None; crate::estimator::MAX_STAGE_CLASSES],
    }
}
