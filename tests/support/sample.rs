//! A random valid scenario over every field's documented range (`scenario::validate::RANGES`), every
//! enum variant, both modes, every model family, catalog and custom GPUs. A tiny SplitMix64 PRNG
//! (Steele, Lea & Flood 2014), so runs are reproducible from a seed without a crate.
//!
//! Shared by tests: `#[path = "support/sample.rs"] mod sample;`.
#![allow(dead_code)]

use vram_explorer::hardware::{GpuId, MemoryTech};
use vram_explorer::scenario::validate::range_of;
use vram_explorer::scenario::*;

/// SplitMix64: a 64-bit state stepped by the golden-ratio increment, output mixed by two multiplies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// A side stream seeded from this one's state, which it does not advance: fields added later
    /// draw from it, so the main stream (and every seeded sample) stays as before they existed.
    pub fn side(&self, salt: u64) -> Rng {
        Rng(self.0 ^ salt)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
    /// One of `items`, uniformly.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next_u64() % items.len() as u64) as usize]
    }
    /// A float in [lo, hi]: uniform, log-uniform for wide positive ranges; the ends themselves, and
    /// the smallest values just above `lo` (down to the least subnormal), 1 time in 16 each.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        match self.next_u64() % 16 {
            0 => lo,
            1 => hi,
            2 => lo + self.pick(&[f64::from_bits(1), f64::MIN_POSITIVE, 1e-300, 1e-30, 1e-12]),
            _ if lo > 0.0 && hi / lo > 100.0 => (lo.ln() + self.unit() * (hi.ln() - lo.ln())).exp(),
            _ if lo == 0.0 && hi > 100.0 && self.coin() => {
                (self.unit() * (hi + 1.0).ln()).exp() - 1.0
            }
            _ => lo + self.unit() * (hi - lo),
        }
        .clamp(lo, hi)
    }
    /// A float over the documented range of `field` (`validate::RANGES`), open ends excluded.
    pub fn field(&mut self, field: &str) -> f64 {
        let Some(f) = range_of(field) else {
            panic!("{field} has no range");
        };
        let lo = if f.min_exclusive {
            f.min.next_up()
        } else {
            f.min
        };
        let hi = if f.max_exclusive {
            f.max.next_down()
        } else {
            f.max
        };
        self.range(lo, hi)
    }
    /// An integer in [lo, hi], log-uniform when the range is wide.
    pub fn int(&mut self, lo: u32, hi: u32) -> u32 {
        let x = self.range(f64::from(lo), f64::from(hi)).round();
        (x as u32).clamp(lo, hi)
    }
    /// Small values more often: the ends, or log-uniform in [lo, hi].
    pub fn small(&mut self, lo: u32, hi: u32) -> u32 {
        if self.next_u64().is_multiple_of(4) {
            self.int(lo, hi.min(lo.saturating_add(8)))
        } else {
            self.int(lo, hi)
        }
    }
}

const DTYPES: [Dtype; 8] = Dtype::ALL;

fn dtype(r: &mut Rng) -> Dtype {
    r.pick(&DTYPES)
}

