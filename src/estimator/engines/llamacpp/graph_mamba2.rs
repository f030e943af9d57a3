//! The graph llama.cpp reserves for a Mamba-2 model (`mamba2`), tensor by tensor in its build order
//! (ggml-org/llama.cpp@0c1e57098): `src/models/mamba.cpp` (the layer loop), `src/models/mamba-base.cpp`
//! (`build_mamba2_layer`), `src/llama-graph.cpp` (`build_rs_inp`, `build_rs`) and `ggml/src/ggml.c`
//! (`ggml_ssm_conv`: `[conv_dim, tokens, seqs]`; `ggml_ssm_scan`: one F32 vector of `y` and the
//! final states). The reserve reads the whole recurrent state (`init_full`: `n_rs` = its rows,
//! head 0, the zeroed row 0) and runs `n_seq_max` sequences of `n_ubatch / n_seq_max` tokens.

use super::ggml::{Graph, Id, NONE, Op, Ty};
use super::graph_llama::{input_embd, norm, output};

/// One reserve of a Mamba-2 model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MambaShape {
    pub n_layer: u32,
    pub n_embd: u64,
    /// `ssm_d_inner`, heads (`ssm_dt_rank`), `ssm_d_state`, `ssm_n_group`, `ssm_d_conv`.
    pub d_inner: u64,
    pub n_head: u64,
    pub d_state: u64,
    pub n_group: u64,
    pub d_conv: u64,
    pub n_vocab: u64,
    pub n_tokens: u64,
    pub n_outputs: u64,
    /// Sequences of the reserved ubatch (`n_seq_max`) and the state's rows (`max(1, n_seq_max)`).
    pub n_seqs: u64,
}

struct Weights {
    norm: Id,
    ssm_in: Id,
    conv1d: Id,
    conv1d_b: Id,
    dt_b: Id,
    a: Id,
    d: Id,
    ssm_norm: Id,
    ssm_out: Id,
}

/// The recurrent state's caches and the inputs that pick their rows.
struct States {
    r: Id,
    s: Id,
    copy_main: Id,
    copy_extra: Id,
}

/// Builds the reserve graph of `s` into `g` (which must be empty).
pub fn build<const N: usize>(g: &mut Graph<N>, s: &MambaShape) {
    let t = s.n_tokens;
    let conv_dim = s.d_inner + 2 * s.n_group * s.d_state;
    let d_in_proj = s.d_inner + conv_dim + s.n_head;
    let n_embd_r = (s.d_conv - 1) * conv_dim;
    let n_embd_s = s.d_state * s.d_inner;
    let w = Weights {
        norm: g.external(Ty::F32, [s.n_embd, 1, 1, 1]),
        ssm_in: g.external(Ty::F16, [s.n_embd, d_in_proj, 1, 1]),
        conv1d: g.external(Ty::F32, [s.d_conv, conv_dim, 1, 1]),
        conv1d_b: g.external(Ty::F32, [conv_dim, 1, 1, 1]),
        dt_b: g.external(Ty::F32, [s.n_head, 1, 1, 1]),
        a: g.external(Ty::F32, [1, s.n_head, 1, 1]),
        d: g.external(Ty::F32, [1, s.n_head, 1, 1]),
        ssm_norm: g.external(Ty::F32, [s.d_inner / s.n_group, s.n_group, 1, 1]),
        ssm_out: g.external(Ty::F16, [s.d_inner, s.n_embd, 1, 1]),
    };
    let (mut inp_l, tok_embd) = input_embd(g, s.n_embd, t, s.n_vocab);
    // build_rs_inp: one row index per state row; the rows of this ubatch, then the rest (none).
    let n_rs = s.n_seqs;
    let s_copy = g.input(Ty::I32, [n_rs, 1, 1, 1]);
    let st = States {
        r: g.external(Ty::F32, [n_embd_r, n_rs, 1, 1]),
        s: g.external(Ty::F32, [n_embd_s, n_rs, 1, 1]),
        copy_main: g.view(
            s_copy,
            [s.n_seqs, 1, 1, 1],
            4 * s.n_seqs,
            4 * s.n_seqs,
            4 * s.n_seqs,
        ),
        copy_extra: g.view(s_copy, [n_rs - s.n_seqs, 1, 1, 1], 0, 0, 0),
    };
    let out_ids = g.input(Ty::I32, [s.n_outputs, 1, 1, 1]);
    for il in 0..s.n_layer {
        let cur = norm(g, inp_l, w.norm);
        let mut cur = layer(g, s, &w, &st, cur);
        if il + 1 == s.n_layer {
            cur = g.get_rows(cur, out_ids);
            inp_l = g.get_rows(inp_l, out_ids);
        }
        inp_l = g.like(cur, Op::Inplace, [cur, inp_l, NONE, NONE]);
    }
    output(g, inp_l, w.norm, tok_embd);
}

