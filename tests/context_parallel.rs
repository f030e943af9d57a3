//! Context parallelism (issue 15 item 5): test vectors from the papers' formulas and the
//! implementations' source (docs/context-parallel.md), and properties.
//!
//! - Ring attention (Liu et al. 2023, arXiv:2310.01889 §3): each rank holds seq/cp tokens and
//!   receives the other cp − 1 K/V blocks per layer and pass; TransformerEngine d0067d0
//!   `AttnFuncWithCPAndKVP2P` sends K/V again with their gradients in backward (2× the forward).
//! - DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509 §3.2): four all-to-alls per layer
//!   (q, k, v, output), each sending (P − 1)/P of a rank's N·h/P elements: 4·N·h/P per layer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::performance::breakdown::{StepPart, step_breakdown};
use vram_explorer::estimator::{Component, Diagnostic, Estimate, Phase, estimate};
use vram_explorer::presets::{bundled_scenario, from_ron_str};
use vram_explorer::scenario::{
    AttentionKernel, Checkpointing, CpStyle, Mode, Profile, Scenario, ZeroStage,
};

/// Llama-3-8B (Meta-Llama-3-8B config.json) training at `seq` tokens, Megatron profile, BF16.
fn llama8b(seq: u32) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 8, 14336, 128_256);
    s.workload.seq_len = seq;
    s.workload.micro_batch = 1;
    s.implementation.profile = Profile::Megatron;
    s.strategies.attention = AttentionKernel::Flash;
    s
}

fn with_cp(mut s: Scenario, cp: u32, style: CpStyle) -> Scenario {
    s.parallel.cp = cp;
    s.parallel.cp_style = style;
    s
}

fn acts(e: &Estimate) -> f64 {
    e.memory
        .phases
        .get(Phase::Forward)
        .map(|b| b.get(Component::Activations).get())
        .unwrap()
}

#[test]
fn a_cp_rank_saves_the_activations_of_its_share_of_the_sequence() {
    // Flash attention keeps no s² terms: every saved tensor is per token (Korthikanti §4.1), so a
    // rank holding 131072/8 tokens saves what a 16384-token sequence saves.
    for style in [CpStyle::Ring, CpStyle::AllToAll] {
        let cp = estimate(&with_cp(llama8b(131_072), 8, style));
        let short = estimate(&llama8b(16_384));
        assert_eq!(acts(&cp), acts(&short), "{style:?}");
    }
    // Materialised attention: the local queries' scores run over the whole sequence's keys,
    // b·a·(s/cp)·s — cp times those of a 16384-token sequence.
    let mut cp = with_cp(llama8b(131_072), 8, CpStyle::Ring);
    let mut short = llama8b(16_384);
    cp.strategies.attention = AttentionKernel::Materialized;
    short.strategies.attention = AttentionKernel::Materialized;
    let (a_cp, a_short) = (acts(&estimate(&cp)), acts(&estimate(&short)));
    let scores_short = 2.0 * 32.0 * 16_384.0 * 16_384.0 * 32.0; // e·a·s²·layers (no dropout)
    assert!(
        (a_cp - a_short - 7.0 * scores_short).abs() < 1.0,
        "{a_cp} vs {a_short}"
    );
}

#[test]
fn ring_exchanges_cp_minus_one_kv_chunks_per_layer_and_pass() {
    let (seq, cp) = (131_072.0, 8.0);
    let e = estimate(&with_cp(llama8b(131_072), 8, CpStyle::Ring));
    // K and V of 8 KV heads × 128, BF16; forward + backward (K/V and dK/dV): 3 passes' worth.
    let kv_sequence = 2.0 * seq * 8.0 * 128.0 * 2.0;
    let per_layer = (cp - 1.0) / cp * kv_sequence * 3.0;
    let got = e.performance.communication.cp_bytes.get();
    assert_eq!(got, per_layer * 32.0);
    // Full recomputation runs the forward's ring once more.
    let mut r = with_cp(llama8b(131_072), 8, CpStyle::Ring);
    r.strategies.checkpointing = Checkpointing::Full;
    let got = estimate(&r).performance.communication.cp_bytes.get();
    assert_eq!(got, (cp - 1.0) / cp * kv_sequence * 4.0 * 32.0);
}

