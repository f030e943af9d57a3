//! The block model (issue 14): layer patterns resolve into layer kinds whose parameters, KV cache and
//! recurrent state follow each architecture's formula. Parameter totals are those of
//! tests/data/hf/params.json (`sum(p.numel())` of the Transformers class, transformers 5.25.0).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::float_cmp)]

use vram_explorer::estimator::model::{self, CacheShape};
use vram_explorer::estimator::{Component, Diagnostics, Phase, estimate};
use vram_explorer::scenario::*;

fn resolved(spec: &ModelSpec) -> model::ResolvedModel {
    model::resolve(spec, &mut Diagnostics::default())
}

fn run(count: u32, mixer: Mixer, mlp: Mlp) -> LayerRun {
    LayerRun {
        count,
        mixer,
        mlp,
        norms: 0,
    }
}

fn one_part(layers: Vec<LayerRun>) -> Vec<PatternPart> {
    vec![PatternPart { repeat: 1, layers }]
}

/// DeepSeek-V3 (config.json of deepseek-ai/DeepSeek-V3, tests/data/hf/deepseek-v3.json): 3 dense
/// layers then 58 MoE layers, all multi-head latent attention.
fn deepseek_v3() -> ModelSpec {
    let mut m = ModelSpec::default();
    let t = &mut m.transformer;
    t.hidden = 7168;
    t.heads = 128;
    t.kv_heads = 128;
    t.ffn = 18432;
    t.vocab = 129_280;
    m.moe = MoeSpec {
        experts: 256,
        top_k: 8,
        shared_experts: 1,
        expert_ffn: 2048,
        ..MoeSpec::default()
    };
    let mla = Mixer::Mla(Mla::default());
    m.pattern = one_part(vec![
        run(3, mla.clone(), Mlp::default()),
        run(58, mla, Mlp::Moe),
    ]);
    m
}

/// DeepSeek-V3 inference (BF16, Hugging Face) at tensor parallelism `tp`.
fn deepseek_v3_inference(tp: u32) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Inference,
        model: deepseek_v3(),
        ..Scenario::default()
    };
    s.parallel.tp = tp;
    s
}

/// Tensor parallelism splits DeepSeek-V3's matrices, not what every rank holds whole (vLLM 0.34
/// `deepseek_v2.py`: `q_a_proj` and `kv_a_proj_with_mqa` are `ReplicatedLinear`, so are the MoE
/// `gate` and the RMSNorms; Megatron-Core's down projections are `duplicated`): per layer the
/// down projections 7,168 × (1,536 + 576), their latent norms 1,536 + 512 and the two layer norms
/// 2 × 7,168; per MoE layer the router 7,168 × 256. At TP 8 a rank's BF16 weights are an eighth
/// of one GPU's plus 7/8 of those, 1.68 GiB more than an even split.
#[test]
fn tensor_parallel_ranks_hold_the_replicated_parameters_whole() {
    let weights = |tp: u32| {
        estimate(&deepseek_v3_inference(tp))
            .memory
            .peak
            .get(vram_explorer::estimator::Component::Weights)
            .get()
    };
    let per_layer = 7168.0 * (1536.0 + 576.0) + 1536.0 + 512.0 + 2.0 * 7168.0;
    let replicated = 61.0 * per_layer + 58.0 * 7168.0 * 256.0;
    let extra = weights(8) - weights(1) / 8.0;
    let expected = 2.0 * replicated * 7.0 / 8.0;
    assert!(
        (extra / expected - 1.0).abs() < 1e-9,
        "{extra} vs {expected}"
    );
    assert!((expected / f64::from(1u32 << 30) - 1.68).abs() < 0.01);
    // Every parameter is still counted once over the ranks.
    let m = resolved(&deepseek_v3());
    assert_eq!(m.params.total, 671_026_404_352.0);
}

