//! vLLM's KV-cache sizing, by release (docs/engines/vllm.md: §1 the startup sequence, §2 the
//! profiling run, §3 pages and blocks, §4 the printed lines, §5 the extensible cache, §6 older
//! rules). Allocation-free.

use super::device;
use super::figures::{EngineFigures, EngineKind, StagePool};
use super::layout::{CacheBytes, CacheKind, Layout};
use super::profile::{forward_peak, sampler_peak};
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::num::ceil;
use crate::estimator::resolve::Resolved;
use crate::estimator::{Component, MAX_STAGE_CLASSES, MemoryEstimate, StageRole};
use crate::scenario::{GpuChoice, Vllm, VllmVersion};
use crate::units::{Bytes, GIB, MIB};

/// Non-PyTorch memory that appears after the baseline snapshot on one GPU (0.6.5+ and V1: CUDA
/// context growth as kernels load, cuBLAS workspaces), GiB: the figure a V0 0.8 log prints for
/// Llama-2-7B on an H100, TP 1 ("non_torch_memory takes 0.16GiB", gateway-api-inference-extension
/// #550). NCCL buffers with TP > 1 are not added (no published figure).
pub const NON_TORCH_GROWTH_GIB: f64 = 0.16;

/// The CUDA-graph estimate when `cudagraph_memory_gib` is not given, GiB: the one published
/// reading (club-3090 #104, vLLM 0.21: "--gpu-memory-utilization=0.8800 is equivalent to …
/// =0.8592" on a 23.58 GiB RTX 3090: (0.88 − 0.8592) × 23.58 = 0.49 GiB).
pub const CUDAGRAPH_DEFAULT_GIB: f64 = 0.49;

/// The extensible cache's safety margin floor (vllm 0.34 `v1/worker/extensible_kv_cache.py`
/// `measure_kv_cache_bytes`: max(1 GiB, 0.75 × transient peak)).
const EXTENSIBLE_MARGIN_GIB: f64 = 1.0;

/// `--max-num-batched-tokens` and `--max-num-seqs` as resolved: the given values, else the
/// defaults by device (vllm 0.34 `engine/arg_utils.py` for `vllm serve`: ≥ 160 GiB 16,384 / 1,024;
/// ≥ 70 GiB and not an A100 8,192 / 1,024; else 2,048 / 256). V0 profiles without chunked prefill:
/// max(max_model_len, 2,048) tokens over 256 sequences (chunked above 32,768 tokens).
fn batch_defaults(v: &Vllm, gpu: &GpuChoice, total: f64, max_len: f64) -> (f64, f64) {
    let a100 = matches!(
        gpu,
        GpuChoice::Catalog(
            crate::hardware::GpuId::A100Pcie80
                | crate::hardware::GpuId::A100Sxm80
                | crate::hardware::GpuId::A100Pcie40
                | crate::hardware::GpuId::A100Sxm40
        )
    );
    let (tokens, seqs) = if v.version.is_v0() {
        let t = if max_len > 32_768.0 {
            2048.0
        } else {
            max_len.max(2048.0)
        };
        (t, 256.0)
    } else if total >= 160.0 * GIB {
        (16_384.0, 1024.0)
    } else if total >= 70.0 * GIB && !a100 {
        (8192.0, 1024.0)
    } else {
        (2048.0, 256.0)
    };
    let pick = |x: u32, d: f64| if x > 0 { f64::from(x) } else { d };
    (
        pick(v.max_num_batched_tokens, tokens),
        pick(v.max_num_seqs, seqs),
    )
}

/// The longest prefill forward vLLM runs (`engines::prefill_chunk`): `max_num_batched_tokens` as
/// resolved, the scheduler's token budget per step, which V1 fills with chunks of longer prompts
/// (chunked prefill is always on in V1, `vllm/v1/core/sched/scheduler.py`); V0's default budget is
/// `max_model_len` up to 32,768 tokens ([`batch_defaults`]), so only longer contexts chunk there.
pub fn prefill_chunk(v: &Vllm, gpu: &GpuChoice, i: &crate::scenario::Inference) -> f64 {
    let (total, max_len) = total_and_max_len(v, gpu, i);
    batch_defaults(v, gpu, total, max_len).0
}

