//! A shape-only ggml graph: just enough of ggml's tensor constructors and graph building to
//! replay llama.cpp's compute-buffer planner ([`super::gallocr`]). Rules from
//! ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36), `ggml/src/ggml.c`:
//!
//! - a tensor made by `ggml_new_tensor` / `ggml_dup_tensor` is contiguous
//!   (`nb[0]` = type size, `nb[1]` = row size, `nb[i]` = `nb[i-1] × ne[i-1]`);
//! - a view (`ggml_view_*`, `ggml_reshape_*`, `ggml_permute`, `ggml_transpose`) points at the
//!   tensor that owns the memory (`view_src`, collapsed to the root by `ggml_new_tensor_impl`)
//!   and keeps its argument as `src[0]`;
//! - `ggml_build_forward_expand` visits sources depth first, left to right
//!   (`ggml_visit_parents_graph`): a tensor without an op is a leaf, every other a node, each in
//!   the order its visit ends.
//!
//! Fixed capacity, no allocation: a `Graph<N>` holds at most `N` tensors (a llama layer makes
//! 33–45 with the cache writes, views and rotations; a mixture-of-experts layer 17 + top-k × 2
//! more).

/// A tensor's index in its graph.
pub type Id = u16;

/// Sources a tensor keeps (`GGML_MAX_SRC` is 10; the replayed ops use at most 7: `ssm_scan`).
pub const MAX_SRC: usize = 8;
/// No tensor (`NULL`).
pub const NONE: Id = Id::MAX;

/// Element types the compute graph uses. `Block` is a quantized type of `elems` values in
/// `bytes` bytes (a quantized KV cache: q8_0 is 32 in 34).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    F32,
    F16,
    I32,
    I64,
    Block { elems: u32, bytes: u32 },
}

impl Ty {
    const fn type_size(self) -> u64 {
        match self {
            Ty::F32 | Ty::I32 => 4,
            Ty::F16 => 2,
            Ty::I64 => 8,
            Ty::Block { bytes, .. } => bytes as u64,
        }
    }

    const fn block(self) -> u64 {
        match self {
            Ty::Block { elems, .. } => elems as u64,
            _ => 1,
        }
    }

    /// `ggml_row_size`: bytes of `n` elements.
    pub const fn row_size(self, n: u64) -> u64 {
        self.type_size() * n / self.block()
    }
}

/// What the planner needs to know of an op (`ggml_op_can_inplace`, `ggml_impl_is_view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `GGML_OP_NONE`: a leaf (an input, a weight, the KV cache).
    Leaf,
    /// VIEW, RESHAPE, PERMUTE, TRANSPOSE.
    View,
    /// An op `ggml_op_can_inplace` accepts (ADD, MUL, RMS_NORM, ROPE, SOFT_MAX, …).
    Inplace,
    /// Any other op (MUL_MAT, GET_ROWS, CONT, GLU, FLASH_ATTN_EXT, SET_ROWS, …).
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor {
    pub ty: Ty,
    pub ne: [u64; 4],
    pub nb: [u64; 4],
    pub op: Op,
    pub src: [Id; MAX_SRC],
    pub view_src: Id,
    /// `GGML_TENSOR_FLAG_INPUT` / `GGML_TENSOR_FLAG_OUTPUT`.
    pub input: bool,
    pub output: bool,
    /// Memory the planner does not own (weights, the KV cache, views and `set_rows` of them):
    /// `t->data` or `t->buffer` is set before planning.
    pub external: bool,
    /// An external tensor in a weights buffer (`GGML_BACKEND_BUFFER_USAGE_WEIGHTS`): the
    /// scheduler runs an op on its weight's device; a KV cache does not pin ops.
    pub weight: bool,
    /// The device holding an external tensor, or the one a pinned node runs on: a GPU's index,
    /// or [`HOST`].
    pub dev: u8,
    /// Placed by llama.cpp itself (`ggml_backend_sched_set_tensor_backend`), on `dev`.
    pub pinned: bool,
    /// The batch CUDA's `offload_op` compares with its minimum of 32 (ggml-cuda.cu
    /// `get_op_batch_size`): `ne1` of a product, `ne2` of an expert product, none for a row
    /// lookup, the rows of any other op.
    pub batch: u64,
    /// Bytes a CUDA buffer allocates beyond the tensor: flash attention's F16 copies of a
    /// quantized K and V ([`Graph::set_cuda_extra`]).
    pub cuda_extra: u64,
}

