//! The compute buffers: the high-water mark of the worst-case graph llama.cpp reserves at context
//! creation (llama.cpp@0c1e57098 `llama_context::sched_reserve` / `graph_reserve`, ggml-alloc.c
//! `ggml_gallocr`; docs/engines/llamacpp.md §5). Closed forms of the graph's largest live sets,
//! all F32 activations of one micro-batch of `T = n_ubatch` tokens over a full cache of
//! `n_kv = n_ctx` cells:
//!
//! - output device: the logits `T × n_vocab` with the final norm's `T × n_embd`;
//! - a GPU build with every layer and the output on its GPUs: the scheduler and the planner
//!   replayed ([`gpu_plan`], [`sched`]): every GPU's buffer and the host's, exact on the published
//!   single- and two-GPU logs. The closed forms below stand in where the replay does not reach
//!   (layers or weights on the host, graphs outside the Llama family):
//! - a device holding layers, without flash attention: the scores `KQ = n_kv × T × n_head` (soft-max
//!   in place) with `c = 6` activations `T × n_embd` (the older-graph replay's figure for
//!   Llama-3.1-8B on one GPU, not derived for other shapes: docs §5);
//! - with flash attention: no scores; the FFN's gate, up and product `3 × T × n_ff` with the
//!   residual (leading order on CUDA, not checked against a log); a mixture of experts runs each
//!   token through its top-k experts at once (`ggml_mul_mat_id` outputs `n_ff × k × T`,
//!   `build_moe_ffn`), so `n_ff` counts k times ([`Dims::ffn_per_token`]);
//! - the host share beside a GPU (`CUDA_Host`): the embedding rows `T × n_embd` and the KQ mask
//!   (`n_kv × T`, F32 without flash attention, F16 with it);
//! - a CPU build: the planner itself, replayed over the graph llama.cpp builds ([`cpu_plan`],
//!   exact on every CPU load measured here, tests/measured_llamacpp.rs); the closed form
//!   [`cpu_graph`] for models the replayed graph does not describe.

use std::cell::RefCell;
use std::thread::LocalKey;

use super::dims::{Dims, LayerGraph};
use super::ggml::{Graph, HOST, Ty};
use super::graph_llama::{self, Shape};
use super::graph_mamba2::{self, MambaShape};
use super::graph_mla::{self, MlaShape};
use super::recent::Recent;
use super::{Buffers, ComputeBasis};
use super::{gallocr, kv, sched};

const F32: u64 = 4;

/// Bytes of the output layer's peak: logits and the final norm.
pub const fn output_term(d: &Dims, t: u64) -> u64 {
    t * (d.n_vocab + d.n_embd) * F32
}

/// Bytes of one repeating layer's peak on the device that runs it.
pub const fn layer_term(d: &Dims, t: u64, n_kv: u64, flash_attn: bool) -> u64 {
    let ffn = ffn_term(d, t);
    let kq = attention_term(d, t, n_kv, flash_attn);
    if kq > ffn { kq } else { ffn }
}

/// A layer's FFN peak: gate, up and their product (`k` experts' each) with the residual.
pub const fn ffn_term(d: &Dims, t: u64) -> u64 {
    (3 * d.ffn_per_token() + d.n_embd) * t * F32
}

/// A layer's attention peak without flash attention (the scores with `c = 6` activations, the
/// older-graph replay's single-GPU Llama-3.1-8B figure); 0 with it or without attention. Only where
/// [`gpu_plan`] does not reach.
pub const fn attention_term(d: &Dims, t: u64, n_kv: u64, flash_attn: bool) -> u64 {
    if flash_attn || !d.attention {
        0
    } else {
        n_kv * t * d.n_head * F32 + 6 * d.n_embd * t * F32
    }
}

/// The graph's small inputs live at the attention peak (token ids, positions, output ids: 4 B
/// each per token): what the printed `.01` of the host buffers is (fitted to the rounding of the
/// CPU measurements, tests/measured_llamacpp.rs, and of the published `CUDA_Host` 24.01 / 12.01
/// MiB). At the output peak only the output ids are (4 B per token).
pub const fn small_inputs(t: u64) -> u64 {
    12 * t
}