/// The device memory vLLM reads (`total_gpu_memory_gib`, else the driver's total) and
/// `max_model_len` (else one request: prompt + generated tokens).
fn total_and_max_len(v: &Vllm, gpu: &GpuChoice, i: &crate::scenario::Inference) -> (f64, f64) {
    let catalog = gpu.with_spec(|g| g.capacity.bytes().get());
    let total = v
        .total_gpu_memory_gib
        .map_or_else(|| device::driver_total_bytes(gpu, catalog), |g| g * GIB);
    let max_len = if v.max_model_len > 0 {
        f64::from(v.max_model_len)
    } else {
        f64::from(i.prompt_tokens) + f64::from(i.generated_tokens)
    };
    (total, max_len)
}

/// The default `gpu_memory_utilization` of a release (vllm.md §1, §6).
fn default_utilization(v: &Vllm) -> f64 {
    match v.version {
        VllmVersion::V0_6_4 | VllmVersion::V0 | VllmVersion::V1 => 0.9,
        VllmVersion::V1_21 => 0.92,
        VllmVersion::V1_34 if v.kv_cache_memory_bytes > 0 => 0.92,
        VllmVersion::V1_34 => 1.0,
    }
}

/// The rotary embedding's cos/sin cache, part of "weights as loaded": one
/// `max_position_embeddings × head_dim` table in the model's type per model (vllm
/// `model_executor/layers/rotary_embedding.py` `_compute_cos_sin_cache`, cached by `get_rope`).
/// Llama-3.1-8B: 131,072 × 128 × 2 B = 32 MiB, the gap between its 14.96 GiB of parameters and the
/// 14.9888 GiB vLLM #10517 printed.
fn rotary_cache(r: &Resolved) -> f64 {
    let t = &r.scenario.model.transformer;
    if t.positions != crate::scenario::PositionKind::Rotary {
        return 0.0;
    }
    let e = Ctx::of(r).ec;
    f64::from(t.max_positions) * f64::from(r.model.head_dim) * e
}

/// The KV budget of one GPU (vllm.md §1 step 5, §5, §6) and the terms it subtracts.
struct Budget {
    total: f64,
    u: f64,
    requested: f64,
    weights: f64,
    act: f64,
    non_torch: f64,
    graphs: f64,
    held_back: f64,
    available: f64,
}

/// Device memory no engine measurement counts as its own but `mem_get_info` does not show free:
/// the CUDA context present at vLLM's init snapshot (`overheads.cuda_context_mib`) and the NCCL
/// buffers of the communicators this GPU joins (`memory::nccl`; none at TP = PP = 1).
fn outside_the_engine(r: &Resolved) -> f64 {
    let c = Ctx::of(r);
    r.scenario.overheads.cuda_context_mib * MIB
        + crate::estimator::memory::nccl::bytes(&r.scenario, &c)
}

fn budget(r: &Resolved, stage_weights: f64, v: &Vllm, act: f64, total: f64) -> Budget {
    let o = &r.scenario.overheads;
    let u = v
        .gpu_memory_utilization
        .unwrap_or_else(|| default_utilization(v));
    let requested = ceil(total * u);
    let weights = stage_weights + rotary_cache(r);
    let non_torch = match v.version {
        // 0.6.4 charges everything the driver shows outside torch's allocated bytes after the
        // profile run (`worker.py` `determine_num_available_blocks`): the context with the kernels
        // loaded so far. torch 2.5's cuBLAS workspace comes from the caching allocator
        // (`CublasHandlePool.cpp`), so it is inside the torch peak, not here.
        VllmVersion::V0_6_4 => o.running_context_mib() * MIB,
        _ => NON_TORCH_GROWTH_GIB * GIB,
    };
    let graphs_profiled = matches!(v.version, VllmVersion::V1_21 | VllmVersion::V1_34);
    let graphs = if graphs_profiled && !v.enforce_eager {
        v.cudagraph_memory_gib.unwrap_or(CUDAGRAPH_DEFAULT_GIB) * GIB
    } else {
        0.0
    };
    let non_kv = weights + non_torch + graphs;
    let plain = requested - non_kv - act;
    let available = if v.kv_cache_memory_bytes > 0 {
        v.kv_cache_memory_bytes as f64
    } else if v.version == VllmVersion::V1_34 {
        // `headroom = free + committed_kv` (`measure_kv_cache_bytes`): free memory after warmup,
        // so beside what the engine used since its init snapshot it also lacks what was there
        // before it, the CUDA context, and the communicators' NCCL buffers.
        let margin = (EXTENSIBLE_MARGIN_GIB * GIB).max(0.75 * act);
        let headroom = total - outside_the_engine(r) - non_kv;
        (requested - non_kv).min(headroom - margin) - act
    } else {
        plain
    };
    Budget {
        total,
        u,
        requested,
        weights,
        act,
        non_torch,
        graphs,
        held_back: if v.kv_cache_memory_bytes > 0 {
            0.0
        } else {
            (plain - available).max(0.0)
        },
        available: available.max(0.0),
    }
}

