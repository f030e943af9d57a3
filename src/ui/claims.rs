//! The Claims window: the seed article's claims with what the estimator computes and a verdict
//! (`crate::claims`), each with a button that loads the preset reproducing it. No formulas here.
//! The article's Chinese quotes are copied, not drawn: the bundled fonts have no CJK glyphs.
//!
//! The table depends only on the code and the bundled presets, so it is computed once ([`results`])
//! and never goes stale within a run.

use std::sync::OnceLock;

use egui::{RichText, Ui};

use super::ThemeChoice;
use super::theme;
use crate::claims::{ClaimResult, TOLERANCE, Verdict, check_all, claimed_text};

/// Every claim checked, computed on first use.
pub fn results() -> &'static [ClaimResult] {
    static RESULTS: OnceLock<Vec<ClaimResult>> = OnceLock::new();
    RESULTS.get_or_init(check_all)
}

fn verdict_color(v: Verdict, t: ThemeChoice) -> egui::Color32 {
    match v {
        Verdict::Agrees => theme::good(t),
        Verdict::AgreesUnderConditions => theme::warning(t),
        Verdict::Disagrees => theme::bad(t),
    }
}

/// Lists the claims; returns the id of the preset to load when a "Load scenario" button is clicked.
pub fn claims_ui(ui: &mut Ui, claims: &[ClaimResult], t: ThemeChoice) -> Option<&'static str> {
    let mut load = None;
    ui.label(format!(
        "Each claim of the seed article, what the estimator computes for it, and a verdict. Agrees: \
         within {:.0} % of a figure, on the claimed side of a bound, or the same direction and order \
         of magnitude for a trend. Agrees under conditions: only in the stated case.",
        TOLERANCE * 100.0
    ));
    summary_ui(ui, claims, t);
    ui.separator();
    egui::ScrollArea::vertical()
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for r in claims {
                if claim_ui(ui, r, t) {
                    load = Some(r.claim.preset);
                }
                ui.separator();
            }
        });
    load
}

fn summary_ui(ui: &mut Ui, claims: &[ClaimResult], t: ThemeChoice) {
    ui.horizontal(|ui| {
        for v in [
            Verdict::Agrees,
            Verdict::AgreesUnderConditions,
            Verdict::Disagrees,
        ] {
            let n = claims.iter().filter(|r| r.verdict == v).count();
            ui.label(RichText::new(format!("{n} {}", v.label())).color(verdict_color(v, t)));
        }
    });
}

/// One claim; true when its "Load scenario" button was clicked.
fn claim_ui(ui: &mut Ui, r: &ClaimResult, t: ThemeChoice) -> bool {
    let c = r.claim;
    let shown = |x: Option<f64>| x.map_or_else(|| "unknown".to_owned(), |x| c.shown.format(x));
    let mut clicked = false;
    ui.horizontal_wrapped(|ui| {
        ui.label(
            RichText::new(r.verdict.label())
                .strong()
                .color(verdict_color(r.verdict, t)),
        );
        ui.label(RichText::new(format!("{} {}", c.section, c.text)).strong());
    });
    ui.label(format!(
        "Claimed: {}. Computed: {} = {}.",
        claimed_text(r.claimed, c.shown),
        c.computed_what,
        shown(r.general)
    ));
    if !c.condition.is_empty() {
        ui.label(format!(
            "Under a condition: {} = {}.",
            c.condition,
            shown(r.conditional)
        ));
    }
    if !r.detail.is_empty() {
        ui.label(RichText::new(&r.detail).small());
    }
    ui.label(&r.reason);
    ui.horizontal(|ui| {
        let label = if r.preset_loads {
            "Load scenario"
        } else {
            "Scenario missing"
        };
        let button = ui
            .add_enabled(r.preset_loads, egui::Button::new(label))
            .on_hover_text(format!("Load the bundled preset \"{}\"", c.preset));
        clicked = button.clicked();
        // The quote is Chinese and the app's fonts have no CJK glyphs: offer it as text to copy.
        if ui
            .button("Copy original quote")
            .on_hover_text("Copies the article's own words (Chinese) to the clipboard")
            .clicked()
        {
            ui.ctx().copy_text(c.quote.to_owned());
        }
        ui.label(RichText::new(c.preset).monospace().weak());
    });
    clicked
}