/// A rank multiplies its replicated matrices whole: DeepSeek-V3's prefill at TP 8 runs an eighth of
/// the model's FLOPs plus 7/8 of the down projections' and routers' 2 FLOPs per weight per token,
/// and a decode step reads those weights whole.
#[test]
fn tensor_parallel_ranks_run_their_replicated_matrices_whole() {
    let perf = |tp: u32| {
        let mut s = deepseek_v3_inference(tp);
        (s.inference.dynamic_batching, s.workload.micro_batch) = (false, 2);
        s.inference.prompt_tokens = 1024;
        estimate(&s).performance
    };
    let (one, eight) = (perf(1), perf(8));
    let tokens = 2.0 * 1024.0;
    let replicated_w = 61.0 * 7168.0 * (1536.0 + 576.0) + 58.0 * 7168.0 * 256.0;
    let flops = |p: &vram_explorer::estimator::performance::Performance| p.prefill.unwrap().flops;
    let extra = flops(&eight) - flops(&one) / 8.0;
    let expected = 2.0 * tokens * replicated_w * 7.0 / 8.0;
    assert!(
        (extra / expected - 1.0).abs() < 1e-9,
        "{extra} vs {expected}"
    );
    let bytes =
        |p: &vram_explorer::estimator::performance::Performance| p.decode.unwrap().bytes.get();
    assert!(bytes(&eight) > bytes(&one) / 8.0);
}

#[test]
fn deepseek_v3_counts_exactly() {
    let m = resolved(&deepseek_v3());
    assert_eq!(m.layers, 61);
    assert_eq!(m.params.total, 671_026_404_352.0);
    assert_eq!(m.params.active, 37_552_282_624.0);
}

#[test]
fn mla_caches_the_latent_or_the_decompressed_heads() {
    let mut spec = deepseek_v3();
    let shape = |tp: f64| CacheShape {
        tp,
        layers: 61.0,
        e_kv: 1.0,
        e_state: 1.0,
    };
    // kv_lora_rank + rope = 576 per layer (DeepSeek-V2 Table 1; Transformers >= 5.24, vLLM, SGLang),
    // replicated over tensor-parallel ranks.
    let m = resolved(&spec);
    assert_eq!(m.kv_bytes_per_token(&shape(1.0)), 61.0 * 576.0);
    assert_eq!(m.kv_bytes_per_token(&shape(8.0)), 61.0 * 576.0);
    // Transformers 4.x: heads x (nope + rope) keys and heads x v values per layer, split over TP.
    for part in &mut spec.pattern {
        for r in &mut part.layers {
            if let Mixer::Mla(a) = &mut r.mixer {
                a.cache = MlaCache::Decompressed;
            }
        }
    }
    let m = resolved(&spec);
    assert_eq!(
        m.kv_bytes_per_token(&shape(1.0)),
        61.0 * 128.0 * (128.0 + 64.0 + 128.0)
    );
    assert_eq!(
        m.kv_bytes_per_token(&shape(8.0)),
        61.0 * 16.0 * (128.0 + 64.0 + 128.0)
    );
}

/// Gemma 3 27B's text stack (tests/data/hf/gemma-3-27b-it.json text_config): 62 layers, five local
/// (window 1,024) to one global, 16 KV heads of 128.
fn gemma3_27b() -> ModelSpec {
    let mut m = ModelSpec::default();
    let t = &mut m.transformer;
    t.hidden = 5376;
    t.heads = 32;
    t.kv_heads = 16;
    t.head_dim = 128;
    t.ffn = 21504;
    t.vocab = 262_208;
    t.tied_embeddings = true;
    let local = Mixer::Attention(Attention {
        window: 1024,
        qk_norm: true,
        ..Attention::default()
    });
    let global = Mixer::Attention(Attention {
        qk_norm: true,
        ..Attention::default()
    });
    let with = |count, mixer| LayerRun {
        count,
        mixer,
        mlp: Mlp::default(),
        norms: 4,
    };
    m.pattern = vec![
        PatternPart {
            repeat: 10,
            layers: vec![with(5, local.clone()), with(1, global)],
        },
        PatternPart {
            repeat: 1,
            layers: vec![with(2, local)],
        },
    ];
    m
}

