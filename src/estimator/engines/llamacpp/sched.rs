//! ggml's backend scheduler, replayed: which backend runs each node of the reserve graph, where
//! the graph splits, which tensors each split copies in, and the compute buffer each backend's
//! planner then reserves (ggml-org/llama.cpp@0c1e57098, `ggml/src/ggml-backend.cpp`
//! `ggml_backend_sched_backend_id_from_cur`, `ggml_backend_sched_split_graph` passes 1–6 and the
//! graph copy; `ggml/src/ggml-alloc.c` over the copy; docs/engines/llamacpp.md §5).
//!
//! Backends are numbered as the scheduler's: the GPUs first, the CPU last (the lowest priority).
//! - Pass 1: a weight, the KV cache and views of them stay on their device; a graph input goes to
//!   the CPU; an op with a weight among its sources runs where the weight is — unless the weight
//!   is in host memory and the first GPU's `offload_op` takes the op (op offload: a batch of at
//!   least 32, [`OFFLOAD_MIN_BATCH`]), which it then runs on a copy of the weight.
//! - Pass 2: the GPUs' assignments spread down the graph, then up, skipping past CPU nodes; then
//!   any backend's, down and up. Pass 3 places what is left by its inputs, pass 4 views and
//!   sources by their users.
//! - Pass 5: a split starts wherever the backend changes, and where a node of a split that
//!   already has inputs reads a weight this backend cannot ("by starting a new split, the memory
//!   of the previously offloaded weights can be reused"); a source on another backend (one whose
//!   buffer this backend cannot read: a GPU reads only its own) is copied into the split's
//!   backend once (`ggml_dup_tensor_layout`), `n_copies` times with pipeline parallelism.
//! - The graph copy: each split's input copies are nodes at the split's start (each after a
//!   dependency node, a view without an op, that keeps its source alive until the copy is made),
//!   then the split's nodes; with `n_copies > 1` every graph input and split input is also a leaf
//!   in `n_copies` copies, flagged input and output (allocated first, never freed).
//!
//! The older scheduler (llama.cpp of August 2024, in llama-cpp-python 0.2.90,
//! `ggml/src/ggml-backend.c`) has the same passes; it offloads without asking whether the weight's
//! buffer is host memory (the CPU's always is) and has no switch to turn op offload off.

use super::gallocr::{self, MAX_BUFFERS};
use super::ggml::{Graph, HOST, Id, NONE, Op};

/// Split inputs (with their copies) one replay may hold.
const MAX_INPUTS: usize = 512;
/// Splits one replay may hold (a host layer under op offload makes about a dozen: one per weight
/// it copies, and the cache writes on the host).
const MAX_SPLITS: usize = 256;

/// The compute buffers a reserve leaves: each GPU's and the host's (`CUDA_Host`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    pub gpu: [u64; MAX_BUFFERS - 1],
    pub host: u64,
}

#[derive(Clone, Copy)]
struct Split {
    start: usize,
    end: usize,
    /// Its inputs: `inputs[first .. first + n]`.
    first: usize,
    n: usize,
}

/// One split input: the tensor read and its copies on the split's backend.
#[derive(Clone, Copy)]
struct Input {
    src: Id,
    backend: u8,
    copies: [Id; MAX_COPIES],
}

/// `GGML_SCHED_MAX_COPIES`.
pub const MAX_COPIES: usize = 4;

/// The fewest tokens for which a GPU runs an op on a host weight itself: CUDA's
/// `op_offload_min_batch_size` (`GGML_OP_OFFLOAD_MIN_BATCH`'s default, ggml-cuda.cu
/// `ggml_backend_cuda_reg`), compared with the op's batch ([`super::ggml::Tensor::batch`]: for a
/// prompt's products, the ubatch's tokens).
pub const OFFLOAD_MIN_BATCH: u64 = 32;

/// GPU compute buffers align to 128 B (`ggml_backend_cuda_buffer_type_get_alignment`), the host's
/// to 32 B (the CPU buffer type's `TENSOR_ALIGNMENT`, which `CUDA_Host` uses).
const GPU_ALIGN: u64 = 128;
const HOST_ALIGN: u64 = 32;

