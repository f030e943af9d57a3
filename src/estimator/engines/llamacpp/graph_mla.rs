//! The graph llama.cpp reserves for a DeepSeek-2/3 model (`deepseek2`: multi-head latent attention
//! with the absorbed weights, leading dense layers, then routed and shared experts), tensor by
//! tensor in its build order (ggml-org/llama.cpp@0c1e57098): `src/models/deepseek2.cpp` (the layer
//! loop, the MLA branch `is_mla`), `src/llama-graph.cpp` (`build_attn_inp_k`, `build_attn` for a
//! K-only cache, `build_attn_mha` with `v_mla`, `build_moe_ffn`, `build_ffn`) and
//! `src/llama-kv-cache.cpp` (`cpy_k`, `get_k`). The cache holds `kv_lora + rope` per cell and
//! nothing else: V is a view of K's first `kv_lora` elements, so the attention is one KV head
//! (MQA) and `wv_b` decompresses its output per head. Measured:
//! tests/data/measured/llamacpp-cpu-layer-kinds.json.

use super::dims::MlaDims;
use super::ggml::{Graph, Id, NONE, Op, Ty};
use super::graph_llama::{input_embd, norm, output, swiglu};
use super::graph_moe::{self, Experts};

/// One reserve of a latent-attention model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlaShape {
    pub n_layer: u32,
    pub n_embd: u64,
    pub n_head: u64,
    /// The latent attention's widths, the leading dense layers and the router's options.
    pub mla: MlaDims,
    /// The dense layers' FFN width.
    pub n_ff: u64,
    pub n_vocab: u64,
    /// Routed experts, used per token, their width, the shared experts' total width (0 = none).
    pub n_expert: u64,
    pub n_expert_used: u64,
    pub n_ff_exp: u64,
    pub n_ff_shexp: u64,
    pub n_tokens: u64,
    pub n_outputs: u64,
    pub n_kv: u64,
    pub flash_attn: bool,
    pub type_k: Ty,
}

/// The weights by shape (external, never planned).
struct Weights {
    norm: Id,
    q_a_norm: Id,
    kv_a_norm: Id,
    q_a: Id,
    q_b: Id,
    kv_a: Id,
    k_b: Id,
    v_b: Id,
    o: Id,
    up: Id,
    down: Id,
    router: Id,
    probs_b: Id,
    exps_up: Id,
    exps_down: Id,
    shexp_up: Id,
    shexp_down: Id,
}

