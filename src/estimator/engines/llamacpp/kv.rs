//! The KV cache per device (llama.cpp@0c1e57098 `src/llama-context.cpp` context sizes,
//! `src/llama-kv-cache.cpp` the cache's tensors; docs/engines/llamacpp.md §4).

use super::Buffers;
use super::dims::{Buft, Dims, tensor_bytes};
use super::layer_kinds::LayerKinds;
use super::placement::Placement;
use crate::estimator::model::blocks::{LayerKind, MixerShape};
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

/// Context cells, batch and micro-batch as llama.cpp sets them: `n_ctx = GGML_PAD(-c, 256)`;
/// without `--kv-unified` per sequence `GGML_PAD(n_ctx / -np, 256)` and `n_ctx` = that × `-np`
/// (llama-context.cpp ~290–305; with it every sequence may use all `n_ctx` cells);
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
/// let s = LlamaCpp { n_ctx: 1000, n_parallel: 3, ..LlamaCpp::default() };
/// assert_eq!(sizes(&s, 0).0, 1536); // 3 streams of 512 cells
/// let s = LlamaCpp { n_ctx: 1000, n_parallel: 3, kv_unified: true, ..LlamaCpp::default() };
/// assert_eq!(sizes(&s, 0).0, 1024); // one stream
/// ```
pub fn sizes(s: &LlamaCpp, fallback_ctx: u32) -> (u32, u32, u32, u32) {
    let asked = if s.n_ctx == 0 { fallback_ctx } else { s.n_ctx };
    let n_seq = s.n_parallel.max(1);
    let n_ctx = pad256(asked.max(1));
    let n_ctx = if s.kv_unified {
        n_ctx
    } else {
        pad256(n_ctx / n_seq).max(256).saturating_mul(n_seq)
    };
    let n_batch = s.n_batch.max(1).min(n_ctx);
    let n_ubatch = s.n_ubatch.max(1).min(n_batch);
    (n_ctx, n_batch, n_ubatch, n_seq)
}

/// The most sequences a llama.cpp context holds: `LLAMA_MAX_SEQ` (`src/llama-cparams.h`, 256 since
/// llama.cpp PR #15916, September 2025, and so at the vendored ggml-org/llama.cpp@0c1e57098).
/// `llama_context`'s constructor (`src/llama-context.cpp`) throws "n_seq_max must be <= 256" for
/// more; llama-server's `-np` is `n_seq_max` (`common/common.cpp`
/// `common_context_params_to_llama`), with or without `--kv-unified`.
pub const LLAMA_MAX_SEQ: u32 = 256;

/// `-np`'s valid range's end (`scenario::LlamaCpp::n_parallel`): [`LLAMA_MAX_SEQ`].
pub const MAX_SLOTS: u32 = LLAMA_MAX_SEQ;

/// The most `-np` slots (at most [`MAX_SLOTS`], llama.cpp's `LLAMA_MAX_SEQ`) at the current `-c`
/// whose `GGML_PAD(n_ctx / -np, 256)` cells hold `request` tokens; 0 if not one does
/// (llama-context.cpp ~290–305: `n_ctx_seq` rounded up to 256 cells a slot). With `--kv-unified`
/// the slots share the `n_ctx` cells: as many requests as they hold side by side, also at most
/// `LLAMA_MAX_SEQ` sequences.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::kv::slots_holding;
/// use vram_explorer::scenario::LlamaCpp;
/// let l = LlamaCpp { n_ctx: 32768, ..LlamaCpp::default() };
/// assert_eq!(slots_holding(&l, 17_000), 1);
/// assert_eq!(slots_holding(&l, 4096), 8);
/// assert_eq!(slots_holding(&l, 40_000), 0);
/// let u = LlamaCpp { kv_unified: true, ..l };
/// assert_eq!(slots_holding(&u, 17_000), 1);
/// assert_eq!(slots_holding(&u, 4000), 8);
/// // 65,536 cells hold 546 requests of 120 tokens, but llama.cpp runs at most 256 sequences.
/// let many = LlamaCpp { n_ctx: 65_536, ..LlamaCpp::default() };
/// assert_eq!(slots_holding(&many, 120), 256);
/// assert_eq!(slots_holding(&LlamaCpp { kv_unified: true, ..many }, 120), 256);
/// ```
pub fn slots_holding(l: &LlamaCpp, request: u64) -> u32 {
    let request = request.max(1);
    let fallback = u32::try_from(request).unwrap_or(u32::MAX);
    if l.kv_unified {
        let (n_ctx, ..) = sizes(l, fallback);
        return u32::try_from(u64::from(n_ctx) / request)
            .unwrap_or(u32::MAX)
            .min(MAX_SLOTS);
    }
    let (n_ctx, ..) = sizes(
        &LlamaCpp {
            n_parallel: 1,
            ..*l
        },
        fallback,
    );
    let fits = |np: u32| {
        let (n_ctx_np, _, _, seqs) = sizes(
            &LlamaCpp {
                n_parallel: np,
                ..*l
            },
            fallback,
        );
        u64::from(n_ctx_np / seqs.max(1)) >= request
    };
    let first = u32::try_from(u64::from(n_ctx) / request)
        .unwrap_or(u32::MAX)
        .min(MAX_SLOTS);
    // Padding to 256 cells per slot can add a slot or take one away: walk down to the first fit.
    let mut np = first.saturating_add(1).min(MAX_SLOTS);
    while np > 0 && !fits(np) {
        np -= 1;
    }
    np
}