/// Splits `g` over `gpus` GPUs and the CPU and plans every backend's buffer, with op offload if
/// `op_offload` (`-nopo` turns it off); `None` if the replay ran out of room.
pub fn reserve<const N: usize>(
    g: &mut Graph<N>,
    gpus: usize,
    n_copies: usize,
    op_offload: bool,
) -> Option<Reserved> {
    if gpus == 0 || gpus >= MAX_BUFFERS || g.full || !(1..=MAX_COPIES).contains(&n_copies) {
        return None;
    }
    let cpu = gpus as u8;
    let mut be = [-1i16; N];
    assign(g, &mut be, cpu, op_offload)?;
    let mut s = Scheduled {
        splits: [Split {
            start: 0,
            end: 0,
            first: 0,
            n: 0,
        }; MAX_SPLITS],
        n_splits: 0,
        inputs: [Input {
            src: NONE,
            backend: 0,
            copies: [NONE; MAX_COPIES],
        }; MAX_INPUTS],
        n_inputs: 0,
    };
    split(g, &mut be, cpu, n_copies, &mut s)?;
    let (nodes, n_nodes, leafs, n_leafs) = graph_copy(g, &mut be, n_copies, &s)?;
    if g.full {
        return None;
    }
    let mut of = [0u8; N];
    for (o, &b) in of.iter_mut().zip(&be) {
        *o = u8::try_from(b.max(0)).unwrap_or(cpu);
    }
    let mut align = [GPU_ALIGN; MAX_BUFFERS];
    align[usize::from(cpu)] = HOST_ALIGN;
    let mut cuda = [true; MAX_BUFFERS];
    cuda[usize::from(cpu)] = false;
    let bufs = gallocr::Buffers {
        of: &of,
        align: &align[..=usize::from(cpu)],
        cuda: &cuda[..=usize::from(cpu)],
    };
    let max = gallocr::plan_in(g, &leafs[..n_leafs], &nodes[..n_nodes], &bufs)?;
    let mut r = Reserved {
        host: max[usize::from(cpu)],
        ..Reserved::default()
    };
    r.gpu[..gpus].copy_from_slice(&max[..gpus]);
    Some(r)
}

struct Scheduled {
    splits: [Split; MAX_SPLITS],
    n_splits: usize,
    inputs: [Input; MAX_INPUTS],
    n_inputs: usize,
}

/// The backend of device `dev` ([`HOST`]: the CPU, the last backend).
fn backend(dev: u8, cpu: u8) -> u8 {
    if dev == HOST { cpu } else { dev.min(cpu) }
}

/// The backend an external tensor (or a view of one) lives on.
fn device<const N: usize>(g: &Graph<N>, id: Id, cpu: u8) -> Option<u8> {
    let t = &g.t[usize::from(id)];
    let root = if t.view_src == NONE {
        t
    } else {
        &g.t[usize::from(t.view_src)]
    };
    root.external.then_some(backend(root.dev, cpu))
}

/// `ggml_backend_sched_backend_id_from_cur`: `None` if unassigned. A host weight's op goes to
/// the first GPU when `op_offload` and its batch is large enough (every CUDA device supports the
/// ops of these graphs, so the first asked takes it).
fn from_cur<const N: usize>(g: &Graph<N>, id: Id, cpu: u8, op_offload: bool) -> Option<u8> {
    if let Some(d) = device(g, id, cpu) {
        return Some(d);
    }
    let t = &g.t[usize::from(id)];
    if t.input {
        return Some(cpu);
    }
    let w = t
        .src
        .iter()
        .filter(|&&s| s != NONE)
        .map(|&s| &g.t[usize::from(s)])
        .find(|s| s.weight && s.view_src == NONE)?;
    let at = backend(w.dev, cpu);
    if at == cpu && cpu > 0 && op_offload && t.batch >= OFFLOAD_MIN_BATCH {
        return Some(0);
    }
    Some(at)
}

