//! Layouts a framework cannot run are never proposed. Megatron-Core refuses a tensor-parallel
//! degree that does not divide the KV heads (its `Attention.__init__` divides `num_query_groups` by
//! TP and asserts; megatron/core/transformer/attention.py): the estimate says so, as an error, and
//! the layout search and make-it-fit keep Megatron to TP degrees that divide them (vLLM-style K/V
//! replication stays the rule for the other profiles). LitGPT and torchtune have no pipeline
//! schedule: neither search proposes pipeline stages for them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::performance::parts::search::{SearchOptions, search};
use vram_explorer::estimator::{Diagnostic, Severity, estimate};
use vram_explorer::scenario::*;

/// A 7B-class model with 32 heads over 4 KV heads, trained on one node.
/// Make-it-fit's twenty best suggestions within 64 GPUs.
fn fit_on_64(s: &Scenario) -> vram_explorer::estimator::solver::FitResult {
    use vram_explorer::estimator::solver::{FitOptions, make_it_fit};
    make_it_fit(
        s,
        FitOptions {
            max_gpus: 64,
            top: 20,
        },
    )
}

fn scenario(profile: Profile, tp: u32) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 4, 14336, 32000);
    s.parallel.tp = tp;
    s.implementation.profile = profile;
    s
}

#[test]
fn megatron_says_it_does_not_start_when_tp_does_not_divide_the_kv_heads() {
    let d = estimate(&scenario(Profile::Megatron, 8)).diagnostics;
    assert!(d.contains(Diagnostic::MegatronNeedsTpDividingKvHeads));
    assert!(d.contains(Diagnostic::TpDoesNotDivideKvHeads));
    assert_eq!(
        Diagnostic::MegatronNeedsTpDividingKvHeads.severity(),
        Severity::Error
    );
    let fine = estimate(&scenario(Profile::Megatron, 4)).diagnostics;
    assert!(!fine.contains(Diagnostic::MegatronNeedsTpDividingKvHeads));
    let hf = estimate(&scenario(Profile::HuggingFace, 8)).diagnostics;
    assert!(hf.contains(Diagnostic::TpDoesNotDivideKvHeads));
    assert!(!hf.contains(Diagnostic::MegatronNeedsTpDividingKvHeads));
}

#[test]
fn the_layout_search_keeps_megatron_to_tp_dividing_the_kv_heads() {
    let o = SearchOptions {
        gpus: 64,
        global_batch: 256,
        top: 400,
    };
    let tps = |profile| {
        let r = search(&scenario(profile, 1), &o);
        assert!(!r.best.is_empty());
        r.best.iter().map(|l| l.tp).max().unwrap()
    };
    assert_eq!(tps(Profile::Megatron), 4);
    assert_eq!(tps(Profile::HuggingFace), 8);
}

#[test]
fn make_it_fit_proposes_no_layout_megatron_refuses() {
    let mut s = scenario(Profile::Megatron, 1);
    // Too big for one GPU: 8,192 tokens of 8 sequences.
    (s.workload.seq_len, s.workload.micro_batch) = (8192, 8);
    let r = fit_on_64(&s);
    assert!(!r.already_fits && !r.suggestions.is_empty());
    for sug in &r.suggestions {
        let tp = sug.scenario.parallel.tp;
        assert!(4 % tp == 0, "TP {tp}: {:?}", sug.changes);
        let d = estimate(&sug.scenario).diagnostics;
        assert!(!d.contains(Diagnostic::MegatronNeedsTpDividingKvHeads));
    }
}

