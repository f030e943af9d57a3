//! The graph llama.cpp reserves for a Llama-architecture model, tensor by tensor and in its
//! build order (ggml-org/llama.cpp@0c1e57098): `src/models/llama.cpp` (the layer loop),
//! `src/llama-graph.cpp` (`build_inp_embd`, `build_inp_out_ids`, `build_norm`, `build_qkv`,
//! `build_attn` with a KV cache, `build_attn_mha`, `build_ffn`), `src/llama-kv-cache.cpp`
//! (`cpy_k`/`cpy_v`, `get_k`/`get_v`, the index and Hadamard-rotation inputs) and
//! `src/llama-impl.h` (`llama_mul_mat_hadamard`). Only what shapes the plan is kept: every weight
//! is one external tensor, and ops are classed as the planner sees them.

use super::ggml::{Graph, HOST, Id, NONE, Op, Ty};
use super::graph_moe::{self, Experts};

#[path = "graph_llama_legacy.rs"]
mod legacy;

/// One reserve: the model's dimensions and the ubatch the scheduler plans for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub n_layer: u32,
    pub n_embd: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    pub n_ff: u64,
    pub n_vocab: u64,
    /// Tokens of the ubatch, outputs among them (`n_outputs`), KV cells attended (`n_kv`).
    pub n_tokens: u64,
    pub n_outputs: u64,
    pub n_kv: u64,
    pub flash_attn: bool,
    pub type_k: Ty,
    pub type_v: Ty,
    /// Per-head RMSNorm of Q and K before RoPE (`qwen3`: `build_norm` on the reshaped Q and K).
    pub qk_norm: bool,
    /// Routed experts of every layer's FFN and how many a token uses (0 = a dense FFN; then
    /// `n_ff` is its width, else one expert's: [`graph_moe`]).
    pub n_expert: u64,
    pub n_expert_used: u64,
    /// Qwen2-MoE's shared expert (`src/models/qwen2moe.cpp`): an FFN of this width beside the routed
    /// experts, scaled by a sigmoid gate of one row; 0 = none. The one replayed architecture
    /// with a shared expert leaves the top-k weights unnormalised (`norm_w = false`).
    pub n_ff_shexp: u64,
    /// Gemma 3's layer (`src/models/gemma3.cpp`): the embeddings scaled, Q/K norms, Q scaled after
    /// RoPE, a norm after the attention and after the FFN; with `swa_kv > 0` the layers with
    /// `il % swa_period < swa_period − 1` attend over the sliding-window cache of `swa_kv` cells
    /// (`llm_graph_input_attn_kv_iswa`: its own indices, mask and rotations).
    pub gemma: bool,
    pub swa_kv: u64,
    pub swa_period: u32,
    /// The GPUs the layers run on (all zero: one device, as a CPU build plans).
    pub devices: Devices,
    /// The output matrix's GGUF type: what op offload copies when the output layer stays in
    /// host memory.
    pub head_ty: Ty,
    /// The GGUF types of the host layers' matrices ([`Devices::host_layers`]), what op offload
    /// copies of them.
    pub host_ty: HostTypes,
    /// The graph of llama.cpp before its KV cache was written with `ggml_set_rows` ([`legacy`]).
    pub legacy: bool,
}

/// Where a GPU build keeps its layers: the first `host_layers` repeating layers in host memory
/// (`-ngl` short of them), then `layers[k]` consecutive repeating layers on GPU `k`, in order,
/// and the output layer on GPU `output` ([`HOST`] when `-ngl` stops short of it). The token
/// embedding stays in host memory (llama-model.cpp `load_tensors`: the input layer is always the
/// CPU's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Devices {
    pub host_layers: u32,
    pub layers: [u32; 8],
    pub output: u8,
}

/// The matrices of a host layer by type (the largest each role has among the host layers: a
/// layer's copies are made one at a time, so the largest of each role sets the peak).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTypes {
    pub q: Ty,
    pub k: Ty,
    pub v: Ty,
    pub o: Ty,
    pub gate: Ty,
    pub up: Ty,
    pub down: Ty,
}