/// Blocks of the budget and what vLLM prints from them (vllm.md §3.4–§3.5, §4).
struct Blocks {
    block_tokens: f64,
    block_bytes: f64,
    groups: f64,
    per_request: f64,
}

fn blocks(layout: &Layout, v: &Vllm, max_len: f64, batched: f64) -> Blocks {
    let default_block = if v.version == VllmVersion::V1_34 {
        64.0
    } else {
        16.0
    };
    let block = if v.block_size > 0 {
        f64::from(v.block_size)
    } else {
        default_block
    };
    let (attn, state) = (layout.attention_bytes(), layout.state_bytes());
    // Hybrid: the attention block is raised to a multiple of 16 whose page holds a state page.
    let block = if attn > 0.0 && state > block * attn {
        16.0 * ceil(state / (16.0 * attn))
    } else {
        block
    };
    let page = if attn > 0.0 { block * attn } else { state };
    let buckets = layout.buckets();
    let (lo, hi) = buckets
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), b| {
            (lo.min(b.layers), hi.max(b.layers))
        });
    // Group size: the smallest bucket, or the largest if it is < 1.5 × the smallest (§3.4); V0 has
    // one group of all attention layers.
    let group = if v.version.is_v0() {
        layout.attention_layers()
    } else if hi < 1.5 * lo {
        hi
    } else {
        lo
    };
    let group = group.max(1.0);
    let mut groups = 0.0;
    let mut per_request = 0.0;
    for b in buckets {
        let n = if v.version.is_v0() {
            if b.kind == CacheKind::State { 0.0 } else { 1.0 }
        } else {
            ceil(b.layers / group)
        };
        let pages = match b.kind {
            CacheKind::Full | CacheKind::None => ceil(max_len / block),
            CacheKind::Window(w) if !v.version.is_v0() => {
                ceil((w - 1.0 + batched).min(max_len) / block) + 1.0
            }
            CacheKind::Window(_) => ceil(max_len / block),
            CacheKind::State => 1.0 + if v.enable_prefix_caching { 1.0 } else { 0.0 },
        };
        groups += n;
        per_request += n * pages;
    }
    if v.version.is_v0() {
        groups = 1.0;
        per_request = ceil(max_len / block);
    }
    Blocks {
        block_tokens: block,
        block_bytes: group * page,
        groups: groups.max(1.0),
        per_request: per_request.max(1.0),
    }
}

/// Whether vLLM starts at the scenario's `max_model_len` and at the model's context
/// (docs/engines/vllm.md §4.1).
struct Refusal {
    too_small: bool,
    longest_len: f64,
    model_context: f64,
    model_context_refused: bool,
}

impl Refusal {
    fn of(
        layout: &Layout,
        v: &Vllm,
        k: &Blocks,
        available: f64,
        max_len: f64,
        batched: f64,
        sc: &crate::scenario::Scenario,
    ) -> Refusal {
        let refuses = |len: f64| refuses_at(layout, v, k, available, len, batched);
        let too_small = refuses(max_len);
        // vLLM's default `max_model_len` is the model's context (`_get_and_verify_max_len`),
        // where the scenario's 0 sizes the engine to the request.
        let context = f64::from(sc.model.transformer.max_positions);
        let model_context = if v.max_model_len == 0 && !v.version.is_v0() && context > max_len {
            context
        } else {
            0.0
        };
        let model_context_refused = model_context > 0.0 && refuses(model_context);
        let upper = if too_small { max_len } else { model_context };
        Refusal {
            too_small,
            longest_len: if too_small || model_context_refused {
                longest_len(layout, v, k, available, upper, batched)
            } else {
                0.0
            },
            model_context,
            model_context_refused,
        }
    }
}