const fn pad256(x: u32) -> u32 {
    x.div_ceil(256).saturating_mul(256)
}

/// Cells of one stream of llama.cpp's sliding-window cache (`llama_kv_cache_iswa`,
/// llama-kv-cache-iswa.cpp): `GGML_PAD(min(n_ctx_seq, n_swa × (unified ? n_seq : 1) + n_ubatch),
/// 256)` — the window of every sequence that shares the stream plus one micro-batch, padded to 256
/// ("the SWA cache is always padded to 256 for performance"). One stream with `--kv-unified`, one
/// per sequence without ([`streams`]). llama-server's default; with `--swa-full`
/// (`LlamaCpp::swa_full`) the cache has the global layers' cells instead.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::kv::swa_cells;
/// assert_eq!(swa_cells(1024, 1, 512, 128, false), 768); // measured: 128 + 512 → 768
/// assert_eq!(swa_cells(4096, 1, 128, 128, false), 256);
/// assert_eq!(swa_cells(32768, 1, 512, 1024, false), 1536); // Gemma 3
/// assert_eq!(swa_cells(4096, 4, 512, 128, false), 768); // measured: 4 streams of 768
/// assert_eq!(swa_cells(4096, 4, 512, 128, true), 1024); // measured: -np auto, one stream
/// assert_eq!(swa_cells(32768, 4, 512, 1024, true), 4608); // Gemma 3 under a bare llama-server
/// ```
pub fn swa_cells(n_ctx: u32, n_seq: u32, n_ubatch: u32, n_swa: u32, unified: bool) -> u32 {
    let n_seq = n_seq.max(1);
    let (per_stream, windows) = if unified {
        (n_ctx, n_swa.saturating_mul(n_seq))
    } else {
        (n_ctx / n_seq, n_swa)
    };
    pad256(per_stream.min(windows.saturating_add(n_ubatch)))
}

/// The cache's streams: one with `--kv-unified`, else one per sequence (`n_stream`,
/// llama-kv-cache.cpp; printed as `n_seq/n_stream seqs`).
pub const fn streams(s: &LlamaCpp, n_seq: u32) -> u32 {
    if s.kv_unified { 1 } else { n_seq }
}

/// K and V elements one cell of a layer of kind `k` holds in llama.cpp's cache: `n_embd_k_gqa` and
/// `n_embd_v_gqa`; latent attention caches K only, the latent and the RoPE key (`kv_lora + rope`:
/// llama-kv-cache.cpp `has_v = !is_mla`); recurrent mixers and MLP-only layers none (their state
/// is a separate `llama_memory_recurrent`, not modelled here).
fn per_cell(d: &Dims, k: Option<&LayerKind>) -> (u64, u64) {
    match k.map(|k| k.mixer) {
        None => (d.n_embd_kv(), d.n_embd_kv()),
        Some(MixerShape::Attention {
            kv_heads, head_dim, ..
        }) => {
            let n = (kv_heads * head_dim).max(0.0) as u64;
            (n, n)
        }
        Some(MixerShape::Mla(s)) => (s.kv_latent_width().max(0.0) as u64, 0),
        Some(_) => (0, 0),
    }
}

