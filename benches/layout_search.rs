//! Criterion benchmark of the layout search (issue 13 item 4). Anchor: calculon's
//! `llm-optimal-execution` README example, Turing-530B on up to 5,128 A100s with a global batch
//! of 2,520 (about 27 s there on 2 cores for 8,112 executions); target ≤ 30 ms median here.
//! Run: `cargo bench --no-default-features --bench layout_search`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark fails by panicking"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vram_explorer::estimator::performance::parts::search::{SearchOptions, search};

#[path = "../tests/support/turing.rs"]
mod turing;

fn bench(c: &mut Criterion) {
    let s = turing::turing_530b();
    let o = SearchOptions {
        gpus: 5128,
        global_batch: 2520,
        top: 5,
    };
    let r = search(&s, &o);
    assert!(!r.best.is_empty());
    eprintln!("layout search: {} layouts estimated", r.evaluated);
    c.bench_function("layout_search_turing_530b_5128_a100", |b| {
        b.iter(|| search(black_box(&s), black_box(&o)));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