/// The KQ mask (`n_kv × T`, F32 without flash attention, F16 with it).
pub const fn mask(t: u64, n_kv: u64, flash_attn: bool) -> u64 {
    if flash_attn {
        n_kv * t * 2
    } else {
        n_kv * t * F32
    }
}

/// The inputs the CPU backend holds beside a GPU, all allocated before the graph runs (the
/// host's peak): the embedding rows, the KQ mask and the token / position / output ids; in the current graph also the unused embeddings input (`n_embd × T`, F32) and
/// the cache's row indices (I64: one per token for K, and for V one per element without flash
/// attention, where V is stored transposed). Exact against the scheduler replay
/// ([`gpu_plan`]) and, with `legacy`, the published logs (24.01, 12.01, 16.01 MiB).
pub const fn host_inputs(d: &Dims, t: u64, n_kv: u64, flash_attn: bool, legacy: bool) -> u64 {
    let old = d.n_embd * t * F32 + mask(t, n_kv, flash_attn) + small_inputs(t);
    if legacy {
        return old;
    }
    let v_idxs = if flash_attn { t } else { t * d.n_embd_kv() };
    old + d.n_embd * t * F32 + (t + v_idxs) * 8
}

/// A CPU build's one compute buffer (the CPU backend runs the whole graph, its inputs in the same
/// buffer), measured on llama.cpp@0c1e57098's CPU backend (tests/data/measured/llamacpp-cpu.json):
/// without flash attention the attention peak is the scores, the F32 mask and
/// `5 n_embd + 2 n_embd_kv` activations of T tokens; the output peak the logits with two
/// `n_embd`-wide activations (one more than on CUDA); the FFN peak gate, up and product with four
/// `n_embd`-wide activations and the mask (F16 with flash attention; not to the
/// MiB: the planner's fragmentation is not modelled; errors in docs/engines/llamacpp.md).
pub const fn cpu_graph(d: &Dims, t: u64, n_kv: u64, flash_attn: bool) -> u64 {
    let out = t * (d.n_vocab + 2 * d.n_embd) * F32 + 4 * t;
    // The FFN peak: gate, up and their product with four n_embd-wide activations.
    // A model without attention layers has no scores and no mask.
    let kq_mask = if d.attention {
        mask(t, n_kv, flash_attn)
    } else {
        0
    };
    let ffn = (3 * d.ffn_per_token() + 4 * d.n_embd) * t * F32 + kq_mask;
    let kq = if flash_attn || !d.attention {
        0
    } else {
        n_kv * t * d.n_head * F32
            + mask(t, n_kv, false)
            + (5 * d.n_embd + 2 * d.n_embd_kv()) * t * F32
    };
    let attn = (if kq > ffn { kq } else { ffn }) + small_inputs(t);
    if out > attn { out } else { attn }
}

/// Tensors the replayed graph may hold: 12 layers of at most 98 (Q/K norms, Hadamard rotations
/// of a quantized cache, no flash attention, 16 experts used) and the graph's inputs: 1,178
/// (tests/llamacpp_planner.rs). ≈ 125 KB of stack while planning.
pub const GRAPH_TENSORS: usize = 1280;

/// The most experts per token the replay plans (`graph_moe` keeps one view each); beyond it the
/// closed form stands in.
pub const MAX_EXPERTS_USED: u64 = 16;

/// Layers replayed for an `n`-layer model. Every layer but the last runs the same ops, so the
/// planner's state between layers repeats after a few layers with a short period (1 or 2 in
/// every shape tried, tests/llamacpp_planner.rs): all layers up to 12, beyond that the count in
/// 7..=12 with the same remainder modulo 6 (periods 1, 2, 3 and 6 land on the same state).
pub const fn replayed_layers(n: u32) -> u32 {
    if n <= 12 { n } else { 7 + (n - 7) % 6 }
}