/// Whether vLLM refuses to start at `max_model_len` = `len`: one request's KV cache (Σ layers of
/// page × pages, i.e. pages per request × bytes per block) is more than the budget
/// (`check_enough_kv_cache_memory`, vllm 0.34 `v1/core/kv_cache_planning.py`; 0.34 first takes
/// off the null block the block pool keeps, `_pool_bytes_per_block`).
fn refuses_at(
    layout: &Layout,
    v: &Vllm,
    k: &Blocks,
    available: f64,
    len: f64,
    batched: f64,
) -> bool {
    let usable = if v.version == VllmVersion::V1_34 {
        available - k.block_bytes
    } else {
        available
    };
    usable <= 0.0 || blocks(layout, v, len, batched).per_request * k.block_bytes > usable
}

/// The longest `max_model_len` up to `upper` whose one request the budget holds, as vLLM's
/// `estimate_max_model_len` bisects it for its error ("the estimated maximum model length is
/// N"); 0 when not one token fits.
fn longest_len(
    layout: &Layout,
    v: &Vllm,
    k: &Blocks,
    available: f64,
    upper: f64,
    batched: f64,
) -> f64 {
    let fits = |len: f64| !refuses_at(layout, v, k, available, len, batched);
    let (mut lo, mut hi) = (1.0_f64, upper.floor());
    if !fits(lo) {
        return 0.0;
    }
    // 64 halvings cover any f64 range; a u32 length needs at most 32.
    for _ in 0..64 {
        if lo >= hi {
            break;
        }
        let mid = ((lo + hi + 1.0) / 2.0).floor();
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1.0;
        }
    }
    lo
}

/// Attention layers an EAGLE head or MTP module adds to the KV-cache spec: one of the target's
/// shape (vllm 0.34 `v1/spec_decode/eagle.py` loads the drafter into the same forward context, so
/// `get_kv_cache_spec` pages its layer with the target's). A separate draft model's cache is not
/// added here (its layers have their own shape and group).
fn drafter_layers(sc: &crate::scenario::Scenario) -> f64 {
    use crate::scenario::SpeculativeMethod;
    match sc.inference.features.speculative.method {
        SpeculativeMethod::Eagle | SpeculativeMethod::Mtp => 1.0,
        SpeculativeMethod::Off | SpeculativeMethod::DraftModel => 0.0,
    }
}

/// One GPU's stage as vLLM profiles it: its weights, its layers, and whether it is the last
/// pipeline rank (the only one that runs the sampler and, here, the EAGLE/MTP drafter).
#[derive(Clone, Copy)]
struct Stage {
    weights: f64,
    layers: f64,
    last: bool,
}

/// vLLM's figures for the scenario: one GPU of each pipeline stage class sized by its own budget,
/// then every rank held to the smallest block count (vllm 0.34 `v1/core/kv_cache_planning.py`
/// `get_kv_cache_configs`, steps 4–5: "Change the num_blocks of each worker to the smallest among
/// all workers and shrink tensor sizes proportionally"). The figures are the rank that sets that
/// count; `stages` holds every class's pool and what its instance holds. Without pipeline stages,
/// the one GPU.
pub fn figures(r: &Resolved, mem: &MemoryEstimate, v: &Vllm) -> EngineFigures {
    let m = &r.model;
    let whole = Stage {
        weights: mem.peak.get(Component::Weights).get(),
        layers: ceil(f64::from(m.layers.max(1)) / f64::from(r.pp_stages.max(1))),
        last: true,
    };
    if mem.stage_classes().next().is_none() {
        return stage_figures(r, v, whole);
    }
    let mut each = [None; MAX_STAGE_CLASSES];
    for (slot, c) in each.iter_mut().zip(&mem.stages) {
        *slot = c.map(|c| {
            stage_figures(
                r,
                v,
                Stage {
                    weights: c.peak.get(Component::Weights).get(),
                    layers: f64::from(c.layers),
                    last: c.role == StageRole::Last,
                },
            )
        });
    }
    let Some(mut f) = each
        .iter()
        .flatten()
        .copied()
        .reduce(|a, b| if b.blocks < a.blocks { b } else { a })
    else {
        return stage_figures(r, v, whole);
    };
    for (slot, g) in f.stages.iter_mut().zip(each) {
        *slot = g.map(|g| {
            let pool = f.blocks * g.block_bytes;
            StagePool {
                pool: Bytes(pool),
                held: Bytes(
                    g.weights.get()
                        + g.activation_peak.get()
                        + g.non_torch.get()
                        + g.cudagraph.get()
                        + pool,
                ),
            }
        });
    }
    f
}