#[test]
fn sliding_window_layers_hold_at_most_the_window() {
    let m = resolved(&gemma3_27b());
    assert_eq!(m.layers, 62);
    let shape = CacheShape {
        tp: 1.0,
        layers: 62.0,
        e_kv: 2.0,
        e_state: 2.0,
    };
    let per_layer_token = 2.0 * 16.0 * 128.0 * 2.0;
    let ctx = 131_072.0;
    let expected = 52.0 * per_layer_token * 1024.0 + 10.0 * per_layer_token * ctx;
    assert_eq!(m.cache_bytes(&shape, 1.0, ctx), expected);
    // Shorter than the window: every layer holds the whole sequence.
    assert_eq!(
        m.cache_bytes(&shape, 2.0, 512.0),
        2.0 * 62.0 * per_layer_token * 512.0
    );
}

#[test]
fn mamba2_holds_a_fixed_state_per_sequence() {
    let mut m = ModelSpec::default();
    m.transformer.hidden = 4096;
    let mamba = Mamba::default(); // d_state 128, d_conv 4, expand 2, 8 groups, head_dim 64
    m.pattern = one_part(vec![run(48, Mixer::Mamba(mamba), Mlp::None)]);
    let r = resolved(&m);
    let inner = 8192.0;
    let conv = inner + 2.0 * 8.0 * 128.0;
    let per_layer = conv * 4.0 + inner * 128.0;
    let shape = CacheShape {
        tp: 1.0,
        layers: 48.0,
        e_kv: 2.0,
        e_state: 4.0,
    };
    for len in [1.0, 4096.0, 1e6] {
        assert_eq!(
            r.cache_bytes(&shape, 3.0, len),
            3.0 * 48.0 * per_layer * 4.0
        );
    }
    assert_eq!(r.kv_bytes_per_token(&shape), 0.0);
}

#[test]
fn a_uniform_model_written_as_a_pattern_estimates_the_same() {
    for preset in [
        "llama3-8b-full-finetune-h100",
        "mixtral-8x7b-inference-2xh100",
        "llama2-70b-inference-gqa-2xa100",
    ] {
        let flat = vram_explorer::presets::bundled_scenario(preset).expect(preset);
        let mut patterned = flat.clone();
        let t = &flat.model.transformer;
        let mlp = if flat.model.moe.experts > 0 {
            Mlp::Moe
        } else {
            Mlp::default()
        };
        patterned.model.pattern = one_part(vec![run(t.layers, Mixer::default(), mlp)]);
        let (a, b) = (estimate(&flat), estimate(&patterned));
        assert_eq!(a.memory.params.total, b.memory.params.total, "{preset}");
        assert_eq!(a.memory.params.active, b.memory.params.active, "{preset}");
        let rel =
            (a.memory.gpu_total.get() - b.memory.gpu_total.get()).abs() / a.memory.gpu_total.get();
        assert!(
            rel < 1e-12,
            "{preset}: {} vs {}",
            a.memory.gpu_total.get(),
            b.memory.gpu_total.get()
        );
    }
}

#[test]
fn a_window_never_adds_memory_and_a_wide_one_changes_nothing() {
    let mut spec = ModelSpec::default();
    let global = estimate_inference(&spec);
    for window in [1u32, 512, 4096, 1 << 20] {
        spec.pattern = one_part(vec![run(
            32,
            Mixer::Attention(Attention {
                window,
                ..Attention::default()
            }),
            Mlp::default(),
        )]);
        let w = estimate_inference(&spec);
        assert!(w <= global, "window {window}: {w} > {global}");
        if window >= 1 << 20 {
            assert_eq!(w, global);
        }
    }
}

