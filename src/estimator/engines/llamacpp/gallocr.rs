//! llama.cpp's compute-buffer planner, replayed: `ggml_gallocr` over a [`Graph`]
//! (ggml-org/llama.cpp@0c1e57098, `ggml/src/ggml-alloc.c`, one chunk per buffer: a CPU build's one
//! buffer, or one per backend of a GPU build, [`plan_in`]). The printed `… compute buffer size`
//! is each buffer's high-water mark (`max_size`).
//!
//! - Leafs first (`ggml_gallocr_alloc_graph_impl`): every planned leaf (the graph inputs) is
//!   allocated in leaf order before any node.
//! - A view is any tensor with a `view_src` (`ggml_impl_is_view`): the view ops, and `set_rows`,
//!   which writes into its destination; it pins its source's memory only if it has an op (the
//!   scheduler's dependency nodes have none).
//! - Children and views are counted over all nodes; then node by node: allocate it — in place
//!   of a source when the op allows it (`ggml_op_can_inplace`), the source is planned here (not a
//!   view, not external), is not an output, has the same layout, and this node is its only
//!   consumer with no views of it — else from the free list; then each source whose last
//!   consumer this was is freed (a view's root when its last view is done). Outputs are never
//!   freed.
//! - The free list (`ggml_dyn_tallocr`): blocks sorted by offset, the last one the unbounded
//!   tail; an allocation takes the best-fitting block other than the tail (the last of equal
//!   sizes), else the tail; a freed range merges with its neighbours.

use super::ggml::{Graph, Id, NONE, Op, Tensor};

/// Free blocks the replay keeps (ggml's `MAX_FREE_BLOCKS` is 256; a llama graph needs a few).
const MAX_BLOCKS: usize = 64;

#[derive(Clone, Copy, Default)]
struct Block {
    offset: u64,
    size: u64,
}

/// `ggml_dyn_tallocr` with one chunk.
struct FreeList {
    align: u64,
    blocks: [Block; MAX_BLOCKS],
    n: usize,
    max_size: u64,
    /// Set if the list ran out of slots: the result is then a lower bound.
    overflow: bool,
}

const TAIL: u64 = u64::MAX / 2;

impl FreeList {
    fn new(align: u64) -> FreeList {
        let mut blocks = [Block::default(); MAX_BLOCKS];
        blocks[0] = Block {
            offset: 0,
            size: TAIL,
        };
        FreeList {
            align,
            blocks,
            n: 1,
            max_size: 0,
            overflow: false,
        }
    }

    fn aligned(&self, size: u64) -> u64 {
        size.div_ceil(self.align) * self.align
    }

    fn remove(&mut self, i: usize) {
        self.blocks.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }

    fn alloc(&mut self, size: u64) -> u64 {
        let size = self.aligned(size);
        let mut best = None;
        let mut best_size = u64::MAX;
        for (i, b) in self.blocks[..self.n - 1].iter().enumerate() {
            if b.size >= size && b.size <= best_size {
                best = Some(i);
                best_size = b.size;
            }
        }
        let i = best.unwrap_or(self.n - 1);
        let addr = self.blocks[i].offset;
        self.blocks[i].offset += size;
        self.blocks[i].size -= size;
        if self.blocks[i].size == 0 {
            self.remove(i);
        }
        self.max_size = self.max_size.max(addr + size);
        addr
    }

    fn free(&mut self, addr: u64, size: u64) {
        let size = self.aligned(size);
        for i in 0..self.n {
            let b = self.blocks[i];
            if b.offset + b.size == addr {
                self.blocks[i].size += size;
                if i + 1 < self.n
                    && self.blocks[i].offset + self.blocks[i].size == self.blocks[i + 1].offset
                {
                    self.blocks[i].size += self.blocks[i + 1].size;
                    self.remove(i + 1);
                }
                return;
            }
            if addr + size == b.offset {
                self.blocks[i].offset = addr;
                self.blocks[i].size += size;
                if i > 0 && self.blocks[i - 1].offset + self.blocks[i - 1].size == addr {
                    self.blocks[i - 1].size += self.blocks[i].size;
                    self.remove(i);
                }
                return;
            }
        }
        if self.n == MAX_BLOCKS {
            self.overflow = true;
            return;
        }
        let at = self.blocks[..self.n].partition_point(|b| b.offset < addr);
        self.blocks.copy_within(at..self.n, at + 1);
        self.blocks[at] = Block { offset: addr, size };
        self.n += 1;
    }
}

#[derive(Clone, Copy, Default)]
struct Hash {
    n_children: i32,
    n_views: i32,
    offset: u64,
    /// The buffer it was planned in (a node reusing its parent's memory takes the parent's).
    buffer: u8,
    allocated: bool,
}

/// Buffers one plan may fill: a CPU build's one, or up to eight GPUs' and the host's (the
/// scheduler's backends, [`super::sched`]).
pub const MAX_BUFFERS: usize = 9;

/// The high-water mark of planning `g` in one buffer of alignment `align` (bytes); `None` if the
/// graph or the free list outgrew the replay's fixed capacity.
pub fn plan<const N: usize>(g: &Graph<N>, align: u64) -> Option<u64> {
    let one = Buffers {
        of: &[0; N],
        align: &[align],
        cuda: &[false],
    };
    plan_in(g, &g.leafs[..g.n_leafs], &g.nodes[..g.n_nodes], &one).map(|m| m[0])
}

