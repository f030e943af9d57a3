//! One full frame of the whole window (controls, headline, all four charts) at 1600×1000 through
//! egui_kittest: layout and tessellation, no GPU. Target: ≤ 2 ms on the reference machine.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use egui_kittest::Harness;
use vram_explorer::app::ExplorerApp;

fn frame(c: &mut Criterion) {
    let mut h = Harness::builder()
        .with_size(egui::vec2(1600.0, 1000.0))
        .build_ui_state(
            |ui, app: &mut ExplorerApp| app.ui(ui),
            ExplorerApp::default(),
        );
    h.run();
    c.bench_function("frame", |b| {
        b.iter(|| {
            // A slider edit each frame, so nothing can be cached between frames.
            let s = h.state_mut().scenario_mut();
            s.workload.micro_batch = if s.workload.micro_batch == 1 { 2 } else { 1 };
            h.step();
        });
    });
}

criterion_group!(benches, frame);
criterion_main!(benches);