impl Default for HostTypes {
    fn default() -> Self {
        HostTypes {
            q: Ty::F16,
            k: Ty::F16,
            v: Ty::F16,
            o: Ty::F16,
            gate: Ty::F16,
            up: Ty::F16,
            down: Ty::F16,
        }
    }
}

impl Devices {
    /// The device running layer `il`: [`HOST`] for the first `host_layers`, then the GPUs (the
    /// last GPU past the listed layers).
    pub fn of_layer(&self, il: u32) -> u8 {
        if il < self.host_layers {
            return HOST;
        }
        let il = il - self.host_layers;
        let mut end = 0;
        let mut last = 0;
        for (k, &n) in self.layers.iter().enumerate() {
            if n > 0 {
                last = k as u8;
            }
            end += n;
            if il < end {
                return k as u8;
            }
        }
        last
    }
}

const fn quantized(t: Ty) -> bool {
    matches!(t, Ty::Block { .. })
}

/// Builds the reserve graph of `s` into `g` (which must be empty).
pub fn build<const N: usize>(g: &mut Graph<N>, s: &Shape) {
    let t = s.n_tokens;
    g.dev = s.devices.of_layer(0);
    let mut w = weights(g, s);
    let (mut inp_l, tok_embd) = if s.legacy {
        lookup(g, s.n_embd, t, s.n_vocab)
    } else {
        input_embd(g, s.n_embd, t, s.n_vocab)
    };
    if s.gemma {
        // `ggml_scale` of the embeddings, in place.
        inp_l = g.like(inp_l, Op::Inplace, [inp_l, NONE, NONE, NONE]);
    }
    let pos = g.input(Ty::I32, [t, 1, 1, 1]);
    // A GPU build pins each layer's norms to the layer's GPU when it offloads every layer and
    // the output (`full_offload`: `n_gpu_layers > n_layer`) or the ubatch is under 32 tokens
    // (llama_context::graph_get_cb).
    let full_offload = s.devices.output != HOST && s.devices.host_layers == 0;
    g.pin_norms = s.devices != Devices::default() && (full_offload || t < 32);
    let mut inputs = cache_inputs(g, s, s.n_kv);
    let mut swa_inputs = (s.swa_kv > 0).then(|| cache_inputs(g, s, s.swa_kv));
    let out_ids = g.input(Ty::I32, [s.n_outputs, 1, 1, 1]);
    for il in 0..s.n_layer {
        let dev = s.devices.of_layer(il);
        if dev != g.dev {
            // The next GPU's layers: their weights and caches are its own.
            g.dev = dev;
            w = weights(g, s);
            inputs.on_device(g, s);
            if let Some(i) = swa_inputs.as_mut() {
                i.on_device(g, s);
            }
        } else if dev == HOST && il > 0 {
            // Each host layer's weights are tensors of their own: op offload copies each.
            w = weights(g, s);
        }
        let period = s.swa_period.max(1);
        let inputs = match &swa_inputs {
            Some(w) if il % period < period - 1 => w,
            _ => &inputs,
        };
        layer(g, s, &w, inputs, [pos, out_ids], &mut inp_l, il);
    }
    g.dev = s.devices.output;
    g.pin_norms = false;
    // The output matrix (the token embedding's shape; tied or not, a copy on the output device).
    let head = if s.devices == Devices::default() {
        tok_embd
    } else {
        g.external(s.head_ty, [s.n_embd, s.n_vocab, 1, 1])
    };
    let norm_w = if s.devices == Devices::default() {
        w.norm
    } else {
        g.external(Ty::F32, [s.n_embd, 1, 1, 1])
    };
    output(g, inp_l, norm_w, head);
}

