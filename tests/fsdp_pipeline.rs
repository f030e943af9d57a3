//! FSDP2 under a pipeline (docs/frameworks/fsdp.md "Under a pipeline"): `torch.distributed.pipelining`
//! runs every micro-batch's backward without gradient sync, so a stage holds its unsharded
//! gradients (upcast to FP32 under `reduce_dtype=float32`) from the first backward until the
//! reduce-scatters after the last micro-batch. Held to a CPU measurement with torchtitan's model
//! (tests/data/measured/fsdp-pipeline-cpu.json, scripts/measure/fsdp_pipeline.py).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;

/// Llama-3.1-8B's shape on TP 2 × PP 4 × FSDP 4 (8 layers a stage), BF16 compute over FP32
/// sharded parameters, as torchtitan runs it.
fn scenario(pp: u32, reduce: ReduceDtype) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 8, 14336, 128_256);
    t.tied_embeddings = false;
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.positions = PositionKind::Rotary;
    t.bias = false;
    s.workload.seq_len = 4096;
    s.workload.micro_batch = 1;
    s.parallel.tp = 2;
    s.parallel.dp = 4;
    s.parallel.pp = pp;
    s.parallel.sequence_parallel = true;
    if pp > 1 {
        s.parallel.pp_microbatches = pp;
        s.workload.grad_accum_steps = pp;
    }
    s.strategies.zero = ZeroStage::Stage3;
    s.strategies.checkpointing = Checkpointing::Full;
    s.strategies.attention = AttentionKernel::Flash;
    s.implementation.sharding = Sharding::Fsdp2;
    s.implementation.fsdp.reshard_after_forward = pp == 1;
    s.implementation.fsdp.reduce_dtype = reduce;
    // FSDP's MixedPrecisionPolicy(param_dtype=bfloat16): FP32 shards, BF16 compute, no autocast.
    s.precision.mode = PrecisionMode::Amp;
    s.precision.compute = Dtype::Bf16;
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    s
}

/// Gradient bytes of the limiting (last) stage in `phase`.
fn gradients(s: &Scenario, phase: Phase) -> f64 {
    let m = estimate(s).memory;
    assert_eq!(m.peak_stage, 3, "the last stage (the logits) limits");
    phase_gradients(&m, phase)
}

/// Gradient bytes of the limiting stage in `phase`.
fn phase_gradients(m: &vram_explorer::estimator::MemoryEstimate, phase: Phase) -> f64 {
    m.phases.get(phase).unwrap().get(Component::Gradients).get()
}

/// Parameter elements per GPU of a stage's 8 blocks and its end (embedding or head), over TP 2.
fn stage_elements(s: &Scenario, first: bool) -> f64 {
    let p = estimate(s).memory.params;
    let end = if first { p.embeddings } else { p.head };
    8.0 * rank_layer(p.per_layer) + end / 2.0
}

