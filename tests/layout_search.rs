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

/// ZeRO stage and optimizer offload are searched where they change what fits (issue 13 item 4):
/// a Llama-2-7B shape (meta-llama/Llama-2-7b-hf config.json) with AdamW on one 80 GB GPU needs
/// ~16 bytes per parameter of model states (ZeRO §3.1), 112 GB, before activations: no layout of
/// one GPU fits without moving the optimizer states to the host, and the search finds that one.
#[test]
fn offload_is_searched_where_it_makes_a_layout_fit() {
    use vram_explorer::scenario::{Mode, OffloadTarget, Scenario};
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 32, 11008, 32000);
    s.workload.seq_len = 4096;
    // Mixed precision (FP32 master weights and Adam moments): the 16 bytes per parameter above.
    // In uniform BF16 (12 bytes) the model states are 63 GiB and a layout without offload fits
    // the 79.19 GiB an H100 lets a process allocate.
    s.precision.mode = vram_explorer::scenario::PrecisionMode::Amp;
    let r = search(
        &s,
        &SearchOptions {
            gpus: 1,
            global_batch: 8,
            top: 5,
        },
    );
    let best = r.best.first().expect("a layout fits with offload");
    println!("{}: {} layouts", best.summary(), r.evaluated);
    assert_eq!(best.offload_optimizer, OffloadTarget::Cpu);
    let mut applied = s.clone();
    best.apply_to(&mut applied);
    assert!(best.is_applied_in(&applied));
    assert!(estimate(&applied).memory.fits);
    // Without offload the same layout does not fit.
    applied.strategies.offload_optimizer = OffloadTarget::None;
    assert!(!estimate(&applied).memory.fits);
}

/// Expert parallelism is searched for a mixture of experts: a Mixtral-8x7B shape
/// (mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads, ffn
/// 14336, 8 experts, top-2) on 64 GPUs. Every listed EP divides both the experts and DP; the
/// search tries EP > 1 (the layouts it lists include some), and a dense model is only tried at
/// EP 1 (its layouts all keep it).
#[test]
fn expert_parallelism_is_searched_for_moe() {
    use vram_explorer::scenario::{MoeSpec, Profile};
    let s = mixtral_training(Profile::HuggingFace, 4096);
    let o = SearchOptions {
        gpus: 64,
        global_batch: 256,
        top: 40,
    };
    let r = search(&s, &o);
    assert!(!r.best.is_empty());
    for l in r.best.iter().chain(&r.pareto) {
        assert!(8 % l.ep == 0 && l.dp % l.ep == 0, "{}", l.summary());
    }
    println!("{} layouts; best {}", r.evaluated, r.best[0].summary());
    assert!(r.best.iter().any(|l| l.ep > 1), "no EP > 1 among the best");
    let mut dense = s.clone();
    dense.model.moe = MoeSpec::default();
    let d = search(&dense, &o);
    assert!(d.best.iter().all(|l| l.ep == 1));
    assert!(d.evaluated < r.evaluated);
    // With each expert whole (ETP 1) EP comes out of DP × TP ranks: more degrees to try, and every
    // listed one divides DP × TP.
    let mut whole = s.clone();
    whole.model.moe.etp = 1;
    let w = search(&whole, &o);
    for l in w.best.iter().chain(&w.pareto) {
        assert!((l.dp * l.tp) % l.ep == 0, "{}", l.summary());
    }
    assert!(
        w.evaluated > r.evaluated,
        "{} vs {}",
        w.evaluated,
        r.evaluated
    );
}