/// The weights of one device's layers: on a GPU one tensor per shape (their existence and place
/// is all its plan needs); in host memory (a layer `-ngl` leaves there, under op offload) one per
/// use, in its GGUF type, as each is copied to the GPU on its own.
fn weights<const N: usize>(g: &mut Graph<N>, s: &Shape) -> Weights {
    let n_embd_q = s.n_head * s.head_dim;
    let n_embd_kv = s.n_head_kv * s.head_dim;
    let host = g.dev == HOST;
    let t = if host {
        s.host_ty
    } else {
        HostTypes::default()
    };
    let norm = g.external(Ty::F32, [s.n_embd, 1, 1, 1]);
    let head_norm = g.external(Ty::F32, [s.head_dim, 1, 1, 1]);
    let kv = g.external(t.k, [s.n_embd, n_embd_kv, 1, 1]);
    let up = g.external(t.up, [s.n_embd, s.n_ff, s.n_expert.max(1), 1]);
    let mut own = |ty: Ty, ne: [u64; 4], shared: Id| {
        if host { g.external(ty, ne) } else { shared }
    };
    let v = own(t.v, [s.n_embd, n_embd_kv, 1, 1], kv);
    let gate = own(t.gate, [s.n_embd, s.n_ff, s.n_expert.max(1), 1], up);
    let ffn_norm = own(Ty::F32, [s.n_embd, 1, 1, 1], norm);
    let post_attn_norm = own(Ty::F32, [s.n_embd, 1, 1, 1], norm);
    let post_ffn_norm = own(Ty::F32, [s.n_embd, 1, 1, 1], norm);
    let k_norm = own(Ty::F32, [s.head_dim, 1, 1, 1], head_norm);
    Weights {
        norm,
        ffn_norm,
        post_attn_norm,
        post_ffn_norm,
        head_norm,
        k_norm,
        q: g.external(t.q, [s.n_embd, n_embd_q, 1, 1]),
        kv,
        v,
        o: g.external(t.o, [n_embd_q, s.n_embd, 1, 1]),
        up,
        gate,
        down: g.external(t.down, [s.n_ff, s.n_embd, s.n_expert.max(1), 1]),
        router: g.external(Ty::F32, [s.n_embd, s.n_expert.max(1), 1, 1]),
        shexp_up: g.external(Ty::F16, [s.n_embd, s.n_ff_shexp.max(1), 1, 1]),
        shexp_down: g.external(Ty::F16, [s.n_ff_shexp.max(1), s.n_embd, 1, 1]),
        shexp_gate: g.external(Ty::F32, [s.n_embd, 1, 1, 1]),
    }
}

/// One repeating layer, `inp_l` its input and then its output.
fn layer<const N: usize>(
    g: &mut Graph<N>,
    s: &Shape,
    w: &Weights,
    inputs: &Inputs,
    [pos, out_ids]: [Id; 2],
    inp_l: &mut Id,
    il: u32,
) {
    let t = s.n_tokens;
    {
        let mut inp_sa = *inp_l;
        let cur = norm(g, *inp_l, w.norm);
        let q = g.mul_mat(w.q, cur);
        let k = g.mul_mat(w.kv, cur);
        let v = g.mul_mat(w.v, cur);
        let q = g.reshape(q, [s.head_dim, s.n_head, t, 1]);
        let k = g.reshape(k, [s.head_dim, s.n_head_kv, t, 1]);
        let v = g.reshape(v, [s.head_dim, s.n_head_kv, t, 1]);
        // Qwen3 normalises each head of Q and K first: the norm of a view takes a buffer of its
        // own, its weight and RoPE then run in place.
        let (q, k) = if s.qk_norm {
            (norm(g, q, w.head_norm), norm(g, k, w.k_norm))
        } else {
            (q, k)
        };
        // RoPE may run in place, but without Q/K norms its source is a reshape (a view, never the
        // planner's own): Q and K after RoPE then take buffers of their own.
        let q = g.like(q, Op::Inplace, [q, pos, NONE, NONE]);
        let k = g.like(k, Op::Inplace, [k, pos, NONE, NONE]);
        // Gemma scales Q after RoPE (`ggml_scale`, in place).
        let q = if s.gemma {
            g.like(q, Op::Inplace, [q, NONE, NONE, NONE])
        } else {
            q
        };
        let mut cur = if s.legacy {
            legacy::attention(g, s, [q, k, v], inputs)
        } else {
            attention(g, s, [q, k, v], inputs)
        };
        cur = g.mul_mat(w.o, cur);
        // The last layer keeps only the output rows (`inp_out_ids`, all of them in the reserve).
        if il + 1 == s.n_layer {
            cur = g.get_rows(cur, out_ids);
            inp_sa = g.get_rows(inp_sa, out_ids);
        }
        if s.gemma {
            cur = norm(g, cur, w.post_attn_norm);
        }
        let ffn_inp = g.like(cur, Op::Inplace, [cur, inp_sa, NONE, NONE]);
        let cur = norm(g, ffn_inp, w.ffn_norm);
        let mut out = ffn(g, s, w, cur);
        if s.gemma {
            out = norm(g, out, w.post_ffn_norm);
        }
        *inp_l = g.like(out, Op::Inplace, [out, ffn_inp, NONE, NONE]);
    }
}

