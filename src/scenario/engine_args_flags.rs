//! The flags of `vllm serve` (vllm 0.34 `engine/arg_utils.py`, `entrypoints/openai/cli_args.py`)
//! and `sglang.launch_server` (sglang 0.5.23 `server_args.py`) that a pasted command may carry, each
//! classed as applied, ignored (no effect on memory) or not modelled (docs/engines/README.md).

use super::engine_args::EngineArgs;
use super::{Dtype, KvCacheDtype, ServingEngine, Sglang, Vllm};

/// A setting a flag writes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Field {
    Model,
    Tp,
    Pp,
    Dp,
    Dtype,
    GpuMemoryUtilization,
    MaxModelLen,
    MaxNumSeqs,
    MaxNumBatchedTokens,
    BlockSize,
    KvCacheDtype,
    KvCacheMemoryBytes,
    SwapSpace,
    MambaSsmCacheDtype,
    EnforceEager,
    EnablePrefixCaching,
    NoEnablePrefixCaching,
    MemFractionStatic,
    MaxRunningRequests,
    ChunkedPrefillSize,
    PageSize,
    ContextLength,
    MaxTotalTokens,
    CudaGraphMaxBs,
    SwaFullTokensRatio,
    MambaFullMemoryRatio,
    DisableCudaGraph,
    SpeculativeConfig,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Class {
    /// A setting with a value.
    Applied(Field),
    /// A switch (no value).
    Switch(Field),
    /// Does not change memory; `true` if it takes a value.
    Ignored(bool),
    /// Changes memory in a way the estimate does not model; `true` if it takes a value.
    NotModelled(bool),
}

impl Class {
    pub(super) fn takes_value(self) -> bool {
        match self {
            Class::Applied(_) => true,
            Class::Switch(_) => false,
            Class::Ignored(v) | Class::NotModelled(v) => v,
        }
    }
}

/// An integer with an optional `k`/`m`/`g` (×1000…) or `K`/`M`/`G` (×1024…) suffix, as vLLM reads
/// `--max-model-len 32k` and `--kv-cache-memory-bytes 8G`.
fn count(v: &str) -> Result<f64, String> {
    let (num, mult) = match v.chars().last() {
        Some('k') => (&v[..v.len() - 1], 1e3),
        Some('m') => (&v[..v.len() - 1], 1e6),
        Some('g') => (&v[..v.len() - 1], 1e9),
        Some('K') => (&v[..v.len() - 1], 1024.0),
        Some('M') => (&v[..v.len() - 1], 1_048_576.0),
        Some('G') => (&v[..v.len() - 1], 1_073_741_824.0),
        _ => (v, 1.0),
    };
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok((x * mult).round()),
        _ => Err(format!("\"{v}\" is not a non-negative number")),
    }
}

fn u32_of(v: &str) -> Result<u32, String> {
    let x = count(v)?;
    if x > f64::from(u32::MAX) {
        return Err(format!("{v} is too large"));
    }
    Ok(x as u32)
}

fn f64_of(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("\"{v}\" is not a number")),
    }
}

/// `--gpu-memory-utilization`: vLLM refuses a value outside (0, 1] at startup (`CacheConfig`:
/// "GPU memory utilization must be less than 1.0", `vllm/config.py` `_verify_args` in the V0
/// releases, a `gt=0, le=1` field from the V1 ones), so the line is refused here too.
fn fraction(v: &str) -> Result<f64, String> {
    let x = f64_of(v)?;
    if x > 0.0 && x <= 1.0 {
        Ok(x)
    } else {
        Err(format!(
            "--gpu-memory-utilization {v}: vLLM takes a fraction of the GPU's memory in (0, 1]"
        ))
    }
}

fn kv_dtype(v: &str) -> Result<KvCacheDtype, String> {
    KvCacheDtype::parse(v).ok_or_else(|| {
        format!("\"{v}\" is not a KV-cache type this estimate knows (auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2)")
    })
}

fn dtype(a: &mut EngineArgs, v: &str) -> Result<(), String> {
    a.dtype = match v {
        "auto" => None,
        "bfloat16" | "bf16" => Some(Dtype::Bf16),
        "float16" | "half" | "fp16" => Some(Dtype::Fp16),
        "float32" | "float" | "fp32" => Some(Dtype::Fp32),
        _ => {
            return Err(format!(
                "\"{v}\" is not a model type (auto, bfloat16, float16, float32)"
            ));
        }
    };
    Ok(())
}

fn vllm(a: &mut EngineArgs) -> Result<&mut Vllm, String> {
    match &mut a.engine {
        ServingEngine::Vllm(v) => Ok(v),
        _ => Err("a vLLM flag on an SGLang command".to_owned()),
    }
}