fn estimate_inference(spec: &ModelSpec) -> f64 {
    let mut s = Scenario {
        mode: Mode::Inference,
        model: spec.clone(),
        ..Scenario::default()
    };
    s.inference.prompt_tokens = 8192;
    s.inference.generated_tokens = 256;
    estimate(&s).memory.gpu_total.get()
}

#[test]
fn gemma3_27b_text_stack_counts_exactly() {
    // Gemma3ForConditionalGeneration 27,432,406,640 minus its vision tower and projector 423,060,336
    // (params.json `parts.vision`).
    let m = resolved(&gemma3_27b());
    assert_eq!(m.params.total, 27_432_406_640.0 - 423_060_336.0);
}

#[test]
fn the_documented_pattern_parses_and_round_trips() {
    // The example of docs/format.md "Layer patterns", read from the document itself.
    let doc = include_str!("../docs/format.md");
    let start = doc.find("```ron\nmodel: (\n").expect("the pattern example") + "```ron\n".len();
    let end = start + doc[start..].find("```").expect("end of the example");
    let text = format!("({})", &doc[start..end]);
    let s = vram_explorer::presets::from_ron_str(&text).expect("parses");
    let m = resolved(&s.model);
    assert_eq!(m.layers, 62);
    assert_eq!(m.params.total, resolved(&gemma3_27b()).params.total);
    let again = vram_explorer::presets::from_ron_str(&vram_explorer::presets::to_ron_string(&s))
        .expect("round trip");
    assert_eq!(again.model.pattern, s.model.pattern);
}

#[test]
fn gpt_oss_experts_only_mxfp4_keeps_attention_dense() {
    // tests/data/hf/gpt-oss-120b.json: MXFP4 on the experts, `self_attn` and the router unconverted.
    let text = include_str!("data/hf/gpt-oss-120b.json");
    let imported =
        vram_explorer::import::from_hf_config(text, &ModelSpec::default()).expect("imports");
    let mut s = Scenario {
        mode: Mode::Inference,
        ..Scenario::default()
    };
    imported.apply(&mut s);
    assert_eq!(s.quantization.weights, WeightFormat::Mxfp4);
    assert!(s.quantization.experts_only);
    let experts_only = estimate(&s).memory;
    let mut all = s.clone();
    all.quantization.experts_only = false;
    let everything = estimate(&all).memory;
    // The dense matrices (attention, routers) are ~0.9 B parameters: BF16 instead of 4.25 bits.
    let w = |m: &vram_explorer::estimator::MemoryEstimate| {
        m.peak
            .get(vram_explorer::estimator::Component::Weights)
            .get()
    };
    let diff = w(&experts_only) - w(&everything);
    assert!(diff > 1.0e9 && diff < 3.0e9, "{diff}");
}

#[test]
fn todays_model_presets_count_their_published_parameters() {
    // Each preset's model was imported from a fixture of tests/data/hf (params.json: the
    // Transformers 5.25.0 class on the meta device); Qwen3-235B-A22B from the count keras-team/keras-hub
    // records for `qwen3_moe_235b_a22b_en` (qwen3_moe_presets.py), which equals Hugging Face's.
    let cases = [
        ("deepseek-v3-inference-8xh200-fp8", 671_026_404_352.0),
        ("qwen3-235b-a22b-inference-8xh100", 235_093_634_560.0),
        ("glm-4.5-air-inference-4xh100", 106_852_245_504.0),
        ("gpt-oss-120b-inference-h100-mxfp4", 116_829_156_672.0),
        ("llama4-scout-int4-h100", 108_641_793_536.0),
        ("gemma3-27b-128k-h200", 27_432_406_640.0),
        ("nemotron-h-8b-128k-h100", 8_100_852_736.0),
        ("qwen2.5-vl-7b-images-l40s", 8_292_166_656.0),
    ];
    for (id, total) in cases {
        let s = vram_explorer::presets::bundled_scenario(id).expect(id);
        let e = estimate(&s);
        assert_eq!(e.memory.params.total, total, "{id}");
        assert!(e.memory.fits, "{id} should fit as its notes say");
    }
}