fn model(r: &mut Rng) -> ModelSpec {
    let heads = r.small(1, 65_536);
    let kv_heads = r.small(1, heads);
    let t = TransformerDims {
        arch: r.pick(&[ArchKind::Decoder, ArchKind::Encoder]),
        layers: r.small(1, 10_000),
        hidden: r.small(1, 1_048_576),
        heads,
        kv_heads,
        head_dim: if r.coin() { 0 } else { r.small(0, 65_536) },
        ffn: r.small(1, 4_194_304),
        ffn_kind: r.pick(&[FfnKind::Gelu, FfnKind::SwiGlu, FfnKind::SquaredRelu]),
        vocab: r.small(1, 16_777_216),
        tied_embeddings: r.coin(),
        positions: r.pick(&[PositionKind::Learned, PositionKind::Rotary]),
        max_positions: r.small(0, 10_000_000),
        token_types: r.small(0, 1024),
        bias: r.coin(),
        norm: r.pick(&[NormKind::LayerNorm, NormKind::RmsNorm]),
        mlm_head: r.coin(),
        pooler: r.coin(),
        gelu_tanh: r.coin(),
        fused_qkv: r.coin(),
        softmax_fp32: r.coin(),
    };
    let cnn = CnnSpec {
        network: r.pick(&CnnNetwork::ALL),
        params: r.range(1e3, 1e13),
        activation_bytes_per_image_fp32: r.range(0.0, 1e12),
        reference_resolution: r.small(1, 65_536),
        resolution: r.small(1, 65_536),
        macs_per_image: r.range(0.0, 1e15),
    };
    let recommender = RecommenderSpec {
        tables: r.small(0, 100_000),
        rows_per_table: r.range(0.0, 1e12),
        dim: r.small(1, 65_536),
        dense_params: r.range(0.0, 1e13),
        lookups_per_sample: r.small(0, 10_000_000),
    };
    let moe = if r.coin() {
        MoeSpec::default()
    } else {
        MoeSpec {
            experts: r.small(0, 65_536),
            top_k: r.small(1, 65_536),
            shared_experts: r.small(0, 65_536),
            expert_ffn: r.small(0, 4_194_304),
            capacity_factor: r.range(0.0, 1024.0),
            shared_expert_ffn: r.small(0, 4_194_304),
            shared_expert_gate: r.coin(),
            router_bias: r.coin(),
            expert_bias: r.coin(),
            ep: r.small(1, 65_536),
            // A side stream: the main one stays as before the field existed.
            etp: r.side(0x6574_7031).pick(&[0, 1, 2, 3, 4, 8, 65_536]),
            norm_top_k: r.coin(),
            selection_bias: r.coin(),
            expert_groups: r.small(0, 65_536),
            groups_used: r.small(0, 65_536),
            routed_scale: r.range(0.0, 1000.0),
        }
    };
    let pattern = if r.next_u64().is_multiple_of(3) {
        (0..r.small(1, 3))
            .map(|_| PatternPart {
                repeat: r.small(1, 10_000),
                layers: (0..r.small(1, 4)).map(|_| layer_run(r)).collect(),
            })
            .collect()
    } else {
        Vec::new()
    };
    let pattern_seed = u64::from(t.hidden) ^ (u64::from(t.ffn) << 32) ^ pattern.len() as u64;
    ModelSpec {
        family: r.pick(&[
            ModelFamily::Transformer,
            ModelFamily::Cnn,
            ModelFamily::Recommender,
        ]),
        shape: r.pick(&[ShapeSource::ParamCount, ShapeSource::Dimensions]),
        params: r.range(1e5, 1e13),
        transformer: t,
        cnn,
        recommender,
        moe,
        pattern,
        // A side stream seeded from values already drawn: the main stream stays as before.
        towers: towers(&mut Rng::new(pattern_seed)),
    }
}

/// Random towers (a vision tower, an encoder stack) over the pattern's ranges, sometimes none.
fn towers(r: &mut Rng) -> Vec<Tower> {
    const DIMS: u32 = 4_194_304;
    let mut out = Vec::new();
    if r.coin() {
        out.push(Tower::Vision(VisionTower {
            layers: r.small(0, 10_000),
            hidden: r.small(0, DIMS),
            heads: r.small(0, DIMS),
            ffn: r.small(0, DIMS),
            image_size: r.small(0, DIMS),
            patch_size: r.small(0, DIMS),
            temporal_patch: r.small(0, 1024),
            class_token: r.coin(),
            learned_positions: r.coin(),
            projector: Projector {
                merge: r.small(0, 1024),
                hidden: r.small(0, DIMS),
                out: r.small(0, DIMS),
                ..Projector::default()
            },
            ..VisionTower::default()
        }));
    }
    if r.coin() {
        out.push(Tower::Encoder(EncoderStack {
            layers: r.small(0, 10_000),
            hidden: r.small(0, DIMS),
            heads: r.small(0, DIMS),
            head_dim: r.small(0, DIMS),
            ffn: r.small(0, DIMS),
            relative_buckets: r.small(0, DIMS),
            input_len: r.small(0, DIMS),
            input: if r.coin() {
                EncoderInput::SharedEmbedding
            } else {
                EncoderInput::AudioConv {
                    mel_bins: r.small(0, DIMS),
                    positions: r.small(0, DIMS),
                }
            },
            ..EncoderStack::default()
        }));
    }
    out
}