/// The CPU build's compute buffer by replaying `ggml_gallocr` over the reserve graph of a
/// Llama-architecture model (RMSNorm, separate Q/K/V, SwiGLU, global attention in every layer, Q/K
/// norms or not, a dense FFN or routed experts in every layer — Mixtral, Qwen3-MoE, and Qwen2-MoE
/// with its gated shared expert): `None` for any other model, whose graph differs (fused QKV,
/// other shared experts,
/// LayerNorm, GELU, sliding windows, sinks). Projection biases are allowed: each bias add
/// runs in place of its matmul's output (its only consumer), so Qwen2-style Q/K/V biases or biases
/// on every projection plan exactly like none (measured: tests/data/measured/llamacpp-cpu-variants.json).
pub fn cpu_plan(d: &Dims, b: &Buffers) -> Option<u64> {
    if d.layers == LayerGraph::Mla {
        return mla_plan(d, b);
    }
    if d.layers == LayerGraph::Mamba2 {
        return mamba_plan(d, b);
    }
    let mut s = llama_shape(d, b)?;
    s.n_layer = replayed_layers(d.n_layer);
    plan_once::<_, GRAPH_TENSORS>(&LLAMA_PLANS, s, graph_llama::build)
}

/// The reserve graph's shape of a Llama-architecture model ([`cpu_plan`] says which), all its
/// layers on one device.
fn llama_shape(d: &Dims, b: &Buffers) -> Option<Shape> {
    // Shared experts only as Qwen2-MoE has them: one, gated (llama.cpp's `qwen2moe`).
    let shared_ok = d.n_shared == 0 || (d.n_shared == 1 && d.shexp.gate);
    let experts_ok =
        d.n_expert == 0 || (shared_ok && (1..=MAX_EXPERTS_USED).contains(&d.n_expert_used));
    let plain =
        d.layers != LayerGraph::Other && d.gated && experts_ok && !d.norm_bias && !d.fused_qkv;
    if !plain || matches!(d.layers, LayerGraph::Mla | LayerGraph::Mamba2) {
        return None;
    }
    let t = reserve_tokens(b);
    Some(Shape {
        n_layer: d.n_layer,
        n_embd: d.n_embd,
        n_head: d.n_head,
        n_head_kv: d.n_head_kv,
        head_dim: d.head_dim,
        n_ff: if d.n_expert > 0 { d.n_ff_exp } else { d.n_ff },
        n_vocab: d.n_vocab,
        n_tokens: t,
        // `n_outputs_max` defaults to `n_batch` (llama-context.cpp): every token of the
        // reserved ubatch produces logits.
        n_outputs: t.min(u64::from(b.n_batch)),
        n_kv: stream_cells(b),
        flash_attn: b.flash_attn,
        type_k: graph_llama::ggml_ty(kv::ggml_type(b.settings.cache_type_k)),
        type_v: graph_llama::ggml_ty(kv::ggml_type(b.settings.cache_type_v)),
        qk_norm: matches!(d.layers, LayerGraph::LlamaQkNorm | LayerGraph::Gemma3),
        n_expert: d.n_expert,
        n_expert_used: d.n_expert_used,
        n_ff_shexp: if d.n_expert > 0 { d.shexp.n_ff } else { 0 },
        gemma: d.layers == LayerGraph::Gemma3,
        swa_kv: if d.layers == LayerGraph::Gemma3 {
            u64::from(b.swa.cells)
        } else {
            0
        },
        swa_period: d.swa_period,
        devices: graph_llama::Devices::default(),
        head_ty: graph_llama::ggml_ty(super::dims::output_matrix_type(d, b.file_type)),
        host_ty: graph_llama::HostTypes::default(),
        legacy: false,
    })
}

