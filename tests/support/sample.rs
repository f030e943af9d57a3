//! Random valid scenarios for randomized tests: every range-checked field of
//! `scenario::validate::RANGES` sampled over its whole range (log-uniform where the range spans more
//! than two decades), every enum variant, both modes, all model families, catalog and custom GPUs.
//! Seeded (splitmix64), so a failure names a reproducible scenario.

#![allow(dead_code)]

use vram_explorer::hardware::{GpuId, MemoryTech};
use vram_explorer::scenario::validate::{FieldRange, RANGES};
use vram_explorer::scenario::*;

/// splitmix64 (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators").
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits as a fraction.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }

    /// Uniform in 0 .. n (0 when n is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

/// A random scenario that `validate` accepts.
pub fn scenario(rng: &mut Rng) -> Scenario {
    let mut s = Scenario {
        mode: rng.pick(&[Mode::Training, Mode::Inference]),
        ..Scenario::default()
    };
    s.model.family = rng.pick(&[
        ModelFamily::Transformer,
        ModelFamily::Cnn,
        ModelFamily::Recommender,
    ]);
    s.model.shape = rng.pick(&[ShapeSource::ParamCount, ShapeSource::Dimensions]);
    s.gpu = if rng.below(4) == 0 {
        GpuChoice::Custom(CustomGpu {
            memory_tech: rng.pick(&MemoryTech::ALL),
            ..CustomGpu::default()
        })
    } else {
        GpuChoice::Catalog(rng.pick(&GpuId::ALL))
    };
    for r in RANGES {
        if (r.get)(&s).is_some() {
            let v = value(rng, r);
            set(&mut s, r.field, v);
        }
    }
    let t = &mut s.model.transformer;
    if t.kv_heads > t.heads {
        t.kv_heads = 1 + rng.below(u64::from(t.heads)) as u32;
    }
    enums(rng, &mut s);
    s
}

/// A value in the field's range: log-uniform over wide ranges (with the bottom itself now and then),
/// uniform otherwise.
fn value(rng: &mut Rng, r: &FieldRange) -> f64 {
    let (lo, hi) = (r.min, r.max);
    let v = if hi > 100.0 * lo.max(1.0) {
        let floor = if lo > 0.0 { lo } else { 1.0 };
        if lo == 0.0 && rng.below(8) == 0 {
            0.0
        } else {
            (rng.range(floor.ln(), hi.ln())).exp()
        }
    } else {
        rng.range(lo, hi)
    };
    let v = v.clamp(lo, hi);
    if (r.min_exclusive && v <= lo) || (r.max_exclusive && v >= hi) {
        (lo + hi) / 2.0
    } else {
        v
    }
}