/// A random run of the layer pattern over the ranges of `model.pattern.*`.
fn layer_run(r: &mut Rng) -> LayerRun {
    const DIMS: u32 = 4_194_304;
    let mixer = match r.next_u64() % 4 {
        0 => Mixer::Attention(Attention {
            heads: r.small(0, 65_536),
            kv_heads: r.small(0, 65_536),
            head_dim: r.small(0, 65_536),
            window: r.small(0, 10_000_000),
            chunk: r.small(0, 10_000_000),
            qkv_bias: r.coin(),
            out_bias: r.coin(),
            qk_norm: r.coin(),
            sinks: r.coin(),
            output_gate: r.coin(),
            // Derived, not drawn (the stream stays as before): the encoder-decoder switches.
            no_k_bias: false,
            cross_attention: false,
            relative_buckets: 0,
        }),
        1 => Mixer::Mla(Mla {
            heads: r.small(0, 65_536),
            q_lora_rank: r.small(0, DIMS),
            kv_lora_rank: r.small(0, DIMS),
            qk_nope_head_dim: r.small(0, DIMS),
            qk_rope_head_dim: r.small(0, DIMS),
            v_head_dim: r.small(0, DIMS),
            cache: r.pick(&[MlaCache::Decompressed, MlaCache::Latent]),
        }),
        2 => Mixer::Mamba(Mamba {
            version: r.pick(&[MambaVersion::Mamba1, MambaVersion::Mamba2]),
            d_state: r.small(0, DIMS),
            d_conv: r.small(1, 1024),
            expand: r.small(1, 1024),
            n_groups: r.small(0, DIMS),
            head_dim: r.small(0, DIMS),
            dt_rank: r.small(0, DIMS),
            conv_bias: r.coin(),
            bias: r.coin(),
            inner_norms: r.coin(),
            gated_norm: r.coin(),
            chunk_size: r.small(0, DIMS),
        }),
        _ => Mixer::GatedDeltaNet(GatedDeltaNet {
            key_heads: r.small(0, DIMS),
            value_heads: r.small(0, DIMS),
            key_head_dim: r.small(0, DIMS),
            value_head_dim: r.small(0, DIMS),
            conv_kernel: r.small(1, 1024),
        }),
    };
    // Derived from drawn values (the stream stays as before): encoder-decoder attention switches,
    // T5's relative buckets, and mixer-less layers.
    let mixer = match mixer {
        Mixer::Attention(a) => Mixer::Attention(Attention {
            cross_attention: a.window % 2 == 1,
            no_k_bias: a.chunk % 2 == 1,
            relative_buckets: a.heads % 64,
            ..a
        }),
        Mixer::GatedDeltaNet(g) if g.conv_kernel % 4 == 0 => Mixer::None,
        other => other,
    };
    let mlp = match r.next_u64() % 3 {
        0 => Mlp::Dense(DenseMlp {
            ffn: r.small(0, DIMS),
            kind: if r.coin() {
                None
            } else {
                Some(r.pick(&[FfnKind::Gelu, FfnKind::SwiGlu, FfnKind::SquaredRelu]))
            },
            bias: r.coin(),
        }),
        1 => Mlp::Moe,
        _ => Mlp::None,
    };
    LayerRun {
        count: r.small(0, 10_000),
        mixer,
        mlp,
        norms: r.small(0, 16),
    }
}

fn gpu(r: &mut Rng) -> GpuChoice {
    if !r.next_u64().is_multiple_of(4) {
        return GpuChoice::Catalog(r.pick(&GpuId::ALL));
    }
    GpuChoice::Custom(CustomGpu {
        name: "random".to_owned(),
        memory_gb: r.field("gpu.memory_gb"),
        bandwidth_gb_s: r.field("gpu.bandwidth_gb_s"),
        tflops_16: r.field("gpu.tflops_16"),
        tflops_32: r.field("gpu.tflops_32"),
        tflops_8: r.range(0.0, 1e5),
        memory_tech: r.pick(&MemoryTech::ALL),
        link_gb_s: r.field("gpu.link_gb_s"),
        host_link_gb_s: r.field("gpu.host_link_gb_s"),
        tdp_w: r.range(0.0, 1e5),
    })
}

