//! Criterion benchmark of reading a real PyTorch memory snapshot (issue 19): the 2.0 MB, 23,105-event
//! `tests/data/snapshots/real_decomfl_opt.pickle`, parsed (`measured::parse_snapshot`) and then
//! analysed into the measured timeline (`measured::analyse`). Run: `cargo bench --bench snapshot`.

#![allow(clippy::unwrap_used, reason = "a benchmark fails by panicking")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use vram_explorer::measured;

fn snapshot(c: &mut Criterion) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/snapshots/real_decomfl_opt.pickle"
    );
    let data = std::fs::read(path).unwrap();
    c.bench_function("parse real_decomfl_opt (2.0 MB)", |b| {
        b.iter(|| measured::parse_snapshot(black_box(&data)).unwrap());
    });
    let s = measured::parse_snapshot(&data).unwrap();
    c.bench_function("analyse real_decomfl_opt", |b| {
        b.iter(|| measured::analyse(black_box(&s)));
    });
    c.bench_function("load real_decomfl_opt (parse + analyse)", |b| {
        b.iter(|| measured::parse(black_box(&data)).unwrap());
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = snapshot
}
criterion_main!(benches);