/// [`Tensor::dev`] of host memory.
pub const HOST: u8 = u8::MAX;

/// ggml-cuda's `MATRIX_ROW_PADDING`: quantized rows are padded to a multiple of it.
const CUDA_ROW_PADDING: u64 = 512;

impl Tensor {
    /// `ggml_nbytes` of a contiguous tensor (views and external tensors are never planned).
    pub const fn nbytes(&self) -> u64 {
        self.ty.row_size(self.ne[0]) * self.ne[1] * self.ne[2] * self.ne[3]
    }

    /// Bytes a buffer type allocates for it: `ggml_nbytes`, and in a CUDA buffer a quantized
    /// tensor whose rows are not a multiple of 512 gets the rest of one such row
    /// (`ggml_backend_cuda_buffer_type_get_alloc_size`, `MATRIX_ROW_PADDING`).
    pub const fn alloc_size(&self, cuda: bool) -> u64 {
        if !cuda {
            return self.nbytes();
        }
        let n = self.nbytes() + self.cuda_extra;
        let rest = self.ne[0] % CUDA_ROW_PADDING;
        if self.ty.block() > 1 && rest != 0 {
            n + self.ty.row_size(CUDA_ROW_PADDING - rest)
        } else {
            n
        }
    }

    /// `ggml_are_same_layout`.
    pub fn same_layout(&self, o: &Tensor) -> bool {
        self.ty == o.ty && self.ne == o.ne && self.nb == o.nb
    }

    /// `ggml_is_contiguous` (`ggml_is_contiguous_n(t, 0)`: dimensions of size 1 are skipped).
    fn contiguous(&self) -> bool {
        let mut next = self.ty.type_size();
        if self.ne[0] != self.ty.block() && self.nb[0] != next {
            return false;
        }
        next *= self.ne[0] / self.ty.block();
        for i in 1..4 {
            if self.ne[i] != 1 {
                if self.nb[i] != next {
                    return false;
                }
                next *= self.ne[i];
            }
        }
        true
    }
}

const fn strides(ty: Ty, ne: [u64; 4]) -> [u64; 4] {
    let nb1 = ty.row_size(ne[0]);
    [ty.type_size(), nb1, nb1 * ne[1], nb1 * ne[1] * ne[2]]
}

/// A graph under construction: its tensors, and its nodes and leafs in `ggml_cgraph` order.
pub struct Graph<const N: usize> {
    pub t: [Tensor; N],
    pub n: usize,
    pub nodes: [Id; N],
    pub n_nodes: usize,
    pub leafs: [Id; N],
    pub n_leafs: usize,
    visited: [bool; N],
    /// The depth-first walk's stack: (tensor, next source to visit).
    stack: [(Id, u8); N],
    /// Set when a constructor ran out of room: the graph is then incomplete.
    pub full: bool,
    /// The device new weights and caches are on ([`Tensor::dev`]).
    pub dev: u8,
    /// Pin each layer's norm to [`Graph::dev`] ([`Graph::pin_norm`]).
    pub pin_norms: bool,
}

const BLANK: Tensor = Tensor {
    ty: Ty::F32,
    ne: [1; 4],
    nb: [4; 4],
    op: Op::Leaf,
    src: [NONE; MAX_SRC],
    view_src: NONE,
    input: false,
    output: false,
    external: false,
    weight: false,
    dev: 0,
    pinned: false,
    batch: 0,
    cuda_extra: 0,
};

impl<const N: usize> Default for Graph<N> {
    #[inline(always)]
    fn default() -> Self {
        Graph {
            t: [BLANK; N],
            n: 0,
            nodes: [NONE; N],
            n_nodes: 0,
            leafs: [NONE; N],
            n_leafs: 0,
            visited: [false; N],
            stack: [(NONE, 0); N],
            full: false,
            dev: 0,
            pin_norms: false,
        }
    }
}

impl<const N: usize> Graph<N> {
    fn push(&mut self, t: Tensor) -> Id {
        if self.n >= N || N > usize::from(NONE) {
            self.full = true;
            return 0;
        }
        self.t[self.n] = t;
        self.n += 1;
        (self.n - 1) as Id
    }

