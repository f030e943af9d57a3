//! "Make it fit": for a scenario that does not fit, search precision, optimizer, ZeRO stage, offload,
//! checkpointing, the TP × PP × DP layout within a GPU budget and the micro-batch (accumulation keeping
//! the global batch), and return the few fitting combinations with the shortest estimated step time.
//!
//! Ranking is by cost per token — GPU-seconds per step (step time × GPUs; the global batch, hence
//! the tokens per step, is kept) — with a small penalty per changed knob ([`CHANGE_PENALTY`]), and
//! the fastest fitting suggestion is always listed too (issue 13: a 512-GPU pipeline used to come
//! first, ahead of an 8-GPU offload ~35× cheaper per step). A suggestion is dropped only when
//! another is as fast, as cheap, and changes a strict subset of its knobs.
//!
//! The search is a depth-first walk over the axes in [`Axis::ALL`] order. Each axis lists its options
//! from the cheapest (in step time) to the most memory-saving. At every node two estimates bound the
//! subtree: the cheapest completion (if it fits, every costlier option on the remaining axes is
//! dominated and is not tried; if its step time is already worse than the current top few, the subtree
//! is skipped) and the most memory-saving completion (if even that does not fit, nothing below does).
//! The micro-batch, the last axis, is bisected. Step times are assumed not to fall as an option saves
//! more memory (recomputation, sharding, offload and quantised states all add work or traffic).

use super::axes::{Axis, Space};
use super::describe::describe;
use super::space::{List, Setting};
use super::{Probe, probe};
use crate::estimator::estimate;
use crate::scenario::Scenario;
use crate::units::Bytes;

/// How far the search may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitOptions {
    /// GPUs the layout may use in total (TP × PP × DP); 0 = the scenario's own count.
    pub max_gpus: u32,
    /// How many suggestions to return (at most [`MAX_SUGGESTIONS`]).
    pub top: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            max_gpus: 0,
            top: 5,
        }
    }
}

pub const MAX_SUGGESTIONS: usize = 8;

/// One way to make the scenario fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    /// The full scenario to apply.
    pub scenario: Scenario,
    /// What changes, one line per knob ("ZeRO stage: none → 3").
    pub changes: Vec<String>,
    /// What each change costs (time, GPUs, quality), with sources.
    pub costs: Vec<String>,
    pub step_time_s: f64,
    /// GPU-seconds per step (step time × GPUs): cost per token up to the price per GPU-hour and
    /// the tokens per step, which every suggestion shares.
    pub gpu_seconds: f64,
    /// The ranking key: GPU-seconds per step × (1 + [`CHANGE_PENALTY`] × knobs changed).
    pub rank: f64,
    /// Capacity minus the per-GPU total (≥ 0: it fits).
    pub headroom: Bytes,
    pub gpus: u64,
}

/// The answer of [`make_it_fit`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FitResult {
    /// The scenario fits as it is: nothing to suggest.
    pub already_fits: bool,
    /// Best first (by [`Suggestion::rank`]).
    pub suggestions: Vec<Suggestion>,
    /// Estimates the search ran.
    pub estimates: u32,
    /// The GPU budget searched.
    pub budget_gpus: u64,
    /// The search stopped at [`MAX_ESTIMATES`]: the suggestions are the best found until then.
    pub stopped_early: bool,
}

/// Estimates one search may run (a bound on its time: 1,500 × ~1 µs per estimate and search step,
/// within the 5 ms budget of issue 7). Searches of the random scenarios of `tests/random_fit.rs`
/// need at most ~800 but for rare ones where every strategy fits only at a small micro-batch, so
/// that nothing prunes (one needed 4,674).
pub const MAX_ESTIMATES: u32 = 1500;

/// Runs the search with the estimator.
pub fn make_it_fit(s: &Scenario, opts: FitOptions) -> FitResult {
    make_it_fit_with(s, opts, |sc| probe(&estimate(sc)))
}

