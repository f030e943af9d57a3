//! The estimator's speed budgets (issue 4): a full `estimate` (memory + bandwidth and time) ≤ 300 ns,
//! the architecture comparison over the whole catalog ≤ 50 µs. Criterion medians; expect up to 2×
//! variation run to run on the 2-core machine.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::compare;
use vram_explorer::scenario::{Checkpointing, Mode, Scenario, ZeroStage};

/// Inference (the default), single-GPU training, and a 3D-parallel training step.
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

fn bench(c: &mut Criterion) {
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
