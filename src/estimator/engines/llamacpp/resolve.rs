//! Clamps llama.cpp's settings into `scenario::validate::RANGES` (the resolve pass of
//! `estimator::resolve` calls [`resolve_engine`] on the inference section's engine).

use crate::estimator::Diagnostics;
use crate::scenario::validate::field;
use crate::scenario::{LlamaCpp, ServingEngine};

/// The engine with its numbers in range (other engines unchanged).
pub fn resolve_engine(e: ServingEngine, d: &mut Diagnostics) -> ServingEngine {
    match e {
        ServingEngine::LlamaCpp(l) => ServingEngine::LlamaCpp(settings(&l, d)),
        other => other,
    }
}

fn settings(l: &LlamaCpp, d: &mut Diagnostics) -> LlamaCpp {
    let LlamaCpp {
        n_ctx,
        n_batch,
        n_ubatch,
        n_gpu_layers,
        tensor_split,
        cache_type_k,
        cache_type_v,
        flash_attn,
        no_kv_offload,
        n_parallel,
        kv_unified,
        mmap,
        cpu_only,
        swa_full,
        fit,
        fit_target_mib,
        fit_ctx,
        cpu_moe,
        n_cpu_moe,
        n_cpu_ffn,
        other_overrides,
        op_offload,
        sched_max_copies,
        legacy_graph,
        legacy_placement,
        host_memory_gb_s,
        host_tflops,
    } = l;
    let ngl_range = const { field("inference.engine.llamacpp.n_gpu_layers") };
    let ngl = if *n_gpu_layers < 0 {
        -1
    } else {
        ngl_range.clamp(f64::from(*n_gpu_layers), -1.0, d) as i32
    };
    let split_range = const { field("inference.engine.llamacpp.tensor_split") };
    let split = tensor_split.map(|x| split_range.clamp(f64::from(x), 0.0, d) as f32);
    LlamaCpp {
        n_ctx: const { field("inference.engine.llamacpp.n_ctx") }.clamp_u32(*n_ctx, d),
        n_batch: const { field("inference.engine.llamacpp.n_batch") }.clamp_u32(*n_batch, d),
        n_ubatch: const { field("inference.engine.llamacpp.n_ubatch") }.clamp_u32(*n_ubatch, d),
        n_gpu_layers: ngl,
        tensor_split: split,
        cache_type_k: *cache_type_k,
        cache_type_v: *cache_type_v,
        flash_attn: *flash_attn,
        no_kv_offload: *no_kv_offload,
        n_parallel: const { field("inference.engine.llamacpp.n_parallel") }
            .clamp_u32(*n_parallel, d),
        kv_unified: *kv_unified,
        mmap: *mmap,
        cpu_only: *cpu_only,
        swa_full: *swa_full,
        fit: *fit,
        fit_target_mib: const { field("inference.engine.llamacpp.fit_target_mib") }
            .clamp_u32(*fit_target_mib, d),
        fit_ctx: const { field("inference.engine.llamacpp.fit_ctx") }.clamp_u32(*fit_ctx, d),
        cpu_moe: *cpu_moe,
        n_cpu_moe: const { field("inference.engine.llamacpp.n_cpu_moe") }.clamp_u32(*n_cpu_moe, d),
        n_cpu_ffn: const { field("inference.engine.llamacpp.n_cpu_ffn") }.clamp_u32(*n_cpu_ffn, d),
        other_overrides: *other_overrides,
        op_offload: *op_offload,
        sched_max_copies: const { field("inference.engine.llamacpp.sched_max_copies") }
            .clamp_u32(*sched_max_copies, d),
        legacy_graph: *legacy_graph,
        legacy_placement: *legacy_placement,
        host_memory_gb_s: const { field("inference.engine.llamacpp.host_memory_gb_s") }.clamp(
            *host_memory_gb_s,
            LlamaCpp::default().host_memory_gb_s,
            d,
        ),
        host_tflops: const { field("inference.engine.llamacpp.host_tflops") }.clamp(
            *host_tflops,
            LlamaCpp::default().host_tflops,
            d,
        ),
    }
}
