//! PyTorch's DTensor `loss_parallel()` (`implementation.loss_parallel`, docs/frameworks/torchtitan.md)
//! against its CPU measurement (gloo, world size 2, torch 2.15.0: scripts/measure/loss_parallel.py,
//! tests/data/measured/dtensor-loss-parallel-cpu.json): the loss's saved tensors, the forward's
//! peak and the loss backward's peak above the start, each within 0.2 % (the rule counts the
//! per-logit tensors; the per-token ones — the all-reduced maxima and sums, the target indices and
//! masks, 12–33 B per token — are left out).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use serde_json::Value;
use vram_explorer::estimator::Diagnostics;
use vram_explorer::estimator::memory::activations as act;
use vram_explorer::estimator::memory::ctx::Ctx;
use vram_explorer::scenario::{Dtype, Mode, PrecisionMode, Profile, Scenario};

const RECORDS: &str = include_str!("data/measured/dtensor-loss-parallel-cpu.json");

fn u(r: &Value, k: &str) -> u32 {
    u32::try_from(r[k].as_u64().unwrap()).unwrap()
}

/// (saved, forward peak, loss-backward peak) of the estimator's loss for a record's shape.
fn estimate(r: &Value, loss_parallel: bool) -> (f64, f64, f64) {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) =
        (2, u(r, "hidden"), 4, 4, 4 * u(r, "hidden"));
    t.vocab = u(r, "vocab");
    t.tied_embeddings = false;
    s.workload.micro_batch = u(r, "batch");
    s.workload.seq_len = u(r, "seq");
    s.parallel.tp = u(r, "world");
    s.parallel.sequence_parallel = true;
    s.implementation.profile = Profile::HuggingFace;
    s.implementation.loss_parallel = loss_parallel;
    let e = if r["dtype"] == "bfloat16" {
        Dtype::Bf16
    } else {
        Dtype::Fp32
    };
    let p = &mut s.precision;
    p.mode = PrecisionMode::Custom;
    (p.compute, p.weights, p.activations) = (e, e, e);
    let m =
        vram_explorer::estimator::model::derive(&s.model, &[], &[], &mut Diagnostics::default());
    let c = Ctx::new(&s, &m, &mut Diagnostics::default());
    let z = act::sizes(&c, &m, c.b, c.s);
    // The head's all-gathered input, which the measured region creates (its input is a leaf shard);
    // the estimator counts it with the final norm's output (`activations::hf_norm`).
    let gathered = c.ec * z.bsh;
    let saved = act::loss_saved(&c, &m, &z) + gathered;
    (
        saved,
        saved + act::loss_forward_transient(&c, &m, &z),
        saved + act::loss_backward_transient(&c, &m, &z),
    )
}

#[test]
fn dtensor_loss_parallel_matches_its_cpu_measurement() {
    let doc: Value = serde_json::from_str(RECORDS).unwrap();
    let rows = doc["records"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        let f = |k: &str| r[k].as_f64().unwrap();
        let live = |k: &str| r["live_beyond_start"][k].as_f64().unwrap();
        let e_logits = if r["dtype"] == "bfloat16" { 2.0 } else { 4.0 };
        let logits = e_logits * f("logits_elements");
        // Measured: the saved tensors are what outlives the loss but the logits (`del pred`).
        let measured = (
            live("after_loss") - logits,
            f("forward_allocator_peak_beyond_start"),
            live("after_loss") + f("backward_allocator_peak_beyond_after_loss"),
        );
        let est = estimate(r, true);
        for (name, e, m) in [
            ("saved", est.0, measured.0),
            ("forward peak", est.1, measured.1),
            ("loss backward peak", est.2, measured.2),
        ] {
            let err = e / m - 1.0;
            println!(
                "{} {name:<20} {e:>12.0} {m:>12.0} {:+.3}%",
                r["dtype"],
                err * 100.0
            );
            assert!(err.abs() < 2e-3, "{name}: {e} vs {m}");
        }
        // The aten rule (one fused log-softmax) it replaces is 4 B per logit lower at both peaks.
        let aten = estimate(r, false);
        assert!(aten.1 < est.1 && aten.2 < est.2);
    }
}
