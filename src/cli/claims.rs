//! `vram-explorer claims`: the seed article's claims, each with what the estimator computes and a
//! verdict (the same table as the app's Claims window, both from `crate::claims`).

use std::fmt::Write;

use serde_json::{Value, json};

use crate::claims::{ClaimResult, Claimed, TOLERANCE, check_all, claimed_text};

/// The claims as text (or JSON), optionally only one by id.
pub fn run(json: bool, only: Option<&str>) -> Result<String, String> {
    let results: Vec<ClaimResult> = check_all()
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.claim.id.eq_ignore_ascii_case(id)))
        .collect();
    if results.is_empty() {
        let ids: Vec<&str> = crate::claims::CLAIMS.iter().map(|c| c.id).collect();
        return Err(format!(
            "no claim is called \"{}\" (try one of: {})",
            only.unwrap_or_default(),
            ids.join(", ")
        ));
    }
    Ok(if json {
        to_json(&results)
    } else {
        to_text(&results)
    })
}

fn to_text(results: &[ClaimResult]) -> String {
    let mut out = format!(
        "The seed article's claims, checked by the estimator (agrees = within {:.0} % of a figure, \
         or the same direction and order of magnitude for a trend)\n",
        TOLERANCE * 100.0
    );
    for r in results {
        let c = r.claim;
        let shown = |x: Option<f64>| x.map_or_else(|| "unknown".to_owned(), |x| c.shown.format(x));
        let _ = writeln!(
            out,
            "\n[{}] {} {}",
            r.verdict.label().to_uppercase(),
            c.section,
            c.id
        );
        let _ = writeln!(out, "  claim:    {}", c.text);
        let _ = writeln!(out, "  original: {}", c.quote);
        let _ = writeln!(out, "  claimed:  {}", claimed_text(r.claimed, c.shown));
        let _ = writeln!(
            out,
            "  computed: {} = {}",
            c.computed_what,
            shown(r.general)
        );
        if !c.condition.is_empty() {
            let _ = writeln!(out, "            {}: {}", c.condition, shown(r.conditional));
        }
        if !r.detail.is_empty() {
            let _ = writeln!(out, "  detail:   {}", r.detail);
        }
        let _ = writeln!(out, "  why:      {}", r.reason);
        let _ = writeln!(
            out,
            "  preset:   {} (vram-explorer report --preset {})",
            c.preset, c.preset
        );
    }
    out
}

fn claimed_json(c: Claimed) -> Value {
    match c {
        Claimed::Figure(x) => json!({"kind": "figure", "value": x}),
        Claimed::Range(a, b) => json!({"kind": "range", "low": a, "high": b}),
        Claimed::AtMost(x) => json!({"kind": "at_most", "value": x}),
        Claimed::AtLeast(x) => json!({"kind": "at_least", "value": x}),
        Claimed::Trend(x) => json!({"kind": "trend", "factor": x}),
    }
}

fn to_json(results: &[ClaimResult]) -> String {
    let claims: Vec<Value> = results
        .iter()
        .map(|r| {
            let c = r.claim;
            json!({
                "id": c.id,
                "section": c.section,
                "text": c.text,
                "quote": c.quote,
                "preset": c.preset,
                "preset_loads": r.preset_loads,
                "claimed": claimed_json(r.claimed),
                "computed_what": c.computed_what,
                "computed": r.general,
                "condition": c.condition,
                "computed_under_condition": r.conditional,
                "verdict": format!("{:?}", r.verdict),
                "reason": r.reason,
                "detail": r.detail,
                "source": c.source,
            })
        })
        .collect();
    let v = json!({ "tolerance": TOLERANCE, "claims": claims });
    serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
}