/// One block's parameters on a TP 2 rank: its matrices split, its two RMSNorm weights (4,096 each)
/// whole (torchtitan's `SequenceParallel` norms are replicated DTensors).
fn rank_layer(per_layer: f64) -> f64 {
    let norms = 2.0 * 4096.0;
    (per_layer - norms) / 2.0 + norms
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn the_stage_keeps_its_unsharded_gradients_in_fp32_through_backward() {
    let s = scenario(4, ReduceDtype::Fp32);
    let acc = stage_elements(&s, false) * 4.0;
    for phase in [Phase::Forward, Phase::LossBackward, Phase::Backward] {
        let g = gradients(&s, phase);
        assert!(close(g, acc), "{phase:?}: {g} vs {acc}");
    }
    // The optimizer step sees the reduce-scattered shards: 1/4 of the stage, FP32.
    let g = gradients(&s, Phase::OptimizerStep);
    assert!(close(g, acc / 4.0), "optimizer step: {g} vs {}", acc / 4.0);
    // The first stage peaks in backward with its blocks' and embedding's gradients.
    let m = estimate(&s).memory;
    let first = m.stage_class(0).unwrap();
    assert_eq!(first.peak_phase, Some(Phase::Backward));
    let g = first.peak.get(Component::Gradients).get();
    let acc = stage_elements(&s, true) * 4.0;
    assert!(close(g, acc), "first stage: {g} vs {acc}");
}

/// The accumulation type is the reduce-scatter's: a BF16 `reduce_dtype` keeps the gradients in
/// the compute type; none (torch 2.15) accumulates in the sharded parameters' FP32
/// (`FSDPParam.unsharded_grad_dtype`).
#[test]
fn the_gradients_accumulate_in_the_reduce_type() {
    let s = scenario(4, ReduceDtype::Compute);
    let acc = stage_elements(&s, false) * 2.0;
    let g = gradients(&s, Phase::Backward);
    assert!(close(g, acc), "{g} vs {acc}");
    let s = scenario(4, ReduceDtype::Default);
    let g = gradients(&s, Phase::Backward);
    assert!(close(g, 2.0 * acc), "{g} vs {}", 2.0 * acc);
}

#[test]
fn on_one_stage_fsdp2_reduce_scatters_every_backward() {
    let mut s = scenario(4, ReduceDtype::Fp32);
    s.parallel.pp = 1;
    s.implementation.fsdp.reshard_after_forward = true;
    s.parallel.pp_microbatches = 1;
    s.workload.grad_accum_steps = 1;
    let m = estimate(&s).memory;
    let g = phase_gradients(&m, Phase::Backward);
    let p = m.params;
    let sharded = (32.0 * rank_layer(p.per_layer) + (p.embeddings + p.head) / 2.0) / 4.0 * 4.0;
    // Under full checkpointing the peak is the second-to-last layer's backward (the last one
    // prefetches nothing): the FP32 shards (1 B per rank element at DP 4) of the 30 layers
    // reduced before it, the head's gradient still unsharded in the root unit (reduced at the end
    // of backward) in the BF16 `param_dtype` instead of its shard, and the layer's fresh BF16
    // down-projection gradient; not yet the embedding's nor the last two layers'.
    let layer = rank_layer(p.per_layer);
    let expected =
        sharded - 2.0 * layer - p.embeddings / 2.0 + p.head / 2.0 + 4096.0 * 14336.0 / 2.0 * 2.0;
    assert!((g / expected - 1.0).abs() < 5e-3, "{g} vs {expected}");
}

#[test]
fn the_explanation_names_the_unsharded_gradients() {
    let s = scenario(4, ReduceDtype::Fp32);
    let e = estimate(&s);
    let x = vram_explorer::estimator::explain::explain(&s, &e, Component::Gradients);
    assert_eq!(x.terms.len(), 1, "{:?}", x.terms);
    assert!(
        x.terms[0].0.contains("unsharded gradients"),
        "{}",
        x.terms[0].0
    );
    assert!(close(
        x.terms[0].1.get(),
        e.memory.peak.get(Component::Gradients).get()
    ));
}

const MEASURED: &str = include_str!("data/measured/fsdp-pipeline-cpu.json");

/// The measured run as a scenario: torchtitan's llama3 `Transformer` at dim 256, 4 layers, 4 / 2
/// heads, FFN 768, untied vocabulary 2048, PP 2 × FSDP 2, 2 micro-batches of 2 × 64 tokens, BF16
/// compute over FP32 shards, FP32 reduce-scatter, no reshard after forward.
fn measured_scenario() -> Scenario {
    let mut s = scenario(2, ReduceDtype::Fp32);
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (4, 256, 4, 2, 768, 2048);
    s.workload.seq_len = 64;
    s.workload.micro_batch = 2;
    s.parallel.tp = 1;
    s.parallel.dp = 2;
    s.parallel.sequence_parallel = false;
    s.strategies.checkpointing = Checkpointing::None;
    s
}

#[test]
fn the_unsharded_gradients_match_the_cpu_measurement() {
    let doc: Value = serde_json::from_str(MEASURED).unwrap();
    let recs = doc["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2);
    let s = measured_scenario();
    let e = estimate(&s).memory;
    let p = e.params;
    for r in recs {
        let stage = r["stage"].as_u64().unwrap();
        let first = stage == 0;
        // The stage's parameters as torchtitan counts them: 2 blocks and the embedding or the head
        // (with the final norm, which the estimator counts with the head).
        let elems = 2.0 * p.per_layer + if first { p.embeddings } else { p.head };
        assert_eq!(
            elems,
            r["stage_parameters"].as_f64().unwrap(),
            "stage {stage}"
        );
        // Live after the last micro-batch's backward, created by the backwards: the accumulated
        // gradients, and on a later stage the gradient of its input waiting to be sent to the one
        // before (2 × 64 × 256 BF16 = 64 KiB, the stage's `bwd_cache`).
        let at = |mark: &str, k: &str| r["live_at"][mark]["detail"][k].as_f64().unwrap_or(0.0);
        let input_grad = if first { 0.0 } else { 2.0 * 64.0 * 256.0 * 2.0 };
        let measured = at("before_reduce", "created_in_backward") - input_grad;
        let class = e.stage_class(u32::try_from(stage).unwrap()).unwrap();
        // Stage 0 peaks in backward, stage 1 at its loss: both hold the accumulated gradients.
        assert_ne!(
            class.peak_phase,
            Some(Phase::OptimizerStep),
            "stage {stage}"
        );
        let est = class.peak.get(Component::Gradients).get();
        let err = est / measured - 1.0;
        println!(
            "stage {stage}: accumulated gradients {est:.0} B vs {measured:.0} B ({:+.2}%)",
            err * 100.0
        );
        assert!(close(est, measured), "stage {stage}: {est} vs {measured}");
        // The reduce-scatters leave the FP32 shards: 1/DP of the stage.
        let shards = at("after_reduce", "created_in_reduce");
        assert!(close(elems * 4.0 / 2.0, shards), "stage {stage}: {shards}");
    }
    // The limiting stage's optimizer step holds the shards, as measured after the reduce.
    let g = phase_gradients(&e, Phase::OptimizerStep);
    let limiting = &recs[e.peak_stage as usize];
    assert!(close(
        g,
        limiting["live_at"]["after_reduce"]["detail"]["created_in_reduce"]
            .as_f64()
            .unwrap()
    ));
}

/// The step time: under a pipeline FSDP2 all-gathers and reduce-scatters once per step (an
/// all-reduce's volume, not ZeRO-3's 1.5 per micro-batch), and the reduce-scatter half, deferred to after the last
/// micro-batch, stays exposed even when every collective may overlap.
#[test]
fn the_deferred_reduce_scatter_is_exposed_in_the_step_time() {
    let mut s = scenario(4, ReduceDtype::Fp32);
    s.timing.comm_overlap = 1.0;
    let c = estimate(&s).performance.communication;
    assert!((c.zero_factor - 1.0).abs() < 1e-12, "{}", c.zero_factor);
    assert!(
        c.dp_exposed_s >= 0.5 * c.dp_time_s,
        "{} of {}",
        c.dp_exposed_s,
        c.dp_time_s
    );
    s.parallel.pp = 1;
    s.implementation.fsdp.reshard_after_forward = true;
    let c = estimate(&s).performance.communication;
    // Without the pipeline FSDP2 gathers twice and reduce-scatters in each of the 4 micro-batches
    // (`DpCollectives`): 1.5 all-reduces' volume per micro-batch.
    let micro = f64::from(s.workload.grad_accum_steps);
    assert!(
        (c.zero_factor - 1.5 * micro).abs() < 1e-12,
        "{}",
        c.zero_factor
    );
    assert!(
        c.dp_exposed_s < 0.5 * c.dp_time_s,
        "{} of {}",
        c.dp_exposed_s,
        c.dp_time_s
    );
}

/// Under LoRA FSDP2 reduce-scatters only the parameters that have a gradient
/// (`_fsdp_param_group.py` `post_backward`: `fsdp_params_with_grad`): a layer's backward holds its
/// adapters' gradients, not a whole block's, and under a pipeline the stage accumulates only the
/// adapters'. (Llama-3.1-8B on TP 2 × FSDP 4: a block is 109 M elements per rank, its q and v
/// adapters at r = 8 86 k.)
#[test]
fn fsdp2_lora_reduces_only_the_adapters_gradients() {
    let step = |lora: bool, pp: u32, reduce: ReduceDtype| {
        let mut s = scenario(pp, reduce);
        if lora {
            s.peft.method = PeftMethod::Lora;
            s.peft.rank = 8;
        }
        estimate(&s).memory
    };
    let t = |m: &vram_explorer::estimator::MemoryEstimate| {
        m.phases
            .get(Phase::Backward)
            .unwrap()
            .get(Component::Transient)
            .get()
    };
    // A later layer's backward holds the unit reduced before it: FSDP2 keeps its reduce-scatter
    // input until the next post-backward, in the reduce type (FP32 4 B, or the BF16 compute
    // type's 2 B). Under full checkpointing that outweighs the layer it frees, so the reduce type
    // moves the backward by 2 B per element with a gradient: a whole block's without LoRA, the
    // adapters' alone with it (q 4096 → 4096 and v 4096 → 1024 at r = 8, A and B ÷ TP 2).
    let adapters = 8.0 * ((4096.0 + 4096.0) + (4096.0 + 1024.0)) / 2.0;
    let block = rank_layer(218_112_000.0);
    let by_reduce =
        |lora: bool| t(&step(lora, 1, ReduceDtype::Fp32)) - t(&step(lora, 1, ReduceDtype::Compute));
    let full = by_reduce(false);
    assert!(
        (full / (2.0 * block) - 1.0).abs() < 1e-3,
        "{full} vs {}",
        2.0 * block
    );
    let lora = by_reduce(true);
    assert!(
        (0.0..=2.0 * adapters * 1.001).contains(&lora),
        "{lora} vs at most {}",
        2.0 * adapters
    );
    let step = |lora: bool, pp: u32| {
        let mut s = scenario(pp, ReduceDtype::Fp32);
        s.precision.mode = PrecisionMode::Uniform;
        s.strategies.checkpointing = Checkpointing::None;
        if lora {
            s.peft.method = PeftMethod::Lora;
            s.peft.rank = 8;
        }
        estimate(&s).memory
    };
    // Four stages of 8 layers: the accumulated unsharded gradients are the adapters' (FP32).
    let staged = phase_gradients(&step(true, 4), Phase::Forward);
    assert!(close(staged, 8.0 * adapters * 4.0), "{staged}");
    // The explanation's lead counts the adapters, as the bytes do.
    let mut s = scenario(4, ReduceDtype::Fp32);
    s.precision.mode = PrecisionMode::Uniform;
    s.peft.method = PeftMethod::Lora;
    s.peft.rank = 8;
    let e = estimate(&s);
    let x = vram_explorer::estimator::explain::explain(&s, &e, Component::Gradients);
    let lead = format!("{:.4e} adapter parameters", 8.0 * adapters);
    assert!(x.filled.contains(&lead), "{} vs {lead}", x.filled);
    assert!(x.formula.contains("LoRA adapters"), "{}", x.formula);
}
