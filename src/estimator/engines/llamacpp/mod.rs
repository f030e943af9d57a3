//! llama.cpp: the buffers it allocates and prints, from a GGUF file type and its flags.
//! Derived from llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36); docs/engines/llamacpp.md
//! has the derivation with file paths, the published logs and the CPU measurements it is held to.
//!
//! All sizes are bytes as llama.cpp allocates them; it prints each as `bytes / 2^20` with `%8.2f`
//! ([`mib_printed`]).

pub mod compute;
pub mod dims;
pub mod fit;
pub mod gallocr;
pub mod ggml;
pub mod graph_llama;
pub mod graph_mamba2;
pub mod graph_mla;
pub mod graph_moe;
pub mod kind_weights;
pub mod kv;
pub mod layer_kinds;
pub mod memory;
pub mod placement;
pub mod recent;
pub mod resolve;
pub mod sched;
pub mod tensor_types;
pub mod time;

pub use resolve::resolve_engine;

use self::dims::{Buft, Dims};
use self::layer_kinds::LayerKinds;
use self::placement::Placement;
use crate::estimator::Resolved;
use crate::estimator::model::ResolvedModel;
use crate::scenario::{FlashAttn, LlamaCpp, MAX_SPLIT, Scenario, WeightFormat};
use crate::tensor::{Dtype, GgufFileType};

/// One GPU's buffers (`CUDA<i> model buffer size`, `… KV buffer size`, `… compute buffer size`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Device {
    pub model: u64,
    /// Of `model`, the routed experts' tensors (a token reads its top-k share).
    pub experts: u64,
    pub kv: u64,
    pub compute: u64,
    /// Repeating layers on this GPU.
    pub layers: u32,
    /// The output layer is here.
    pub output: bool,
}

impl Device {
    pub const fn total(&self) -> u64 {
        self.model + self.kv + self.compute
    }
}

/// How the GPUs' compute buffers were found (`compute::reserve`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComputeBasis {
    /// The closed forms, where the replay does not reach (layers or weights on the host, graphs
    /// outside the Llama family, beyond its capacity).
    #[default]
    ClosedForm,
    /// The scheduler and planner replayed (`compute::gpu_plan`) over the current graph, or over
    /// the pre-`set_rows` one (`legacy_graph` with a dense Llama-family model).
    Replayed { legacy_graph: bool },
}

/// Everything llama.cpp prints about memory at load, for one scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Buffers {
    /// GPUs llama.cpp uses (0: a CPU build or `-dev none`).
    pub gpus: u32,
    pub dev: [Device; MAX_SPLIT],
    /// CPU-resident weights: `token_embd` and the layers `-ngl` leaves on the CPU (32 B aligned).
    /// With mmap this is the `CPU_Mapped` span when the file stores its tensors in layer order.
    pub host_model: u64,
    /// Of `host_model`, the token embedding (read one row per token, not streamed).
    pub host_embd: u64,
    /// Of `host_model`, the routed experts' tensors (a token reads its top-k share).
    pub host_experts: u64,
    /// Experts a token uses and routed experts per layer (`n_expert_used`, `n_expert`; 0 dense).
    pub experts: (u64, u64),
    /// Of `host_model`, the FFN weights of GPU layers that `--cpu-moe`, `--n-cpu-moe` or
    /// `--n-cpu-ffn` keep on the host.
    pub host_ffn: u64,
    /// The repeating layers whose routed experts stay in host memory, `start .. end`: `0 .. ∞`
    /// with `--cpu-moe`, `0 .. N` with `--n-cpu-moe N`, the back layers `-fit` chose.
    pub experts_host: (u32, u32),
    /// The largest FFN matrix of the host's weights (its layers' and the overrides'), as the
    /// CUDA copy a GPU makes of it to run a prompt's product itself (op offload, `compute.rs`).
    pub host_copy: u64,
    pub host_kv: u64,
    /// The CPU backend's compute buffer (`CUDA_Host` with a GPU, `CPU` without).
    pub host_compute: u64,
    /// Where the GPUs' compute buffers came from.
    pub compute_basis: ComputeBasis,
    pub mmap: bool,
    /// Context cells (`n_ctx` padded to 256, all sequences).
    pub n_ctx: u32,
    pub n_batch: u32,
    pub n_ubatch: u32,
    pub n_seq: u32,
    /// The caches' streams: 1 with `--kv-unified`, else `n_seq` (each of `n_ctx / n_stream` cells).
    pub n_stream: u32,
    /// Repeating layers on GPUs and whether the output layer is; `n_layer` for "33/33".
    pub layers_on_gpu: u32,
    pub output_on_gpu: bool,
    pub n_layer: u32,
    pub flash_attn: bool,
    /// K and V bytes over all devices (both caches of a sliding-window model).
    pub k_bytes: u64,
    pub v_bytes: u64,
    /// Layers in the main cache (`llama_kv_cache: size = … (cells, layers, …)`); recurrent and
    /// MLP-only layers have none.
    pub kv_layers: u32,
    /// The sliding-window cache beside it (`llama_kv_cache_iswa`; empty without one), included
    /// in the totals above.
    pub swa: SwaCache,
    /// The recurrent state of Mamba / gated-DeltaNet layers (`llama_memory_recurrent`, the `RS
    /// buffer`; empty without such layers), included in the KV totals of `dev` and `host_kv`.
    pub rs: RsState,
    /// What llama-server's `-fit` did to an unset `-c` (`None`: `-c` set, `-fit off`, not one GPU).
    pub fit: Option<fit::Fitted>,
    pub settings: LlamaCpp,
    pub file_type: GgufFileType,
}