/// Runs the search with any evaluation (tests drive it with synthetic memory models).
pub fn make_it_fit_with<F: FnMut(&Scenario) -> Probe>(
    s: &Scenario,
    opts: FitOptions,
    eval: F,
) -> FitResult {
    let budget = if opts.max_gpus == 0 {
        s.parallel.gpus().max(1)
    } else {
        u64::from(opts.max_gpus)
    };
    // The scenario itself first: when it fits, the space is never built.
    let mut eval = eval;
    let own = eval(s);
    if own.fits {
        return FitResult {
            already_fits: true,
            suggestions: Vec::new(),
            estimates: 1,
            budget_gpus: budget,
            stopped_early: false,
        };
    }
    let space = Space::new(s, budget);
    let mut memo = [None; MEMO];
    if let Some(slot) = memo.first_mut() {
        *slot = Some((space.base, own));
    }
    let mut search = Search {
        space,
        scratch: s.clone(),
        eval,
        top: [None; MAX_SUGGESTIONS],
        fastest: None,
        keep: opts.top.clamp(1, MAX_SUGGESTIONS),
        memo,
        memo_next: 1,
        estimates: 1,
    };
    let root = search.space.base;
    search.node(root, 0);
    let base_time = own.step_time_s;
    let mut suggestions = Vec::with_capacity(search.keep);
    for entry in search.listed().iter().flatten() {
        let mut scenario = s.clone();
        entry.setting.apply(&mut scenario, s);
        let (changes, costs) = describe(s, &scenario, base_time, entry.probe.step_time_s);
        suggestions.push(Suggestion {
            gpus: scenario.parallel.gpus(),
            scenario,
            changes,
            costs,
            step_time_s: entry.probe.step_time_s,
            gpu_seconds: entry.gpu_seconds(),
            rank: entry.rank(),
            headroom: Bytes(-entry.probe.excess),
        });
    }
    FitResult {
        already_fits: false,
        suggestions,
        estimates: search.estimates,
        budget_gpus: budget,
        stopped_early: search.estimates >= MAX_ESTIMATES,
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    setting: Setting,
    probe: Probe,
    /// [`Setting::change_mask`] against the scenario.
    mask: u8,
}

/// GPUs of a setting's layout.
fn gpus_of(st: &Setting) -> f64 {
    f64::from(st.tp.max(1)) * f64::from(st.pp.max(1)) * f64::from(st.dp.max(1))
}

/// Rank penalty per changed knob: suggestions within a few per cent of each other in step time are
/// listed fewest-changes first (an editorial choice: each change is a risk the time model ignores).
pub const CHANGE_PENALTY: f64 = 0.02;

impl Entry {
    fn penalty(&self) -> f64 {
        1.0 + CHANGE_PENALTY * f64::from(self.mask.count_ones())
    }
    fn gpu_seconds(&self) -> f64 {
        self.probe.step_time_s * gpus_of(&self.setting)
    }
    /// Cost rank: GPU-seconds per step with the change penalty.
    fn rank(&self) -> f64 {
        self.gpu_seconds() * self.penalty()
    }
    /// Time rank: step time with the change penalty.
    fn time_rank(&self) -> f64 {
        self.probe.step_time_s * self.penalty()
    }
    /// As fast or faster and as cheap or cheaper with a strict subset of the other's changes.
    fn dominates(&self, other: &Entry) -> bool {
        self.probe.step_time_s <= other.probe.step_time_s
            && self.gpu_seconds() <= other.gpu_seconds()
            && self.mask & !other.mask == 0
            && self.mask != other.mask
    }
}

const MEMO: usize = 16;

struct Search<'a, F> {
    space: Space<'a>,
    scratch: Scenario,
    eval: F,
    /// Best first by cost rank.
    top: [Option<Entry>; MAX_SUGGESTIONS],
    /// The best by time rank (listed even when it is not among the cheapest).
    fastest: Option<Entry>,
    keep: usize,
    /// Recent evaluations: a node's cheapest completion is its first child's.
    memo: [Option<(Setting, Probe)>; MEMO],
    memo_next: usize,
    estimates: u32,
}

