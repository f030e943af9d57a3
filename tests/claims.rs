//! The article's claims table (issue 8): every claim's preset loads, every number is finite, and the
//! computed verdict is the committed one. A change in the estimator that flips a verdict fails here
//! and must be looked at (and this table updated with the reason in the commit).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test or benchmark fails by panicking; table-driven tests run long"
)]

use vram_explorer::claims::{CLAIMS, Claimed, TOLERANCE, Verdict, check, check_all, verdict};
use vram_explorer::presets::bundled_scenario;

use Verdict::{Agrees as A, AgreesUnderConditions as C, Disagrees as D};

/// Expected verdict of each claim, in article order.
const EXPECTED: [(&str, Verdict); 27] = [
    ("bert-base-4.8gb", D),
    ("swap-3-5x", D),
    ("mp-formula", D),
    ("mp-8-to-32", A),
    ("a100-80gb-175b", C),
    ("amp-40", D),
    ("checkpointing-20", D),
    ("checkpointing-sqrt-n", A),
    ("gpt-1.3b-24-to-9", C),
    ("resnet50-bandwidth-3x", C),
    ("resnet50-idle-30-50", D),
    ("saturation-a100-v100", D),
    ("prefetch-70", C),
    ("pinned-3x", C),
    ("bcn-75", C),
    ("allreduce-log-n", C),
    ("memory-table", D),
    ("embedding-12-to-3", D),
    ("bert-tiny-512mb", A),
    ("amp-per-layer", A),
    ("pruning-30-50", C),
    ("weight-sharing-75", C),
    ("zero-4x", C),
    ("one-bit-93.75", C),
    ("cxl-tb", C),
    ("photonic-1.6tbps", D),
    ("pim-10x", D),
];

#[test]
fn every_claim_has_its_committed_verdict() {
    let ids: Vec<&str> = CLAIMS.iter().map(|c| c.id).collect();
    let expected_ids: Vec<&str> = EXPECTED.iter().map(|e| e.0).collect();
    assert_eq!(ids, expected_ids, "claims added, removed or reordered");
    let mut wrong = Vec::new();
    for (claim, (id, want)) in CLAIMS.iter().zip(EXPECTED) {
        let r = check(claim);
        assert!(
            r.preset_loads,
            "{id}: preset {} does not load",
            claim.preset
        );
        if r.verdict != want {
            wrong.push(format!(
                "{id}: {:?}, expected {want:?}: {}",
                r.verdict, r.reason
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_claim_is_documented_and_computes_finite_numbers() {
    for r in check_all() {
        let c = r.claim;
        assert!(bundled_scenario(c.preset).is_some(), "{}", c.id);
        assert!(
            !c.text.is_empty() && !c.quote.is_empty() && !c.source.is_empty(),
            "{}",
            c.id
        );
        assert!(c.section.starts_with('§'), "{}", c.id);
        assert!(
            r.general.is_some() || r.conditional.is_some(),
            "{}: nothing computed",
            c.id
        );
        for x in [r.general, r.conditional].into_iter().flatten() {
            assert!(x.is_finite(), "{}: {x}", c.id);
        }
        if r.verdict == Verdict::AgreesUnderConditions {
            assert!(
                !c.condition.is_empty(),
                "{}: a condition must be stated",
                c.id
            );
        }
        assert!(r.reason.contains(c.source), "{}", c.id);
    }
}

#[test]
fn agreement_is_defined_once() {
    assert_eq!(TOLERANCE, 0.10);
    assert!(Claimed::Figure(100.0).agrees(110.0) && !Claimed::Figure(100.0).agrees(111.0));
    assert!(Claimed::Range(0.3, 0.5).agrees(0.28) && !Claimed::Range(0.3, 0.5).agrees(0.2));
    assert!(Claimed::AtMost(1.0).agrees(1.0) && !Claimed::AtMost(1.0).agrees(1.01));
    assert!(Claimed::AtLeast(0.7).agrees(0.7) && !Claimed::AtLeast(0.7).agrees(0.69));
    // Trend: same direction beyond the tolerance, within half a decade.
    assert!(Claimed::Trend(3.0).agrees(3.9) && Claimed::Trend(3.0).agrees(1.2));
    assert!(!Claimed::Trend(3.0).agrees(1.05) && !Claimed::Trend(3.0).agrees(0.5));
    assert!(!Claimed::Trend(3.0).agrees(10.0) && !Claimed::Trend(3.0).agrees(f64::NAN));
    assert!(Claimed::Trend(0.5).agrees(0.3) && !Claimed::Trend(0.5).agrees(2.0));
    // The verdict: general first, then the condition.
    let f = Claimed::Figure(1.0);
    assert_eq!(verdict(f, Some(1.0), None), Verdict::Agrees);
    assert_eq!(
        verdict(f, Some(2.0), Some(1.05)),
        Verdict::AgreesUnderConditions
    );
    assert_eq!(verdict(f, None, Some(1.05)), Verdict::AgreesUnderConditions);
    assert_eq!(verdict(f, Some(2.0), Some(2.0)), Verdict::Disagrees);
    assert_eq!(verdict(f, None, None), Verdict::Disagrees);
}

/// The Claims window lists every claim and its "Load scenario" button returns the claim's preset id.
#[cfg(feature = "gui")]
#[test]
fn claims_window_loads_a_claims_preset() {
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use vram_explorer::ui::{ThemeChoice, claims};

    let results = claims::results();
    let mut h = Harness::builder()
        .with_size(egui::vec2(1200.0, 900.0))
        .build_ui_state(
            |ui, picked: &mut Option<&'static str>| {
                if let Some(id) = claims::claims_ui(ui, results, ThemeChoice::Dark) {
                    *picked = Some(id);
                }
            },
            None,
        );
    h.run();
    let _ = h.get_by_label_contains(CLAIMS[0].text);
    let first = h.get_all_by_label("Load scenario").next();
    first.expect("a Load scenario button").click();
    h.run();
    assert_eq!(*h.state(), Some(CLAIMS[0].preset));
}

#[test]
fn cli_claims_json_matches_the_table_and_unknown_ids_fail() {
    let bin = env!("CARGO_BIN_EXE_vram-explorer");
    let out = std::process::Command::new(bin)
        .args(["claims", "--json"])
        .output()
        .expect("run the CLI");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let claims = v["claims"].as_array().expect("claims array");
    assert_eq!(claims.len(), CLAIMS.len());
    for (j, (id, want)) in claims.iter().zip(EXPECTED) {
        assert_eq!(j["id"], id);
        assert_eq!(j["verdict"], format!("{want:?}"), "{id}");
        assert_eq!(j["preset_loads"], true, "{id}");
    }
    let one = std::process::Command::new(bin)
        .args(["claims", "bcn-75"])
        .output()
        .expect("run the CLI");
    let text = String::from_utf8_lossy(&one.stdout);
    assert!(
        text.contains("bcn-75") && !text.contains("zero-4x"),
        "{text}"
    );
    let bad = std::process::Command::new(bin)
        .args(["claims", "no-such-claim"])
        .output()
        .expect("run the CLI");
    assert_eq!(bad.status.code(), Some(1));
}