/// llama.cpp's second cache for a model that interleaves sliding-window and global attention
/// (`kv::swa_cells` cells per stream for each windowed layer).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SwaCache {
    /// Cells of one stream (as llama.cpp prints them).
    pub cells: u32,
    pub layers: u32,
    pub k_bytes: u64,
    pub v_bytes: u64,
    /// Its share of each GPU's KV buffer and of the host's.
    pub dev: [u64; MAX_SPLIT],
    pub host: u64,
}

/// llama.cpp's recurrent state (`kv::recurrent_rows` per layer and sequence, F32).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RsState {
    pub layers: u32,
    pub r_bytes: u64,
    pub s_bytes: u64,
    pub dev: [u64; MAX_SPLIT],
    pub host: u64,
}

impl Buffers {
    /// The GPU with the most bytes (what decides whether it fits), or `None` without GPUs.
    pub fn largest_gpu(&self) -> Option<(usize, &Device)> {
        self.dev
            .iter()
            .take(self.gpus as usize)
            .enumerate()
            .max_by_key(|(_, d)| d.total())
    }

    /// Cells of one cache stream: `n_ctx` with `--kv-unified` (or one sequence), else `n_ctx /
    /// n_seq` — what one slot may fill, and what llama.cpp prints as the cache's cells.
    pub const fn stream_cells(&self) -> u32 {
        self.n_ctx / if self.n_stream > 1 { self.n_stream } else { 1 }
    }

    /// Host bytes: CPU weights, CPU KV, the host compute buffer.
    pub const fn host_total(&self) -> u64 {
        self.host_model + self.host_kv + self.host_compute
    }
}

/// A byte count as llama.cpp prints it: MiB rounded to 0.01 (`%8.2f` of `bytes / 1024.0 / 1024.0`).
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::mib_printed;
/// assert_eq!(mib_printed(295_501_824), 281.81);
/// ```
pub fn mib_printed(bytes: u64) -> f64 {
    let mib = bytes as f64 / 1_048_576.0;
    (mib * 100.0).round_ties_even() / 100.0
}

/// The GGUF file a scenario's weights are: its GGUF file type, else the file type of its weight
/// format (Q4_K → the Q4_K_S mix's base, Q8_0) or of the precision's weight type (F16, BF16, F32).
pub fn file_type(sc: &Scenario) -> GgufFileType {
    let p = sc.precision_types();
    let dense = p.weight_compute_copies.unwrap_or(p.weights);
    match sc.quantization.weights {
        WeightFormat::GgufFile(f) => f,
        WeightFormat::GgufQ8_0 => GgufFileType::Q8_0,
        WeightFormat::GgufQ4K => GgufFileType::Q4KS,
        _ => match dense {
            Dtype::Fp32 | Dtype::Tf32 => GgufFileType::F32,
            Dtype::Bf16 => GgufFileType::Bf16,
            _ => GgufFileType::F16,
        },
    }
}

/// The buffers of a resolved llama.cpp scenario (`None` for other engines or a non-transformer).
pub fn buffers(r: &Resolved) -> Option<Buffers> {
    buffers_of(&r.scenario, r.model)
}

/// What `-c 0` stands for: the model's training context (`model.transformer.max_positions`; prompt +
/// generated tokens if 0).
pub fn train_ctx(sc: &Scenario) -> u32 {
    let i = &sc.inference;
    match sc.model.transformer.max_positions {
        0 => i.prompt_tokens.saturating_add(i.generated_tokens),
        n => n,
    }
}

