//! Range checks of a scenario, each error naming the field by its dotted path.
//!
//! The ranges are data ([`RANGES`]): the same table checks files, clamps nothing, and is printed in
//! `docs/format.md`. Integer fields are listed with integer bounds; fractions are in [0, 1]; counts
//! and degrees are at least 1 where 0 has no meaning. The bounds are generous sanity limits (a 10¹³
//! parameter model, 65,536-way parallelism), not claims about what is practical.

mod engines;
mod pattern;
mod towers;

use super::{GpuChoice, Scenario};

/// Where [`FieldRange::clamp`] reports that it moved a value (the estimator's diagnostics implement
/// it); a trait so the scenario does not depend on the estimator.
pub trait ClampReport {
    fn clamped(&mut self);
}

/// A value outside its documented range.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// Dotted path of the field, e.g. `parallel.tp`.
    pub field: &'static str,
    pub message: String,
}

/// One numeric field's valid range.
#[derive(Clone, Copy, Debug)]
pub struct FieldRange {
    /// Dotted path as written in a scenario file.
    pub field: &'static str,
    pub min: f64,
    pub max: f64,
    /// `min` itself is not allowed (an open interval at the bottom, e.g. efficiencies (0, 1]).
    pub min_exclusive: bool,
    pub max_exclusive: bool,
    /// Reads the field; `None` when it does not apply (a custom GPU's fields with a catalog GPU).
    pub get: fn(&Scenario) -> Option<f64>,
}

impl FieldRange {
    /// The range as text: `1 ..= 65536`, `(0, 1]`.
    pub fn describe(&self) -> String {
        let (lo, hi) = (num(self.min), num(self.max));
        match (self.min_exclusive, self.max_exclusive) {
            (false, false) => format!("[{lo}, {hi}]"),
            (true, false) => format!("({lo}, {hi}]"),
            (false, true) => format!("[{lo}, {hi})"),
            (true, true) => format!("({lo}, {hi})"),
        }
    }

    /// `x` moved into the range, the one place the estimator bounds a number
    /// (`estimator::resolve`). In range (the usual case): `x` itself, one test. Out of range: the
    /// nearest end (the nearest representable value inside an open end), reported as
    /// clamped to `d` (the estimator's diagnostics: `InputClamped`). NaN: `default`, which callers
    /// take from the section's `Default` impl (the value a file without the field gets), also
    /// reported.
    #[inline]
    pub fn clamp(&self, x: f64, default: f64, d: &mut impl ClampReport) -> f64 {
        if self.holds(x) {
            return x;
        }
        self.moved(x, default, d)
    }

    /// [`FieldRange::clamp`] for a count (integer fields have integer bounds). In range: `x` itself,
    /// without a round trip through `f64` and back.
    #[inline]
    pub fn clamp_u32(&self, x: u32, d: &mut impl ClampReport) -> u32 {
        if self.holds(f64::from(x)) {
            return x;
        }
        // In range of u32: the bounds of integer fields are integers in [0, 2^32).
        self.moved(f64::from(x), 0.0, d) as u32
    }

    /// The ends a value may take: `min`/`max`, or the nearest representable value inside an open end.
    #[inline]
    fn ends(&self) -> (f64, f64) {
        let lo = if self.min_exclusive {
            self.min.next_up()
        } else {
            self.min
        };
        let hi = if self.max_exclusive {
            self.max.next_down()
        } else {
            self.max
        };
        (lo, hi)
    }

    /// `x` is inside the range (NaN is not). With a constant range (`field(..)`) this folds to two
    /// comparisons against constants.
    #[inline]
    fn holds(&self, x: f64) -> bool {
        let (lo, hi) = self.ends();
        x >= lo && x <= hi
    }

    /// The out-of-range case of [`FieldRange::clamp`], kept out of line: it is rare, and the in-range
    /// test inlined at every field stays small.
    #[cold]
    #[inline(never)]
    fn moved(&self, x: f64, default: f64, d: &mut impl ClampReport) -> f64 {
        let (lo, hi) = self.ends();
        d.clamped();
        if x.is_nan() {
            default.clamp(lo, hi)
        } else {
            x.clamp(lo, hi)
        }
    }