/// A Megatron mixture of experts at TP > 1 needs sequence parallelism (`MoELayer.forward` raises
/// without it): make-it-fit, the layout search and a TP sweep turn it on with TP, so no suggestion
/// carries the error, and make-it-fit says so.
#[test]
fn megatron_moe_layouts_bring_sequence_parallelism() {
    let mut s = scenario(Profile::Megatron, 1);
    (
        s.model.moe.experts,
        s.model.moe.top_k,
        s.model.moe.expert_ffn,
    ) = (8, 2, 14336);
    (s.workload.seq_len, s.workload.micro_batch) = (8192, 8);
    let r = fit_on_64(&s);
    assert!(!r.already_fits);
    let with_tp: Vec<_> = r
        .suggestions
        .iter()
        .filter(|x| x.scenario.parallel.tp > 1)
        .collect();
    assert!(!with_tp.is_empty(), "no TP suggestion");
    for sug in with_tp {
        assert!(sug.scenario.parallel.sequence_parallel, "{:?}", sug.changes);
        assert!(
            sug.changes
                .iter()
                .any(|c| c.starts_with("Sequence parallelism on"))
        );
        let d = estimate(&sug.scenario).diagnostics;
        assert!(!d.contains(Diagnostic::MegatronMoeNeedsSequenceParallel));
    }
    let o = SearchOptions {
        gpus: 64,
        global_batch: 256,
        top: 400,
    };
    let found = search(&s, &o);
    assert!(found.best.iter().any(|l| l.tp > 1));
    assert!(found.best.iter().all(|l| l.tp == 1 || l.sequence_parallel));
    let mut swept = s.clone();
    Axis::Tp.set(&mut swept, 4.0);
    assert!(swept.parallel.sequence_parallel);
}

#[test]
fn no_pipeline_stages_for_frameworks_without_a_pipeline_schedule() {
    let o = SearchOptions {
        gpus: 64,
        global_batch: 256,
        top: 400,
    };
    for profile in [Profile::LitGpt, Profile::Torchtune] {
        let mut s = scenario(profile, 1);
        (s.workload.seq_len, s.workload.micro_batch) = (8192, 8);
        let r = search(&s, &o);
        assert!(!r.best.is_empty());
        assert!(
            r.best.iter().chain(&r.pareto).all(|l| l.pp == 1),
            "{profile:?}"
        );
        let fit = fit_on_64(&s);
        assert!(!fit.suggestions.is_empty());
        assert!(
            fit.suggestions.iter().all(|x| x.scenario.parallel.pp == 1),
            "{profile:?}"
        );
    }
    // The Hugging Face profile (also torchtitan's runs) pipelines.
    let r = search(&scenario(Profile::HuggingFace, 1), &o);
    assert!(r.best.iter().any(|l| l.pp > 1));
}

/// `fit`'s smallest tensor-parallel and pipeline degrees keep to what the framework runs.
#[test]
fn smallest_degrees_keep_to_the_framework() {
    use vram_explorer::estimator::solver::{ScaleAxis, Solved, min_degree};
    let mut megatron_found = 0;
    for seq in [4096, 8192, 16_384] {
        for micro in [4, 8, 16] {
            let mut s = scenario(Profile::Megatron, 1);
            (s.workload.seq_len, s.workload.micro_batch) = (seq, micro);
            if let Solved::Found(tp) = min_degree(&s, ScaleAxis::Tp) {
                assert!(4 % tp == 0, "TP {tp} at {seq} × {micro}");
                megatron_found += 1;
            }
            for profile in [Profile::LitGpt, Profile::Torchtune] {
                s.implementation.profile = profile;
                let pp = min_degree(&s, ScaleAxis::Pp);
                assert!(
                    matches!(pp, Solved::Found(1) | Solved::NoneFits),
                    "{profile:?}: {pp:?}"
                );
            }
        }
    }
    assert!(megatron_found > 0);
}

/// `vram-explorer check` names the refusal: a Megatron layout with TP 8 over 4 KV heads fails the
/// check (exit 1, the diagnostic's code on stderr, the path last); TP 4 passes, and the Hugging
/// Face profile at TP 8 passes with the replication warning printed under `ok:`.
#[test]
fn check_fails_a_layout_the_framework_refuses() {
    let dir = std::env::temp_dir().join(format!("vram-check-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let check = |profile: Profile, tp: u32| {
        let path = dir.join(format!("{profile:?}-tp{tp}.ron"));
        vram_explorer::presets::save(&path, &scenario(profile, tp)).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_vram-explorer"))
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (o.status.code(), text(&o.stdout), text(&o.stderr), path)
    };
    let (code, out, err, path) = check(Profile::Megatron, 8);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("megatron_needs_tp_dividing_kv_heads"), "{err}");
    assert!(
        err.trim_end().ends_with(&path.display().to_string()),
        "{err}"
    );
    let (code, out, err, _) = check(Profile::Megatron, 4);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("warning"), "{out}");
    let (code, out, err, _) = check(Profile::HuggingFace, 8);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("ok: "), "{out}");
    assert!(
        out.contains("warning: ") && out.contains("(tp_does_not_divide_kv_heads)"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