fn enums(rng: &mut Rng, s: &mut Scenario) {
    let p = &mut s.precision;
    p.mode = rng.pick(&[
        PrecisionMode::Uniform,
        PrecisionMode::Amp,
        PrecisionMode::MasterWeights,
        PrecisionMode::Custom,
    ]);
    p.compute = rng.pick(&Dtype::ALL);
    p.weights = rng.pick(&Dtype::ALL);
    p.gradients = rng.pick(&Dtype::ALL);
    p.optimizer_states = rng.pick(&Dtype::ALL);
    p.master_weights = rng.coin().then(|| rng.pick(&Dtype::ALL));
    p.activations = rng.pick(&Dtype::ALL);
    p.kv_cache = rng.pick(&Dtype::ALL);
    s.optimizer.kind = rng.pick(&[
        OptimizerKind::Sgd,
        OptimizerKind::SgdMomentum,
        OptimizerKind::Adam,
        OptimizerKind::AdamW,
        OptimizerKind::Adam8bit,
        OptimizerKind::Adafactor,
    ]);
    s.optimizer.foreach = rng.coin();
    let st = &mut s.strategies;
    st.checkpointing = rng.pick(&[
        Checkpointing::None,
        Checkpointing::Selective,
        Checkpointing::Full,
        Checkpointing::EveryK,
    ]);
    st.attention = rng.pick(&[AttentionKernel::Materialized, AttentionKernel::Flash]);
    st.activation_compression_8bit = rng.coin();
    st.zero = rng.pick(&[
        ZeroStage::None,
        ZeroStage::Stage1,
        ZeroStage::Stage2,
        ZeroStage::Stage3,
    ]);
    st.hybrid_shard = rng.coin();
    let offload = [OffloadTarget::None, OffloadTarget::Cpu, OffloadTarget::Nvme];
    st.offload_optimizer = rng.pick(&offload);
    st.offload_params = rng.pick(&offload);
    st.prune_kind = rng.pick(&[PruneKind::Structured, PruneKind::Unstructured]);
    st.one_bit_comm = rng.coin();
    st.second_tier = rng.pick(&[SecondTier::None, SecondTier::Host, SecondTier::Cxl]);
    s.parallel.sequence_parallel = rng.coin();
    s.workload.dropout = rng.coin();
    let inf = &mut s.inference;
    inf.dynamic_batching = rng.coin();
    inf.all_logits = rng.coin();
    let t = &mut s.model.transformer;
    t.arch = rng.pick(&[ArchKind::Decoder, ArchKind::Encoder]);
    t.ffn_kind = rng.pick(&[FfnKind::Gelu, FfnKind::SwiGlu]);
    t.positions = rng.pick(&[PositionKind::Learned, PositionKind::Rotary]);
    t.norm = rng.pick(&[NormKind::LayerNorm, NormKind::RmsNorm]);
    t.tied_embeddings = rng.coin();
    t.bias = rng.coin();
    t.mlm_head = rng.coin();
    t.pooler = rng.coin();
    t.gelu_tanh = rng.coin();
    t.fused_qkv = rng.coin();
    s.peft.method = rng.pick(&PeftMethod::ALL);
    s.peft.double_quant = rng.coin();
    s.peft.paged_optimizer = rng.coin();
    s.quantization.weights = rng.pick(&WeightFormat::ALL);
    s.implementation.profile = rng.pick(&[Profile::HuggingFace, Profile::Megatron]);
    s.implementation.dropout_mask = rng.pick(&[DropoutMask::OneByte, DropoutMask::Float]);
    s.implementation.fused_cross_entropy = rng.coin();
    s.input.kind = rng.pick(&[InputKind::Tokens, InputKind::Images]);
    s.input.encoding = rng.pick(&[
        ImageEncoding::Tensor,
        ImageEncoding::Rgba8,
        ImageEncoding::Bc1,
        ImageEncoding::Bc7,
    ]);
    s.input.image_dtype = rng.pick(&Dtype::ALL);
    s.timing.pinned_host_memory = rng.coin();
    s.timing.collective = rng.pick(&[
        CollectiveAlgorithm::Auto,
        CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree,
    ]);
}