/// `build_rs`'s bookkeeping around a state: row 0 zeroed in place, the rows beyond the ubatch's
/// copied over themselves (none in the reserve: zero-sized), both written into the cache.
fn state_rows<const N: usize>(g: &mut Graph<N>, st: &States, cache: Id, rows: Id) -> Id {
    let [size, n_rs, _, _] = g.ne(cache);
    let states = g.reshape(cache, [size, n_rs, 1, 1]);
    let zero = g.view(states, [size, 1, 1, 1], 4 * size, 4 * size, 4 * size);
    // ggml_scale_inplace: a view of the cache.
    let zeroed = g.view(zero, [size, 1, 1, 1], 4 * size, 4 * size, 4 * size);
    g.expand(zeroed);
    g.expand(rows);
    let extra = g.get_rows(states, st.copy_extra);
    let dst = g.view(
        cache,
        g.ne(extra),
        4 * size,
        4 * size * n_rs,
        4 * size * n_rs,
    );
    let stored = g.cpy(extra, dst);
    g.expand(stored);
    rows
}

/// `build_mamba2_layer`: [`convolution`], then the scan, its final states written back; y + x·D,
/// gated by z, grouped RMS norm, the output projection.
fn layer<const N: usize>(
    g: &mut Graph<N>,
    s: &MambaShape,
    w: &Weights,
    st: &States,
    cur: Id,
) -> Id {
    let (z, xbc, dt) = convolution(g, s, w, st, cur);
    let (ns, nst) = (s.n_seqs, s.n_tokens / s.n_seqs);
    let head_dim = s.d_inner / s.n_head;
    let xb = g.t[usize::from(xbc)].nb;
    let x = g.view(
        xbc,
        [head_dim, s.n_head, nst, ns],
        head_dim * 4,
        xb[1],
        xb[2],
    );
    let b = g.view(
        xbc,
        [s.d_state, s.n_group, nst, ns],
        s.d_state * 4,
        xb[1],
        xb[2],
    );
    let c = g.view(
        xbc,
        [s.d_state, s.n_group, nst, ns],
        s.d_state * 4,
        xb[1],
        xb[2],
    );
    let dt = g.cont(dt, [s.n_head, nst, ns, 1]);
    let dt = g.like(dt, Op::Inplace, [dt, w.dt_b, NONE, NONE]);
    // The scan over the state rows (get_ssm_rows inside build_rs).
    let [s_size, ..] = g.ne(st.s);
    let s_states = g.reshape(st.s, [s_size, s.n_seqs, 1, 1]);
    let ssm = g.reshape(s_states, [s.d_state, head_dim, s.n_head, s.n_seqs]);
    let y_len = s.d_inner * nst * ns + s.d_state * head_dim * s.n_head * ns;
    let y_ssm = g.op_of(
        Ty::F32,
        [y_len, 1, 1, 1],
        Op::Other,
        &[ssm, x, dt, w.a, b, c, st.copy_main],
    );
    let y_ssm = state_rows(g, st, st.s, y_ssm);
    // The final states written back.
    let d = s.d_state * s.d_inner;
    let states_view = g.view(y_ssm, [d, ns, 1, 1], d * 4, d * 4 * ns, d * 4 * ns);
    let dst = g.view(
        st.s,
        [d, ns, 1, 1],
        s_size * 4,
        s_size * 4 * ns,
        s_size * 4 * ns,
    );
    let stored = g.cpy(states_view, dst);
    g.expand(stored);
    let xr = g.t[usize::from(x)].nb[1];
    let y = g.view(
        y_ssm,
        [head_dim, s.n_head, nst, ns],
        xr,
        s.n_head * xr,
        nst * s.n_head * xr,
    );
    let xd = g.like(x, Op::Inplace, [x, w.d, NONE, NONE]);
    let y = g.like(y, Op::Inplace, [y, xd, NONE, NONE]);
    let zc = g.cont(z, [head_dim, s.n_head, nst, ns]);
    let y = g.like(zc, Op::Other, [zc, y, NONE, NONE]);
    let y = g.reshape(y, [s.d_inner / s.n_group, s.n_group, nst, ns]);
    let y = norm(g, y, w.ssm_norm);
    let y = g.reshape(y, [s.d_inner, nst * ns, 1, 1]);
    g.mul_mat(w.ssm_out, y)
}