/// Passes 1–4: every tensor of the graph on a backend.
fn assign<const N: usize>(
    g: &Graph<N>,
    be: &mut [i16; N],
    cpu: u8,
    op_offload: bool,
) -> Option<()> {
    for &id in g.leafs[..g.n_leafs].iter().chain(&g.nodes[..g.n_nodes]) {
        let t = &g.t[usize::from(id)];
        if t.pinned {
            be[usize::from(id)] = i16::from(backend(t.dev, cpu));
        } else if let Some(b) = from_cur(g, id, cpu, op_offload) {
            be[usize::from(id)] = i16::from(b);
        }
    }
    let nodes = &g.nodes[..g.n_nodes];
    let not_view = |id: &&Id| g.t[usize::from(**id)].op != Op::View;
    let cpu = i16::from(cpu);
    // Pass 2: GPUs down, GPUs up (a CPU node stops the spread), then any backend down and up.
    for gpus_only in [true, false] {
        for down in [true, false] {
            let mut cur = -1i16;
            let mut step = |id: Id| {
                let b = &mut be[usize::from(id)];
                if *b != -1 {
                    cur = if gpus_only && *b == cpu { -1 } else { *b };
                } else if cur != -1 {
                    *b = cur;
                }
            };
            if down {
                nodes.iter().filter(not_view).for_each(|&id| step(id));
            } else {
                nodes.iter().rev().filter(not_view).for_each(|&id| step(id));
            }
        }
    }
    // Pass 3: a node still unplaced goes where most of its sources can be read.
    for &id in nodes.iter().filter(not_view) {
        if be[usize::from(id)] != -1 {
            continue;
        }
        let t = &g.t[usize::from(id)];
        let mut best = (-1i32, -1i16);
        for b in 0..=cpu {
            let n = t
                .src
                .iter()
                .filter(|&&s| s != NONE && readable(g, be, s, b, cpu as u8))
                .count() as i32;
            if n > best.0 {
                best = (n, b);
            }
        }
        be[usize::from(id)] = best.1;
    }
    // Pass 4: views with their sources, unplaced sources with their users.
    for &id in nodes {
        let t = g.t[usize::from(id)];
        if t.view_src != NONE && be[usize::from(id)] == -1 {
            be[usize::from(id)] = be[usize::from(t.view_src)];
        }
        for &s in t.src.iter().filter(|&&s| s != NONE) {
            if be[usize::from(s)] == -1 {
                let v = g.t[usize::from(s)].view_src;
                be[usize::from(s)] = if v == NONE {
                    be[usize::from(id)]
                } else {
                    be[usize::from(v)]
                };
            }
        }
        if be[usize::from(id)] == -1 {
            be[usize::from(id)] = 0;
        }
    }
    Some(())
}

/// `ggml_backend_sched_buffer_supported`: backend `b` can read `id` where it is (a backend reads
/// only the buffers of its own device; the CPU's are host memory).
fn readable<const N: usize>(g: &Graph<N>, be: &[i16; N], id: Id, b: i16, cpu: u8) -> bool {
    let at = match device(g, id, cpu) {
        Some(d) => i16::from(d),
        None => {
            let own = be[usize::from(id)];
            let v = g.t[usize::from(id)].view_src;
            if own == -1 && v != NONE {
                be[usize::from(v)]
            } else {
                own
            }
        }
    };
    at != -1 && at == b
}

