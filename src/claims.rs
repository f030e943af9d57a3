//! The seed article's quantitative claims, checked against the estimator (issue 8).
//!
//! Each [`Claim`] names the bundled preset that reproduces its scenario and a check that computes,
//! live, what the estimator says — in general and, where the claim holds only in a narrower case,
//! under a stated condition. The verdict follows from one rule, [`Claimed::agrees`] and
//! [`verdict`]: nothing here is typed in but the article's own figures and the conditions' wording.
//! The audit behind the reasons is `../shared/reference/formulas-hardware-sources.md` §4.

mod checks;
mod checks_arch;
mod checks_more;
mod checks_opt;
mod list;

use serde::Serialize;

pub use list::CLAIMS;

/// How far a computed figure may be from the claimed one and still agree: 10 %.
pub const TOLERANCE: f64 = 0.10;

/// What a claim asserts, in a form a computed number can be held against.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Claimed {
    /// A figure: agrees within [`TOLERANCE`] of it.
    Figure(f64),
    /// A range: agrees inside [lo × (1 − tol), hi × (1 + tol)].
    Range(f64, f64),
    /// An upper bound ("under 512 MB"): agrees at or below it.
    AtMost(f64),
    /// A lower bound ("reaches 70 %"): agrees at or above it.
    AtLeast(f64),
    /// A trend factor (a ratio; > 1 grows, < 1 falls): agrees when the computed ratio moves the same
    /// way by more than the tolerance and lies within the same order of magnitude (within half a
    /// decade, a factor √10, of the claimed factor).
    Trend(f64),
}

impl Claimed {
    /// The one definition of "agrees".
    pub fn agrees(self, computed: f64) -> bool {
        if !computed.is_finite() {
            return false;
        }
        let t = TOLERANCE;
        match self {
            Claimed::Figure(x) => (computed - x).abs() <= t * x.abs(),
            Claimed::Range(lo, hi) => computed >= lo * (1.0 - t) && computed <= hi * (1.0 + t),
            Claimed::AtMost(x) => computed <= x,
            Claimed::AtLeast(x) => computed >= x,
            Claimed::Trend(x) => {
                let same_way = (x > 1.0 && computed > 1.0 + t) || (x < 1.0 && computed < 1.0 - t);
                same_way && computed > 0.0 && (computed / x).log10().abs() <= 0.5
            }
        }
    }
}

/// A claim's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// The general case agrees.
    Agrees,
    /// Only the stated condition agrees.
    AgreesUnderConditions,
    /// Neither does.
    Disagrees,
}

impl Verdict {
    pub const fn label(self) -> &'static str {
        match self {
            Verdict::Agrees => "agrees",
            Verdict::AgreesUnderConditions => "agrees under conditions",
            Verdict::Disagrees => "disagrees",
        }
    }
}

/// The verdict rule: the general case first, then the stated condition.
pub fn verdict(claimed: Claimed, general: Option<f64>, conditional: Option<f64>) -> Verdict {
    if general.is_some_and(|g| claimed.agrees(g)) {
        Verdict::Agrees
    } else if conditional.is_some_and(|c| claimed.agrees(c)) {
        Verdict::AgreesUnderConditions
    } else {
        Verdict::Disagrees
    }
}

/// How a claim's numbers are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Shown {
    /// A share in [0, 1] shown as a percentage.
    Percent,
    /// A ratio shown as "3.1×".
    Factor,
    /// Bytes shown in GB (10^9, as the article writes them).
    Gb,
    /// GB/s.
    GbPerS,
    /// A plain number (an exponent).
    Plain,
}

impl Shown {
    pub fn format(self, x: f64) -> String {
        use crate::units::fmt_sig;
        match self {
            Shown::Percent => format!("{} %", fmt_sig(100.0 * x)),
            Shown::Factor => format!("{}×", fmt_sig(x)),
            Shown::Gb => format!("{} GB", fmt_sig(x / 1e9)),
            Shown::GbPerS => format!("{} GB/s", fmt_sig(x)),
            Shown::Plain => fmt_sig(x),
        }
    }
}