    fn check(&self, x: f64) -> Option<String> {
        if x.is_nan() {
            return Some("is NaN (not a number)".to_owned());
        }
        let below = x < self.min || (self.min_exclusive && x == self.min);
        let above = x > self.max || (self.max_exclusive && x == self.max);
        (below || above).then(|| format!("= {} is out of range: valid {}", num(x), self.describe()))
    }
}

/// The range of `field`, found at compile time: `const R: &FieldRange = field("parallel.dp");`
/// fails to compile when no range has that name.
pub const fn field(name: &str) -> &'static FieldRange {
    find(RANGES, name)
}

const fn find(list: &'static [FieldRange], name: &str) -> &'static FieldRange {
    // A loop, not recursion: const evaluation limits the call depth, and RANGES outgrew it.
    let mut i = 0;
    while i < list.len() {
        if same(list[i].field, name) {
            return &list[i];
        }
        i += 1;
    }
    panic!("no range of that name in RANGES")
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

fn num(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{x}")
    } else if x != 0.0 && (x.abs() >= 1e7 || x.abs() < 1e-3) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

const fn closed(
    field: &'static str,
    min: f64,
    max: f64,
    get: fn(&Scenario) -> Option<f64>,
) -> FieldRange {
    FieldRange {
        field,
        min,
        max,
        min_exclusive: false,
        max_exclusive: false,
        get,
    }
}

/// [min, max] with a positive floor: a rate or share the model divides by. Any positive floor
/// would be valid in principle, but a time computed over a subnormal rate is infinite; the floors
/// are the ones the estimator used before `RANGES` bounded it (1 % efficiency, 1 MB/s, 1 GFLOP/s).
const fn floor(
    field: &'static str,
    min: f64,
    max: f64,
    get: fn(&Scenario) -> Option<f64>,
) -> FieldRange {
    closed(field, min, max, get)
}

/// Degrees and batch-like counts.
const DEGREE: f64 = 65_536.0;
/// Tokens in a sequence or a prompt.
const TOKENS: f64 = 1e7;
/// Generous limit of a throughput or bandwidth figure (TFLOP/s, GB/s).
const RATE: f64 = 1e6;

fn llamacpp(s: &Scenario) -> Option<&super::LlamaCpp> {
    s.inference.engine.as_ref().and_then(|e| e.llamacpp())
}

/// The `-ts` entry furthest out of range: NaN if any is, else the smallest if negative, else the
/// largest.
fn split_extreme(ts: &[f32]) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 0.0_f64);
    for &x in ts {
        let x = f64::from(x);
        if x.is_nan() {
            return f64::NAN;
        }
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if lo < 0.0 { lo } else { hi }
}

fn custom(s: &Scenario) -> Option<&super::CustomGpu> {
    match &s.gpu {
        GpuChoice::Custom(c) => Some(c),
        GpuChoice::Catalog(_) => None,
    }
}

/// Every range-checked field. Fields not listed are enums, booleans, strings, or numbers whose
/// every value is meaningful.
#[rustfmt::skip]
pub const RANGES: &[FieldRange] = &[
    closed("model.params", 1e5, 1e13, |s| Some(s.model.params)),
    closed("model.transformer.layers", 1.0, 10_000.0, |s| Some(s.model.transformer.layers.into())),
    closed("model.transformer.hidden", 1.0, 1_048_576.0, |s| Some(s.model.transformer.hidden.into())),
    closed("model.transformer.heads", 1.0, DEGREE, |s| Some(s.model.transformer.heads.into())),
    closed("model.transformer.kv_heads", 1.0, DEGREE, |s| Some(s.model.transformer.kv_heads.into())),
    closed("model.transformer.head_dim", 0.0, DEGREE, |s| Some(s.model.transformer.head_dim.into())),
    closed("model.transformer.ffn", 1.0, 4_194_304.0, |s| Some(s.model.transformer.ffn.into())),
    closed("model.transformer.vocab", 1.0, 16_777_216.0, |s| Some(s.model.transformer.vocab.into())),
    closed("model.transformer.max_positions", 0.0, TOKENS, |s| Some(s.model.transformer.max_positions.into())),
    closed("model.transformer.token_types", 0.0, 1024.0, |s| Some(s.model.transformer.token_types.into())),
    closed("model.cnn.params", 1e3, 1e13, |s| Some(s.model.cnn.params)),
    closed("model.cnn.activation_bytes_per_image_fp32", 0.0, 1e12, |s| Some(s.model.cnn.activation_bytes_per_image_fp32)),
    closed("model.cnn.reference_resolution", 1.0, DEGREE, |s| Some(s.model.cnn.reference_resolution.into())),
    closed("model.cnn.resolution", 1.0, DEGREE, |s| Some(s.model.cnn.resolution.into())),
    closed("model.cnn.macs_per_image", 0.0, 1e15, |s| Some(s.model.cnn.macs_per_image)),
    closed("model.recommender.tables", 0.0, 100_000.0, |s| Some(s.model.recommender.tables.into())),
    closed("model.recommender.rows_per_table", 0.0, 1e12, |s| Some(s.model.recommender.rows_per_table)),
    closed("model.recommender.dim", 1.0, DEGREE, |s| Some(s.model.recommender.dim.into())),
    closed("model.recommender.dense_params", 0.0, 1e13, |s| Some(s.model.recommender.dense_params)),
    closed("model.recommender.lookups_per_sample", 0.0, TOKENS, |s| Some(s.model.recommender.lookups_per_sample.into())),
    closed("model.moe.experts", 0.0, DEGREE, |s| Some(s.model.moe.experts.into())),
    closed("model.moe.top_k", 1.0, DEGREE, |s| Some(s.model.moe.top_k.into())),
    closed("model.moe.shared_experts", 0.0, DEGREE, |s| Some(s.model.moe.shared_experts.into())),
    closed("model.moe.expert_ffn", 0.0, 4_194_304.0, |s| Some(s.model.moe.expert_ffn.into())),
    closed("model.moe.capacity_factor", 0.0, 1024.0, |s| Some(s.model.moe.capacity_factor)),
    closed("model.moe.ep", 1.0, DEGREE, |s| Some(s.model.moe.ep.into())),
    closed("model.moe.etp", 0.0, DEGREE, |s| Some(s.model.moe.etp.into())),
    // The layer pattern's entries (`scenario::blocks`; lists, so no single getter: the estimator's
    // resolve pass clamps each entry, `validate` checks them in `validate/pattern.rs`).
    closed("model.pattern.repeat", 1.0, 10_000.0, |_| None),
    closed("model.pattern.layers.count", 0.0, 10_000.0, |_| None),
    closed("model.pattern.layers.norms", 0.0, 16.0, |_| None),
    closed("model.pattern.layers.dims", 0.0, 4_194_304.0, |_| None),
    closed("model.pattern.layers.window", 0.0, TOKENS, |_| None),
    closed("model.pattern.layers.small", 1.0, 1024.0, |_| None),
    // The towers' counts (layers, images per sequence, projector layers) and dimensions: the
    // pattern's bounds (`validate/towers.rs` reports them; `estimator/model/tower_shape.rs` clamps).
    closed("model.towers.count", 0.0, 10_000.0, |_| None),
    closed("model.towers.dims", 0.0, 4_194_304.0, |_| None),
    closed("model.moe.shared_expert_ffn", 0.0, 4_194_304.0, |s| Some(s.model.moe.shared_expert_ffn.into())),
    closed("model.moe.expert_groups", 0.0, DEGREE, |s| Some(s.model.moe.expert_groups.into())),
    closed("model.moe.groups_used", 0.0, DEGREE, |s| Some(s.model.moe.groups_used.into())),
    closed("model.moe.routed_scale", 0.0, 1000.0, |s| Some(s.model.moe.routed_scale)),
    closed("peft.rank", 1.0, DEGREE, |s| Some(s.peft.rank.into())),
    closed("peft.lora_dropout", 0.0, 0.99, |s| Some(s.peft.lora_dropout)),
    closed("implementation.litgpt.lm_head_chunk_tokens", 0.0, 1_048_576.0, |s| Some(s.implementation.litgpt.lm_head_chunk_tokens.into())),
    closed("implementation.torchtune.output_chunks", 1.0, 4096.0, |s| Some(s.implementation.torchtune.output_chunks.into())),
    closed("implementation.deepspeed.reduce_bucket_size", 0.0, 1e12, |s| Some(s.implementation.deepspeed.reduce_bucket_size)),
    closed("implementation.deepspeed.sub_group_size", 1.0, 1e12, |s| Some(s.implementation.deepspeed.sub_group_size)),
    closed("implementation.deepspeed.stage3_prefetch_bucket_size", 0.0, 1e12, |s| Some(s.implementation.deepspeed.stage3_prefetch_bucket_size)),
    closed("implementation.deepspeed.stage3_max_live_parameters", 0.0, 1e12, |s| Some(s.implementation.deepspeed.stage3_max_live_parameters)),
    closed("implementation.deepspeed.stage3_max_reuse_distance", 0.0, 1e12, |s| Some(s.implementation.deepspeed.stage3_max_reuse_distance)),
    closed("implementation.deepspeed.stage3_param_persistence_threshold", 0.0, 1e12, |s| Some(s.implementation.deepspeed.stage3_param_persistence_threshold)),
    closed("post_training.prompt_tokens", 0.0, TOKENS, |s| Some(s.post_training.prompt_tokens.into())),
    closed("post_training.num_generations", 1.0, DEGREE, |s| Some(s.post_training.num_generations.into())),
    FieldRange { min_exclusive: true, ..closed("post_training.rollout_gpu_memory_utilization", 0.0, 1.0, |s| Some(s.post_training.rollout_gpu_memory_utilization)) },
    closed("quantization.group_size", 1.0, DEGREE, |s| Some(s.quantization.group_size.into())),
    closed("optimizer.state_bytes_per_param", 0.0, 64.0, |s| Some(s.optimizer.state_bytes_per_param)),
    closed("workload.micro_batch", 1.0, DEGREE, |s| Some(s.workload.micro_batch.into())),
    closed("workload.seq_len", 1.0, TOKENS, |s| Some(s.workload.seq_len.into())),
    closed("workload.grad_accum_steps", 1.0, DEGREE, |s| Some(s.workload.grad_accum_steps.into())),
    closed("inference.prompt_tokens", 1.0, TOKENS, |s| Some(s.inference.prompt_tokens.into())),
    closed("inference.generated_tokens", 0.0, TOKENS, |s| Some(s.inference.generated_tokens.into())),
    closed("inference.concurrent_requests", 1.0, DEGREE, |s| Some(s.inference.concurrent_requests.into())),
    floor("inference.mean_length_fraction", 1e-3, 1.0, |s| Some(s.inference.mean_length_fraction)),
    closed("inference.kv_block_tokens", 0.0, DEGREE, |s| Some(s.inference.kv_block_tokens.into())),
    // Serving features (`scenario/inference_features.rs`).
    closed("inference.features.speculative.num_speculative_tokens", 1.0, 64.0, |s| Some(s.inference.features.speculative.num_speculative_tokens.into())),
    closed("inference.features.speculative.acceptance_rate", 0.0, 1.0, |s| Some(s.inference.features.speculative.acceptance_rate)),
    closed("inference.features.speculative.draft_params_b", 0.0, 1e4, |s| Some(s.inference.features.speculative.draft_params_b)),
    closed("inference.features.speculative.draft_layers", 1.0, 1024.0, |s| Some(s.inference.features.speculative.draft_layers.into())),
    closed("inference.features.speculative.draft_kv_heads", 1.0, 1024.0, |s| Some(s.inference.features.speculative.draft_kv_heads.into())),
    closed("inference.features.speculative.draft_head_dim", 1.0, 4096.0, |s| Some(s.inference.features.speculative.draft_head_dim.into())),
    closed("inference.features.shared_prefix_fraction", 0.0, 1.0, |s| Some(s.inference.features.shared_prefix_fraction)),
    closed("inference.features.prefill_chunk_tokens", 0.0, TOKENS, |s| Some(s.inference.features.prefill_chunk_tokens.into())),
    closed("inference.features.sequences_per_prompt", 1.0, 1024.0, |s| Some(s.inference.features.sequences_per_prompt.into())),
    closed("inference.features.kv_offload_fraction", 0.0, 1.0, |s| Some(s.inference.features.kv_offload_fraction)),
    closed("inference.features.weights_offload_fraction", 0.0, 1.0, |s| Some(s.inference.features.weights_offload_fraction)),
    // Serving engines (`scenario/engine_vllm.rs`, `engine_sglang.rs`): only for that engine.
    FieldRange { min_exclusive: true, ..closed("inference.engine.vllm.gpu_memory_utilization", 0.0, 1.0, |s| engines::vllm(s).and_then(|v| v.gpu_memory_utilization)) },
    closed("inference.engine.vllm.max_model_len", 0.0, TOKENS, |s| engines::vllm(s).map(|v| v.max_model_len.into())),
    closed("inference.engine.vllm.max_num_seqs", 0.0, DEGREE, |s| engines::vllm(s).map(|v| v.max_num_seqs.into())),
    closed("inference.engine.vllm.max_num_batched_tokens", 0.0, TOKENS, |s| engines::vllm(s).map(|v| v.max_num_batched_tokens.into())),
    closed("inference.engine.vllm.block_size", 0.0, DEGREE, |s| engines::vllm(s).map(|v| v.block_size.into())),
    closed("inference.engine.vllm.cudagraph_memory_gib", 0.0, 1e4, |s| engines::vllm(s).and_then(|v| v.cudagraph_memory_gib)),
    closed("inference.engine.vllm.kv_cache_memory_bytes", 0.0, 1e15, |s| engines::vllm(s).map(|v| v.kv_cache_memory_bytes as f64)),
    closed("inference.engine.vllm.swap_space", 0.0, 1e6, |s| engines::vllm(s).map(|v| v.swap_space)),
    floor("inference.engine.vllm.total_gpu_memory_gib", 1e-3, 1e6, |s| engines::vllm(s).and_then(|v| v.total_gpu_memory_gib)),
    FieldRange { min_exclusive: true, max_exclusive: true, ..closed("inference.engine.sglang.mem_fraction_static", 0.0, 1.0, |s| engines::sglang(s).and_then(|g| g.mem_fraction_static)) },
    closed("inference.engine.sglang.max_running_requests", 0.0, DEGREE, |s| engines::sglang(s).map(|g| g.max_running_requests.into())),
    closed("inference.engine.sglang.chunked_prefill_size", 0.0, TOKENS, |s| engines::sglang(s).map(|g| g.chunked_prefill_size.into())),
    closed("inference.engine.sglang.page_size", 1.0, DEGREE, |s| engines::sglang(s).map(|g| g.page_size.into())),
    closed("inference.engine.sglang.context_length", 0.0, TOKENS, |s| engines::sglang(s).map(|g| g.context_length.into())),
    closed("inference.engine.sglang.max_total_tokens", 0.0, 1e9, |s| engines::sglang(s).map(|g| g.max_total_tokens.into())),
    closed("inference.engine.sglang.cuda_graph_max_bs", 0.0, DEGREE, |s| engines::sglang(s).map(|g| g.cuda_graph_max_bs.into())),
    closed("inference.engine.sglang.swa_full_tokens_ratio", 0.0, 1.0, |s| engines::sglang(s).map(|g| g.swa_full_tokens_ratio)),
    closed("inference.engine.sglang.mamba_full_memory_ratio", 0.0, 100.0, |s| engines::sglang(s).map(|g| g.mamba_full_memory_ratio)),
    floor("inference.engine.sglang.gpu_memory_mib", 1e-3, 1e9, |s| engines::sglang(s).and_then(|g| g.gpu_memory_mib)),
    // llama.cpp (`scenario/engine_llamacpp.rs`): only for that engine.
    closed("inference.engine.llamacpp.n_ctx", 0.0, TOKENS, |s| llamacpp(s).map(|l| l.n_ctx.into())),
    closed("inference.engine.llamacpp.n_batch", 1.0, 1e6, |s| llamacpp(s).map(|l| l.n_batch.into())),
    closed("inference.engine.llamacpp.n_ubatch", 1.0, 1e6, |s| llamacpp(s).map(|l| l.n_ubatch.into())),
    closed("inference.engine.llamacpp.n_gpu_layers", -1.0, 1e5, |s| llamacpp(s).map(|l| l.n_gpu_layers.max(-1).into())),
    closed("inference.engine.llamacpp.tensor_split", 0.0, 1e6, |s| llamacpp(s).map(|l| split_extreme(&l.tensor_split))),
    closed("inference.engine.llamacpp.n_parallel", 1.0, 256.0, |s| llamacpp(s).map(|l| l.n_parallel.into())),
    floor("inference.engine.llamacpp.host_memory_gb_s", 1e-3, RATE, |s| llamacpp(s).map(|l| l.host_memory_gb_s)),
    floor("inference.engine.llamacpp.host_tflops", 1e-3, RATE, |s| llamacpp(s).map(|l| l.host_tflops)),
    closed("inference.engine.llamacpp.fit_target_mib", 0.0, 1e6, |s| llamacpp(s).map(|l| l.fit_target_mib.into())),
    closed("inference.engine.llamacpp.fit_ctx", 0.0, 1e7, |s| llamacpp(s).map(|l| l.fit_ctx.into())),
    closed("inference.engine.llamacpp.sched_max_copies", 1.0, 4.0, |s| llamacpp(s).map(|l| l.sched_max_copies.into())),
    closed("inference.engine.llamacpp.n_cpu_moe", 0.0, 1e5, |s| llamacpp(s).map(|l| l.n_cpu_moe.into())),
    closed("inference.engine.llamacpp.n_cpu_ffn", 0.0, 1e5, |s| llamacpp(s).map(|l| l.n_cpu_ffn.into())),
    closed("strategies.checkpoint_every", 0.0, 10_000.0, |s| Some(s.strategies.checkpoint_every.into())),
    closed("strategies.prune_fraction", 0.0, 0.99, |s| Some(s.strategies.prune_fraction)),
    FieldRange { max_exclusive: true, ..closed("strategies.weight_sharing_fraction", 0.0, 1.0, |s| Some(s.strategies.weight_sharing_fraction)) },
    closed("strategies.one_bit_warmup_fraction", 0.0, 1.0, |s| Some(s.strategies.one_bit_warmup_fraction)),
    closed("strategies.second_tier_gib", 0.0, 1e6, |s| Some(s.strategies.second_tier_gib)),
    closed("parallel.dp", 1.0, DEGREE, |s| Some(s.parallel.dp.into())),
    closed("parallel.tp", 1.0, DEGREE, |s| Some(s.parallel.tp.into())),
    closed("parallel.pp", 1.0, DEGREE, |s| Some(s.parallel.pp.into())),
    closed("parallel.pp_microbatches", 0.0, DEGREE, |s| Some(s.parallel.pp_microbatches.into())),
    closed("parallel.pp_interleave", 1.0, 1024.0, |s| Some(s.parallel.pp_interleave.into())),
    closed("parallel.gpus_per_node", 1.0, DEGREE, |s| Some(s.parallel.gpus_per_node.into())),
    closed("parallel.cp", 1.0, DEGREE, |s| Some(s.parallel.cp.into())),
    floor("gpu.memory_gb", 1e-3, 1e6, |s| custom(s).map(|c| c.memory_gb)),
    floor("gpu.bandwidth_gb_s", 1e-3, RATE, |s| custom(s).map(|c| c.bandwidth_gb_s)),
    floor("gpu.tflops_16", 1e-3, RATE, |s| custom(s).map(|c| c.tflops_16)),
    floor("gpu.tflops_32", 1e-3, RATE, |s| custom(s).map(|c| c.tflops_32)),
    floor("gpu.link_gb_s", 1e-3, RATE, |s| custom(s).map(|c| c.link_gb_s)),
    floor("gpu.host_link_gb_s", 1e-3, RATE, |s| custom(s).map(|c| c.host_link_gb_s)),
    closed("gpu.tflops_8", 0.0, 1e5, |s| custom(s).map(|c| c.tflops_8)),
    closed("gpu.tdp_w", 0.0, 1e5, |s| custom(s).map(|c| c.tdp_w)),
    closed("overheads.cuda_context_mib", 0.0, DEGREE, |s| Some(s.overheads.cuda_context_mib)),
    closed("overheads.cuda_kernels_mib", 0.0, DEGREE, |s| Some(s.overheads.cuda_kernels_mib)),
    closed("overheads.allocator_reserve_fraction", 0.0, 1.0, |s| Some(s.overheads.allocator_reserve_fraction)),
    closed("overheads.workspace_mib", 0.0, DEGREE, |s| Some(s.overheads.workspace_mib)),
    closed("overheads.comm_buffer_mib", 0.0, DEGREE, |s| Some(s.overheads.comm_buffer_mib)),
    closed("overheads.nccl_mib_per_communicator", 0.0, DEGREE, |s| Some(s.overheads.nccl_mib_per_communicator)),
    closed("overheads.nccl_mib_two_rank_communicator", 0.0, DEGREE, |s| Some(s.overheads.nccl_mib_two_rank_communicator)),
    floor("timing.compute_efficiency", 0.01, 1.0, |s| Some(s.timing.compute_efficiency)),
    floor("timing.memory_efficiency", 0.01, 1.0, |s| Some(s.timing.memory_efficiency)),
    floor("timing.link_efficiency", 0.01, 1.0, |s| Some(s.timing.link_efficiency)),
    closed("timing.comm_overlap", 0.0, 1.0, |s| Some(s.timing.comm_overlap)),
    closed("timing.offload_overlap", 0.0, 1.0, |s| Some(s.timing.offload_overlap)),
    floor("timing.pageable_fraction", 0.01, 1.0, |s| Some(s.timing.pageable_fraction)),
    floor("timing.internode_gb_s", 1e-3, RATE, |s| Some(s.timing.internode_gb_s)),
    closed("timing.link_latency_us", 0.0, 1e4, |s| Some(s.timing.link_latency_us)),
    floor("timing.nvme_gb_s", 1e-3, RATE, |s| Some(s.timing.nvme_gb_s)),
    floor("timing.host_optimizer_gb_s", 1e-3, RATE, |s| Some(s.timing.host_optimizer_gb_s)),
    closed("timing.token_budget", 0.0, 1e18, |s| Some(s.timing.token_budget)),
    closed("timing.price_per_gpu_hour", 0.0, 1e6, |s| Some(s.timing.price_per_gpu_hour)),
    floor("timing.parts.gemm_efficiency", 0.05, 1.0, |s| Some(s.timing.parts.gemm_efficiency)),
    floor("timing.parts.gemm_efficiency_hopper", 0.05, 1.0, |s| Some(s.timing.parts.gemm_efficiency_hopper)),
    floor("timing.parts.flash_forward_efficiency", 0.05, 1.0, |s| Some(s.timing.parts.flash_forward_efficiency)),
    floor("timing.parts.flash_backward_efficiency", 0.05, 1.0, |s| Some(s.timing.parts.flash_backward_efficiency)),
    closed("timing.parts.tp_overlap", 0.0, 1.0, |s| Some(s.timing.parts.tp_overlap)),
    closed("timing.parts.pp_overlap", 0.0, 1.0, |s| Some(s.timing.parts.pp_overlap)),
    closed("timing.parts.kernel_floor_us", 0.0, 1e3, |s| Some(s.timing.parts.kernel_floor_us)),
    closed("timing.parts.eager_op_us", 0.0, 1e4, |s| Some(s.timing.parts.eager_op_us)),
    closed("timing.parts.generate_step_us", 0.0, 1e6, |s| Some(s.timing.parts.generate_step_us)),
    floor("timing.parts.int8_weight_only_read", 0.05, 1.0, |s| Some(s.timing.parts.int8_weight_only_read)),
    floor("timing.parts.int4_weight_only_read", 0.05, 1.0, |s| Some(s.timing.parts.int4_weight_only_read)),
    closed("input.token_bytes", 1.0, 64.0, |s| Some(s.input.token_bytes.into())),
    closed("input.image_height", 1.0, DEGREE, |s| Some(s.input.image_height.into())),
    closed("input.image_width", 1.0, DEGREE, |s| Some(s.input.image_width.into())),
    closed("input.image_channels", 1.0, 64.0, |s| Some(s.input.image_channels.into())),
    closed("input.gpu_prefetch_batches", 0.0, 64.0, |s| Some(s.input.gpu_prefetch_batches.into())),
    closed("input.host_staging_batches", 0.0, 4096.0, |s| Some(s.input.host_staging_batches.into())),
];

/// The range of a field, if it is range-checked.
pub fn range_of(field: &str) -> Option<&'static FieldRange> {
    RANGES.iter().find(|r| r.field == field)
}