/// The buffers of a resolved scenario `sc` (its numbers in range) and its model. `-c 0` is the
/// training context (`model.transformer.max_positions`; prompt + generated tokens if 0), which
/// llama-server's `-fit` lowers on one GPU where the buffers would not leave its target free
/// ([`fit`]).
pub fn buffers_of(sc: &Scenario, m: &ResolvedModel) -> Option<Buffers> {
    let s = *sc.inference.engine.as_ref()?.llamacpp()?;
    if m.family != crate::scenario::ModelFamily::Transformer || !sc.runs_on_llamacpp() {
        return None;
    }
    let d = Dims::of(m, sc.model.transformer.bias);
    let gpus = if s.cpu_only {
        0
    } else {
        sc.parallel.gpus().clamp(1, MAX_SPLIT as u64) as usize
    };
    let train = train_ctx(sc);
    let kinds = layer_kinds::LayerKinds::of(m);
    let build = |s: &LlamaCpp, experts: Option<(u32, u32)>| {
        layout(sc, &d, &kinds, s, (gpus, train), experts)
    };
    if gpus == 1 {
        let free = crate::estimator::memory::capacity(&sc.gpu).get()
            - sc.overheads.cuda_context_mib * 1_048_576.0;
        let free = free.max(0.0) as u64;
        if let Some(b) = fitted(&s, &d, (train, free), build) {
            return Some(b);
        }
    }
    Some(build(&s, None))
}

/// llama-server's `-fit` on one GPU with `free` bytes free ([`fit`]): the buffers it leads to, or
/// `None` where it changes nothing (`-c` and `-ngl` set, `-fit off`, or everything fits).
fn fitted(
    s: &LlamaCpp,
    d: &Dims,
    (train, free): (u32, u64),
    build: impl Fn(&LlamaCpp, Option<(u32, u32)>) -> Buffers,
) -> Option<Buffers> {
    let s = *s;
    if s.legacy_placement {
        // The builds of that placement had no `-fit` (common/fit.cpp came with the new one).
        return None;
    }
    let streams = kv::streams(&s, s.n_parallel.max(1));
    // (A closure over `LlamaCpp { n_ctx, ..s }` made rustc 1.95 panic (broken MIR): one field set instead.)
    let at = |n_ctx: u32| {
        let mut t = s;
        t.n_ctx = n_ctx;
        t
    };
    let used = |n_ctx: u32| build(&at(n_ctx), None).dev[0].total();
    let ctx = fit::context(&s, train, streams, free, used);
    let mut t = s;
    if let Some(f) = ctx {
        t.n_ctx = f.to;
    }
    let target = u64::from(s.fit_target_mib) << 20;
    let mut f = ctx.unwrap_or(fit::Fitted {
        from: s.n_ctx,
        to: s.n_ctx,
        free,
        target,
        ..fit::Fitted::default()
    });
    // Steps 3–4 (`-ngl` unset): layers from the back while they fit; a user's tensor overrides
    // abort them ("tensor_buft_overrides already set by user", common/fit.cpp).
    let mut experts = None;
    if s.fit && !f.settled && s.n_gpu_layers < 0 && !s.has_overrides() {
        let budget = free.saturating_sub(target);
        let all = d.n_layer + 1;
        // `ngl` layers from the back, the first `n_full` of them with their experts.
        let with = |ngl: i32, n_full: u32| {
            let mut u = t;
            u.n_gpu_layers = ngl;
            let l = Placement::offloaded(d.n_layer, ngl);
            let host = (d.n_expert > 0).then_some((all - l + n_full.min(l), all));
            build(&u, host).dev[0].total()
        };
        if with(-1, all) > budget {
            if d.n_expert == 0 {
                let ngl = fit::layers(d.n_layer, budget, |n| with(n, all));
                t.n_gpu_layers = ngl;
                f.ngl = Some(ngl);
            } else {
                let (ngl, n_full) = fit::moe_layers(d.n_layer, budget, with);
                let l = ngl.unsigned_abs();
                t.n_gpu_layers = ngl;
                f.ngl = Some(ngl);
                let range = (all - l + n_full.min(l), d.n_layer);
                f.experts_host = (range.0 < range.1).then_some(range);
                experts = Some(range);
            }
        }
    }
    if ctx.is_none() && f.ngl.is_none() {
        return None;
    }
    let mut b = build(&t, experts);
    b.settings = s;
    b.fit = Some(f);
    Some(b)
}

