//! llama.cpp's settings, named as its flags are (`llama-server --help`, `common/arg.cpp` at
//! llama.cpp@0c1e57098, the commit llama-cpp-python 0.3.36 vendors). The rules that turn them into
//! buffer sizes are in `estimator::engines::llamacpp`; the derivation is docs/engines/llamacpp.md.

use serde::{Deserialize, Serialize};

/// Most GPUs `-ts` can split over (`tensor_split` entries kept in the file).
pub const MAX_SPLIT: usize = 8;

/// `-ctk` / `-ctv`: the KV cache's element type (`common/arg.cpp` `kv_cache_types`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheType {
    F32,
    #[default]
    F16,
    Bf16,
    Q8_0,
    Q4_0,
    Q4_1,
    Iq4Nl,
    Q5_0,
    Q5_1,
}

impl CacheType {
    pub const ALL: [CacheType; 9] = [
        CacheType::F32,
        CacheType::F16,
        CacheType::Bf16,
        CacheType::Q8_0,
        CacheType::Q4_0,
        CacheType::Q4_1,
        CacheType::Iq4Nl,
        CacheType::Q5_0,
        CacheType::Q5_1,
    ];

    /// As the flag takes it and the log prints it ("q8_0").
    pub const fn name(self) -> &'static str {
        match self {
            CacheType::F32 => "f32",
            CacheType::F16 => "f16",
            CacheType::Bf16 => "bf16",
            CacheType::Q8_0 => "q8_0",
            CacheType::Q4_0 => "q4_0",
            CacheType::Q4_1 => "q4_1",
            CacheType::Iq4Nl => "iq4_nl",
            CacheType::Q5_0 => "q5_0",
            CacheType::Q5_1 => "q5_1",
        }
    }

    /// The type a flag value names (case-insensitive).
    pub fn parse(s: &str) -> Option<CacheType> {
        CacheType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
    }

    /// A block-quantized type (a quantized V cache needs flash attention).
    pub const fn quantized(self) -> bool {
        !matches!(self, CacheType::F32 | CacheType::F16 | CacheType::Bf16)
    }
}

/// `-fa, --flash-attn on|off|auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlashAttn {
    /// On where the device supports it (every CUDA GPU of the catalog does; the CPU backend too).
    #[default]
    Auto,
    On,
    Off,
}