/// `build_inp_embd`: the token ids and the embeddings input; the token path is selected
/// (`ggml_build_forward_select`), the embeddings input stays a planned leaf with no consumer.
/// Returns the embedded tokens and `tok_embd` (the output head's stand-in: weights are external).
pub(super) fn input_embd<const N: usize>(
    g: &mut Graph<N>,
    n_embd: u64,
    t: u64,
    n_vocab: u64,
) -> (Id, Id) {
    let looked_up = lookup(g, n_embd, t, n_vocab);
    let embd_in = g.input(Ty::F32, [n_embd, t, 1, 1]);
    g.expand(embd_in);
    looked_up
}

/// The token ids and their rows of `tok_embd`, which stays in host memory (the older graph's
/// whole `llm_build_inp_embd` for a token batch).
fn lookup<const N: usize>(g: &mut Graph<N>, n_embd: u64, t: u64, n_vocab: u64) -> (Id, Id) {
    let tokens = g.input(Ty::I32, [t, 1, 1, 1]);
    let dev = g.dev;
    g.dev = HOST;
    let tok_embd = g.external(Ty::F32, [n_embd, n_vocab, 1, 1]);
    g.dev = dev;
    let inp_l = g.get_rows(tok_embd, tokens);
    g.expand(inp_l);
    (inp_l, tok_embd)
}

/// The final norm and the logits, both graph outputs (`t_embd`, `t_logits`), expanded last.
pub(super) fn output<const N: usize>(g: &mut Graph<N>, inp_l: Id, norm_w: Id, head: Id) {
    let out_norm = norm(g, inp_l, norm_w);
    g.set_output(out_norm);
    let logits = g.mul_mat(head, out_norm);
    g.set_output(logits);
    g.expand(logits);
}

/// `build_ffn` (SwiGLU: up, gate, their product, down) or `build_moe_ffn`, then Qwen2-MoE's
/// shared expert: its gate `silu(x) / x` of one row (the division in place), its SwiGLU FFN, the
/// product with the gate and the sum with the routed experts (both in place), built depth first
/// from the sum as the layer's final expand reaches them.
fn ffn<const N: usize>(g: &mut Graph<N>, s: &Shape, w: &Weights, cur: Id) -> Id {
    if s.legacy && s.n_expert == 0 {
        return legacy::swiglu(g, cur, [w.up, w.gate, w.down]);
    }
    if s.n_expert > 0 {
        let e = Experts {
            router: w.router,
            up: w.up,
            down: w.down,
            n_used: s.n_expert_used,
            norm_w: s.n_ff_shexp == 0,
            selection_bias: None,
            groups: (0, 0),
            scale: false,
        };
        let routed = graph_moe::moe_ffn(g, cur, &e);
        if s.n_ff_shexp == 0 {
            return routed;
        }
        let shared = (w.shexp_up, w.shexp_down);
        return graph_moe::add_shared(g, cur, routed, shared, Some(w.shexp_gate));
    }
    swiglu(g, cur, [w.up, w.gate, w.down])
}