#[test]
fn an_out_of_range_pattern_entry_is_an_error_naming_it() {
    // A repeat of 0 and a convolution of width 0 are outside `model.pattern.*` (docs/format.md):
    // loading refuses the file and names both (the estimator alone would clamp and say so).
    let err = vram_explorer::presets::from_ron_str(
        "(model: (pattern: [(repeat: 0, layers: [(count: 3, mixer: Mamba((d_conv: 0)))])]))",
    )
    .expect_err("out of range")
    .to_string();
    assert!(err.contains("model.pattern.repeat"), "{err}");
    assert!(err.contains("model.pattern.layers.small"), "{err}");
}

/// Llama 4 Scout's chunked local attention (`attention_chunk_size` 8192 on the three RoPE layers of
/// every four, `no_rope_layers`; modeling_llama4.py): a chunked layer's cache holds at most the
/// chunk at decode, and the layer is labelled a chunk, not a window.
#[test]
fn llama4_chunked_layers_are_labelled_chunks_and_cache_at_most_the_chunk() {
    let text = include_str!("data/hf/llama-4-scout-17b-16e-instruct-text.json");
    let imported = vram_explorer::import::from_hf_config(text, &ModelSpec::default()).unwrap();
    let m = resolved(&imported.model);
    let mut chunked = 0;
    for k in m.blocks.kinds() {
        let label = k.mixer_label();
        assert!(!label.contains("window"), "{label}");
        if let model::blocks::MixerShape::Attention { window, .. } = k.mixer
            && window > 0.0
        {
            assert_eq!(window, 8192.0);
            assert!(label.contains("chunk 8192"), "{label}");
            assert_eq!(k.cached_tokens(100_000.0), 8192.0);
            assert_eq!(k.cached_tokens(1_000.0), 1_000.0);
            chunked += k.count;
        }
    }
    assert_eq!(chunked, 36);
}

/// Nemotron-H and Jamba attend without positional encoding (transformers 5.24
/// `modeling_nemotron_h.py` / `modeling_jamba.py` build no `rotary_emb`): imported with no rotary
/// table (a learned table of 0 positions, no parameters), so no cos/sin is estimated.
#[test]
fn nemotron_h_and_jamba_import_without_rope() {
    for text in [
        include_str!("data/hf/nemotron-h-8b-base-8k.json"),
        include_str!("data/hf/ai21-jamba-1.5-mini.json"),
    ] {
        let imported = vram_explorer::import::from_hf_config(text, &ModelSpec::default()).unwrap();
        let t = &imported.model.transformer;
        assert_eq!(t.positions, PositionKind::Learned);
        assert_eq!(t.max_positions, 0);
        let m = resolved(&imported.model);
        assert_eq!(
            m.params.embeddings,
            f64::from(t.vocab) * f64::from(t.hidden)
        );
    }
}

/// `Blocks::uniform` (the uniform transformer's blocks, built as one value for speed) is what pushing
/// the kind to empty blocks gives (kinds and layer order), for no layers, one and many.
#[test]
fn uniform_blocks_are_one_added_kind() {
    use model::blocks::{Blocks, LayerKind, MixerShape, MlpShape};
    let kind = LayerKind {
        count: 7,
        mixer: MixerShape::Attention {
            heads: 64.0,
            kv_heads: 8.0,
            head_dim: 128.0,
            window: 0.0,
            qk_norm: false,
            sinks: false,
            output_gate: false,
            qkv_bias: false,
            out_bias: false,
            chunked: false,
        },
        mlp: MlpShape::Dense {
            ffn: 28_672.0,
            kind: FfnKind::SwiGlu,
        },
        norms: 2.0,
        params: 1e9,
        matmul_w: 9e8,
        tensors: 9.0,
        ..LayerKind::default()
    };
    for count in [0, 1, 80] {
        let mut added = Blocks::default();
        added.push(kind, count);
        assert_eq!(Blocks::uniform(kind, count), added, "{count} layers");
        assert_eq!(Blocks::uniform(kind, count).layers(), count);
    }
}