/// Builds the reserve graph of `s` into `g` (which must be empty).
pub fn build<const N: usize>(g: &mut Graph<N>, s: &MlaShape) {
    let t = s.n_tokens;
    let head_k = s.mla.nope + s.mla.rope;
    let q_in = if s.mla.q_lora > 0 {
        s.mla.q_lora
    } else {
        s.n_embd
    };
    let w = Weights {
        norm: g.external(Ty::F32, [s.n_embd, 1, 1, 1]),
        q_a_norm: g.external(Ty::F32, [s.mla.q_lora.max(1), 1, 1, 1]),
        kv_a_norm: g.external(Ty::F32, [s.mla.kv_lora, 1, 1, 1]),
        q_a: g.external(Ty::F16, [s.n_embd, s.mla.q_lora.max(1), 1, 1]),
        q_b: g.external(Ty::F16, [q_in, s.n_head * head_k, 1, 1]),
        kv_a: g.external(Ty::F16, [s.n_embd, s.mla.kv_lora + s.mla.rope, 1, 1]),
        k_b: g.external(Ty::F16, [s.mla.nope, s.mla.kv_lora, s.n_head, 1]),
        v_b: g.external(Ty::F16, [s.mla.kv_lora, s.mla.v, s.n_head, 1]),
        o: g.external(Ty::F16, [s.n_head * s.mla.v, s.n_embd, 1, 1]),
        up: g.external(Ty::F16, [s.n_embd, s.n_ff, 1, 1]),
        down: g.external(Ty::F16, [s.n_ff, s.n_embd, 1, 1]),
        router: g.external(Ty::F32, [s.n_embd, s.n_expert.max(1), 1, 1]),
        probs_b: g.external(Ty::F32, [s.n_expert.max(1), 1, 1, 1]),
        exps_up: g.external(Ty::F16, [s.n_embd, s.n_ff_exp, s.n_expert.max(1), 1]),
        exps_down: g.external(Ty::F16, [s.n_ff_exp, s.n_embd, s.n_expert.max(1), 1]),
        shexp_up: g.external(Ty::F16, [s.n_embd, s.n_ff_shexp.max(1), 1, 1]),
        shexp_down: g.external(Ty::F16, [s.n_ff_shexp.max(1), s.n_embd, 1, 1]),
    };
    // build_inp_embd, as for a Llama model.
    let (mut inp_l, tok_embd) = input_embd(g, s.n_embd, t, s.n_vocab);
    let pos = g.input(Ty::I32, [t, 1, 1, 1]);
    // build_attn_inp_k: the K rows' indices and the mask (F16 with flash attention).
    let k_idxs = g.input(Ty::I64, [t, 1, 1, 1]);
    let mask_ty = if s.flash_attn { Ty::F16 } else { Ty::F32 };
    let mask = g.input(mask_ty, [s.n_kv, t, 1, 1]);
    let cache = g.external(s.type_k, [s.mla.kv_lora + s.mla.rope, s.n_kv, 1, 1]);
    let out_ids = g.input(Ty::I32, [s.n_outputs, 1, 1, 1]);
    for il in 0..s.n_layer {
        let mut inp_sa = inp_l;
        let cur = norm(g, inp_l, w.norm);
        let mut cur = attention(g, s, &w, cur, [pos, k_idxs, mask, cache]);
        cur = g.mul_mat(w.o, cur);
        if il + 1 == s.n_layer {
            cur = g.get_rows(cur, out_ids);
            inp_sa = g.get_rows(inp_sa, out_ids);
        }
        let ffn_inp = g.like(cur, Op::Inplace, [cur, inp_sa, NONE, NONE]);
        let cur = norm(g, ffn_inp, w.norm);
        let out = if il < s.mla.dense_lead {
            swiglu(g, cur, [w.up, w.up, w.down])
        } else {
            experts(g, s, &w, cur)
        };
        inp_l = g.like(out, Op::Inplace, [out, ffn_inp, NONE, NONE]);
    }
    output(g, inp_l, w.norm, tok_embd);
}

/// The routed experts (`build_moe_ffn`), then the shared ones (`build_ffn`, ungated) and their sum.
fn experts<const N: usize>(g: &mut Graph<N>, s: &MlaShape, w: &Weights, cur: Id) -> Id {
    let e = Experts {
        router: w.router,
        up: w.exps_up,
        down: w.exps_down,
        n_used: s.n_expert_used,
        norm_w: s.mla.norm_w,
        selection_bias: s.mla.selection_bias.then_some(w.probs_b),
        groups: s.mla.groups,
        scale: s.mla.scale,
    };
    let routed = graph_moe::moe_ffn(g, cur, &e);
    if s.n_ff_shexp == 0 {
        return routed;
    }
    graph_moe::add_shared(g, cur, routed, (w.shexp_up, w.shexp_down), None)
}

