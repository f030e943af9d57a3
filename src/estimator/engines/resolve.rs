//! The engines' settings moved into their ranges (`inference.engine.*` in `scenario::validate::
//! RANGES`), destructured without `..` so a new field does not compile until it is handled here.

use crate::estimator::Diagnostics;
use crate::scenario::validate::{FieldRange, field};
use crate::scenario::{ServingEngine, Sglang, Vllm};

macro_rules! r {
    ($name:literal) => {
        const { field($name) }
    };
}

fn f(name: &'static FieldRange, x: f64, default: f64, d: &mut Diagnostics) -> f64 {
    name.clamp(x, default, d)
}

fn opt(name: &'static FieldRange, x: Option<f64>, d: &mut Diagnostics) -> Option<f64> {
    x.map(|x| name.clamp(x, name.max, d))
}

fn u(name: &'static FieldRange, x: u32, d: &mut Diagnostics) -> u32 {
    name.clamp_u32(x, d)
}

/// The engine with its numbers in range (other engines have none).
pub fn engine(e: ServingEngine, d: &mut Diagnostics) -> ServingEngine {
    match e {
        ServingEngine::Vllm(v) => ServingEngine::Vllm(vllm(&v, d)),
        ServingEngine::Sglang(s) => ServingEngine::Sglang(sglang(&s, d)),
        other => other,
    }
}

fn vllm(v: &Vllm, d: &mut Diagnostics) -> Vllm {
    let Vllm {
        version,
        gpu_memory_utilization,
        max_model_len,
        max_num_seqs,
        max_num_batched_tokens,
        block_size,
        kv_cache_dtype,
        enforce_eager,
        cudagraph_memory_gib,
        enable_prefix_caching,
        kv_cache_memory_bytes,
        swap_space,
        mamba_ssm_cache_fp32,
        total_gpu_memory_gib,
    } = *v;
    let bytes = r!("inference.engine.vllm.kv_cache_memory_bytes");
    Vllm {
        version,
        gpu_memory_utilization: opt(
            r!("inference.engine.vllm.gpu_memory_utilization"),
            gpu_memory_utilization,
            d,
        ),
        max_model_len: u(r!("inference.engine.vllm.max_model_len"), max_model_len, d),
        max_num_seqs: u(r!("inference.engine.vllm.max_num_seqs"), max_num_seqs, d),
        max_num_batched_tokens: u(
            r!("inference.engine.vllm.max_num_batched_tokens"),
            max_num_batched_tokens,
            d,
        ),
        block_size: u(r!("inference.engine.vllm.block_size"), block_size, d),
        kv_cache_dtype,
        enforce_eager,
        cudagraph_memory_gib: opt(
            r!("inference.engine.vllm.cudagraph_memory_gib"),
            cudagraph_memory_gib,
            d,
        ),
        enable_prefix_caching,
        kv_cache_memory_bytes: f(bytes, kv_cache_memory_bytes as f64, 0.0, d) as u64,
        swap_space: f(r!("inference.engine.vllm.swap_space"), swap_space, 4.0, d),
        mamba_ssm_cache_fp32,
        total_gpu_memory_gib: opt(
            r!("inference.engine.vllm.total_gpu_memory_gib"),
            total_gpu_memory_gib,
            d,
        ),
    }
}

fn sglang(s: &Sglang, d: &mut Diagnostics) -> Sglang {
    let Sglang {
        version,
        mem_fraction_static,
        max_running_requests,
        chunked_prefill_size,
        page_size,
        kv_cache_dtype,
        context_length,
        max_total_tokens,
        cuda_graph_max_bs,
        disable_cuda_graph,
        swa_full_tokens_ratio,
        mamba_full_memory_ratio,
        gpu_memory_mib,
    } = *s;
    let dflt = Sglang::default();
    Sglang {
        version,
        mem_fraction_static: opt(
            r!("inference.engine.sglang.mem_fraction_static"),
            mem_fraction_static,
            d,
        ),
        max_running_requests: u(
            r!("inference.engine.sglang.max_running_requests"),
            max_running_requests,
            d,
        ),
        chunked_prefill_size: u(
            r!("inference.engine.sglang.chunked_prefill_size"),
            chunked_prefill_size,
            d,
        ),
        page_size: u(r!("inference.engine.sglang.page_size"), page_size, d),
        kv_cache_dtype,
        context_length: u(
            r!("inference.engine.sglang.context_length"),
            context_length,
            d,
        ),
        max_total_tokens: u(
            r!("inference.engine.sglang.max_total_tokens"),
            max_total_tokens,
            d,
        ),
        cuda_graph_max_bs: u(
            r!("inference.engine.sglang.cuda_graph_max_bs"),
            cuda_graph_max_bs,
            d,
        ),
        disable_cuda_graph,
        swa_full_tokens_ratio: f(
            r!("inference.engine.sglang.swa_full_tokens_ratio"),
            swa_full_tokens_ratio,
            dflt.swa_full_tokens_ratio,
            d,
        ),
        mamba_full_memory_ratio: f(
            r!("inference.engine.sglang.mamba_full_memory_ratio"),
            mamba_full_memory_ratio,
            dflt.mamba_full_memory_ratio,
            d,
        ),
        gpu_memory_mib: opt(
            r!("inference.engine.sglang.gpu_memory_mib"),
            gpu_memory_mib,
            d,
        ),
    }
}