/// The block matrices a GPU stores (what a quantized base or an FSDP unit of a mixture holds) count
/// the routed experts' weights on its expert-parallel rank only, not their biases: subtracting
/// the other ranks' biases from the matrix weights made a tiny-width mixture with wide biased
/// experts hold a negative unit (−3·10¹⁵ B of FSDP transients in one random scenario of 10⁶).
#[test]
fn stored_block_matrices_leave_out_expert_biases() {
    use vram_explorer::estimator::memory::peft::layer_matrix_elems_stored;
    let mut spec = deepseek_v3();
    spec.transformer.hidden = 8;
    spec.transformer.heads = 2;
    spec.transformer.kv_heads = 2;
    spec.moe.expert_ffn = 1 << 20;
    let attention = Mixer::Attention(Attention::default());
    spec.pattern = one_part(vec![
        run(1, attention.clone(), Mlp::default()),
        run(3, attention, Mlp::Moe),
    ]);
    let stored = 1.0 / 8.0;
    let without = layer_matrix_elems_stored(&resolved(&spec), stored);
    spec.moe.expert_bias = true;
    let with = layer_matrix_elems_stored(&resolved(&spec), stored);
    assert!(without > 0.0);
    assert_eq!(with, without);
}

/// The torch reference block kernels' rules were measured on one device and know no tensor
/// parallelism: under TP the block kinds take the fused kernels' rules (which TP divides) and a
/// warning says so. Before, a Nemotron-H 8B training step at TP 8 kept 34.4 GiB of activations
/// per GPU with them against 35.3 GiB at TP 1; the fused rules give 6.2 GiB.
#[test]
fn torch_reference_blocks_fall_back_under_tensor_parallelism() {
    let mut s =
        vram_explorer::presets::bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    s.mode = Mode::Training;
    s.parallel.tp = 8;
    let acts = |s: &Scenario| {
        let e = estimate(s);
        let warned = e
            .diagnostics
            .iter()
            .any(|d| d == vram_explorer::estimator::Diagnostic::TorchBlocksWithoutTp);
        (
            e.memory
                .phases
                .get(Phase::Forward)
                .map(|b| b.get(Component::Activations).get()),
            warned,
        )
    };
    let fused = acts(&s);
    s.implementation.block_kernels = BlockKernels::TorchReference;
    let torch = acts(&s);
    assert_eq!(torch.0, fused.0);
    assert!(torch.1 && !fused.1);
    // On one device the measured rules apply, and nothing is said.
    s.parallel.tp = 1;
    let one = acts(&s);
    s.implementation.block_kernels = BlockKernels::Fused;
    assert_ne!(one.0, acts(&s).0);
    assert!(!one.1);
}

/// A serving engine runs its own kernels: `block_kernels` changes nothing there, so nothing is
/// said about it under TP (the warning fired for vLLM at TP 2).
#[test]
fn torch_reference_blocks_say_nothing_under_a_serving_engine() {
    let mut s =
        vram_explorer::presets::bundled_scenario("nemotron-h-8b-128k-h100").expect("preset");
    s.parallel.tp = 2;
    s.implementation.block_kernels = BlockKernels::TorchReference;
    let warned = |s: &Scenario| {
        estimate(s)
            .diagnostics
            .iter()
            .any(|d| d == vram_explorer::estimator::Diagnostic::TorchBlocksWithoutTp)
    };
    s.inference.engine = Some(ServingEngine::Vllm(Vllm::default()));
    assert!(!warned(&s));
    s.inference.engine = Some(ServingEngine::HfGenerate);
    assert!(warned(&s));
}
