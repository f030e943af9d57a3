//! Criterion benchmarks of the solvers. Target (issue 7): make-it-fit over the full strategy space
//! ≤ 5 ms (criterion median). Run: `cargo bench --bench solver`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vram_explorer::estimator::sensitivity::sensitivity;
use vram_explorer::estimator::solver::{FitOptions, make_it_fit, max_micro_batch};
use vram_explorer::scenario::{Mode, Scenario};

/// Llama-3-8B training at 4096 tokens, micro-batch 4 × 8 accumulation on 8 GPUs: ~290 GiB per
/// GPU on an 80 GB H100, so the search has work to do.
fn too_big() -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    s.workload.micro_batch = 4;
    s.workload.seq_len = 4096;
    s.workload.grad_accum_steps = 8;
    s.parallel.dp = 8;
    s
}

fn benches(c: &mut Criterion) {
    let s = too_big();
    let full = FitOptions {
        max_gpus: 64,
        top: 5,
    };
    let r = make_it_fit(&s, full);
    eprintln!(
        "make-it-fit, 64-GPU budget: {} estimates, {} suggestions",
        r.estimates,
        r.suggestions.len()
    );
    c.bench_function("make_it_fit_64_gpus", |b| {
        b.iter(|| make_it_fit(black_box(&s), full))
    });
    c.bench_function("make_it_fit_own_gpus", |b| {
        b.iter(|| make_it_fit(black_box(&s), FitOptions::default()))
    });
    c.bench_function("max_micro_batch", |b| {
        b.iter(|| max_micro_batch(black_box(&s)))
    });
    c.bench_function("sensitivity", |b| b.iter(|| sensitivity(black_box(&s))));
}

criterion_group!(solver, benches);
criterion_main!(solver);