/// The MLA branch of `deepseek2.cpp` and `build_attn` over the K-only cache: Q through its
/// low-rank pair (or `wq`), split into the part absorbed by `wk_b` and the RoPE part; the latent
/// `kv_cmpr` normalised and the RoPE key beside it, concatenated as the cached K; the attention
/// as one KV head over `kv_lora + rope`, V the latent part of the cache; `wv_b` per head after it.
/// Returns the attention's output `[n_head × v, T]` before `wo`.
fn attention<const N: usize>(
    g: &mut Graph<N>,
    s: &MlaShape,
    w: &Weights,
    cur: Id,
    [pos, k_idxs, mask, cache]: [Id; 4],
) -> Id {
    let t = s.n_tokens;
    let head_k = s.mla.nope + s.mla.rope;
    let q = if s.mla.q_lora > 0 {
        let q = g.mul_mat(w.q_a, cur);
        let q = norm(g, q, w.q_a_norm);
        g.mul_mat(w.q_b, q)
    } else {
        g.mul_mat(w.q_b, cur)
    };
    let q = g.reshape(q, [head_k, s.n_head, t, 1]);
    let kv_cmpr_pe = g.mul_mat(w.kv_a, cur);
    let row = g.t[usize::from(kv_cmpr_pe)].nb[1];
    let kv_cmpr = g.view(kv_cmpr_pe, [s.mla.kv_lora, t, 1, 1], row, row * t, row * t);
    // Views keep no offset here: the planner never places a view.
    let k_pe = g.view(kv_cmpr_pe, [s.mla.rope, 1, t, 1], row, row, row * t);
    let k_pe = g.like(k_pe, Op::Inplace, [k_pe, pos, NONE, NONE]);
    let kv_cmpr = norm(g, kv_cmpr, w.kv_a_norm);
    let qn = g.t[usize::from(q)].nb;
    let q_nope = g.view(q, [s.mla.nope, s.n_head, t, 1], qn[1], qn[2], qn[2] * t);
    let q_pe = g.view(q, [s.mla.rope, s.n_head, t, 1], qn[1], qn[2], qn[2] * t);
    let q_pe = g.like(q_pe, Op::Inplace, [q_pe, pos, NONE, NONE]);
    let q_nope = g.permute_0213(q_nope);
    let absorbed = g.mul_mat(w.k_b, q_nope);
    let absorbed = g.permute_0213(absorbed);
    let q_cur = g.concat0(absorbed, q_pe);
    let kv_cmpr = g.reshape(kv_cmpr, [s.mla.kv_lora, 1, t, 1]);
    let k_cur = g.concat0(kv_cmpr, k_pe);
    let v_cur = kv_cmpr;
    g.expand(q_cur);
    g.expand(v_cur);
    g.expand(k_cur);
    // cpy_k: the K rows into the cache.
    let k_row = s.mla.kv_lora + s.mla.rope;
    let k_nb2 = g.t[usize::from(k_cur)].nb[2];
    let k_view = g.view(k_cur, [k_row, t, 1, 1], k_nb2, 0, 0);
    let stored = g.set_rows(cache, k_view, k_idxs);
    g.expand(stored);
    // get_k, and V as the view of its first kv_lora elements.
    let cell = s.type_k.row_size(k_row);
    let k = g.view(cache, [k_row, 1, s.n_kv, 1], cell, cell, cell * s.n_kv);
    let v = g.view(k, [s.mla.kv_lora, 1, s.n_kv, 1], cell, cell, cell * s.n_kv);
    mha(g, s, w, [q_cur, k, v], mask)
}

/// `build_attn_mha` with `v_mla` (one stream, so Q's stream view is the whole of it).
fn mha<const N: usize>(
    g: &mut Graph<N>,
    s: &MlaShape,
    w: &Weights,
    [q, k, v]: [Id; 3],
    mask: Id,
) -> Id {
    let t = s.n_tokens;
    let qn = g.ne(q);
    let qb = g.t[usize::from(q)].nb;
    let q = g.view(q, qn, qb[1], qb[2], qb[2] * qn[2]);
    let qp = g.permute_0213(q);
    let kp = g.permute_0213(k);
    let vp = g.permute_0213(v);
    let cur = if s.flash_attn {
        let fa = g.op(
            Ty::F32,
            [s.mla.kv_lora, s.n_head, t, 1],
            Op::Other,
            [qp, kp, vp, mask],
        );
        let cur = g.permute_0213(fa);
        let cur = g.mul_mat(w.v_b, cur);
        let cur = g.permute_0213(cur);
        let cur = g.cont(cur, [s.mla.v, s.n_head, t, 1]);
        g.reshape(cur, [s.mla.v * s.n_head, t, 1, 1])
    } else {
        let kq = g.mul_mat(kp, qp);
        let kq = g.like(kq, Op::Inplace, [kq, mask, NONE, NONE]);
        // V is not stored transposed: a contiguous transposed copy first.
        let vt = g.transpose(vp);
        let vt = g.cont(vt, [s.n_kv, s.mla.kv_lora, 1, 1]);
        let kqv = g.mul_mat(vt, kq);
        let kqv = g.mul_mat(w.v_b, kqv);
        let cur = g.permute_0213(kqv);
        g.cont(cur, [s.mla.v * s.n_head, t, 1, 1])
    };
    g.expand(cur);
    cur
}
