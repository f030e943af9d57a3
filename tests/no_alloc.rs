//! The estimator never touches the heap (issues 3 and 4: the app evaluates it thousands of times a
//! frame): `estimate`, the memory estimate alone and `compare`, on every bundled preset and on
//! variants that take the other code paths (pipeline stages, ZeRO, offload, dynamic batching, eager
//! attention, a custom GPU, clamped inputs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use vram_explorer::estimator::performance::compare;
use vram_explorer::estimator::{Diagnostics, estimate, memory, model};
use vram_explorer::presets::bundled;
use vram_explorer::scenario::*;

/// Counts allocations made by the current thread (tests run on several threads).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

/// Every bundled preset, and for each a few variants through other branches.
fn scenarios() -> Vec<(String, Scenario)> {
    let mut out = vec![("default".to_owned(), Scenario::default())];
    for p in bundled() {
        let base = p.scenario().expect("bundled preset parses");
        let mut pipeline = base.clone();
        pipeline.mode = Mode::Training;
        pipeline.parallel.tp = 2;
        pipeline.parallel.pp = 3;
        pipeline.parallel.dp = 4;
        pipeline.parallel.sequence_parallel = true;
        pipeline.strategies.zero = ZeroStage::Stage3;
        pipeline.strategies.offload_optimizer = OffloadTarget::Cpu;
        pipeline.strategies.checkpointing = Checkpointing::EveryK;
        let mut serving = base.clone();
        serving.mode = Mode::Inference;
        serving.inference.dynamic_batching = true;
        serving.strategies.attention = AttentionKernel::Materialized;
        serving.strategies.second_tier = SecondTier::Cxl;
        serving.strategies.second_tier_gib = 256.0;
        let mut odd = base.clone();
        odd.name = "a scenario with a name".to_owned();
        odd.gpu = GpuChoice::Custom(CustomGpu {
            name: "my card".to_owned(),
            ..CustomGpu::default()
        });
        odd.workload.micro_batch = 0;
        odd.overheads.allocator_reserve_fraction = f64::NAN;
        out.push((p.id.to_owned(), base));
        out.push((format!("{} (pipeline)", p.id), pipeline));
        out.push((format!("{} (serving)", p.id), serving));
        out.push((format!("{} (odd inputs)", p.id), odd));
    }
    out
}

#[test]
fn estimate_memory_and_compare_do_not_allocate() {
    let all = scenarios();
    assert!(all.len() > 40, "bundled presets found");
    let before = allocations();
    std::hint::black_box(Vec::<u8>::with_capacity(8));
    assert!(allocations() > before, "the counting allocator counts");
    for (name, s) in &all {
        let before = allocations();
        let e = estimate(s);
        assert_eq!(allocations() - before, 0, "estimate allocated for {name}");
        assert!(e.memory.gpu_total.get().is_finite());

        let before = allocations();
        let mut d = Diagnostics::default();
        let m = model::resolve(&s.model, &mut d);
        let mem = memory::estimate_memory(s, &m, &mut d);
        assert_eq!(
            allocations() - before,
            0,
            "memory estimate allocated for {name}"
        );
        if e.engine.is_none() {
            assert_eq!(mem, e.memory);
        } else {
            // vLLM / SGLang: the estimate shows the engine's reservation (engines::reservation).
            assert_eq!(mem.params, e.memory.params);
        }

        let before = allocations();
        let c = compare(s);
        assert_eq!(allocations() - before, 0, "compare allocated for {name}");
        assert!(c.rows().count() > 0);
    }
}
