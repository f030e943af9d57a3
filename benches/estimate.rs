//! The estimator's speed budgets (issues 3 and 4): the memory estimate of a 70B-class training
//! scenario ≤ 200 ns, a full `estimate` (memory + bandwidth and time) ≤ 300 ns, the architecture
//! comparison over the whole catalog ≤ 50 µs. Criterion medians; expect up to 2× variation run to
//! run on the 2-core machine. Run: `cargo bench --no-default-features --bench estimate`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vram_explorer::estimator::performance::compare;
use vram_explorer::estimator::{Diagnostics, MemoryEstimate, estimate, memory, model, resolve};
use vram_explorer::presets::bundled_scenario;
use vram_explorer::scenario::{Checkpointing, Mode, Scenario, ZeroStage};

/// The bundled Llama-3-70B full fine-tune (ZeRO-3 over 8 H100, CPU optimizer offload, full
/// checkpointing, 4096 tokens): the 70B-class training scenario of the budgets.
fn llama70b_training() -> Scenario {
    bundled_scenario("llama3-70b-zero3-8xh100").expect("bundled 70B preset parses")
}

/// Inference (the default, Llama-3-8B), single-GPU training, and a 3D-parallel training step.
fn scenarios() -> [(&'static str, Scenario); 3] {
    let training = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let mut parallel = training.clone();
    parallel.parallel.dp = 16;
    parallel.parallel.tp = 8;
    parallel.parallel.pp = 4;
    parallel.workload.grad_accum_steps = 32;
    parallel.strategies.zero = ZeroStage::Stage1;
    parallel.strategies.checkpointing = Checkpointing::Selective;
    [
        ("inference", Scenario::default()),
        ("training", training),
        ("3d-parallel", parallel),
    ]
}

/// The memory side of an estimate: the resolve pass, then every phase's per-GPU bytes (what
/// `estimate` does before the time model, the same calls).
fn memory_only(s: &Scenario) -> MemoryEstimate {
    let mut d = Diagnostics::default();
    let spec = resolve::model_spec(&s.model, &mut d);
    let model = model::derive(&spec, &s.model.pattern, &s.model.towers, &mut d);
    let r = resolve::resolve_rest(s, spec, &model, &mut d);
    memory::estimate_resolved(&r, &mut d)
}

fn bench(c: &mut Criterion) {
    let big = llama70b_training();
    c.bench_function("estimate/70b_training_memory_only", |b| {
        b.iter(|| memory_only(black_box(&big)))
    });
    c.bench_function("estimate/70b_training", |b| {
        b.iter(|| estimate(black_box(&big)))
    });
    c.bench_function("compare/70b_training", |b| {
        b.iter(|| compare(black_box(&big)))
    });
    for (name, s) in scenarios() {
        c.bench_function(&format!("estimate/{name}"), |b| {
            b.iter(|| estimate(black_box(&s)))
        });
        c.bench_function(&format!("compare/{name}"), |b| {
            b.iter(|| compare(black_box(&s)))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