/// Tensors the GPU replay may hold: about 48 shortened dense layers over the GPUs (each GPU's run
/// of layers shortened as a whole model's, [`replayed_layers`]; ≈ 36 with 8 of 128 experts), the
/// inputs, and the scheduler's copies of them. Beyond it the closed form stands in (the
/// explanation says which; e.g. 8 GPUs of 7 or more dense layers each).
pub const GPU_GRAPH_TENSORS: usize = 2048;

/// A GPU build (no tensor overrides, the KV cache offloaded) with its repeating layers on its
/// GPUs, or the first of them in host memory (`-ngl` short of them; a dense model without
/// biases), and the output layer on a GPU or in host memory: every GPU's compute buffer and the
/// host's, by replaying the scheduler's split of the reserve graph and the planner over each
/// backend ([`sched`]; op offload multiplies host weights on the first GPU, on copies of them).
/// (Builds since December 2024 also reserve the token-generation graph, one token per sequence,
/// and keep the larger buffer: llama-context.cpp `sched_reserve`, pp, tg, pp again. Its GPU
/// buffers are far below the prompt's; the host's, where the host runs layers or the output at
/// decode, is taken in closed form by [`reserve`].) `None` for graphs the replay does not
/// describe ([`cpu_plan`]'s Llama family) or that outgrow it. With
/// [`LlamaCpp::legacy_graph`](crate::scenario::LlamaCpp) a dense graph is the pre-`set_rows`
/// one. Also says whether the older graph was the one replayed.
pub fn gpu_plan(d: &Dims, b: &Buffers) -> Option<(sched::Reserved, bool)> {
    let (s, gpus, copies) = gpu_shape(d, b)?;
    let op_offload = b.settings.op_offload;
    let key = (s, gpus as u8, copies as u8, op_offload);
    let r = GPU_PLANS.with_borrow_mut(|plans| {
        plans.get_or(key, || {
            let mut g = Graph::<GPU_GRAPH_TENSORS>::default();
            graph_llama::build(&mut g, &s);
            sched::reserve(&mut g, gpus, copies, op_offload)
        })
    });
    r.map(|r| (r, s.legacy))
}

/// The replayed shape of a GPU build ([`gpu_plan`]), its GPUs and the scheduler's copies.
fn gpu_shape(d: &Dims, b: &Buffers) -> Option<(Shape, usize, usize)> {
    let host_layers = d.n_layer.saturating_sub(b.layers_on_gpu);
    let layers_ok = host_layers == 0 || (d.n_expert == 0 && !d.bias);
    if b.gpus == 0 || b.host_ffn > 0 || !layers_ok || b.settings.no_kv_offload {
        return None;
    }
    let mut s = llama_shape(d, b)?;
    let gpus = (b.gpus as usize).min(b.dev.len());
    let mut devices = graph_llama::Devices {
        host_layers: replayed_layers(host_layers),
        output: HOST,
        ..graph_llama::Devices::default()
    };
    for (k, g) in b.dev.iter().take(gpus).enumerate() {
        devices.layers[k] = replayed_layers(g.layers);
        if g.output {
            devices.output = k as u8;
        }
    }
    s.n_layer = devices.host_layers + devices.layers.iter().sum::<u32>();
    s.devices = devices;
    s.host_ty = host_types(d, b.file_type, host_layers);
    s.legacy = b.settings.legacy_graph && s.n_expert == 0 && !s.gemma && !s.qk_norm;
    if s.legacy {
        // Builds of that era had one cache of `n_ctx` cells, no streams: the reserve attends
        // all of them (llama.cpp in llama-cpp-python 0.3.5, `n_kv = kv_self.size`).
        s.n_kv = u64::from(b.n_ctx);
    }
    // Pipeline parallelism (llama-context.cpp `pipeline_parallel`): several GPUs holding every
    // layer and the output with the layer split mode, the KV offloaded, no tensor overrides
    // (any given, even one that moves nothing). `-sm row` / `none` are not modelled (the layer
    // split is assumed).
    let full = host_layers == 0 && b.output_on_gpu;
    let copies = if gpus > 1 && full && !b.settings.has_overrides() {
        b.settings
            .sched_max_copies
            .clamp(1, sched::MAX_COPIES as u32)
    } else {
        1
    };
    Some((s, gpus, copies as usize))
}