/// The most GPUs a layout may name (dp × tp × pp × cp): 2⁴⁰. Each degree alone may reach 65,536,
/// so four of them multiply past what a `u64` holds (the report printed a saturated
/// 18446744073709551615 GPUs); the bound keeps the count and what is derived from it in range, far
/// above any machine, so that odd what-if layouts (and the random scenarios the tests draw) stay
/// valid.
pub const MAX_GPUS: u64 = 1 << 40;

/// Checks every documented range; an empty list means valid.
pub fn validate(scenario: &Scenario) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = RANGES
        .iter()
        .filter_map(|r| {
            let x = (r.get)(scenario)?;
            r.check(x).map(|message| FieldError {
                field: r.field,
                message,
            })
        })
        .collect();
    let t = &scenario.model.transformer;
    if t.kv_heads > t.heads
        && errors
            .iter()
            .all(|e| !e.field.starts_with("model.transformer."))
    {
        errors.push(FieldError {
            field: "model.transformer.kv_heads",
            message: format!(
                "= {} exceeds `heads` = {}: KV heads are at most the query heads",
                t.kv_heads, t.heads
            ),
        });
    }
    let gpus = scenario.parallel.gpus();
    if gpus > MAX_GPUS {
        errors.push(FieldError {
            field: "parallel.dp",
            message: format!(
                "× tp × pp × cp = {} GPUs exceeds {} (lower a degree)",
                crate::format::grouped(gpus as f64),
                crate::format::grouped(MAX_GPUS as f64)
            ),
        });
    }
    pattern::errors(scenario, &mut errors);
    towers::errors(scenario, &mut errors);
    if scenario.version != super::FORMAT_VERSION {
        errors.push(FieldError {
            field: "version",
            message: format!(
                "= {} is not the current format version {}",
                scenario.version,
                super::FORMAT_VERSION
            ),
        });
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_scenario_is_valid() {
        assert_eq!(validate(&Scenario::default()), Vec::new());
    }

    #[test]
    fn errors_name_the_field() {
        let mut s = Scenario::default();
        s.parallel.tp = 0;
        s.timing.compute_efficiency = f64::NAN;
        s.model.params = 1e300;
        let fields: Vec<&str> = validate(&s).iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            ["model.params", "parallel.tp", "timing.compute_efficiency"]
        );
    }

    #[test]
    fn ranges_have_unique_fields_and_sane_bounds() {
        for (i, r) in RANGES.iter().enumerate() {
            assert!(r.min <= r.max, "{}", r.field);
            assert!(
                RANGES.iter().skip(i + 1).all(|o| o.field != r.field),
                "{}",
                r.field
            );
        }
        assert_eq!(
            range_of("parallel.tp").map(FieldRange::describe),
            Some("[1, 65536]".into())
        );
    }
}