/// The input projection viewed into z, xBC and dt; the convolution over the cached columns and this
/// ubatch's (its last columns written back), its bias and SiLU. Returns (z, xBC, dt).
fn convolution<const N: usize>(
    g: &mut Graph<N>,
    s: &MambaShape,
    w: &Weights,
    st: &States,
    cur: Id,
) -> (Id, Id, Id) {
    let (ns, nst) = (s.n_seqs, s.n_tokens / s.n_seqs);
    let conv_dim = s.d_inner + 2 * s.n_group * s.d_state;
    let head_dim = s.d_inner / s.n_head;
    // The convolution's state: get_rows of the cache's rows for this ubatch.
    let [r_size, ..] = g.ne(st.r);
    let r_states = g.reshape(st.r, [r_size, s.n_seqs, 1, 1]);
    let conv = g.get_rows(r_states, st.copy_main);
    let conv = state_rows(g, st, st.r, conv);
    let conv = g.reshape(conv, [s.d_conv - 1, conv_dim, ns, 1]);
    let zx = g.mul_mat(w.ssm_in, cur);
    let d_in = g.ne(zx)[0];
    let zx = g.reshape(zx, [d_in, nst, ns, 1]);
    let nb = g.t[usize::from(zx)].nb;
    let z = g.view(
        zx,
        [head_dim, s.n_head, nst, ns],
        head_dim * 4,
        nb[1],
        nb[2],
    );
    let xbc = g.view(zx, [conv_dim, nst, ns, 1], nb[1], nb[2], nb[2] * ns);
    let dt = g.view(zx, [s.n_head, nst, ns, 1], nb[1], nb[2], nb[2] * ns);
    let xbc_t = g.transpose(xbc);
    let conv_x = g.concat0(conv, xbc_t);
    let cx = g.t[usize::from(conv_x)].nb;
    let last = g.view(
        conv_x,
        [s.d_conv - 1, conv_dim, ns, 1],
        cx[1],
        cx[2],
        cx[2] * ns,
    );
    let dst = g.view(
        st.r,
        [r_size, ns, 1, 1],
        r_size * 4,
        r_size * 4 * ns,
        r_size * 4 * ns,
    );
    let stored = g.cpy(last, dst);
    g.expand(stored);
    let xbc = g.op(
        Ty::F32,
        [conv_dim, nst, ns, 1],
        Op::Other,
        [conv_x, w.conv1d, NONE, NONE],
    );
    let xbc = g.like(xbc, Op::Inplace, [xbc, w.conv1d_b, NONE, NONE]);
    let xbc = g.like(xbc, Op::Inplace, [xbc, NONE, NONE, NONE]);
    (z, xbc, dt)
}