/// vLLM's figures for one GPU of `stage`.
fn stage_figures(r: &Resolved, v: &Vllm, stage: Stage) -> EngineFigures {
    let (sc, m) = (&r.scenario, &r.model);
    let c = Ctx::of(r);
    let (total, max_len) = total_and_max_len(v, &sc.gpu, &sc.inference);
    let (batched, seqs) = batch_defaults(v, &sc.gpu, total, max_len);
    let sampler = if stage.last {
        sampler_peak(m, batched.min(seqs))
    } else {
        0.0
    };
    let act = forward_peak(m, batched, c.tp, c.ec).max(sampler);
    let b = budget(r, stage.weights, v, act, total);
    let e = CacheBytes {
        kv: v.kv_cache_dtype.bytes(c.ec),
        conv: c.ec,
        ssm: if v.mamba_ssm_cache_fp32 { 4.0 } else { c.ec },
    };
    let drafter = if stage.last { drafter_layers(sc) } else { 0.0 };
    let layout = Layout::of(m, stage.layers + drafter, c.tp, e);
    let k = blocks(&layout, v, max_len, batched);
    let num_blocks = if k.block_bytes > 0.0 {
        (b.available / k.block_bytes).floor()
    } else {
        0.0
    };
    let concurrency = num_blocks / k.per_request;
    let refusal = Refusal::of(&layout, v, &k, b.available, max_len, batched, sc);
    let tokens = match v.version {
        VllmVersion::V0_6_4 | VllmVersion::V0 => num_blocks * k.block_tokens,
        VllmVersion::V1 => (num_blocks / k.groups).floor() * k.block_tokens,
        VllmVersion::V1_21 | VllmVersion::V1_34 => (concurrency * max_len).floor(),
    };
    let printed_concurrency = if v.version.is_v0() {
        num_blocks * k.block_tokens / max_len
    } else {
        concurrency
    };
    EngineFigures {
        kind: EngineKind::Vllm,
        version: v.version.label(),
        device: Bytes(b.total),
        fraction: b.u,
        requested: Bytes(b.requested),
        weights: Bytes(b.weights),
        activation_peak: Bytes(b.act),
        non_torch: Bytes(b.non_torch),
        context: Bytes(match v.version {
            VllmVersion::V0_6_4 => 0.0,
            _ => r.scenario.overheads.cuda_context_mib * MIB,
        }),
        cudagraph: Bytes(b.graphs),
        state_pool: Bytes(0.0),
        held_back: Bytes(b.held_back),
        kv_budget: Bytes(b.available),
        kv_pool: Bytes(num_blocks * k.block_bytes),
        block_tokens: k.block_tokens,
        block_bytes: k.block_bytes,
        blocks: num_blocks,
        cpu_blocks: if v.version.is_v0() && k.block_bytes > 0.0 {
            (v.swap_space * GIB / k.block_bytes).floor()
        } else {
            0.0
        },
        tokens,
        max_model_len: max_len,
        max_concurrency: (printed_concurrency * 100.0).round() / 100.0,
        max_requests: seqs,
        batched_tokens: batched,
        too_small: refusal.too_small,
        longest_len: refusal.longest_len,
        model_context: refusal.model_context,
        model_context_refused: refusal.model_context_refused,
        latent: false,
        stages: [None; MAX_STAGE_CLASSES],
    }
}