/// Where each tensor is planned: `of[id]`, a buffer with alignment `align[of[id]]`, a CUDA
/// buffer if `cuda[of[id]]` (its allocation sizes pad quantized rows, [`Tensor::alloc_size`]).
pub struct Buffers<'a> {
    pub of: &'a [u8],
    pub align: &'a [u64],
    pub cuda: &'a [bool],
}

/// `ggml_gallocr_alloc_graph_impl` over `leafs` and `nodes` (the scheduler's graph copy, or the
/// graph itself), each tensor in its buffer: every buffer's high-water mark.
pub fn plan_in<const N: usize>(
    g: &Graph<N>,
    leafs: &[Id],
    nodes: &[Id],
    b: &Buffers,
) -> Option<[u64; MAX_BUFFERS]> {
    if g.full || b.align.is_empty() || b.align.len() > MAX_BUFFERS {
        return None;
    }
    let mut h = [Hash::default(); N];
    let mut lists: [FreeList; MAX_BUFFERS] =
        core::array::from_fn(|i| FreeList::new(b.align.get(i).copied().unwrap_or(1)));
    let mut p = Planner {
        g,
        h: &mut h,
        lists: &mut lists,
        of: b.of,
        cuda: b.cuda,
    };
    for &leaf in leafs {
        p.allocate(leaf, p.buffer_of(leaf));
    }
    for &node in nodes {
        let t = &g.t[usize::from(node)];
        if t.view_src != NONE && t.op != Op::Leaf {
            p.h[usize::from(t.view_src)].n_views += 1;
        }
        // Explicit inputs are allocated before any node runs.
        if t.input {
            p.allocate(node, p.buffer_of(node));
        }
        for &s in t.src.iter().filter(|&&s| s != NONE) {
            p.h[usize::from(s)].n_children += 1;
            if g.t[usize::from(s)].input {
                p.allocate(s, p.buffer_of(node));
            }
        }
    }
    for &node in nodes {
        let t = g.t[usize::from(node)];
        let buffer = p.buffer_of(node);
        for &s in t.src.iter().filter(|&&s| s != NONE) {
            p.allocate(s, buffer);
        }
        p.allocate(node, buffer);
        for &s in t.src.iter().filter(|&&s| s != NONE) {
            p.release(s);
        }
    }
    if lists.iter().any(|l| l.overflow) {
        return None;
    }
    Some(core::array::from_fn(|i| lists[i].max_size))
}

struct Planner<'a, const N: usize> {
    g: &'a Graph<N>,
    h: &'a mut [Hash; N],
    lists: &'a mut [FreeList; MAX_BUFFERS],
    of: &'a [u8],
    cuda: &'a [bool],
}

impl<const N: usize> Planner<'_, N> {
    fn buffer_of(&self, id: Id) -> u8 {
        self.of
            .get(usize::from(id))
            .copied()
            .unwrap_or(0)
            .min(MAX_BUFFERS as u8 - 1)
    }

    /// `ggml_backend_buft_get_alloc_size` of `t` in `buffer`.
    fn size(&self, t: &Tensor, buffer: u8) -> u64 {
        t.alloc_size(self.cuda.get(usize::from(buffer)).copied().unwrap_or(false))
    }

    /// `ggml_gallocr_allocate_node`.
    fn allocate(&mut self, id: Id, buffer: u8) {
        let g = self.g;
        let t = &g.t[usize::from(id)];
        if t.external || self.h[usize::from(id)].allocated || t.view_src != NONE {
            return;
        }
        self.h[usize::from(id)].allocated = true;
        if t.op == Op::Inplace {
            for &s in t.src.iter().filter(|&&s| s != NONE) {
                let p = &g.t[usize::from(s)];
                let ph = self.h[usize::from(s)];
                // A view is never the planner's own (`ggml_gallocr_is_own`), so only a planned
                // tensor can be reused.
                if !ph.allocated || p.output || !t.same_layout(p) {
                    continue;
                }
                if ph.n_children == 1 && ph.n_views == 0 {
                    self.h[usize::from(id)].offset = ph.offset;
                    self.h[usize::from(id)].buffer = ph.buffer;
                    self.h[usize::from(s)].allocated = false;
                    return;
                }
            }
        }
        self.h[usize::from(id)].buffer = buffer;
        let size = self.size(t, buffer);
        self.h[usize::from(id)].offset = self.lists[usize::from(buffer)].alloc(size);
    }

    /// The parent update after a node ran (`ggml_gallocr_alloc_graph_impl`, "update parents").
    fn release(&mut self, s: Id) {
        let i = usize::from(s);
        self.h[i].n_children -= 1;
        if self.h[i].n_children != 0 || self.h[i].n_views != 0 {
            return;
        }
        let p = &self.g.t[i];
        if p.view_src != NONE {
            let r = usize::from(p.view_src);
            self.h[r].n_views -= 1;
            if self.h[r].n_views == 0 && self.h[r].n_children == 0 && self.h[r].allocated {
                self.free(p.view_src);
            }
        } else if self.h[i].allocated {
            self.free(s);
        }
    }

    /// `ggml_gallocr_free_node`: outputs stay.
    fn free(&mut self, id: Id) {
        let t = &self.g.t[usize::from(id)];
        if t.output {
            return;
        }
        let h = self.h[usize::from(id)];
        let size = self.size(t, h.buffer);
        self.lists[usize::from(h.buffer)].free(h.offset, size);
        self.h[usize::from(id)].allocated = false;
    }
}
