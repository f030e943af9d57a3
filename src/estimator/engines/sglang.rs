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

/// Prefill CUDA-graph sizes captured up to `max_bs` tokens (0.5.23 `arg_groups/cuda_graph_hook.py`
/// `generate_prefill_cuda_graph_batch_sizes`: 4…32 by 4, 48…256 by 16, 288…512 by 32, 576…1,024 by
/// 64, 1,280…4,096 by 256, then 4,608… by 512, each kept if ≤ `max_bs`: 42 sizes up to 2,048
/// tokens, 50 up to 4,096, 58 up to 8,192, 74 up to 16,384).
fn prefill_graph_sizes(max_bs: f64) -> f64 {
    // (first, last, step) of each run.
    const RUNS: [(f64, f64, f64); 6] = [
        (4.0, 32.0, 4.0),
        (48.0, 256.0, 16.0),
        (288.0, 512.0, 32.0),
        (576.0, 1024.0, 64.0),
        (1280.0, 4096.0, 256.0),
        (4608.0, f64::INFINITY, 512.0),
    ];
    RUNS.iter()
        .map(|&(first, last, step)| {
            let top = last.min(max_bs);
            if top < first {
                0.0
            } else {
                ((top - first) / step).floor() + 1.0
            }
        })
        .sum()
}

/// The resolved `chunked_prefill_size` and decode CUDA-graph `max_bs` (0.5.23
/// `arg_groups/memory_hook.py` `handle_gpu_memory_settings`): the user's values when given, else
/// [`tier`]'s; a default `max_bs` above `--max-running-requests` is lowered to it.
pub fn resolved_sizes(s: &Sglang, gpu_mib: f64, tp: f64) -> (f64, f64) {
    let (tier_chunked, tier_bs) = tier(gpu_mib, tp);
    let chunked = if s.chunked_prefill_size > 0 {
        f64::from(s.chunked_prefill_size)
    } else {
        tier_chunked
    };
    let max_bs = if s.cuda_graph_max_bs > 0 {
        f64::from(s.cuda_graph_max_bs)
    } else if s.max_running_requests > 0 {
        tier_bs.min(f64::from(s.max_running_requests))
    } else {
        tier_bs
    };
    (chunked, max_bs)
}

/// The longest prefill forward SGLang runs (`engines::prefill_chunk`): `chunked_prefill_size` as
/// resolved ([`resolved_sizes`]); the scheduler splits longer prompts into chunks of it
/// (`managers/scheduler.py`, `PrefillAdder` with `chunked_prefill_size`, 0.5.23).
pub fn prefill_chunk(s: &Sglang, gpu: &crate::scenario::GpuChoice, tp: f64) -> f64 {
    resolved_sizes(s, device_memory(gpu, s).0, tp).0
}