/// A Megatron-Core mixture of experts at TP > 1 is searched with its experts split over TP (ETP =
/// TP, written 0) and whole on each rank (ETP 1, EP then carved out of DP × TP); at TP 1 there is
/// nothing to choose. Other profiles keep the scenario's setting (the test above). A listed layout
/// written into the scenario is recognised as applied, ETP included.
#[test]
fn megatron_searches_expert_tensor_parallelism() {
    let s = mixtral_training(vram_explorer::scenario::Profile::Megatron, 4096);
    let o = SearchOptions {
        gpus: 64,
        global_batch: 256,
        top: 2000,
    };
    let r = search(&s, &o);
    let whole: Vec<_> = r.best.iter().filter(|l| l.etp == 1).collect();
    assert!(
        whole.iter().any(|l| l.tp > 1),
        "no ETP 1 layout at TP > 1 among {}",
        r.best.len()
    );
    for l in &r.best {
        assert!(l.etp == 0 || (l.etp == 1 && l.tp > 1), "{}", l.summary());
        assert!(l.dp % l.ep == 0 || l.etp == 1, "{}", l.summary());
        if l.etp == 1 {
            assert!((l.dp * l.tp) % l.ep == 0, "{}", l.summary());
            assert!(l.summary().contains("expert TP 1"), "{}", l.summary());
        }
    }
    let l = whole[0];
    let mut applied = s.clone();
    l.apply_to(&mut applied);
    assert!(l.is_applied_in(&applied));
    assert_eq!(applied.model.moe.etp, 1);
    // ETP written out as TP is the default layout: recognised as applied; ETP 1 is not.
    let split = r
        .best
        .iter()
        .find(|l| l.etp == 0 && l.tp == 2)
        .expect("a TP 2 layout with split experts");
    let mut same = s.clone();
    split.apply_to(&mut same);
    same.model.moe.etp = 2;
    assert!(split.is_applied_in(&same));
    same.model.moe.etp = 1;
    assert!(!split.is_applied_in(&same));
    // The search chooses ETP under Megatron: a scenario's own ETP 2 is not carried into TP 1
    // layouts (where it would not divide TP) nor named where it has no effect.
    let mut own = s.clone();
    own.model.moe.etp = 2;
    let r2 = search(&own, &o);
    for l in r2.best.iter().filter(|l| l.tp == 1) {
        assert_eq!(l.etp, 0, "{}", l.summary());
        assert!(!l.summary().contains("expert TP"), "{}", l.summary());
    }
    // The same step estimated directly gives the listed time.
    let step = estimate(&applied).performance.step.total_s;
    assert!(
        (step - l.step_s).abs() <= 1e-12 * step,
        "{step} vs {}",
        l.step_s
    );
}

/// Context-parallel ranks hold the same weights and join the expert groups (Megatron-Core's expert
/// rank generator folds CP in): a Mixtral shape at 128K tokens with a global batch of 1 has DP 1,
/// and the search still spreads its experts over the CP ranks.
#[test]
fn expert_parallelism_counts_the_context_parallel_ranks() {
    let s = mixtral_training(vram_explorer::scenario::Profile::Megatron, 131_072);
    let o = SearchOptions {
        gpus: 64,
        global_batch: 1,
        top: 2000,
    };
    let r = search(&s, &o);
    assert!(r.best.iter().all(|l| l.dp == 1));
    // With the experts split as the dense layers (ETP = TP), EP can come from CP ranks alone.
    let spread = r
        .best
        .iter()
        .find(|l| l.cp > 1 && l.ep > 1 && l.expert_tp() == l.tp);
    let l = spread.expect("an expert-parallel layout over CP ranks");
    assert_eq!(
        (l.dp * l.cp * l.tp / l.expert_tp()) % l.ep,
        0,
        "{}",
        l.summary()
    );
}

/// A Mixtral-8x7B shape (mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, hidden 4096, 32
/// heads, 8 KV heads, ffn 14336, 8 experts, top-2) in training under `profile` at `seq` tokens.
fn mixtral_training(
    profile: vram_explorer::scenario::Profile,
    seq: u32,
) -> vram_explorer::scenario::Scenario {
    use vram_explorer::scenario::{FfnKind, Mode, MoeSpec, Scenario};
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 8, 14336, 32000);
    t.ffn_kind = FfnKind::SwiGlu;
    s.model.moe = MoeSpec::mixtral();
    s.workload.seq_len = seq;
    s.implementation.profile = profile;
    s
}