    fn get(&self, id: Id) -> &Tensor {
        &self.t[usize::from(id)]
    }

    /// `ggml_new_tensor` with `ggml_set_input`: a graph input the planner allocates.
    pub fn input(&mut self, ty: Ty, ne: [u64; 4]) -> Id {
        self.push(Tensor {
            ty,
            ne,
            nb: strides(ty, ne),
            input: true,
            ..BLANK
        })
    }

    /// A weight on [`Graph::dev`]: never planned. Weights of one shape on one device can share
    /// one tensor: only their existence and place matter to the plan.
    pub fn external(&mut self, ty: Ty, ne: [u64; 4]) -> Id {
        let dev = self.dev;
        self.push(Tensor {
            ty,
            ne,
            nb: strides(ty, ne),
            external: true,
            weight: true,
            dev,
            ..BLANK
        })
    }

    /// llama.cpp's graph callback under full offload (`llama_context::graph_get_cb`, "norm may be
    /// automatically assigned to the backend of the previous layer"): a layer's norm (the tensor
    /// `build_norm` names "norm") runs on its layer's device. Only while [`Graph::pin_norms`].
    pub fn pin_norm(&mut self, a: Id) {
        if self.pin_norms && usize::from(a) < self.n {
            let dev = self.dev;
            let t = &mut self.t[usize::from(a)];
            t.pinned = true;
            t.dev = dev;
        }
    }

    /// A KV cache layer on [`Graph::dev`]: never planned, and not a weight to the scheduler.
    pub fn cache(&mut self, ty: Ty, ne: [u64; 4]) -> Id {
        let t = self.external(ty, ne);
        self.t[usize::from(t)].weight = false;
        t
    }

    /// `ggml_dup_tensor_layout`: a tensor with `a`'s type, shape and strides, no op (the
    /// scheduler's copy of a split input).
    pub fn dup_layout(&mut self, a: Id) -> Id {
        let p = *self.get(a);
        self.push(Tensor {
            ty: p.ty,
            ne: p.ne,
            nb: p.nb,
            ..BLANK
        })
    }

    /// `ggml_view_tensor(a)` with `a` as its source: the scheduler's dependency that keeps a
    /// split input alive until its copy is made. `ggml_view_tensor` sets no op (`GGML_OP_NONE`),
    /// so the planner counts it as a consumer of `a`, not as a view pinning `a`'s memory
    /// (ggml-alloc.c counts views only when their op is not NONE).
    pub fn dep_view(&mut self, a: Id) -> Id {
        let p = *self.get(a);
        let root = if p.view_src == NONE { a } else { p.view_src };
        self.push(Tensor {
            op: Op::Leaf,
            src: [a, NONE, NONE, NONE, NONE, NONE, NONE, NONE],
            view_src: root,
            input: false,
            output: false,
            pinned: false,
            ..p
        })
    }

    /// A new contiguous result of `op` over `src`.
    pub fn op(&mut self, ty: Ty, ne: [u64; 4], op: Op, src: [Id; 4]) -> Id {
        self.op_of(ty, ne, op, &src)
    }

    /// [`Graph::op`] with up to [`MAX_SRC`] sources (the rest are dropped).
    pub fn op_of(&mut self, ty: Ty, ne: [u64; 4], op: Op, srcs: &[Id]) -> Id {
        let mut src = [NONE; MAX_SRC];
        for (d, s) in src.iter_mut().zip(srcs) {
            *d = *s;
        }
        self.push(Tensor {
            ty,
            ne,
            nb: strides(ty, ne),
            op,
            src,
            batch: ne[1] * ne[2] * ne[3],
            ..BLANK
        })
    }

    /// Sets [`Tensor::cuda_extra`] of `id`.
    pub fn set_cuda_extra(&mut self, id: Id, bytes: u64) {
        if let Some(t) = self.t.get_mut(usize::from(id)) {
            t.cuda_extra = bytes;
        }
    }

    /// Sets [`Tensor::batch`] of a node whose op counts its batch otherwise.
    fn with_batch(&mut self, id: Id, batch: u64) -> Id {
        if let Some(t) = self.t.get_mut(usize::from(id)) {
            t.batch = batch;
        }
        id
    }