/// The GGUF type of each matrix of the first `n` (host) layers: per role the largest any of
/// them has (a Q4_K_M file gives some layers Q6_K V and down projections, `use_more_bits`).
fn host_types(d: &Dims, ftype: crate::tensor::GgufFileType, n: u32) -> graph_llama::HostTypes {
    use super::tensor_types::{Role, tensor_type};
    let q = d.quant_model();
    let largest = |role: Role, ne0: u64| {
        (0..n)
            .map(|il| tensor_type(ftype, role, il, ne0, &q))
            .max_by_key(|t| t.bytes(ne0))
            .map_or(Ty::F16, graph_llama::ggml_ty)
    };
    graph_llama::HostTypes {
        q: largest(Role::AttnQ, d.n_embd),
        k: largest(Role::AttnK, d.n_embd),
        v: largest(Role::AttnV, d.n_embd),
        o: largest(Role::AttnOutput, d.n_head * d.head_dim),
        gate: largest(Role::FfnGate, d.n_embd),
        up: largest(Role::FfnUp, d.n_embd),
        down: largest(Role::FfnDown, d.n_ff),
    }
}

/// A GPU replay's inputs: the shape, the GPUs, the copies of each input and op offload.
type GpuKey = (Shape, u8, u8, bool);

/// Replays kept per kind of graph ([`Recent`]): `-fit`'s binary searches (the context, then up
/// to 8,193 layer counts) probe a few dozen shapes at most, a sweep chart a few dozen samples.
const KEPT: usize = 32;

/// Planned shapes and their buffers (`None`: the graph did not fit the replay).
type Plans<S> = RefCell<Recent<S, Option<u64>, KEPT>>;

/// The plan of shape `s`, replayed with `build`, or the one kept in `plans`.
fn plan_once<S: Copy + PartialEq + 'static, const N: usize>(
    plans: &'static LocalKey<Plans<S>>,
    s: S,
    build: fn(&mut Graph<N>, &S),
) -> Option<u64> {
    plans.with_borrow_mut(|p| {
        p.get_or(s, || {
            let mut g = Graph::<N>::default();
            build(&mut g, &s);
            // The CPU buffer type aligns to `TENSOR_ALIGNMENT` (32 B).
            gallocr::plan(&g, 32)
        })
    })
}

/// The tokens of the reserved ubatch: `n_ubatch`, rounded up to a multiple of the sequences it
/// is split over (llama-context.cpp `graph_reserve`).
fn reserve_tokens(b: &Buffers) -> u64 {
    let n_seqs = u64::from(b.n_seq.max(1));
    u64::from(b.n_ubatch).div_ceil(n_seqs) * n_seqs
}

thread_local! {
    /// The CPU planner's recent shapes and their buffers, per graph family.
    static LLAMA_PLANS: Plans<Shape> = const { RefCell::new(Recent::new()) };
    static MLA_PLANS: Plans<MlaShape> = const { RefCell::new(Recent::new()) };
    static MAMBA_PLANS: Plans<MambaShape> = const { RefCell::new(Recent::new()) };
    /// The recent GPU replays: their shapes, GPUs, copies and op offload, and the buffers.
    static GPU_PLANS: RefCell<Recent<GpuKey, Option<sched::Reserved>, KEPT>> =
        const { RefCell::new(Recent::new()) };
}

/// Leading dense layers the MLA replay takes before its repeating MoE layers (DeepSeek-V3 has 3).
pub const MAX_DENSE_LEAD: u32 = 4;