/// `build_ffn` with `LLM_FFN_SILU, LLM_FFN_PAR`: gate and up of `cur`, `ggml_swiglu_split(gate,
/// up)`, down.
pub(super) fn swiglu<const N: usize>(
    g: &mut Graph<N>,
    cur: Id,
    [up_w, gate_w, down_w]: [Id; 3],
) -> Id {
    let up = g.mul_mat(up_w, cur);
    let gate = g.mul_mat(gate_w, cur);
    let act = g.like(gate, Op::Other, [gate, up, NONE, NONE]);
    g.mul_mat(down_w, act)
}

/// A layer's weights (external, never planned; on a GPU one tensor per shape, so several fields
/// may name one tensor: [`weights`]).
struct Weights {
    norm: Id,
    ffn_norm: Id,
    post_attn_norm: Id,
    post_ffn_norm: Id,
    head_norm: Id,
    k_norm: Id,
    q: Id,
    /// K's projection (`kv`), V's (`v`).
    kv: Id,
    v: Id,
    o: Id,
    up: Id,
    gate: Id,
    down: Id,
    router: Id,
    shexp_up: Id,
    shexp_down: Id,
    shexp_gate: Id,
}

/// `build_norm` (RMS): the norm, then the weight (both ops may run in place).
pub(super) fn norm<const N: usize>(g: &mut Graph<N>, x: Id, w: Id) -> Id {
    let n = g.like(x, Op::Inplace, [x, NONE, NONE, NONE]);
    g.pin_norm(n);
    g.like(n, Op::Inplace, [n, w, NONE, NONE])
}

/// The attention's graph inputs and the layer's cache (every layer's cache plans alike: one
/// external tensor per device serves them all).
pub(super) struct Inputs {
    /// Cells of this cache (the attention's `n_kv`).
    pub(super) n_kv: u64,
    pub(super) k_idxs: Id,
    pub(super) v_idxs: Id,
    pub(super) mask: Id,
    pub(super) k_rot: Option<Id>,
    pub(super) v_rot: Option<Id>,
    pub(super) k_cache: Id,
    pub(super) v_cache: Id,
}

/// `build_attn_inp_kv` for one cache of `n_kv` cells: K and V row indices (V per element when V is
/// stored transposed, i.e. without flash attention), the mask (F16 with flash attention), the
/// rotations of a quantized cache whose head size is a multiple of 64, and the cache itself.
fn cache_inputs<const N: usize>(g: &mut Graph<N>, s: &Shape, n_kv: u64) -> Inputs {
    let t = s.n_tokens;
    let n_embd_kv = s.n_head_kv * s.head_dim;
    let v_trans = !s.flash_attn;
    if s.legacy {
        return legacy::cache_inputs(g, s, n_kv);
    }
    let k_idxs = g.input(Ty::I64, [t, 1, 1, 1]);
    let v_idxs = g.input(Ty::I64, [if v_trans { t * n_embd_kv } else { t }, 1, 1, 1]);
    let mask_ty = if s.flash_attn { Ty::F16 } else { Ty::F32 };
    let mask = g.input(mask_ty, [n_kv, t, 1, 1]);
    let k_rot = (quantized(s.type_k) && s.head_dim.is_multiple_of(64)).then(|| {
        let mut n = 64;
        while s.head_dim.is_multiple_of(n * 2) {
            n *= 2;
        }
        g.input(Ty::F32, [n, n, 1, 1])
    });
    let v_rot = (quantized(s.type_v) && s.head_dim.is_multiple_of(64))
        .then(|| g.input(Ty::F32, [64, 64, 1, 1]));
    Inputs {
        n_kv,
        k_idxs,
        v_idxs,
        mask,
        k_rot,
        v_rot,
        k_cache: g.cache(s.type_k, [n_embd_kv, n_kv, 1, 1]),
        v_cache: g.cache(s.type_v, [n_embd_kv, n_kv, 1, 1]),
    }
}