    fn view_of(&mut self, a: Id, ne: [u64; 4], nb: [u64; 4]) -> Id {
        let p = *self.get(a);
        let root = if p.view_src == NONE { a } else { p.view_src };
        self.push(Tensor {
            ty: p.ty,
            ne,
            nb,
            op: Op::View,
            src: [a, NONE, NONE, NONE, NONE, NONE, NONE, NONE],
            view_src: root,
            external: p.external,
            ..BLANK
        })
    }

    /// `ggml_reshape_*`: the same memory as a contiguous `ne`.
    pub fn reshape(&mut self, a: Id, ne: [u64; 4]) -> Id {
        let ty = self.get(a).ty;
        self.view_of(a, ne, strides(ty, ne))
    }

    /// `ggml_view_4d` (also `_2d`/`_3d` with trailing sizes 1): `nb[0]` is the type's size.
    pub fn view(&mut self, a: Id, ne: [u64; 4], nb1: u64, nb2: u64, nb3: u64) -> Id {
        let ts = self.get(a).ty.type_size();
        self.view_of(a, ne, [ts, nb1, nb2, nb3])
    }

    /// `ggml_permute(a, 0, 2, 1, 3)`, the only permutation the attention uses.
    pub fn permute_0213(&mut self, a: Id) -> Id {
        let p = *self.get(a);
        let ne = [p.ne[0], p.ne[2], p.ne[1], p.ne[3]];
        let nb = [p.nb[0], p.nb[2], p.nb[1], p.nb[3]];
        self.view_of(a, ne, nb)
    }

    /// `ggml_transpose(a)`: dimensions 0 and 1 swapped (a view).
    pub fn transpose(&mut self, a: Id) -> Id {
        let p = *self.get(a);
        let ne = [p.ne[1], p.ne[0], p.ne[2], p.ne[3]];
        let nb = [p.nb[1], p.nb[0], p.nb[2], p.nb[3]];
        self.view_of(a, ne, nb)
    }

    /// `ggml_concat(a, b, 0)`: a new tensor of `a`'s type, `a.ne0 + b.ne0` wide.
    pub fn concat0(&mut self, a: Id, b: Id) -> Id {
        let (x, y) = (*self.get(a), *self.get(b));
        let ne = [x.ne[0] + y.ne[0], x.ne[1], x.ne[2], x.ne[3]];
        self.op(x.ty, ne, Op::Other, [a, b, NONE, NONE])
    }

    /// `ggml_cont_4d` / `ggml_cont_2d`: a contiguous copy of `a` as `ne` (`ggml_cont` when `ne`
    /// is `a`'s own).
    pub fn cont(&mut self, a: Id, ne: [u64; 4]) -> Id {
        let ty = self.get(a).ty;
        self.op(ty, ne, Op::Other, [a, NONE, NONE, NONE])
    }

    /// A result shaped and typed like `a` (`ggml_dup_tensor`).
    pub fn like(&mut self, a: Id, op: Op, src: [Id; 4]) -> Id {
        let p = *self.get(a);
        self.op(p.ty, p.ne, op, src)
    }

    /// `ggml_mul_mat(a, b)`: F32 `[a.ne1, b.ne1, b.ne2, b.ne3]`.
    pub fn mul_mat(&mut self, a: Id, b: Id) -> Id {
        let (x, y) = (*self.get(a), *self.get(b));
        let ne = [x.ne[1], y.ne[1], y.ne[2], y.ne[3]];
        let id = self.op(Ty::F32, ne, Op::Other, [a, b, NONE, NONE]);
        self.with_batch(id, ne[1])
    }

    /// `ggml_get_rows(a, b)`: F32 `[a.ne0, b.ne0, b.ne1, b.ne2]`.
    pub fn get_rows(&mut self, a: Id, b: Id) -> Id {
        let (x, y) = (*self.get(a), *self.get(b));
        let ne = [x.ne[0], y.ne[0], y.ne[1], y.ne[2]];
        let id = self.op(Ty::F32, ne, Op::Other, [a, b, NONE, NONE]);
        self.with_batch(id, 0)
    }

