//! FSDP2 under a pipeline (docs/frameworks/fsdp.md "Under a pipeline"): `torch.distributed.pipelining`
//! runs every micro-batch's backward without gradient sync, so a stage holds its unsharded
//! gradients (upcast to FP32 under `reduce_dtype=float32`) from the first backward until the
//! reduce-scatters after the last micro-batch.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

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
    let p = &mut s.precision;
    p.mode = PrecisionMode::Custom;
    (p.compute, p.weights, p.activations) = (Dtype::Bf16, Dtype::Bf16, Dtype::Bf16);
    (p.gradients, p.optimizer_states) = (Dtype::Fp32, Dtype::Fp32);
    p.master_weights = Some(Dtype::Fp32);
    s.gpu = GpuChoice::Catalog(GpuId::H100Sxm);
    s
}

/// Gradient bytes of the limiting (last) stage in `phase`.
fn gradients(s: &Scenario, phase: Phase) -> f64 {
    let m = estimate(s).memory;
    assert_eq!(m.peak_stage, 3, "the last stage (the logits) limits");
    m.phases.get(phase).unwrap().get(Component::Gradients).get()
}

/// Parameter elements per GPU of a stage's 8 blocks and its end (embedding or head), over TP 2.
fn stage_elements(s: &Scenario, first: bool) -> f64 {
    let p = estimate(s).memory.params;
    let end = if first { p.embeddings } else { p.head };
    (8.0 * p.per_layer + end) / 2.0
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

#[test]
fn without_an_fp32_reduce_the_gradients_accumulate_in_the_parameters_type() {
    let s = scenario(4, ReduceDtype::Default);
    let acc = stage_elements(&s, false) * 2.0;
    let g = gradients(&s, Phase::Backward);
    assert!(close(g, acc), "{g} vs {acc}");
}

#[test]
fn on_one_stage_fsdp2_reduce_scatters_every_backward() {
    let mut s = scenario(4, ReduceDtype::Fp32);
    let piped = estimate(&s).memory;
    s.parallel.pp = 1;
    s.implementation.fsdp.reshard_after_forward = true;
    s.parallel.pp_microbatches = 1;
    s.workload.grad_accum_steps = 1;
    let m = estimate(&s).memory;
    let g = m
        .phases
        .get(Phase::Backward)
        .unwrap()
        .get(Component::Gradients)
        .get();
    let p = m.params;
    let sharded = (32.0 * p.per_layer + p.embeddings + p.head) / 2.0 / 4.0 * 4.0;
    assert!(close(g, sharded), "{g} vs sharded {sharded}");
    assert!(piped.peak_stage == 3 && m.peak_stage == 0);
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