fn sglang(a: &mut EngineArgs) -> Result<&mut Sglang, String> {
    match &mut a.engine {
        ServingEngine::Sglang(s) => Ok(s),
        _ => Err("an SGLang flag on a vLLM command".to_owned()),
    }
}

/// Writes `field` from the flag's value `v` (`""` for a switch).
pub(super) fn set(a: &mut EngineArgs, field: Field, v: &str) -> Result<(), String> {
    use Field as F;
    match field {
        F::Model => a.model = Some(v.to_owned()),
        F::Tp => a.tp = Some(u32_of(v)?.max(1)),
        F::Pp => a.pp = Some(u32_of(v)?.max(1)),
        F::Dp => a.dp = Some(u32_of(v)?.max(1)),
        F::Dtype => dtype(a, v)?,
        F::GpuMemoryUtilization => vllm(a)?.gpu_memory_utilization = Some(fraction(v)?),
        F::MaxModelLen if v.trim() == "-1" || v.trim().eq_ignore_ascii_case("auto") => {
            return Err(
                "auto-fit (-1 / auto: vLLM 0.34 fits the longest length the KV cache holds) is not \
                 modelled: give a length (a line without the flag takes the model's context, and \
                 the report names the longest that fits)"
                    .to_owned(),
            );
        }
        F::MaxModelLen => vllm(a)?.max_model_len = u32_of(v)?,
        F::MaxNumSeqs => vllm(a)?.max_num_seqs = u32_of(v)?,
        F::MaxNumBatchedTokens => vllm(a)?.max_num_batched_tokens = u32_of(v)?,
        F::BlockSize => vllm(a)?.block_size = u32_of(v)?,
        F::KvCacheDtype => {
            let d = kv_dtype(v)?;
            match &mut a.engine {
                ServingEngine::Sglang(s) => s.kv_cache_dtype = d,
                _ => vllm(a)?.kv_cache_dtype = d,
            }
        }
        F::KvCacheMemoryBytes => vllm(a)?.kv_cache_memory_bytes = count(v)? as u64,
        F::SwapSpace => vllm(a)?.swap_space = f64_of(v)?,
        F::MambaSsmCacheDtype => vllm(a)?.mamba_ssm_cache_fp32 = v == "float32",
        F::EnforceEager => vllm(a)?.enforce_eager = true,
        F::EnablePrefixCaching => vllm(a)?.enable_prefix_caching = true,
        F::NoEnablePrefixCaching => vllm(a)?.enable_prefix_caching = false,
        F::MemFractionStatic => sglang(a)?.mem_fraction_static = Some(f64_of(v)?),
        F::MaxRunningRequests => sglang(a)?.max_running_requests = u32_of(v)?,
        F::ChunkedPrefillSize => sglang(a)?.chunked_prefill_size = u32_of(v)?,
        F::PageSize => sglang(a)?.page_size = u32_of(v)?.max(1),
        F::ContextLength => sglang(a)?.context_length = u32_of(v)?,
        F::MaxTotalTokens => sglang(a)?.max_total_tokens = u32_of(v)?,
        F::CudaGraphMaxBs => sglang(a)?.cuda_graph_max_bs = u32_of(v)?,
        F::SwaFullTokensRatio => sglang(a)?.swa_full_tokens_ratio = f64_of(v)?,
        F::MambaFullMemoryRatio => sglang(a)?.mamba_full_memory_ratio = f64_of(v)?,
        F::DisableCudaGraph => sglang(a)?.disable_cuda_graph = true,
        F::SpeculativeConfig => {
            vllm(a)?;
            match super::Speculative::from_vllm_config(v)? {
                Some(spec) => a.speculative = Some(spec),
                None => a.not_modelled.push(format!("--speculative-config {v}")),
            }
        }
    }
    Ok(())
}

/// The class of a vLLM flag (dashes, without the leading `--`).
pub(super) fn vllm_flag(name: &str) -> Option<Class> {
    use Class::{Applied, Switch};
    use Field as F;
    Some(match name {
        "model" => Applied(F::Model),
        "tensor-parallel-size" | "tp" => Applied(F::Tp),
        "pipeline-parallel-size" | "pp" => Applied(F::Pp),
        "data-parallel-size" | "dp" => Applied(F::Dp),
        "dtype" => Applied(F::Dtype),
        "gpu-memory-utilization" => Applied(F::GpuMemoryUtilization),
        "max-model-len" => Applied(F::MaxModelLen),
        "max-num-seqs" => Applied(F::MaxNumSeqs),
        "max-num-batched-tokens" => Applied(F::MaxNumBatchedTokens),
        "block-size" => Applied(F::BlockSize),
        "kv-cache-dtype" => Applied(F::KvCacheDtype),
        "kv-cache-memory-bytes" | "kv-cache-memory" => Applied(F::KvCacheMemoryBytes),
        "swap-space" => Applied(F::SwapSpace),
        "mamba-ssm-cache-dtype" => Applied(F::MambaSsmCacheDtype),
        "enforce-eager" => Switch(F::EnforceEager),
        "enable-prefix-caching" => Switch(F::EnablePrefixCaching),
        "speculative-config" => Applied(F::SpeculativeConfig),
        "no-enable-prefix-caching" => Switch(F::NoEnablePrefixCaching),
        _ => return vllm_passive(name),
    })
}