    /// `ggml_mul_mat_id(as, b, ids)`: each token's rows of `b` through its selected experts, F32
    /// `[as.ne1, ids.ne0, b.ne2]`.
    pub fn mul_mat_id(&mut self, experts: Id, b: Id, ids: Id) -> Id {
        let (x, y, i) = (*self.get(experts), *self.get(b), *self.get(ids));
        let ne = [x.ne[1], i.ne[0], y.ne[2], 1];
        let id = self.op(Ty::F32, ne, Op::Other, [experts, b, ids, NONE]);
        self.with_batch(id, ne[2])
    }

    /// `ggml_sum_rows(a)`: `[1, a.ne1, a.ne2, a.ne3]` of `a`'s type.
    pub fn sum_rows(&mut self, a: Id) -> Id {
        let p = *self.get(a);
        self.op(
            p.ty,
            [1, p.ne[1], p.ne[2], p.ne[3]],
            Op::Other,
            [a, NONE, NONE, NONE],
        )
    }

    /// `ggml_argsort_top_k(a, k)`: the I32 argsort of `a`, viewed to its first `k` columns.
    pub fn argsort_top_k(&mut self, a: Id, k: u64) -> Id {
        let p = *self.get(a);
        let sorted = self.op(Ty::I32, p.ne, Op::Other, [a, NONE, NONE, NONE]);
        let nb = self.get(sorted).nb;
        self.view(sorted, [k, p.ne[1], p.ne[2], p.ne[3]], nb[1], nb[2], nb[3])
    }

    /// `ggml_set_rows(a, b, c)`: a view of the destination `a` (sources in ggml's legacy order).
    pub fn set_rows(&mut self, a: Id, b: Id, c: Id) -> Id {
        let p = *self.get(a);
        self.push(Tensor {
            op: Op::Other,
            src: [b, c, a, NONE, NONE, NONE, NONE, NONE],
            view_src: if p.view_src == NONE { a } else { p.view_src },
            ..p
        })
    }

    /// `ggml_cpy(a, b)`: `a` copied into `b`, the result a view of `b` (a recurrent state written
    /// back into its cache).
    pub fn cpy(&mut self, a: Id, b: Id) -> Id {
        let p = *self.get(b);
        self.push(Tensor {
            op: Op::Other,
            src: [a, b, NONE, NONE, NONE, NONE, NONE, NONE],
            view_src: if p.view_src == NONE { b } else { p.view_src },
            ..p
        })
    }

    /// `ggml_cont_2d`, or `ggml_reshape_2d` when `a` is contiguous (as `llama_mul_mat_hadamard`).
    pub fn flat_2d(&mut self, a: Id, ne0: u64) -> Id {
        let p = *self.get(a);
        let ne = [ne0, p.ne[0] * p.ne[1] * p.ne[2] * p.ne[3] / ne0, 1, 1];
        if p.contiguous() {
            self.reshape(a, ne)
        } else {
            self.op(p.ty, ne, Op::Other, [a, NONE, NONE, NONE])
        }
    }

    pub fn ne(&self, a: Id) -> [u64; 4] {
        self.get(a).ne
    }

    pub fn set_output(&mut self, a: Id) {
        self.t[usize::from(a)].output = true;
    }

    /// `ggml_build_forward_expand`: adds `a` and what it depends on, depth first.
    pub fn expand(&mut self, a: Id) {
        // An explicit stack, no recursion.
        if self.full || self.visited[usize::from(a)] {
            return;
        }
        self.visited[usize::from(a)] = true;
        self.stack[0] = (a, 0);
        let mut depth = 1;
        while depth > 0 {
            let (id, k) = self.stack[depth - 1];
            if usize::from(k) < MAX_SRC {
                self.stack[depth - 1].1 += 1;
                let s = self.get(id).src[usize::from(k)];
                if s != NONE && !self.visited[usize::from(s)] {
                    self.visited[usize::from(s)] = true;
                    self.stack[depth] = (s, 0);
                    depth += 1;
                }
                continue;
            }
            depth -= 1;
            if self.get(id).op == Op::Leaf {
                self.leafs[self.n_leafs] = id;
                self.n_leafs += 1;
            } else {
                self.nodes[self.n_nodes] = id;
                self.n_nodes += 1;
            }
        }
    }
}