/// A hybrid's layers without attention exchange no K/V: with one attention layer in four (the
/// other three Mamba-2), the ring moves a quarter of what four attention layers move, for both
/// styles. Before, every layer was charged the model's attention heads.
#[test]
fn only_attention_layers_exchange_kv() {
    use vram_explorer::scenario::{Attention, DenseMlp, LayerRun, Mamba, Mixer, Mlp, PatternPart};
    let run = |mixer: Mixer| LayerRun {
        count: 1,
        mixer,
        mlp: Mlp::Dense(DenseMlp::default()),
        norms: 2,
    };
    let attention = || run(Mixer::Attention(Attention::default()));
    let mamba = || {
        run(Mixer::Mamba(Mamba {
            d_state: 128,
            expand: 2,
            n_groups: 8,
            head_dim: 64,
            ..Mamba::default()
        }))
    };
    for style in [CpStyle::Ring, CpStyle::AllToAll] {
        let bytes = |layers: Vec<LayerRun>| {
            let mut s = with_cp(llama8b(131_072), 8, style);
            s.model.pattern = vec![PatternPart { repeat: 8, layers }];
            estimate(&s).performance.communication.cp_bytes.get()
        };
        let all = bytes(vec![attention(), attention(), attention(), attention()]);
        let hybrid = bytes(vec![mamba(), mamba(), mamba(), attention()]);
        assert!(all > 0.0);
        assert_eq!(hybrid, all / 4.0, "{style:?}");
    }
    // The ring hides its transfers behind the attention layers' kernels only, not the scans'.
    let parts = |layers: Vec<LayerRun>| {
        let mut s = with_cp(llama8b(131_072), 8, CpStyle::Ring);
        s.model.pattern = vec![PatternPart { repeat: 8, layers }];
        estimate(&s).performance.parts.expect("parts")
    };
    let all = parts(vec![attention(), attention()]);
    assert_eq!(all.ring_window_s, all.attention_s);
    let hybrid = parts(vec![mamba(), attention()]);
    assert!(hybrid.ring_window_s > 0.0 && hybrid.ring_window_s < hybrid.attention_s);
    assert!((hybrid.ring_window_s / (all.ring_window_s / 2.0) - 1.0).abs() < 1e-12);
}

#[test]
fn ulysses_sends_4nh_over_p_per_layer_and_pass() {
    // MHA (kv = heads), so q, k, v and the output are each N·h wide.
    let mut s = with_cp(llama8b(65_536), 8, CpStyle::AllToAll);
    s.model.transformer.kv_heads = 32;
    let (n, h, p) = (65_536.0, 4096.0, 8.0);
    let per_pass = 4.0 * n * h / p * (p - 1.0) / p * 2.0; // BF16
    let e = estimate(&s);
    assert_eq!(
        e.performance.communication.cp_bytes.get(),
        per_pass * 2.0 * 32.0
    );
    // Blocking all-to-alls: on the step's critical path, as their own part.
    let b = step_breakdown(&e.performance);
    let part = b
        .parts()
        .iter()
        .find(|(p, _)| *p == StepPart::ContextParallel);
    assert!(part.is_some_and(|(_, t)| *t > 0.0), "{:?}", b.parts());
    let sum: f64 = b.parts().iter().map(|(_, t)| t).sum();
    assert!((sum - b.total_s).abs() <= 1e-9 * b.total_s);
}

#[test]
fn cp_never_raises_activations_or_the_peak_per_gpu() {
    let mut bases = vec![llama8b(32_768), llama8b(131_072)];
    let mut hf = llama8b(65_536);
    hf.implementation.profile = Profile::HuggingFace;
    bases.push(hf);
    let mut full = llama8b(131_072);
    full.strategies.checkpointing = Checkpointing::Full;
    bases.push(full);
    bases.push(bundled_scenario("llama3-8b-128k-cp8-64xh100").unwrap());
    for base in bases {
        for style in [CpStyle::Ring, CpStyle::AllToAll] {
            let mut last: Option<(f64, f64)> = None;
            for cp in [1, 2, 4, 8, 16] {
                let e = estimate(&with_cp(base.clone(), cp, style));
                let now = (acts(&e), e.memory.tensor_peak.get());
                if let Some((a, peak)) = last {
                    assert!(
                        now.0 <= a,
                        "activations rose at cp {cp} {style:?}: {a} -> {}",
                        now.0
                    );
                    assert!(
                        now.1 <= peak,
                        "peak rose at cp {cp} {style:?}: {peak} -> {}",
                        now.1
                    );
                }
                last = Some(now);
            }
        }
    }
}

#[test]
fn the_distributed_optimizer_shards_over_dp_times_cp() {
    // Megatron-Core: `get_data_parallel_group(with_context_parallel=True)`.
    let states = |dp: u32, cp: u32| {
        let mut s = with_cp(llama8b(65_536), cp, CpStyle::Ring);
        s.parallel.dp = dp;
        s.strategies.zero = ZeroStage::Stage1;
        estimate(&s)
            .memory
            .phases
            .get(Phase::OptimizerStep)
            .map(|b| b.get(Component::OptimizerStates).get())
            .unwrap()
    };
    assert_eq!(states(2, 4), states(8, 1));
    assert!(states(1, 8) < states(1, 1) / 7.0);
}