/// F32 elements of one sequence's recurrent state in a layer of kind `k` (llama-hparams.cpp
/// `n_embd_r`, `n_embd_s`): R, the convolution's last `d_conv − 1` inputs of its channels (Mamba:
/// `d_inner + 2 n_group d_state`; gated DeltaNet: `2 key_dim + value_dim`), and S, the SSM state
/// (`d_state × d_inner`; DeltaNet: a key × value matrix per value head). `None` for other layers.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::kv::recurrent_rows;
/// use vram_explorer::estimator::model::blocks::{LayerKind, MixerShape};
/// use vram_explorer::scenario::MambaVersion;
/// let mixer = MixerShape::Mamba { inner: 512.0, heads: 8.0, conv_channels: 640.0, d_conv: 4.0,
///     d_state: 64.0, version: MambaVersion::Mamba2, chunk: 256.0 };
/// let k = LayerKind { mixer, ..LayerKind::default() };
/// assert_eq!(recurrent_rows(&k), Some((1920, 32768))); // measured: 0.40 MiB for 3 layers
/// ```
pub fn recurrent_rows(k: &LayerKind) -> Option<(u64, u64)> {
    let u = |x: f64| x.max(0.0) as u64;
    k.recurrent_state()
        .map(|r| (u(r.conv_width - 1.0) * u(r.conv_channels), u(r.ssm)))
}

/// One recurrent layer's state (`llama_memory_recurrent`, llama-memory-recurrent.cpp): R and S
/// tensors of `max(1, n_seq)` rows, F32, on the layer's device (the `RS buffer`), counted in the
/// device's cache bytes.
fn recurrent(b: &mut Buffers, p: &Placement, s: &LlamaCpp, il: u32, (r, st): (u64, u64)) {
    let rows = u64::from(b.n_seq.max(1));
    let dev = if s.no_kv_offload { None } else { p.device(il) };
    let buft = if dev.is_some() { Buft::Cuda } else { Buft::Cpu };
    let r = tensor_bytes(GgufType::F32, r, rows, buft);
    let st = tensor_bytes(GgufType::F32, st, rows, buft);
    let rs = &mut b.rs;
    rs.layers += 1;
    rs.r_bytes += r;
    rs.s_bytes += st;
    match dev.filter(|&i| i < b.dev.len()) {
        Some(i) => {
            b.dev[i].kv += r + st;
            rs.dev[i] += r + st;
        }
        None => {
            b.host_kv += r + st;
            rs.host += r + st;
        }
    }
}

/// Fills the cells and each device's KV buffer: every layer's K (`n_embd_k_gqa × cells` of `-ctk`)
/// and V (of `-ctv`) on its layer's device, or all on the CPU with `-nkvo`; a model that mixes
/// sliding-window and global attention keeps its windowed layers in a second, smaller cache
/// ([`swa_cells`]).
pub fn place(
    b: &mut Buffers,
    d: &Dims,
    kinds: &LayerKinds,
    p: &Placement,
    s: &LlamaCpp,
    fallback_ctx: u32,
) {
    let (n_ctx, n_batch, n_ubatch, n_seq) = sizes(s, fallback_ctx);
    b.n_ctx = n_ctx;
    b.n_batch = n_batch;
    b.n_ubatch = n_ubatch;
    b.n_seq = n_seq;
    let n_stream = streams(s, n_seq);
    b.n_stream = n_stream;
    let stream_cells = n_ctx / n_stream.max(1);
    let (tk, tv) = (ggml_type(s.cache_type_k), ggml_type(s.cache_type_v));
    for il in 0..d.n_layer {
        let kind = kinds.at(il);
        let (k_row, v_row) = per_cell(d, kind);
        if let Some((r, st)) = kind.and_then(recurrent_rows) {
            recurrent(b, p, s, il, (r, st));
            continue;
        }
        if k_row + v_row == 0 {
            continue;
        }
        // Cells of one stream; every stream holds as many.
        let swa = kind.filter(|k| kinds.swa(k)).map(|k| match k.mixer {
            MixerShape::Attention { window, .. } if !s.swa_full => swa_cells(
                n_ctx,
                n_seq,
                n_ubatch,
                window.min(f64::from(u32::MAX)) as u32,
                s.kv_unified,
            ),
            _ => stream_cells,
        });
        let cells = u64::from(swa.unwrap_or(stream_cells)) * u64::from(n_stream);
        let dev = if s.no_kv_offload { None } else { p.device(il) };
        let buft = if dev.is_some() { Buft::Cuda } else { Buft::Cpu };
        let k = tensor_bytes(tk, k_row, cells, buft);
        let v = if v_row > 0 {
            tensor_bytes(tv, v_row, cells, buft)
        } else {
            0
        };
        b.k_bytes += k;
        b.v_bytes += v;
        match dev.and_then(|i| b.dev.get_mut(i)) {
            Some(g) => g.kv += k + v,
            None => b.host_kv += k + v,
        }
        match swa {
            Some(c) => {
                let w = &mut b.swa;
                w.cells = c;
                w.layers += 1;
                w.k_bytes += k;
                w.v_bytes += v;
                match dev.and_then(|i| w.dev.get_mut(i)) {
                    Some(g) => *g += k + v,
                    None => w.host += k + v,
                }
            }
            None => b.kv_layers += 1,
        }
    }
}