/// A claim of the article, as data.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Claim {
    /// Stable id, e.g. `amp-40`.
    pub id: &'static str,
    /// Article section, e.g. "§1.2".
    pub section: &'static str,
    /// The claim in English.
    pub text: &'static str,
    /// The article's words.
    pub quote: &'static str,
    /// Bundled preset that reproduces the claim's scenario (`vram-explorer presets`).
    pub preset: &'static str,
    /// What the computed number is.
    pub computed_what: &'static str,
    /// The case that agrees when the general one does not (empty: none is computed).
    pub condition: &'static str,
    /// The evidence behind the verdict, with its source.
    pub source: &'static str,
    pub shown: Shown,
    #[serde(skip)]
    pub check: fn() -> Check,
}

/// What a check computes.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub claimed: Claimed,
    /// The general case (`None`: not computable, e.g. a preset failed to load).
    pub general: Option<f64>,
    /// The case under [`Claim::condition`].
    pub conditional: Option<f64>,
    /// Supporting figures in words (computed).
    pub detail: String,
}

/// A checked claim: the claim, what was computed, and the verdict with its reason.
#[derive(Clone, Debug, Serialize)]
pub struct ClaimResult {
    pub claim: &'static Claim,
    /// Whether the claim's preset loads (a test requires it).
    pub preset_loads: bool,
    pub claimed: Claimed,
    pub general: Option<f64>,
    pub conditional: Option<f64>,
    pub verdict: Verdict,
    /// Why, generated from the numbers and the rule.
    pub reason: String,
    pub detail: String,
}

/// Runs one claim's check.
pub fn check(claim: &'static Claim) -> ClaimResult {
    let c = (claim.check)();
    let verdict = verdict(c.claimed, c.general, c.conditional);
    ClaimResult {
        claim,
        preset_loads: crate::presets::bundled_scenario(claim.preset).is_some(),
        claimed: c.claimed,
        general: c.general,
        conditional: c.conditional,
        verdict,
        reason: reason(claim, &c, verdict),
        detail: c.detail,
    }
}

/// Every claim checked, in article order. Recomputed on each call (tens of estimates).
pub fn check_all() -> Vec<ClaimResult> {
    CLAIMS.iter().map(check).collect()
}

/// The claimed figure in words.
pub fn claimed_text(claimed: Claimed, shown: Shown) -> String {
    match claimed {
        Claimed::Figure(x) => shown.format(x),
        Claimed::Range(a, b) => format!("{} – {}", shown.format(a), shown.format(b)),
        Claimed::AtMost(x) => format!("≤ {}", shown.format(x)),
        Claimed::AtLeast(x) => format!("≥ {}", shown.format(x)),
        Claimed::Trend(x) => format!("trend {}", Shown::Factor.format(x)),
    }
}

fn reason(claim: &Claim, c: &Check, v: Verdict) -> String {
    let f = |x: Option<f64>| x.map_or_else(|| "unknown".to_owned(), |x| claim.shown.format(x));
    let claimed = claimed_text(c.claimed, claim.shown);
    let rule = match c.claimed {
        Claimed::Trend(_) => "same direction and order of magnitude",
        Claimed::Figure(_) | Claimed::Range(..) => "within 10 %",
        Claimed::AtMost(_) | Claimed::AtLeast(_) => "on the claimed side of the bound",
    };
    let head = match v {
        Verdict::Agrees => format!("Computed {} against {claimed} ({rule}).", f(c.general)),
        Verdict::AgreesUnderConditions => format!(
            "Computed {} in general, but {} {} ({rule} of {claimed}).",
            f(c.general),
            f(c.conditional),
            claim.condition
        ),
        Verdict::Disagrees if claim.condition.is_empty() || c.conditional.is_none() => {
            format!("Computed {} against {claimed}: not {rule}.", f(c.general))
        }
        Verdict::Disagrees => format!(
            "Computed {} in general and {} {}, against {claimed}: neither is {rule}.",
            f(c.general),
            f(c.conditional),
            claim.condition
        ),
    };
    format!("{head} {}", claim.source)
}