#[test]
fn invalid_combinations_are_reported() {
    // Ulysses: 8 KV heads ÷ TP 4 = 2 per rank, not divisible by CP 8.
    let mut s = with_cp(llama8b(131_072), 8, CpStyle::AllToAll);
    s.parallel.tp = 4;
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::CpDoesNotDivideHeads)
    );
    s.parallel.tp = 1;
    assert!(
        !estimate(&s)
            .diagnostics
            .contains(Diagnostic::CpDoesNotDivideHeads)
    );
    // Ring: the sequence must split into 2·cp chunks.
    let s = with_cp(llama8b(131_000), 8, CpStyle::Ring);
    assert!(
        estimate(&s)
            .diagnostics
            .contains(Diagnostic::CpDoesNotDivideSequence)
    );
    // Inference: not modelled, CP taken as 1 (same memory as without it).
    let mut i = with_cp(llama8b(8192), 4, CpStyle::Ring);
    i.mode = Mode::Inference;
    let e = estimate(&i);
    assert!(e.diagnostics.contains(Diagnostic::ContextParallelIgnored));
    let mut plain = i.clone();
    plain.parallel.cp = 1;
    assert_eq!(e.memory.tensor_peak, estimate(&plain).memory.tensor_peak);
}

#[test]
fn files_without_cp_load_with_cp_one() {
    let s = from_ron_str("(version: 1, mode: Training, parallel: (dp: 2, tp: 2))").unwrap();
    assert_eq!((s.parallel.cp, s.parallel.cp_style), (1, CpStyle::Ring));
    assert_eq!(s.parallel.gpus(), 4);
    let s = from_ron_str("(version: 1, parallel: (tp: 2, cp: 4, cp_style: AllToAll))").unwrap();
    assert_eq!((s.parallel.cp, s.parallel.cp_style), (4, CpStyle::AllToAll));
    assert_eq!(s.parallel.gpus(), 8);
}

#[test]
fn the_step_time_of_a_cp_rank_is_its_share_of_the_sequence() {
    // Same tokens per GPU: CP 8 at 128K is no slower per token than 8× the GPUs at 16K would
    // suggest for the GEMMs, and the ring hides behind attention at this length.
    let e = estimate(&with_cp(llama8b(131_072), 8, CpStyle::Ring));
    let p = &e.performance;
    assert_eq!(
        p.communication.cp_time_s, 0.0,
        "ring hidden behind attention"
    );
    let short = estimate(&llama8b(16_384));
    let (g_cp, g_short) = (
        p.parts.unwrap().gemm_s,
        short.performance.parts.unwrap().gemm_s,
    );
    assert!((g_cp / g_short - 1.0).abs() < 1e-9, "{g_cp} vs {g_short}");
    // Attention: the local queries attend over 8× the keys.
    let (a_cp, a_short) = (
        p.parts.unwrap().attention_s,
        short.performance.parts.unwrap().attention_s,
    );
    assert!((a_cp / a_short - 8.0).abs() < 1e-6, "{a_cp} vs {a_short}");
}

/// Llama-3-8B at `seq` tokens as Megatron-Bridge's 128K recipe lays it out, without CP: TP 4 × PP 2,
/// micro-batch 1, 8 accumulation steps, mixed-precision Adam with the distributed optimizer.
fn recipe_without_cp(seq: u32) -> Scenario {
    let mut s = llama8b(seq);
    (s.parallel.tp, s.parallel.pp, s.parallel.sequence_parallel) = (4, 2, true);
    s.workload.grad_accum_steps = 8;
    s.precision.mode = vram_explorer::scenario::PrecisionMode::MasterWeights;
    s.strategies.zero = ZeroStage::Stage1;
    s
}

#[test]
fn make_it_fit_reaches_for_cp_only_at_long_context() {
    use vram_explorer::estimator::solver::fit::{FitOptions, make_it_fit};
    let opts = FitOptions {
        max_gpus: 64,
        top: 5,
    };
    // 128K tokens on 8 GPUs needs ~150 GiB per GPU: the suggestions split the sequence.
    let long = make_it_fit(&recipe_without_cp(131_072), opts);
    assert!(!long.suggestions.is_empty());
    assert!(
        long.suggestions.iter().any(|g| g.scenario.parallel.cp > 1),
        "{:?}",
        long.suggestions
            .iter()
            .map(|g| &g.changes)
            .collect::<Vec<_>>()
    );
    for g in &long.suggestions {
        assert!(g.gpus <= 64 && estimate(&g.scenario).memory.fits);
    }
    // Below 32K tokens CP is not among the options.
    let mut short = recipe_without_cp(16_384);
    short.workload.micro_batch = 64;
    let r = make_it_fit(&short, opts);
    assert!(!r.already_fits && !r.suggestions.is_empty());
    assert!(r.suggestions.iter().all(|g| g.scenario.parallel.cp == 1));
}

#[test]
fn the_layout_search_tries_cp_from_32k_tokens() {
    use vram_explorer::estimator::performance::parts::search::{SearchOptions, search};
    let o = SearchOptions {
        gpus: 64,
        global_batch: 8,
        top: 5,
    };
    let long = search(&recipe_without_cp(131_072), &o);
    let best = long.best.first().expect("a layout fits");
    assert!(best.cp > 1, "{}", best.summary());
    assert_eq!(best.gpus, best.tp * best.pp * best.dp * best.cp);
    assert!(best.summary().contains(&format!("CP {}", best.cp)));
    let short = search(&recipe_without_cp(16_384), &o);
    assert!(short.best.iter().chain(&short.pareto).all(|l| l.cp == 1));
    assert!(short.evaluated < long.evaluated);
}