/// Serving features anywhere in their ranges (`scenario/inference_features.rs`).
fn features(r: &mut Rng) -> InferenceFeatures {
    InferenceFeatures {
        speculative: Speculative {
            method: r.pick(&SpeculativeMethod::ALL),
            num_speculative_tokens: r.small(1, 64),
            acceptance_rate: r.field("inference.features.speculative.acceptance_rate"),
            draft_params_b: r.field("inference.features.speculative.draft_params_b"),
            draft_layers: r.small(1, 1024),
            draft_kv_heads: r.small(1, 1024),
            draft_head_dim: r.small(1, 4096),
        },
        shared_prefix_fraction: r.field("inference.features.shared_prefix_fraction"),
        prefill_chunk_tokens: r.small(0, 10_000_000),
        sequences_per_prompt: r.small(1, 1024),
        sampling: r.pick(&[Sampling::Parallel, Sampling::Beam]),
        kv_offload_fraction: r.field("inference.features.kv_offload_fraction"),
        weights_offload_fraction: r.field("inference.features.weights_offload_fraction"),
    }
}

/// A random scenario that passes `validate` (every number inside its documented range).
#[allow(clippy::field_reassign_with_default)] // one section per statement reads best here
pub fn scenario(r: &mut Rng) -> Scenario {
    let mut s = Scenario::default();
    s.mode = r.pick(&[Mode::Training, Mode::Inference]);
    s.model = model(r);
    s.workload = Workload {
        micro_batch: r.small(1, 65_536),
        seq_len: r.small(1, 10_000_000),
        grad_accum_steps: r.small(1, 65_536),
        dropout: r.coin(),
    };
    s.inference = Inference {
        prompt_tokens: r.small(1, 10_000_000),
        generated_tokens: r.small(0, 10_000_000),
        dynamic_batching: r.coin(),
        concurrent_requests: r.small(1, 65_536),
        mean_length_fraction: r.field("inference.mean_length_fraction"),
        kv_block_tokens: r.small(0, 65_536),
        all_logits: r.coin(),
        engine: r.pick(&[
            None,
            Some(ServingEngine::HfGenerate),
            Some(ServingEngine::Preallocated),
            Some(ServingEngine::Vllm(Vllm::default())),
            Some(ServingEngine::Sglang(Sglang::default())),
        ]),
        features: if r.coin() {
            features(r)
        } else {
            InferenceFeatures::default()
        },
    };
    // The engines' own settings, anywhere in their ranges.
    s.inference.engine = match s.inference.engine {
        Some(ServingEngine::Vllm(_)) => Some(ServingEngine::Vllm(Vllm {
            version: r.pick(&VllmVersion::ALL),
            gpu_memory_utilization: Some(r.field("inference.engine.vllm.gpu_memory_utilization")),
            max_model_len: r.small(0, 10_000_000),
            max_num_seqs: r.small(0, 65_536),
            max_num_batched_tokens: r.small(0, 10_000_000),
            block_size: r.small(0, 65_536),
            kv_cache_dtype: r.pick(&KvCacheDtype::ALL),
            enforce_eager: r.coin(),
            cudagraph_memory_gib: Some(r.field("inference.engine.vllm.cudagraph_memory_gib")),
            enable_prefix_caching: r.coin(),
            kv_cache_memory_bytes: r.field("inference.engine.vllm.kv_cache_memory_bytes") as u64,
            swap_space: r.field("inference.engine.vllm.swap_space"),
            mamba_ssm_cache_fp32: r.coin(),
            total_gpu_memory_gib: Some(r.field("inference.engine.vllm.total_gpu_memory_gib")),
        })),
        Some(ServingEngine::Sglang(_)) => Some(ServingEngine::Sglang(Sglang {
            version: r.pick(&SglangVersion::ALL),
            mem_fraction_static: Some(r.field("inference.engine.sglang.mem_fraction_static")),
            max_running_requests: r.small(0, 65_536),
            chunked_prefill_size: r.small(0, 10_000_000),
            page_size: r.small(1, 65_536),
            kv_cache_dtype: r.pick(&KvCacheDtype::ALL),
            context_length: r.small(0, 10_000_000),
            max_total_tokens: r.small(0, 1_000_000_000),
            cuda_graph_max_bs: r.small(0, 65_536),
            disable_cuda_graph: r.coin(),
            swa_full_tokens_ratio: r.field("inference.engine.sglang.swa_full_tokens_ratio"),
            mamba_full_memory_ratio: r.field("inference.engine.sglang.mamba_full_memory_ratio"),
            gpu_memory_mib: Some(r.field("inference.engine.sglang.gpu_memory_mib")),
        })),
        other => other,
    };
    s.precision = PrecisionSpec {
        mode: r.pick(&[
            PrecisionMode::Uniform,
            PrecisionMode::Amp,
            PrecisionMode::MasterWeights,
            PrecisionMode::Custom,
        ]),
        compute: dtype(r),
        weights: dtype(r),
        gradients: dtype(r),
        optimizer_states: dtype(r),
        master_weights: if r.coin() { None } else { Some(dtype(r)) },
        activations: dtype(r),
        kv_cache: dtype(r),
        attention_fp32: r.coin(),
        fp8_recipe: r.pick(&[
            Fp8Recipe::None,
            Fp8Recipe::TeDelayed,
            Fp8Recipe::TeCurrent,
            Fp8Recipe::DeepSeekBlockwise,
        ]),
    };
    s.optimizer = Optimizer {
        kind: r.pick(&[
            OptimizerKind::Sgd,
            OptimizerKind::SgdMomentum,
            OptimizerKind::Adam,
            OptimizerKind::AdamW,
            OptimizerKind::Adam8bit,
            OptimizerKind::Adafactor,
            OptimizerKind::Lion,
            OptimizerKind::Muon,
            OptimizerKind::StateBytes,
        ]),
        foreach: r.coin(),
        state_bytes_per_param: r.range(0.0, 64.0),
        eight_bit_library: r
            .side(0x7461_6f38_6269_7473)
            .pick(&[EightBitLibrary::Bitsandbytes, EightBitLibrary::Torchao]),
    };
    s.strategies = strategies(r);
    s.parallel = Parallelism {
        dp: r.small(1, 65_536),
        tp: r.small(1, 65_536),
        pp: r.small(1, 65_536),
        sequence_parallel: r.coin(),
        pp_microbatches: r.small(0, 65_536),
        pp_interleave: r.small(1, 1024),
        gpus_per_node: r.small(1, 65_536),
        cp: r.small(1, 65_536),
        cp_style: r.pick(&CpStyle::ALL),
    };
    // A valid layout names at most `MAX_GPUS` GPUs: halve the largest degree until it does.
    while s.parallel.gpus() > vram_explorer::scenario::validate::MAX_GPUS {
        let p = &mut s.parallel;
        let largest = [&mut p.dp, &mut p.tp, &mut p.pp, &mut p.cp]
            .into_iter()
            .max_by_key(|d| **d);
        if let Some(d) = largest {
            *d = (*d / 2).max(1);
        }
    }
    s.gpu = gpu(r);
    s.implementation = Implementation {
        profile: r.pick(&Profile::ALL),
        dropout_mask: r.pick(&[DropoutMask::OneByte, DropoutMask::Float]),
        fused_cross_entropy: r.coin(),
        block_kernels: r.pick(&[BlockKernels::Fused, BlockKernels::TorchReference]),
        hf: HfFramework {
            attention: r.pick(&[
                None,
                Some(HfAttention::Eager),
                Some(HfAttention::Sdpa),
                Some(HfAttention::FlashAttention2),
            ]),
            trainer: r.pick(&HfTrainer::ALL),
            fused_loss: r.pick(&FusedLoss::ALL),
            bitsandbytes: Bitsandbytes {
                quant_type: r.pick(&[Bnb4bitType::Nf4, Bnb4bitType::Fp4]),
                compute_dtype: dtype(r),
                version: r.pick(&[BnbVersion::Legacy0_43_1, BnbVersion::Current]),
            },
        },
        litgpt: LitGpt {
            lm_head_chunk_tokens: r.small(0, 1_048_576),
        },
        torchtune: Torchtune {
            output_chunks: r.small(1, 4096),
            activation_offloading: r.coin(),
            optimizer_in_backward: r.coin(),
            compile: r.coin(),
            rope_cache: r.pick(&[RopeCache::PerLoraAttention, RopeCache::Shared]),
            legacy_loss: r.coin(),
            legacy_rms_norm: r.coin(),
        },
        sharding: r.pick(&[
            Sharding::Generic,
            Sharding::DeepSpeed,
            Sharding::Fsdp1,
            Sharding::Fsdp2,
        ]),
        deepspeed: stage3_limits(DeepSpeedZero {
            reduce_bucket_size: r.range(0.0, 1e12),
            sub_group_size: r.range(1.0, 1e12),
            overlap_comm: r.coin(),
            bf16_master_weights_and_grads: r.coin(),
            bf16_optimizer_states: r.coin(),
            ..DeepSpeedZero::default()
        }),
        fsdp: fsdp_loop(
            Fsdp {
                reshard_after_forward: r.coin(),
                reduce_dtype: r.pick(&[
                    ReduceDtype::Default,
                    ReduceDtype::Compute,
                    ReduceDtype::Fp32,
                ]),
                custom_sharded_layers: r.coin(),
                ..Fsdp::default()
            },
            r.side(0x6c6f_7373_726f_6f74),
        ),
        loss_parallel: r.coin(),
        auto_tp: r.coin(),
        megatron_local_layers: r.coin(),
        // A side stream: the main one stays as before the field existed.
        megatron_moe_dispatcher: r
            .side(0x6469_7370_6174_6368)
            .pick(&[MoeDispatcher::AllGather, MoeDispatcher::AllToAll]),
        megatron_grad_reduce_in_bf16: r.side(0x6266_3136_7265_6475).coin(),
    };
    let cuda_context_mib = r.range(0.0, 65_536.0);
    s.overheads = Overheads {
        cuda_context_mib,
        // A side stream seeded from a value already drawn: the main stream stays as before the
        // field existed, so the seeded samples are the same scenarios.
        cuda_kernels_mib: Rng::new(cuda_context_mib.to_bits() ^ 0x6b65_726e_656c)
            .range(0.0, 65_536.0),
        allocator_reserve_fraction: r.range(0.0, 1.0),
        workspace_mib: r.range(0.0, 65_536.0),
        comm_buffer_mib: r.range(0.0, 65_536.0),
        nccl_mib_per_communicator: r.range(0.0, 65_536.0),
        nccl_mib_two_rank_communicator: r.range(0.0, 65_536.0),
    };
    s.timing = timing(r);
    s.input = InputPipeline {
        kind: r.pick(&[InputKind::Tokens, InputKind::Images]),
        token_bytes: r.int(1, 64),
        image_height: r.small(1, 65_536),
        image_width: r.small(1, 65_536),
        image_channels: r.int(1, 64),
        encoding: r.pick(&[
            ImageEncoding::Tensor,
            ImageEncoding::Rgba8,
            ImageEncoding::Bc1,
            ImageEncoding::Bc7,
        ]),
        image_dtype: dtype(r),
        gpu_prefetch_batches: r.int(0, 64),
        host_staging_batches: r.small(0, 4096),
    };
    s.peft = Peft {
        method: r.pick(&PeftMethod::ALL),
        rank: r.small(1, 65_536),
        targets: LoraTargets {
            q: r.coin(),
            k: r.coin(),
            v: r.coin(),
            o: r.coin(),
            gate: r.coin(),
            up: r.coin(),
            down: r.coin(),
        },
        double_quant: r.coin(),
        paged_optimizer: r.coin(),
        lora_dropout: r.range(0.0, 0.99),
        inference_adapters: r.coin(),
    };
    s.quantization = Quantization {
        weights: r.pick(&WeightFormat::ALL),
        group_size: r.small(1, 65_536),
        experts_only: r.coin(),
    };
    s
}

