//! The layout search (issue 13 item 4) on calculon's `llm-optimal-execution` anchor: Turing-530B
//! (105 layers, hidden 20480, 128 heads; calculon `models/turing-530B.json` at caa4b11) on up to
//! 5,128 A100 80 GB with a global batch of 2,520 (calculon README).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::estimate;
use vram_explorer::estimator::performance::parts::search::{SearchOptions, search};

#[path = "support/turing.rs"]
mod turing;
use turing::turing_530b;

#[test]
fn turing_530b_on_5128_a100s() {
    let o = SearchOptions {
        gpus: 5128,
        global_batch: 2520,
        top: 5,
    };
    let start = std::time::Instant::now();
    let r = search(&turing_530b(), &o);
    println!("{} layouts in {:?}", r.evaluated, start.elapsed());
    assert!(r.evaluated > 100, "{}", r.evaluated);
    let best = r.best.first().expect("a layout fits");
    for l in r.best.iter().chain(&r.pareto) {
        println!("{l:?}");
    }
    // Fits, uses at most the budget, and the batch adds up.
    assert!(best.gpus <= 5128);
    assert_eq!(best.dp * best.micro_batch * best.accumulation, 2520);
    // The winner is at least as fast as Table 1's own 530B layout (TP 8, PP 35, v 3, DP 9 on
    // 2,520 GPUs) estimated the same way — it may use more GPUs.
    let mut s = turing_530b();
    s.parallel.tp = 8;
    s.parallel.pp = 35;
    s.parallel.dp = 9;
    s.parallel.pp_interleave = 3;
    s.workload.micro_batch = 1;
    s.workload.grad_accum_steps = 280;
    s.strategies.checkpointing = vram_explorer::scenario::Checkpointing::Full;
    let table1 = estimate(&s).performance.step.total_s;
    assert!(best.step_s <= table1, "{} vs {table1}", best.step_s);
    // The Pareto front: more GPUs only when faster.
    for w in r.pareto.windows(2) {
        assert!(w[1].gpus > w[0].gpus && w[1].step_s < w[0].step_s);
    }
}