/// The buffers of `s` on `gpus` GPUs (0: the CPU backend alone), `-c 0` taking `train` cells.
fn layout(
    sc: &Scenario,
    d: &Dims,
    kinds: &layer_kinds::LayerKinds<'_>,
    s: &LlamaCpp,
    (gpus, train): (usize, u32),
    experts_host: Option<(u32, u32)>,
) -> Buffers {
    let s = *s;
    let p = Placement::new(d.n_layer, s.n_gpu_layers, gpus, &s.tensor_split)
        .with_legacy_start(s.legacy_placement);
    let ftype = file_type(sc);
    let mut b = Buffers {
        gpus: gpus as u32,
        mmap: s.mmap,
        n_layer: d.n_layer,
        settings: s,
        file_type: ftype,
        flash_attn: flash_attn(&s),
        experts_host: experts_host.unwrap_or(if s.cpu_moe {
            (0, u32::MAX)
        } else {
            (0, s.n_cpu_moe)
        }),
        ..Buffers::default()
    };
    weights(&mut b, d, kinds, &p, ftype);
    kv::place(&mut b, d, kinds, &p, &s, train);
    compute::reserve(&mut b, d);
    b
}

/// `-fa auto` is on (every CUDA GPU of the catalog and the CPU backend support it); a quantized V
/// cache turns it on too (`llama_init_from_model`: "enabling flash_attn since it is required for
/// quantized V cache").
pub fn flash_attn(s: &LlamaCpp) -> bool {
    match s.flash_attn {
        FlashAttn::On | FlashAttn::Auto => true,
        FlashAttn::Off => s.cache_type_v.quantized(),
    }
}

/// Every layer's weights on its device, each by its kind ([`kind_weights::kind_bytes`]; a model without
/// layer kinds as [`dims::layer_bytes`]).
fn weights(b: &mut Buffers, d: &Dims, kinds: &LayerKinds, p: &Placement, ftype: GgufFileType) {
    b.host_embd = dims::token_embd_bytes(d, ftype, Buft::Cpu);
    b.host_model = b.host_embd;
    b.experts = (d.n_expert_used, d.n_expert);
    for il in 0..=d.n_layer {
        let output = il == d.n_layer;
        let dev = p.device(il);
        let buft = if dev.is_some() { Buft::Cuda } else { Buft::Cpu };
        let routed = match kinds.at(il) {
            Some(k) if !output => kind_weights::kind_routed_bytes(d, k, ftype, il, buft),
            _ => 0,
        };
        let bytes = if output && d.tied && dev.is_none() {
            // A tied output on the CPU is `token_embd` itself (`TENSOR_DUPLICATED` of a tensor
            // already in the CPU buffer: no new bytes; measured, tests/measured_llamacpp.rs).
            dims::output_bytes(d, ftype, buft) - dims::token_embd_bytes(d, ftype, buft)
        } else if output {
            dims::output_bytes(d, ftype, buft)
        } else {
            match kinds.at(il) {
                Some(k) => kind_weights::kind_bytes(d, k, ftype, il, buft),
                _ => dims::layer_bytes(d, ftype, il, buft),
            }
        };
        // `--cpu-moe`, `--n-cpu-moe`, `--n-cpu-ffn`: FFN weights of a GPU layer kept on the host.
        let moved = match dev {
            Some(_) if !output => {
                let s = &b.settings;
                let experts = (b.experts_host.0..b.experts_host.1).contains(&il);
                let dense = il < s.n_cpu_ffn;
                kind_weights::host_ffn(d, kinds.at(il), ftype, il, (experts, dense))
            }
            _ => kind_weights::HostFfn::default(),
        };
        if dev.is_none() && !output && b.gpus > 0 {
            // A host layer's largest matrix (its FFN's), copied to the GPU for a prompt.
            let all = kind_weights::host_ffn(d, kinds.at(il), ftype, il, (true, true));
            b.host_copy = b.host_copy.max(all.largest_copy);
        }
        b.host_model += moved.host;
        b.host_experts += moved.routed;
        b.host_ffn += moved.host;
        b.host_copy = b.host_copy.max(moved.largest_copy);
        match dev.and_then(|i| b.dev.get_mut(i)) {
            Some(g) => {
                g.model += bytes - moved.gpu.min(bytes);
                g.experts += routed - moved.routed_gpu(routed);
                if output {
                    g.output = true;
                    b.output_on_gpu = true;
                } else {
                    g.layers += 1;
                    b.layers_on_gpu += 1;
                }
            }
            None => {
                b.host_model += bytes;
                b.host_experts += routed;
            }
        }
    }
}