impl<F: FnMut(&Scenario) -> Probe> Search<'_, F> {
    fn probe(&mut self, st: &Setting) -> Probe {
        if let Some((_, p)) = self.memo.iter().flatten().find(|(s, _)| s == st) {
            return *p;
        }
        if self.estimates >= MAX_ESTIMATES {
            // Out of budget: nothing more fits, so every open subtree closes at once.
            return Probe {
                excess: f64::MAX,
                fits: false,
                step_time_s: f64::MAX,
            };
        }
        st.apply(&mut self.scratch, self.space.orig);
        self.estimates += 1;
        let p = (self.eval)(&self.scratch);
        if let Some(slot) = self.memo.get_mut(self.memo_next % MEMO) {
            *slot = Some((*st, p));
        }
        self.memo_next += 1;
        p
    }

    /// The worst rank among the kept suggestions once the list is full.
    fn bound(&self) -> f64 {
        let kept = self.top.iter().take(self.keep).flatten().count();
        if kept < self.keep {
            return f64::INFINITY;
        }
        self.top
            .iter()
            .take(self.keep)
            .flatten()
            .map(Entry::rank)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The best time rank found so far (infinite before the first fit).
    fn time_bound(&self) -> f64 {
        self.fastest.map_or(f64::INFINITY, |e| e.time_rank())
    }

    /// The suggestions to return: the cheapest few, the last replaced by the fastest when it is not
    /// among them (its cost rank is then no better than the one it replaces: still sorted).
    fn listed(&self) -> [Option<Entry>; MAX_SUGGESTIONS] {
        let mut out = [None; MAX_SUGGESTIONS];
        for (slot, e) in out.iter_mut().zip(self.top.iter().take(self.keep)) {
            *slot = *e;
        }
        let Some(fast) = self.fastest else {
            return out;
        };
        if out.iter().flatten().any(|e| e.setting == fast.setting) {
            return out;
        }
        let n = out.iter().flatten().count();
        let at = if n < self.keep { n } else { self.keep - 1 };
        if let Some(slot) = out.get_mut(at) {
            *slot = Some(fast);
        }
        out
    }

    /// Keeps `setting` if it ranks among the best few and no kept suggestion dominates it (as fast or
    /// faster with a strict subset of its changes); drops the kept ones it dominates.
    fn record(&mut self, setting: Setting, probe: Probe) {
        let new = Entry {
            setting,
            probe,
            mask: setting.change_mask(&self.space.base),
        };
        if new.time_rank() < self.time_bound() {
            self.fastest = Some(new);
        }
        let top = self.top.iter().flatten();
        if top
            .clone()
            .any(|e| e.setting == setting || e.dominates(&new))
        {
            return;
        }
        let mut kept = [None; MAX_SUGGESTIONS];
        for (slot, e) in kept.iter_mut().zip(top.filter(|e| !new.dominates(e))) {
            *slot = Some(*e);
        }
        self.top = kept;
        let pos = self
            .top
            .iter()
            .take(self.keep)
            .position(|e| e.is_none_or(|e| new.rank() < e.rank()));
        let Some(pos) = pos else { return };
        let mut carry = Some(new);
        for slot in self.top.iter_mut().take(self.keep).skip(pos) {
            carry = std::mem::replace(slot, carry);
        }
    }

    /// `st` with every axis from `depth` on set to its first (cheapest) or last (most saving) option.
    fn complete(&self, mut st: Setting, depth: usize, cheapest: bool) -> Setting {
        for &axis in Axis::ALL.iter().skip(depth) {
            if let Some(p) = self.space.extreme(&st, axis, cheapest) {
                st = p;
            }
        }
        st
    }

    /// Explores the subtree where the axes before `depth` are fixed. Returns whether its cheapest
    /// completion fits (so costlier options of the parent axis are dominated).
    fn node(&mut self, st: Setting, depth: usize) -> bool {
        let Some(&axis) = Axis::ALL.get(depth) else {
            return false;
        };
        if self.estimates >= MAX_ESTIMATES {
            return false;
        }
        if !axis.ordered() {
            // Unordered options bound nothing about each other: visit each.
            for child in self.space.choices(&st, axis).iter() {
                self.node(child, depth + 1);
            }
            return false;
        }
        let cheap = self.complete(st, depth, true);
        let p = self.probe(&cheap);
        if p.fits {
            self.record(cheap, p);
            return true;
        }
        // Every leaf below is at least as slow as `cheap`, runs on its GPUs (the layout, the
        // outermost axis, is fixed below the root) and keeps the changes already fixed on the axes
        // above, so its time and cost ranks are at least these.
        let fixed = Axis::ALL.iter().take(depth).fold(0u8, |m, a| m | a.bit());
        let changed = st.change_mask(&self.space.base) & fixed;
        let floor = p.step_time_s * (1.0 + CHANGE_PENALTY * f64::from(changed.count_ones()));
        if floor * gpus_of(&cheap) > self.bound() && floor > self.time_bound() {
            return false;
        }
        let most = self.complete(st, depth, false);
        if !self.probe(&most).fits {
            return false;
        }
        let options = self.space.choices(&st, axis);
        if axis == Axis::MicroBatch {
            self.bisect_micro(&options);
            return false;
        }
        for child in options.iter() {
            if self.node(child, depth + 1) {
                break;
            }
        }
        false
    }

    /// Options are ordered by falling memory; the first fails and the last fits (checked by `node`).
    fn bisect_micro(&mut self, options: &List<Setting, 64>) {
        let mut items = [None; 64];
        let mut n = 0usize;
        for (slot, o) in items.iter_mut().zip(options.iter()) {
            *slot = Some(o);
            n += 1;
        }
        let (mut bad, mut good) = (0usize, n.saturating_sub(1));
        while good > bad + 1 {
            let mid = bad + (good - bad) / 2;
            let Some(Some(st)) = items.get(mid).copied() else {
                break;
            };
            if self.probe(&st).fits {
                good = mid;
            } else {
                bad = mid;
            }
        }
        if let Some(Some(st)) = items.get(good).copied() {
            let p = self.probe(&st);
            if p.fits {
                self.record(st, p);
            }
        }
    }
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