/// A llama.cpp server (`llama-server`, `llama-cli`; llama-cpp-python's `Llama` and Ollama's llama
/// runner use the same library). Defaults are `llama-server`'s where it has a fixed one.
#[allow(
    clippy::struct_excessive_bools,
    reason = "the file format: each switch is one of llama.cpp's flags, set by name"
)]
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlamaCpp {
    /// `-c, --ctx-size`: context tokens of the whole cache (all `-np` slots); 0 (llama.cpp's
    /// default) = the model's training context, `n_ctx_train` (`model.transformer.max_positions`,
    /// the GGUF's `context_length`), which `fit` may lower. Rounded up to a multiple of 256.
    /// Valid: 0 ..= 10^7.
    pub n_ctx: u32,
    /// `-b, --batch-size`: logical batch. Valid: 1 ..= 10^6.
    pub n_batch: u32,
    /// `-ub, --ubatch-size`: physical batch, the tokens of one graph (sizes the compute buffer).
    /// Valid: 1 ..= 10^6.
    pub n_ubatch: u32,
    /// `-ngl, --n-gpu-layers`: repeating layers plus the output layer on the GPUs (the output layer
    /// goes first); negative = all. Valid: −1 ..= 10^5.
    pub n_gpu_layers: i32,
    /// `-ts, --tensor-split`: share of layers per GPU (all zero = even, as equal free memory gives).
    pub tensor_split: [f32; MAX_SPLIT],
    /// `-ctk, --cache-type-k`.
    pub cache_type_k: CacheType,
    /// `-ctv, --cache-type-v` (a quantized V cache needs flash attention).
    pub cache_type_v: CacheType,
    /// `-fa, --flash-attn`.
    pub flash_attn: FlashAttn,
    /// `-nkvo, --no-kv-offload`: the whole KV cache in host memory.
    pub no_kv_offload: bool,
    /// `-np, --parallel`: sequences (server slots) sharing the `-c` cells. Valid: 1 ..= 256
    /// (llama.cpp's `LLAMA_MAX_SEQ`: `llama_context` refuses more, `engines::llamacpp::kv`).
    /// llama-server's own default is "auto" = 4 slots with `kv_unified` on (tools/server/server.cpp);
    /// a pasted `llama-server` command without `-np` sets both.
    pub n_parallel: u32,
    /// `-kvu, --kv-unified`: one cache of `-c` cells shared by all slots (each slot may use all of
    /// it) instead of one stream of `-c / -np` cells per slot. Changes the sliding-window cache,
    /// the printed cells and the compute buffer (llama.cpp@0c1e57098 `llama-context.cpp`
    /// `n_ctx_seq`, `llama-kv-cache-iswa.cpp`). Files without it load with it off.
    #[serde(default)]
    pub kv_unified: bool,
    /// `--no-mmap` unset: CPU-resident weights are a mapped view of the file (`CPU_Mapped`).
    pub mmap: bool,
    /// `-dev none`: a CPU build / no GPU backend (buffers print as `CPU`, nothing offloaded).
    pub cpu_only: bool,
    /// `--swa-full`: sliding-window layers keep a cache as large as the global layers' (`-c` cells)
    /// instead of `n_swa + n_ubatch` (llama.cpp@0c1e57098 `llama_kv_cache_iswa`). llama-server's
    /// default is off; the C API's (`llama_context_default_params`), and so llama-cpp-python's
    /// `Llama(swa_full=None)`, is on.
    pub swa_full: bool,
    /// `-fit on|off` (llama-server's default on, common/fit.cpp): with `-c` unset (`n_ctx` 0) on
    /// one GPU, the context is lowered from the training context, by linear interpolation between
    /// the memory at `fit_ctx` and at the training context, to leave `fit_target_mib` free (the
    /// GPU's free memory taken as its usable memory minus `overheads.cuda_context_mib`); where that
    /// does not suffice and `-ngl` is unset, the most layers from the back (a mixture of experts:
    /// with the back layers' routed experts on the host). Several GPUs are not modelled.
    pub fit: bool,
    /// `-fitt, --fit-target`: MiB to leave free on the GPU (default 1024). Valid: 0 ..= 10^6.
    pub fit_target_mib: u32,
    /// `-fitc, --fit-ctx`: the smallest context `fit` sets (default 4096); 0 = never lowered (as an
    /// explicit `-c 0` asks for the full training context). Valid: 0 ..= 10^7.
    pub fit_ctx: u32,
    /// `-cmoe, --cpu-moe`: every layer's routed experts (`ffn_{up,down,gate,gate_up}_exps`)
    /// stay in host memory (a tensor override to the CPU buffer type, `common/common.h`
    /// `llm_ffn_exps_cpu_override`); attention, norms, router and shared experts follow `-ngl`.
    /// Files without it load with it off.
    #[serde(default)]
    pub cpu_moe: bool,
    /// `-ncmoe, --n-cpu-moe N`: the routed experts of layers `0 .. N` stay in host memory
    /// (`llm_add_n_cpu_ffn_overrides` with `LLM_FFN_EXPS_REGEX`). Valid: 0 ..= 10^5.
    #[serde(default)]
    pub n_cpu_moe: u32,
    /// `-ncffn, --n-cpu-ffn N`: the dense FFN matrices (`ffn_{up,down,gate}`, with their
    /// biases) of layers `0 .. N` stay in host memory (`LLM_FFN_DENSE_REGEX`). Valid: 0 ..= 10^5.
    #[serde(default)]
    pub n_cpu_ffn: u32,
    /// `-ot` patterns the estimator does not read as the three above were given: their placement
    /// is not followed (a pasted command says so), but, as any tensor override does, they stop
    /// `fit`'s layer steps (common/fit.cpp "tensor_buft_overrides already set by user").
    #[serde(default)]
    pub other_overrides: bool,
    /// `--op-offload` / `--no-op-offload` (default on): a GPU runs the matrix products whose
    /// weights are in host memory when the batch has ≥ 32 tokens, copying each weight into its
    /// compute buffer first (`ggml_backend_sched` pass 1 "1.off", `ggml_backend_cuda_device_offload_op`).
    /// Files without it load with it on.
    #[serde(default = "on")]
    pub op_offload: bool,
    /// Not a flag: the build's `GGML_SCHED_MAX_COPIES` (a CMake option, default 4): the copies of
    /// each graph input the scheduler keeps with pipeline parallelism (several GPUs holding every
    /// layer and the output, layer split, KV offloaded, no tensor overrides: llama-context.cpp
    /// `pipeline_parallel`), printed `pipeline parallelism enabled (n_copies=4)`. 1 = a build
    /// without it. Files without it load with 4. Valid: 1 ..= 4.
    #[serde(default = "four")]
    pub sched_max_copies: u32,
    /// Not a flag: the graph of llama.cpp builds from before the KV cache was written with
    /// `ggml_set_rows` (mid-2025; read as vendored by llama-cpp-python 0.3.5, December 2024): no
    /// K/V row-index inputs and one embeddings input, which changes the compute buffers (not the
    /// model or KV buffers). For the load logs of that era; dense Llama-architecture graphs only
    /// (others plan with the current graph). Files without it load with it off.
    #[serde(default)]
    pub legacy_graph: bool,
    /// Not a flag: where builds before late 2025 put `-ngl N` layers (llama.cpp@4227c9be, as
    /// vendored by llama-cpp-python 0.3.16, and every earlier build read: `i_gpu_start =
    /// max(n_layer − N, 0)`): the last N repeating layers, and the output layer only when N
    /// exceeds the repeating layers. Later builds count the output layer among the N
    /// (`max(n_layer + 1 − N, 0)`), so the same N puts one repeating layer fewer on the GPUs and
    /// the output there. The same for N > n_layer. Those builds had no `-fit` (it is not run), and
    /// their programs offloaded no layer without `-ngl` (a pasted command without it, or with
    /// `-ngl -1`, gets 0), and their llama-server had one slot without `-np` (no automatic four).
    /// Files without it load with it off.
    #[serde(default)]
    pub legacy_placement: bool,
    /// Not a flag: the host's memory bandwidth, GB/s, which bounds the layers `-ngl` leaves on the
    /// CPU at decode (64 = dual-channel DDR5-4000 at its theoretical rate). Valid: 0.001 ..= 10^6.
    pub host_memory_gb_s: f64,
    /// Not a flag: the host's achievable rate for the matrix products of a prompt on the CPU
    /// backend, TFLOP/s (what a CPU-only build's prefill is bound by). 2.4 = Llama-3.1-8B Q4_0
    /// at 170 tokens/s (llama-bench `pp512`, mainline llama.cpp build 5688, 16-core Ryzen 9
    /// 7950X; ikawrakow/ik_llama.cpp PR #533) × the estimator's 14.2 GFLOP per prompt token
    /// (2 × 6.98 B layer parameters and attention; logits for the last token only, as llama-bench
    /// asks for them). An assumption for other CPUs: set yours. Valid: 0.001 ..= 10^6.
    pub host_tflops: f64,
}