/// A DeepSeek-2/3 model's CPU compute buffer by replaying the planner over `deepseek2`'s graph
/// ([`graph_mla`]): its leading dense layers, then as many MoE layers as [`replayed_layers`]
/// gives for the rest (they repeat as a Llama model's do). `None` beyond the replay's capacity.
fn mla_plan(d: &Dims, b: &Buffers) -> Option<u64> {
    let m = &d.mla;
    let experts_ok = d.n_expert == 0 || (1..=MAX_EXPERTS_USED).contains(&d.n_expert_used);
    if m.dense_lead > MAX_DENSE_LEAD || !experts_ok || !d.gated {
        return None;
    }
    let t = reserve_tokens(b);
    let moe_layers = d.n_layer.saturating_sub(m.dense_lead);
    let s = MlaShape {
        n_layer: m.dense_lead + replayed_layers(moe_layers),
        n_embd: d.n_embd,
        n_head: d.n_head,
        mla: *m,
        n_ff: d.n_ff,
        n_vocab: d.n_vocab,
        n_expert: d.n_expert,
        n_expert_used: d.n_expert_used,
        n_ff_exp: d.n_ff_exp,
        n_ff_shexp: d.shexp.n_ff,
        n_tokens: t,
        n_outputs: t.min(u64::from(b.n_batch)),
        n_kv: stream_cells(b),
        flash_attn: b.flash_attn,
        type_k: graph_llama::ggml_ty(kv::ggml_type(b.settings.cache_type_k)),
    };
    plan_once::<_, MLA_GRAPH_TENSORS>(&MLA_PLANS, s, graph_mla::build)
}

/// A Mamba-2 model's CPU compute buffer by replaying the planner over `mamba2`'s graph
/// ([`graph_mamba2`]), its layers shortened as a Llama model's ([`replayed_layers`]).
fn mamba_plan(d: &Dims, b: &Buffers) -> Option<u64> {
    let n_seqs = u64::from(b.n_seq.max(1));
    let t = reserve_tokens(b);
    let m = d.mamba;
    let s = MambaShape {
        n_layer: replayed_layers(d.n_layer),
        n_embd: d.n_embd,
        d_inner: m.d_inner,
        n_head: m.n_head,
        d_state: m.d_state,
        n_group: m.n_group,
        d_conv: m.d_conv,
        n_vocab: d.n_vocab,
        n_tokens: t,
        n_outputs: t.min(u64::from(b.n_batch)),
        n_seqs,
    };
    plan_once::<_, GRAPH_TENSORS>(&MAMBA_PLANS, s, graph_mamba2::build)
}

/// Tensors the MLA replay may hold: up to 4 dense and 12 MoE layers of at most ≈ 110 tensors
/// (expert groups, 16 experts used, no flash attention) and the inputs.
pub const MLA_GRAPH_TENSORS: usize = 2048;

/// The cells one stream's attention reads ([`Buffers::stream_cells`]); the reserve graph splits
/// its tokens over the streams, so the scores of all streams together are `T × n_kv` per head
/// either way (llama-graph.cpp `build_attn_mha`).
fn stream_cells(b: &Buffers) -> u64 {
    u64::from(b.stream_cells())
}