/// Where the loop computes the loss and whether the root reshards, drawn from a side stream (`r`):
/// the main stream stays as before these fields existed.
fn fsdp_loop(f: Fsdp, mut r: Rng) -> Fsdp {
    Fsdp {
        loss: r.pick(&[
            LossCall::Auto,
            LossCall::InModelForward,
            LossCall::AfterModelForward,
        ]),
        root_reshard_after_forward: r.coin(),
        ..f
    }
}

/// Stage 3's fetch limits, drawn from a side stream seeded from a value already drawn: the main
/// stream stays as before these fields existed, so the seeded samples are the same scenarios.
fn stage3_limits(z: DeepSpeedZero) -> DeepSpeedZero {
    let mut r = Rng::new(z.sub_group_size.to_bits() ^ 0x007a_6572_6f33);
    DeepSpeedZero {
        stage3_prefetch_bucket_size: r.range(0.0, 1e12),
        stage3_max_live_parameters: r.range(0.0, 1e12),
        stage3_max_reuse_distance: r.range(0.0, 1e12),
        stage3_param_persistence_threshold: r.range(0.0, 1e12),
        ..z
    }
}

fn strategies(r: &mut Rng) -> Strategies {
    Strategies {
        checkpointing: r.pick(&[
            Checkpointing::None,
            Checkpointing::Selective,
            Checkpointing::Full,
            Checkpointing::EveryK,
            Checkpointing::PerOp,
        ]),
        checkpoint_every: r.small(0, 10_000),
        attention: r.pick(&[AttentionKernel::Materialized, AttentionKernel::Flash]),
        activation_compression_8bit: r.coin(),
        zero: r.pick(&[
            ZeroStage::None,
            ZeroStage::Stage1,
            ZeroStage::Stage2,
            ZeroStage::Stage3,
        ]),
        hybrid_shard: r.coin(),
        offload_optimizer: r.pick(&[OffloadTarget::None, OffloadTarget::Cpu, OffloadTarget::Nvme]),
        offload_params: r.pick(&[OffloadTarget::None, OffloadTarget::Cpu, OffloadTarget::Nvme]),
        prune_fraction: r.range(0.0, 0.99),
        prune_kind: r.pick(&[PruneKind::Structured, PruneKind::Unstructured]),
        weight_sharing_fraction: r.field("strategies.weight_sharing_fraction"),
        one_bit_comm: r.coin(),
        one_bit_warmup_fraction: r.range(0.0, 1.0),
        second_tier: r.pick(&[SecondTier::None, SecondTier::Host, SecondTier::Cxl]),
        second_tier_gib: r.range(0.0, 1e6),
    }
}