/// Writes a range-checked field by its dotted path (whole numbers rounded).
fn set(s: &mut Scenario, field: &str, v: f64) {
    let n = v.round() as u32;
    let m = &mut s.model;
    let (t, moe) = (&mut m.transformer, &mut m.moe);
    let gpu = match &mut s.gpu {
        GpuChoice::Custom(c) => Some(c),
        GpuChoice::Catalog(_) => None,
    };
    match (field, gpu) {
        ("model.params", _) => m.params = v,
        ("model.transformer.layers", _) => t.layers = n,
        ("model.transformer.hidden", _) => t.hidden = n,
        ("model.transformer.heads", _) => t.heads = n,
        ("model.transformer.kv_heads", _) => t.kv_heads = n,
        ("model.transformer.head_dim", _) => t.head_dim = n,
        ("model.transformer.ffn", _) => t.ffn = n,
        ("model.transformer.vocab", _) => t.vocab = n,
        ("model.transformer.max_positions", _) => t.max_positions = n,
        ("model.transformer.token_types", _) => t.token_types = n,
        ("model.cnn.params", _) => m.cnn.params = v,
        ("model.cnn.activation_bytes_per_image_fp32", _) => {
            m.cnn.activation_bytes_per_image_fp32 = v
        }
        ("model.cnn.reference_resolution", _) => m.cnn.reference_resolution = n,
        ("model.cnn.resolution", _) => m.cnn.resolution = n,
        ("model.cnn.macs_per_image", _) => m.cnn.macs_per_image = v,
        ("model.recommender.tables", _) => m.recommender.tables = n,
        ("model.recommender.rows_per_table", _) => m.recommender.rows_per_table = v,
        ("model.recommender.dim", _) => m.recommender.dim = n,
        ("model.recommender.dense_params", _) => m.recommender.dense_params = v,
        ("model.recommender.lookups_per_sample", _) => m.recommender.lookups_per_sample = n,
        ("model.moe.experts", _) => moe.experts = n,
        ("model.moe.top_k", _) => moe.top_k = n,
        ("model.moe.shared_experts", _) => moe.shared_experts = n,
        ("model.moe.expert_ffn", _) => moe.expert_ffn = n,
        ("model.moe.capacity_factor", _) => moe.capacity_factor = v,
        ("model.moe.ep", _) => moe.ep = n,
        ("peft.rank", _) => s.peft.rank = n,
        ("quantization.group_size", _) => s.quantization.group_size = n,
        ("workload.micro_batch", _) => s.workload.micro_batch = n,
        ("workload.seq_len", _) => s.workload.seq_len = n,
        ("workload.grad_accum_steps", _) => s.workload.grad_accum_steps = n,
        ("inference.prompt_tokens", _) => s.inference.prompt_tokens = n,
        ("inference.generated_tokens", _) => s.inference.generated_tokens = n,
        ("inference.concurrent_requests", _) => s.inference.concurrent_requests = n,
        ("inference.mean_length_fraction", _) => s.inference.mean_length_fraction = v,
        ("inference.kv_block_tokens", _) => s.inference.kv_block_tokens = n,
        ("strategies.checkpoint_every", _) => s.strategies.checkpoint_every = n,
        ("strategies.prune_fraction", _) => s.strategies.prune_fraction = v,
        ("strategies.weight_sharing_fraction", _) => s.strategies.weight_sharing_fraction = v,
        ("strategies.one_bit_warmup_fraction", _) => s.strategies.one_bit_warmup_fraction = v,
        ("strategies.second_tier_gib", _) => s.strategies.second_tier_gib = v,
        ("parallel.dp", _) => s.parallel.dp = n,
        ("parallel.tp", _) => s.parallel.tp = n,
        ("parallel.pp", _) => s.parallel.pp = n,
        ("parallel.pp_microbatches", _) => s.parallel.pp_microbatches = n,
        ("parallel.pp_interleave", _) => s.parallel.pp_interleave = n,
        ("parallel.gpus_per_node", _) => s.parallel.gpus_per_node = n,
        ("gpu.memory_gb", Some(c)) => c.memory_gb = v,
        ("gpu.bandwidth_gb_s", Some(c)) => c.bandwidth_gb_s = v,
        ("gpu.tflops_16", Some(c)) => c.tflops_16 = v,
        ("gpu.tflops_32", Some(c)) => c.tflops_32 = v,
        ("gpu.link_gb_s", Some(c)) => c.link_gb_s = v,
        ("gpu.host_link_gb_s", Some(c)) => c.host_link_gb_s = v,
        ("gpu.tflops_8", Some(c)) => c.tflops_8 = v,
        ("gpu.tdp_w", Some(c)) => c.tdp_w = v,
        ("overheads.cuda_context_mib", _) => s.overheads.cuda_context_mib = v,
        ("overheads.allocator_reserve_fraction", _) => s.overheads.allocator_reserve_fraction = v,
        ("overheads.workspace_mib", _) => s.overheads.workspace_mib = v,
        ("overheads.comm_buffer_mib", _) => s.overheads.comm_buffer_mib = v,
        ("timing.compute_efficiency", _) => s.timing.compute_efficiency = v,
        ("timing.memory_efficiency", _) => s.timing.memory_efficiency = v,
        ("timing.link_efficiency", _) => s.timing.link_efficiency = v,
        ("timing.comm_overlap", _) => s.timing.comm_overlap = v,
        ("timing.offload_overlap", _) => s.timing.offload_overlap = v,
        ("timing.pageable_fraction", _) => s.timing.pageable_fraction = v,
        ("timing.internode_gb_s", _) => s.timing.internode_gb_s = v,
        ("timing.link_latency_us", _) => s.timing.link_latency_us = v,
        ("timing.nvme_gb_s", _) => s.timing.nvme_gb_s = v,
        ("timing.token_budget", _) => s.timing.token_budget = v,
        ("timing.price_per_gpu_hour", _) => s.timing.price_per_gpu_hour = v,
        ("input.token_bytes", _) => s.input.token_bytes = n,
        ("input.image_height", _) => s.input.image_height = n,
        ("input.image_width", _) => s.input.image_width = n,
        ("input.image_channels", _) => s.input.image_channels = n,
        ("input.gpu_prefetch_batches", _) => s.input.gpu_prefetch_batches = n,
        ("input.host_staging_batches", _) => s.input.host_staging_batches = n,
        (other, _) => panic!("sample.rs does not know the range-checked field `{other}`"),
    }
}