/// Fills every device's compute buffer and the host's.
///
/// Beside GPUs, the host's weights (the layers `-ngl` leaves there, an output layer there, the
/// FFN weights `--cpu-moe`/`--n-cpu-moe`/`--n-cpu-ffn` keep there) are multiplied by the first
/// GPU when the ubatch has at least [`sched::OFFLOAD_MIN_BATCH`] tokens and `op_offload` is on
/// (`ggml_backend_sched_backend_id_from_cur`, cause "1.off": the first backend whose
/// `offload_op` accepts the node): each such weight becomes an input of a split of its own on
/// that GPU ("by starting a new split, the memory of the previously offloaded weights can be
/// reused", pass 5), copied into its compute buffer (`ggml_dup_tensor_layout`, CUDA's alloc
/// size) and live with the product's operands and result. So CUDA0 holds, at most, the output
/// peak with the output matrix, or the FFN peak with the largest host FFN matrix; the host
/// keeps the prompt's inputs, and runs its weights itself only in the token-generation graph
/// that is reserved too (`sched_reserve`: one token per sequence). Leading order, not checked against a log (docs §5);
/// where the scheduler replay reaches (a host output layer, dense leading host layers) it is
/// used instead ([`gpu_plan`]).
pub fn reserve(b: &mut Buffers, d: &Dims) {
    let t = u64::from(b.n_ubatch);
    let n_kv = stream_cells(b);
    let fa = b.flash_attn;
    let layer = layer_term(d, t, n_kv, fa);
    let output = output_term(d, t);
    if let Some((r, legacy)) = gpu_plan(d, b) {
        for (g, &bytes) in b.dev.iter_mut().zip(&r.gpu).take(b.gpus as usize) {
            g.compute = bytes;
        }
        // The token-generation reserve: every build since December 2024 makes it (llama-cpp-python
        // 0.3.5 `llama_new_context_with_model`: pp, tg, pp); August 2024's did not, but its
        // host buffer is the inputs' then, well above one token's graph.
        b.host_compute = r.host.max(host_decode(d, b, n_kv, fa, legacy));
        b.compute_basis = ComputeBasis::Replayed {
            legacy_graph: legacy,
        };
        return;
    }
    b.compute_basis = ComputeBasis::ClosedForm;
    for g in b.dev.iter_mut().take(b.gpus as usize) {
        let l = if g.layers > 0 { layer } else { 0 };
        let o = if g.output { output } else { 0 };
        g.compute = l.max(o);
    }
    if b.gpus == 0 {
        b.host_compute = cpu_plan(d, b).unwrap_or_else(|| cpu_graph(d, t, n_kv, fa));
        return;
    }
    let legacy = b.settings.legacy_graph;
    let cpu_layers = d.n_layer > b.layers_on_gpu;
    let host_output = !b.output_on_gpu;
    let host_ffn = b.host_ffn > 0;
    let offload = b.settings.op_offload && t >= sched::OFFLOAD_MIN_BATCH;
    if !offload {
        b.host_compute = host_graph(d, b, t, n_kv, fa) + host_inputs(d, t, n_kv, fa, legacy);
        return;
    }
    let ffn = if cpu_layers || host_ffn {
        let attn = if cpu_layers {
            attention_term(d, t, n_kv, fa)
        } else {
            0
        };
        attn.max(ffn_term(d, t) + b.host_copy)
    } else {
        0
    };
    let out = if host_output {
        output + super::dims::output_matrix_bytes(d, b.file_type, super::dims::Buft::Cuda)
    } else {
        0
    };
    if let Some(g) = b.dev.first_mut() {
        g.compute = g.compute.max(ffn).max(out);
    }
    b.host_compute = host_inputs(d, t, n_kv, fa, legacy).max(host_decode(d, b, n_kv, fa, legacy));
}

/// The graph the host runs over `t` tokens in closed form: its layers, its output, the FFN
/// weights kept there (the largest of them).
fn host_graph(d: &Dims, b: &Buffers, t: u64, n_kv: u64, fa: bool) -> u64 {
    let l = if d.n_layer > b.layers_on_gpu {
        layer_term(d, t, n_kv, fa)
    } else {
        0
    };
    let o = if b.output_on_gpu {
        0
    } else {
        output_term(d, t)
    };
    let f = if b.host_ffn > 0 { ffn_term(d, t) } else { 0 };
    l.max(o).max(f)
}

/// The host's buffer in the token-generation reserve (`graph_reserve(n_seqs, …)`: one token per
/// sequence), in closed form: below the offload batch the host runs what it holds; from 32
/// sequences on, op offload takes those products to the first GPU too and the host keeps the
/// inputs.
fn host_decode(d: &Dims, b: &Buffers, n_kv: u64, fa: bool, legacy: bool) -> u64 {
    let tg = u64::from(b.n_seq.max(1));
    let runs = if b.settings.op_offload && tg >= sched::OFFLOAD_MIN_BATCH {
        0
    } else {
        host_graph(d, b, tg, n_kv, fa)
    };
    runs + host_inputs(d, tg, n_kv, fa, legacy)
}