impl Inputs {
    /// The cache of the layers on [`Graph::dev`] (each device keeps its layers' cache).
    fn on_device<const N: usize>(&mut self, g: &mut Graph<N>, s: &Shape) {
        let n_embd_kv = s.n_head_kv * s.head_dim;
        self.k_cache = g.cache(s.type_k, [n_embd_kv, self.n_kv, 1, 1]);
        self.v_cache = g.cache(s.type_v, [n_embd_kv, self.n_kv, 1, 1]);
    }
}

/// `llama_mul_mat_hadamard`: the rotation as a matmul over rows of its size.
fn hadamard<const N: usize>(g: &mut Graph<N>, x: Id, rot: Id) -> Id {
    let ne = g.ne(x);
    let flat = g.flat_2d(x, g.ne(rot)[0]);
    let r = g.mul_mat(rot, flat);
    g.reshape(r, ne)
}

/// `build_attn` with a KV cache and `build_attn_mha`, in their expand order: Q, V, K, the cache
/// writes, then the attention itself (fused with flash attention; scores, soft-max in place and
/// the weighted sum without, V then stored transposed).
fn attention<const N: usize>(g: &mut Graph<N>, s: &Shape, [q, k, v]: [Id; 3], i: &Inputs) -> Id {
    let (mut q, mut k, mut v) = (q, k, v);
    if let Some(rot) = i.k_rot {
        q = hadamard(g, q, rot);
        k = hadamard(g, k, rot);
    }
    if let Some(rot) = i.v_rot {
        v = hadamard(g, v, rot);
    }
    g.expand(q);
    g.expand(v);
    g.expand(k);
    write_cache(g, s, k, v, i);
    let (kc, vc) = cache_views(g, s, i);
    let qn = g.ne(q);
    let qv = g.view(q, qn, g_nb(g, q, 1), g_nb(g, q, 2), g_nb(g, q, 2) * qn[2]);
    let qp = g.permute_0213(qv);
    let kp = g.permute_0213(kc);
    let vp = g.permute_0213(vc);
    let mut cur = attend(g, s, [qp, kp, vp, i.mask]);
    g.expand(cur);
    if let Some(rot) = i.v_rot {
        cur = hadamard(g, cur, rot);
    }
    cur
}

/// The attention over the permuted Q and the cache's K and V views (`build_attn_mha`, the older
/// `llm_build_kqv`): flash attention's fused op, or the scores (soft-max in place with the mask),
/// their product with V, and the heads merged into a contiguous `n_embd_q × T`.
pub(super) fn attend<const N: usize>(g: &mut Graph<N>, s: &Shape, [q, k, v, mask]: [Id; 4]) -> Id {
    let t = s.n_tokens;
    let n_embd_q = s.n_head * s.head_dim;
    if s.flash_attn {
        let fa = g.op(
            Ty::F32,
            [s.head_dim, s.n_head, t, 1],
            Op::Other,
            [q, k, v, mask],
        );
        if !s.legacy {
            let extra = fa_f16_copies(g, s, fa, [k, v]);
            g.set_cuda_extra(fa, extra);
        }
        g.reshape(fa, [n_embd_q, t, 1, 1])
    } else {
        let kq = g.mul_mat(k, q);
        let kq = g.like(kq, Op::Inplace, [kq, mask, NONE, NONE]);
        let kqv = g.mul_mat(v, kq);
        let merged = g.permute_0213(kqv);
        g.cont(merged, [n_embd_q, t, 1, 1])
    }
}

/// What a CUDA buffer allocates beyond flash attention's output (ggml-cuda `fattn.cu`
/// `ggml_cuda_flash_attn_ext_get_alloc_size`, `fattn-common.cuh`
/// `ggml_cuda_flash_attn_ext_get_f16_extra_data`; in llama.cpp since early 2026, not in the one
/// llama-cpp-python 0.3.22 vendors): a prompt's batch (more than 2 query rows) runs the MMA or
/// tile kernel, which reads K and V in F16, so a K or V of another type (quantized, F32) gets an
/// F16 copy after the output, each 128-byte aligned. (A BF16 cache is planned as F16 here, so
/// its copies are missed.)
fn fa_f16_copies<const N: usize>(g: &Graph<N>, s: &Shape, fa: Id, [k, v]: [Id; 2]) -> u64 {
    if s.n_tokens <= 2 {
        return 0;
    }
    let pad = |x: u64| x.div_ceil(128) * 128;
    let n = g.t[usize::from(fa)].nbytes();
    let elements = |id: Id| g.ne(id).iter().product::<u64>();
    let mut end = n;
    if s.type_k != Ty::F16 {
        end = pad(end) + elements(k) * 2;
    }
    if s.type_v != Ty::F16 {
        end = pad(end) + elements(v) * 2;
    }
    end - n
}