/// Pass 5 and 6: the splits, their inputs' copies, and the sources rewritten to the copies.
fn split<const N: usize>(
    g: &mut Graph<N>,
    be: &mut [i16; N],
    cpu: u8,
    n_copies: usize,
    s: &mut Scheduled,
) -> Option<()> {
    let n_nodes = g.n_nodes;
    let first = (0..n_nodes).find(|&i| g.t[usize::from(g.nodes[i])].op != Op::View)?;
    let mut cur = be[usize::from(g.nodes[first])];
    s.splits[0] = Split {
        start: 0,
        end: n_nodes,
        first: 0,
        n: 0,
    };
    s.n_splits = 1;
    for i in first..n_nodes {
        let id = g.nodes[i];
        let t = g.t[usize::from(id)];
        if t.op == Op::View {
            continue;
        }
        let b = be[usize::from(id)];
        // A weight this split's backend must copy, in a split that already copies something.
        let weight_copy = b == cur
            && s.splits[s.n_splits - 1].n > 0
            && t.src.iter().any(|&src| {
                src != NONE && g.t[usize::from(src)].weight && !readable(g, be, src, cur, cpu)
            });
        if b != cur || weight_copy {
            if s.n_splits == MAX_SPLITS {
                return None;
            }
            s.splits[s.n_splits - 1].end = i;
            s.splits[s.n_splits] = Split {
                start: i,
                end: n_nodes,
                first: s.n_inputs,
                n: 0,
            };
            s.n_splits += 1;
            cur = b;
        }
        let bk = u8::try_from(cur).ok()?;
        for j in 0..t.src.len() {
            let src = t.src[j];
            if src == NONE || readable(g, be, src, cur, cpu) {
                continue;
            }
            let k = match s.inputs[..s.n_inputs]
                .iter()
                .position(|x| x.src == src && x.backend == bk)
            {
                Some(k) => k,
                None => {
                    if s.n_inputs == MAX_INPUTS {
                        return None;
                    }
                    let mut copies = [NONE; MAX_COPIES];
                    for c in copies.iter_mut().take(n_copies) {
                        *c = g.dup_layout(src);
                        if n_copies > 1 {
                            g.t[usize::from(*c)].input = true;
                            g.t[usize::from(*c)].output = true;
                        }
                        if usize::from(*c) < N {
                            be[usize::from(*c)] = cur;
                        }
                    }
                    s.inputs[s.n_inputs] = Input {
                        src,
                        backend: bk,
                        copies,
                    };
                    s.n_inputs += 1;
                    s.splits[s.n_splits - 1].n += 1;
                    s.n_inputs - 1
                }
            };
            g.t[usize::from(id)].src[j] = s.inputs[k].copies[0];
        }
    }
    Some(())
}

/// The graph the planner sees (`sched->graph`): nodes and leafs in its order.
fn graph_copy<const N: usize>(
    g: &mut Graph<N>,
    be: &mut [i16; N],
    n_copies: usize,
    s: &Scheduled,
) -> Option<([Id; N], usize, [Id; N], usize)> {
    let mut nodes = [NONE; N];
    let mut leafs = [NONE; N];
    let (mut n, mut l) = (0, 0);
    let orig_nodes = g.nodes;
    for sp in &s.splits[..s.n_splits] {
        for inp in &s.inputs[sp.first..sp.first + sp.n] {
            let dep = g.dep_view(inp.src);
            if g.full || n + 2 > N {
                return None;
            }
            be[usize::from(dep)] = be[usize::from(inp.src)];
            nodes[n] = dep;
            nodes[n + 1] = inp.copies[0];
            n += 2;
        }
        for &id in &orig_nodes[sp.start..sp.end] {
            if n == N {
                return None;
            }
            nodes[n] = id;
            n += 1;
        }
    }
    if n_copies > 1 {
        // Pass 6: every graph input in `n_copies` copies on its backend, the first the input
        // itself; all of them inputs and outputs (never overwritten, never freed).
        for i in 0..g.n_leafs {
            let leaf = g.leafs[i];
            if !g.t[usize::from(leaf)].input {
                continue;
            }
            g.t[usize::from(leaf)].output = true;
            for c in 0..n_copies {
                let id = if c == 0 {
                    leaf
                } else {
                    let d = g.dup_layout(leaf);
                    if g.full {
                        return None;
                    }
                    g.t[usize::from(d)].input = true;
                    g.t[usize::from(d)].output = true;
                    be[usize::from(d)] = be[usize::from(leaf)];
                    d
                };
                if l == N {
                    return None;
                }
                leafs[l] = id;
                l += 1;
            }
        }
        for inp in &s.inputs[..s.n_inputs] {
            for &c in &inp.copies[..n_copies] {
                if l == N {
                    return None;
                }
                leafs[l] = c;
                l += 1;
            }
        }
    }
    for &leaf in &g.leafs[..g.n_leafs] {
        if l == N {
            return None;
        }
        leafs[l] = leaf;
        l += 1;
    }
    Some((nodes, n, leafs, l))
}