/// vLLM flags that are listed, not applied.
fn vllm_passive(name: &str) -> Option<Class> {
    use Class::{Ignored, NotModelled};
    Some(match name {
        "host"
        | "port"
        | "served-model-name"
        | "api-key"
        | "tokenizer"
        | "tokenizer-mode"
        | "download-dir"
        | "seed"
        | "uvicorn-log-level"
        | "chat-template"
        | "tool-call-parser"
        | "reasoning-parser"
        | "generation-config"
        | "load-format"
        | "revision"
        | "tokenizer-revision"
        | "allowed-origins"
        | "root-path"
        | "max-log-len"
        | "distributed-executor-backend"
        | "response-role"
        | "ssl-keyfile"
        | "ssl-certfile"
        | "config-format"
        | "override-generation-config"
        | "middleware" => Ignored(true),
        "trust-remote-code"
        | "disable-log-requests"
        | "enable-log-requests"
        | "disable-log-stats"
        | "enable-auto-tool-choice"
        | "disable-frontend-multiprocessing"
        | "enable-chunked-prefill"
        | "no-enable-chunked-prefill"
        | "disable-fastapi-docs"
        | "headless" => Ignored(false),
        "quantization"
        | "max-loras"
        | "max-lora-rank"
        | "max-cpu-loras"
        | "limit-mm-per-prompt"
        | "cpu-offload-gb"
        | "max-seq-len-to-capture"
        | "compilation-config"
        | "hf-overrides"
        | "num-gpu-blocks-override"
        | "rope-scaling"
        | "kv-transfer-config"
        | "decode-context-parallel-size" => NotModelled(true),
        "enable-lora"
        | "disable-custom-all-reduce"
        | "enable-expert-parallel"
        | "disable-hybrid-kv-cache-manager" => NotModelled(false),
        _ => return None,
    })
}

/// The class of an SGLang flag (dashes, without the leading `--`).
pub(super) fn sglang_flag(name: &str) -> Option<Class> {
    use Class::{Applied, Switch};
    use Field as F;
    Some(match name {
        "model-path" | "model" => Applied(F::Model),
        "tp-size" | "tp" => Applied(F::Tp),
        "pp-size" => Applied(F::Pp),
        "dp-size" | "dp" => Applied(F::Dp),
        "dtype" => Applied(F::Dtype),
        "mem-fraction-static" => Applied(F::MemFractionStatic),
        "max-running-requests" => Applied(F::MaxRunningRequests),
        "chunked-prefill-size" => Applied(F::ChunkedPrefillSize),
        "page-size" => Applied(F::PageSize),
        "kv-cache-dtype" => Applied(F::KvCacheDtype),
        "context-length" => Applied(F::ContextLength),
        "max-total-tokens" => Applied(F::MaxTotalTokens),
        "cuda-graph-max-bs" => Applied(F::CudaGraphMaxBs),
        "swa-full-tokens-ratio" => Applied(F::SwaFullTokensRatio),
        "mamba-full-memory-ratio" => Applied(F::MambaFullMemoryRatio),
        "disable-cuda-graph" => Switch(F::DisableCudaGraph),
        _ => return sglang_passive(name),
    })
}

/// SGLang flags that are listed, not applied.
fn sglang_passive(name: &str) -> Option<Class> {
    use Class::{Ignored, NotModelled};
    Some(match name {
        "host" | "port" | "served-model-name" | "api-key" | "tokenizer-path" | "log-level"
        | "random-seed" | "chat-template" | "tool-call-parser" | "reasoning-parser"
        | "attention-backend" | "load-format" | "revision" | "sampling-backend"
        | "grammar-backend" | "schedule-policy" | "max-prefill-tokens" | "download-dir" => {
            Ignored(true)
        }
        "trust-remote-code"
        | "enable-metrics"
        | "disable-radix-cache"
        | "enable-torch-compile"
        | "log-requests"
        | "skip-server-warmup"
        | "enable-cache-report" => Ignored(false),
        "quantization"
        | "speculative-algorithm"
        | "speculative-draft-model-path"
        | "speculative-num-steps"
        | "speculative-eagle-topk"
        | "speculative-num-draft-tokens"
        | "ep-size"
        | "lora-paths"
        | "max-loras-per-batch"
        | "cpu-offload-gb"
        | "max-mamba-cache-size" => NotModelled(true),
        "enable-dp-attention" | "enable-ep-moe" | "enable-deepep-moe" => NotModelled(false),
        _ => return None,
    })
}
