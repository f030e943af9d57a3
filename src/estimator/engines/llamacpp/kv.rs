//! The KV cache per device (llama.cpp@0c1e57098 `src/llama-context.cpp` context sizes,
//! `src/llama-kv-cache.cpp` the cache's tensors; docs/engines/llamacpp.md §4).

use super::Buffers;
use super::dims::{Buft, Dims, tensor_bytes};
use super::placement::Placement;
use crate::scenario::{CacheType, LlamaCpp};
use crate::tensor::GgufType;

/// The ggml type of a `-ctk` / `-ctv` value.
pub const fn ggml_type(t: CacheType) -> GgufType {
    match t {
        CacheType::F32 => GgufType::F32,
        CacheType::F16 => GgufType::F16,
        CacheType::Bf16 => GgufType::Bf16,
        CacheType::Q8_0 => GgufType::Q8_0,
        CacheType::Q4_0 => GgufType::Q4_0,
        CacheType::Q4_1 => GgufType::Q4_1,
        CacheType::Iq4Nl => GgufType::Iq4Nl,
        CacheType::Q5_0 => GgufType::Q5_0,
        CacheType::Q5_1 => GgufType::Q5_1,
    }
}

/// Context cells, batch and micro-batch as llama.cpp sets them: `n_ctx = GGML_PAD(-c, 256)`; per
/// sequence `GGML_PAD(n_ctx / -np, 256)` and `n_ctx` = that × `-np` (llama-context.cpp ~290–305);
/// `n_batch = min(n_ctx, -b)`, `n_ubatch = min(n_batch, -ub)`. `-c 0` (the model's training
/// context, not known here) takes `fallback_ctx`.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::kv::sizes;
/// use vram_explorer::scenario::LlamaCpp;
/// let s = LlamaCpp { n_ctx: 8192, n_parallel: 4, ..LlamaCpp::default() };
/// assert_eq!(sizes(&s, 0), (8192, 2048, 512, 4));
/// let s = LlamaCpp { n_ctx: 5000, n_batch: 512, ..LlamaCpp::default() };
/// assert_eq!(sizes(&s, 0), (5120, 512, 512, 1));
/// ```
pub fn sizes(s: &LlamaCpp, fallback_ctx: u32) -> (u32, u32, u32, u32) {
    let asked = if s.n_ctx == 0 { fallback_ctx } else { s.n_ctx };
    let n_seq = s.n_parallel.max(1);
    let n_ctx = pad256(asked.max(1));
    let per_seq = pad256(n_ctx / n_seq).max(256);
    let n_ctx = per_seq.saturating_mul(n_seq);
    let n_batch = s.n_batch.max(1).min(n_ctx);
    let n_ubatch = s.n_ubatch.max(1).min(n_batch);
    (n_ctx, n_batch, n_ubatch, n_seq)
}

const fn pad256(x: u32) -> u32 {
    x.div_ceil(256).saturating_mul(256)
}

/// Fills the cells and each device's KV buffer: every layer's K (`n_embd_k_gqa × cells` of `-ctk`)
/// and V (of `-ctv`) on its layer's device, or all on the CPU with `-nkvo`.
pub fn place(b: &mut Buffers, d: &Dims, p: &Placement, s: &LlamaCpp, fallback_ctx: u32) {
    let (n_ctx, n_batch, n_ubatch, n_seq) = sizes(s, fallback_ctx);
    b.n_ctx = n_ctx;
    b.n_batch = n_batch;
    b.n_ubatch = n_ubatch;
    b.n_seq = n_seq;
    let (tk, tv) = (ggml_type(s.cache_type_k), ggml_type(s.cache_type_v));
    let cells = u64::from(n_ctx);
    let per_row = d.n_embd_kv();
    for il in 0..d.n_layer {
        let dev = if s.no_kv_offload { None } else { p.device(il) };
        let buft = if dev.is_some() { Buft::Cuda } else { Buft::Cpu };
        let k = tensor_bytes(tk, per_row, cells, buft);
        let v = tensor_bytes(tv, per_row, cells, buft);
        b.k_bytes += k;
        b.v_bytes += v;
        match dev.and_then(|i| b.dev.get_mut(i)) {
            Some(g) => g.kv += k + v,
            None => b.host_kv += k + v,
        }
    }
}