fn timing(r: &mut Rng) -> Timing {
    Timing {
        compute_efficiency: r.field("timing.compute_efficiency"),
        memory_efficiency: r.field("timing.memory_efficiency"),
        link_efficiency: r.field("timing.link_efficiency"),
        comm_overlap: r.range(0.0, 1.0),
        offload_overlap: r.range(0.0, 1.0),
        pinned_host_memory: r.coin(),
        pageable_fraction: r.field("timing.pageable_fraction"),
        internode_gb_s: r.field("timing.internode_gb_s"),
        link_latency_us: r.range(0.0, 1e4),
        collective: r.pick(&[
            CollectiveAlgorithm::Auto,
            CollectiveAlgorithm::Ring,
            CollectiveAlgorithm::Tree,
        ]),
        nvme_gb_s: r.field("timing.nvme_gb_s"),
        // A side stream: the main one stays as before the field existed.
        host_optimizer_gb_s: r
            .side(0x0068_6f73_746f_7074)
            .field("timing.host_optimizer_gb_s"),
        token_budget: r.range(0.0, 1e18),
        price_per_gpu_hour: r.range(0.0, 1e6),
        parts: PartsTiming {
            gemm_efficiency: r.field("timing.parts.gemm_efficiency"),
            gemm_efficiency_hopper: r.field("timing.parts.gemm_efficiency_hopper"),
            flash_forward_efficiency: r.field("timing.parts.flash_forward_efficiency"),
            flash_backward_efficiency: r.field("timing.parts.flash_backward_efficiency"),
            tp_overlap: r.range(0.0, 1.0),
            pp_overlap: r.range(0.0, 1.0),
            elementwise: r.pick(&ElementwiseKernels::ALL),
            kernel_floor_us: r.field("timing.parts.kernel_floor_us"),
            eager_op_us: r.field("timing.parts.eager_op_us"),
            generate_step_us: r.field("timing.parts.generate_step_us"),
            cuda_graphs: r.coin(),
            int8_weight_only_read: r.field("timing.parts.int8_weight_only_read"),
            int4_weight_only_read: r.field("timing.parts.int4_weight_only_read"),
        },
    }
}