impl LlamaCpp {
    /// Any tensor override was given (`--cpu-moe`, `--n-cpu-moe`, `--n-cpu-ffn`, `-ot`): `-fit`'s
    /// layer steps do not run.
    pub const fn has_overrides(&self) -> bool {
        self.cpu_moe || self.n_cpu_moe > 0 || self.n_cpu_ffn > 0 || self.other_overrides
    }
}

/// `op_offload`'s default for files written before it existed.
const fn on() -> bool {
    true
}

/// `sched_max_copies`' default for files written before it existed.
const fn four() -> u32 {
    4
}

impl Default for LlamaCpp {
    fn default() -> Self {
        LlamaCpp {
            n_ctx: 4096,
            n_batch: 2048,
            n_ubatch: 512,
            n_gpu_layers: -1,
            tensor_split: [0.0; MAX_SPLIT],
            cache_type_k: CacheType::F16,
            cache_type_v: CacheType::F16,
            flash_attn: FlashAttn::Auto,
            no_kv_offload: false,
            n_parallel: 1,
            kv_unified: false,
            mmap: true,
            cpu_only: false,
            swa_full: false,
            fit: true,
            fit_target_mib: 1024,
            fit_ctx: 4096,
            cpu_moe: false,
            n_cpu_moe: 0,
            n_cpu_ffn: 0,
            other_overrides: false,
            op_offload: true,
            sched_max_copies: 4,
            legacy_graph: false,
            legacy_placement: false,
            host_memory_gb_s: 64.0,
            host_tflops: 2.4,
        }
    }
}
