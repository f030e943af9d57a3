//! The Llama graph of llama.cpp builds before the KV cache was written with `ggml_set_rows`
//! (mid-2025), read from `src/llama.cpp` as vendored by llama-cpp-python 0.3.5 (December 2024):
//! `llm_build_inp_embd` (one embeddings input: the token ids' lookup), `build_inp_KQ_mask` (F32,
//! cast to F16 for flash attention), `llm_build_kv` (Q, K, V expanded in that order, then
//! `llm_build_kv_store`: `ggml_cpy` into views of the cache, V transposed without flash
//! attention; no row-index inputs), `llm_build_kqv` and `llm_build_ffn` (SiLU of the gate in
//! place, its product with the up projection in place); its embeddings input is
//! `graph_llama::lookup`. The published load logs of that era
//! (tests/data/published/llamacpp-logs.json) are checked against it.

use super::super::ggml::{Graph, Id, NONE, Op, Ty};
use super::{Inputs, Shape};

/// `GGML_KQ_MASK_PAD`: the mask's rows are the tokens padded to a multiple of it.
const KQ_MASK_PAD: u64 = 32;

/// The mask (F32 `[n_kv, pad(T, 32)]`; with flash attention its F16 cast is what the attention
/// reads) and the cache; no index inputs, no rotations.
pub(super) fn cache_inputs<const N: usize>(g: &mut Graph<N>, s: &Shape, n_kv: u64) -> Inputs {
    let n_embd_kv = s.n_head_kv * s.head_dim;
    let rows = s.n_tokens.div_ceil(KQ_MASK_PAD) * KQ_MASK_PAD;
    let mask = g.input(Ty::F32, [n_kv, rows, 1, 1]);
    let mask = if s.flash_attn {
        g.op(
            Ty::F16,
            [n_kv, rows, 1, 1],
            Op::Other,
            [mask, NONE, NONE, NONE],
        )
    } else {
        mask
    };
    Inputs {
        n_kv,
        k_idxs: NONE,
        v_idxs: NONE,
        mask,
        k_rot: None,
        v_rot: None,
        k_cache: g.cache(s.type_k, [n_embd_kv, n_kv, 1, 1]),
        v_cache: g.cache(s.type_v, [n_embd_kv, n_kv, 1, 1]),
    }
}

/// `llm_build_kv`: Q, K and V expanded, K and V copied into the cache, then `llm_build_kqv`.
pub(super) fn attention<const N: usize>(
    g: &mut Graph<N>,
    s: &Shape,
    [q, k, v]: [Id; 3],
    i: &Inputs,
) -> Id {
    let t = s.n_tokens;
    let n_embd_kv = s.n_head_kv * s.head_dim;
    g.expand(q);
    g.expand(k);
    g.expand(v);
    let row_k = s.type_k.row_size(n_embd_kv);
    let k_view = g.view(i.k_cache, [t * n_embd_kv, 1, 1, 1], row_k, row_k, row_k);
    let cpy_k = g.cpy(k, k_view);
    g.expand(cpy_k);
    let cpy_v = if s.flash_attn {
        let row_v = s.type_v.row_size(n_embd_kv);
        let v_view = g.view(i.v_cache, [t * n_embd_kv, 1, 1, 1], row_v, row_v, row_v);
        g.cpy(v, v_view)
    } else {
        let el = s.type_v.row_size(1);
        let v_view = g.view(
            i.v_cache,
            [t, n_embd_kv, 1, 1],
            el * i.n_kv,
            el * i.n_kv,
            el,
        );
        let v2 = g.reshape(v, [n_embd_kv, t, 1, 1]);
        let vt = g.transpose(v2);
        g.cpy(vt, v_view)
    };
    g.expand(cpy_v);
    let qp = g.permute_0213(q);
    let k_row = s.type_k.row_size(n_embd_kv);
    let kc = g.view(
        i.k_cache,
        [s.head_dim, i.n_kv, s.n_head_kv, 1],
        k_row,
        s.type_k.row_size(s.head_dim),
        0,
    );
    // V as the attention reads it: heads of the rows as stored, or of the transposed cache.
    let vc = if s.flash_attn {
        let v_row = s.type_v.row_size(n_embd_kv);
        g.view(
            i.v_cache,
            [s.head_dim, i.n_kv, s.n_head_kv, 1],
            v_row,
            s.type_v.row_size(s.head_dim),
            0,
        )
    } else {
        let el = s.type_v.row_size(1);
        g.view(
            i.v_cache,
            [i.n_kv, s.head_dim, s.n_head_kv, 1],
            el * i.n_kv,
            el * i.n_kv * s.head_dim,
            0,
        )
    };
    let cur = super::attend(g, s, [qp, kc, vc, i.mask]);
    g.expand(cur);
    cur
}

/// `llm_build_ffn` with `LLM_FFN_SILU, LLM_FFN_PAR`: up, gate, SiLU of the gate and its product
/// with up (both in place), down.
pub(super) fn swiglu<const N: usize>(
    g: &mut Graph<N>,
    cur: Id,
    [up_w, gate_w, down_w]: [Id; 3],
) -> Id {
    let up = g.mul_mat(up_w, cur);
    let gate = g.mul_mat(gate_w, cur);
    let act = g.like(gate, Op::Inplace, [gate, NONE, NONE, NONE]);
    let prod = g.like(act, Op::Inplace, [act, up, NONE, NONE]);
    g.mul_mat(down_w, prod)
}