/// The default `mem_fraction_static` (sglang.md §3): `round((gpu − reserved) / gpu, 3)`, MiB.
/// 0.5.23 (`arg_groups/memory_hook.py` `handle_gpu_memory_settings`, `reserve_for_graph_mb`) reserves
/// `512 + 1.5 · max(chunked_prefill_size, 2048) + tp · pp / 8 · 1024` plus the graphs
/// (`2 · decode max_bs` and 8 MiB per prefill graph size, whose largest is `chunked_prefill_size`,
/// capped by `--max-total-tokens`; MLA: 1.5 GiB instead of the prefill graphs), at least 10 GiB
/// above 60 GiB: the chunk and `max_bs` are the resolved ones ([`resolved_sizes`]), so
/// `--chunked-prefill-size` and `--cuda-graph-max-bs` change it.
///
/// ```
/// use vram_explorer::estimator::engines::sglang::default_fraction;
/// use vram_explorer::scenario::{Sglang, SglangVersion};
/// let s = Sglang { version: SglangVersion::V0_5_23, ..Sglang::default() };
/// // RTX 4090 (24,564 MiB), TP 1: 512 + 1.5 · 4096 + 128 + 2 · 48 + 8 · 50 = 7,280 MiB → 0.704.
/// assert_eq!(default_fraction(&s, 24_564.0, 1.0, 1.0, false), 0.704);
/// // --chunked-prefill-size 2048 --cuda-graph-max-bs 8: 512 + 3,072 + 128 + 16 + 8 · 42 = 4,064 → 0.835.
/// let small = Sglang { chunked_prefill_size: 2048, cuda_graph_max_bs: 8, ..s };
/// assert_eq!(default_fraction(&small, 24_564.0, 1.0, 1.0, false), 0.835);
/// // H100 80GB (81,559 MiB), TP 1: 13,904 MiB (above the 10 GiB floor) → 0.830.
/// assert_eq!(default_fraction(&s, 81_559.0, 1.0, 1.0, false), 0.83);
/// ```
pub fn default_fraction(s: &Sglang, gpu_mib: f64, tp: f64, pp: f64, mla: bool) -> f64 {
    let parallel = tp * pp;
    let reserved = match s.version {
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
            let (chunked, max_bs) = resolved_sizes(s, gpu_mib, tp);
            let prefill_max_bs = if s.max_total_tokens > 0 {
                chunked.min(f64::from(s.max_total_tokens))
            } else {
                chunked
            };
            let graph = if s.disable_cuda_graph {
                0.0
            } else if mla {
                2.0 * max_bs + 1536.0
            } else {
                2.0 * max_bs + 8.0 * prefill_graph_sizes(prefill_max_bs)
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

/// The smallest token pool SGLang starts with. A pool below one `context_len` request is not a
/// startup failure: 0.5.23 `managers/tp_worker.py` `get_worker_info` logs "KV pool holds N tokens,
/// fewer than --context-length C" and caps requests at
/// `max_req_len = min(context_len − 1, max_total_num_tokens − 1)`. It fails when the pool has no
/// token (`model_executor/pool_configurator.py` `__post_init__`: "Not enough memory"), when
/// `max_running_requests = min(…, max_total_num_tokens // 2)` is 0
/// (`mem_cache/kv_cache_configurator.py` `resolve_max_num_reqs`; `tp_worker.py` asserts
/// "max_running_request is zero") or `max_req_len ≤ 0` (`tp_worker.py`: "Memory pool size is too
/// small"): all three are a pool below 2 tokens.
pub const MIN_POOL_TOKENS: f64 = 2.0;

/// The longest request (prompt + generated tokens) SGLang serves whole when its pool is shorter
/// than `context_len`: the scheduler lowers `max_new_tokens` to `max_req_len − input_len − 1`
/// (0.5.23 `managers/scheduler.py`, where it admits a request) with
/// `max_req_len = pool − 1` (see [`MIN_POOL_TOKENS`]), so input + output ≤ pool − 2. `None` when
/// the pool holds `context_len` (the tokenizer's `context_len` limit applies).
pub fn pool_request_limit(f: &EngineFigures) -> Option<f64> {
    (f.kind == EngineKind::Sglang && f.tokens < f.max_model_len)
        .then(|| (f.tokens - MIN_POOL_TOKENS).max(0.0))
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
    let (chunked, _) = resolved_sizes(s, gpu_mib, c.tp);
    let mla = m
        .blocks
        .kinds()
        .iter()
        .any(|k| matches!(k.mixer, MixerShape::Mla(_)));
    let fraction = s
        .mem_fraction_static
        .unwrap_or_else(|| default_fraction(s, gpu_mib, c.tp, c.pp, mla));
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
        held_back: Bytes(0.0),
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
        too_small: tokens < MIN_POOL_TOKENS,
        longest_len: 0.0,
        model_context: 0.0,
        model_context_refused: false,
        latent: mla,
        stages: [None; crate::estimator::MAX_STAGE_CLASSES],
    }
}