fn g_nb<const N: usize>(g: &Graph<N>, a: Id, i: usize) -> u64 {
    g.t[usize::from(a)].nb[i]
}

fn g_nb2<const N: usize>(g: &Graph<N>, a: Id) -> u64 {
    g_nb(g, a, 2)
}

/// A GGUF type as the graph plans it: a cache's, or a host weight's that op offload copies (BF16
/// like F16, the same size; only flash attention's F16 copies of a BF16 cache would tell them
/// apart, and are missed).
pub const fn ggml_ty(t: crate::tensor::GgufType) -> Ty {
    use crate::tensor::GgufType as G;
    match t {
        G::F32 => Ty::F32,
        G::F16 | G::Bf16 => Ty::F16,
        other => {
            let (elems, bytes) = other.block();
            Ty::Block { elems, bytes }
        }
    }
}

/// `cpy_k` / `cpy_v`: the layer's K and V rows written into the cache (`ggml_set_rows`, in
/// place in the cache's buffer; V transposed, one element per row, without flash attention).
fn write_cache<const N: usize>(g: &mut Graph<N>, s: &Shape, k: Id, v: Id, i: &Inputs) {
    let t = s.n_tokens;
    let n_embd_kv = s.n_head_kv * s.head_dim;
    let k_view = g.view(k, [n_embd_kv, t, 1, 1], g_nb2(g, k), 0, 0);
    let cpy_k = g.set_rows(i.k_cache, k_view, i.k_idxs);
    g.expand(cpy_k);
    let v_trans = !s.flash_attn;
    let cpy_v = if v_trans {
        let flat = g.reshape(v, [n_embd_kv, t, 1, 1]);
        let cache = g.reshape(i.v_cache, [n_embd_kv * i.n_kv, 1, 1, 1]);
        let flat = g.reshape(flat, [n_embd_kv * t, 1, 1, 1]);
        g.set_rows(cache, flat, i.v_idxs)
    } else {
        let v_view = g.view(v, [n_embd_kv, t, 1, 1], g_nb2(g, v), 0, 0);
        g.set_rows(i.v_cache, v_view, i.v_idxs)
    };
    g.expand(cpy_v);
}

/// `get_k` / `get_v`: views of the whole cache (every cell in use in the worst case).
fn cache_views<const N: usize>(g: &mut Graph<N>, s: &Shape, i: &Inputs) -> (Id, Id) {
    let n_embd_kv = s.n_head_kv * s.head_dim;
    let v_trans = !s.flash_attn;
    let k_row = s.type_k.row_size(n_embd_kv);
    let kc = g.view(
        i.k_cache,
        [s.head_dim, s.n_head_kv, i.n_kv, 1],
        s.type_k.row_size(s.head_dim),
        k_row,
        k_row * i.n_kv,
    );
    let v_row = s.type_v.row_size(n_embd_kv);
    let vc = if v_trans {
        let nb1 = s.type_v.row_size(i.n_kv * s.head_dim);
        let nb2 = s.type_v.row_size(i.n_kv);
        g.view(
            i.v_cache,
            [i.n_kv, s.n_head_kv, s.head_dim, 1],
            nb1,
            nb2,
            v_row * i.n_kv,
        )
    } else {
        let nb1 = s.type_v.row_size(s.head_dim);
        g.view(
            i.v_cache,
            [s.head_dim, s.n_head_kv, i.n_kv, 1],
            nb1,
            v_row,
            v_row * i.n_kv,
        )
    };
    (kc, vc)
}
