//! One layer run per layer → the scenario's run-length pattern (`scenario::blocks`): equal
//! neighbours merge into a run, and a repeating group of runs becomes one part with a repeat count
//! (Gemma 3 27B: `10 × [5 × local, 1 × global]`, then `[2 × local]`).

use crate::scenario::{LayerRun, PatternPart};

/// Longest group of runs searched for repeats (a period of up to 16 distinct runs).
const MAX_PERIOD: usize = 16;

/// The pattern of `layers` (each of count 1, or any counts): empty for no layers.
pub(super) fn compress(layers: &[LayerRun]) -> Vec<PatternPart> {
    let runs = merge_runs(layers);
    let mut parts: Vec<PatternPart> = Vec::new();
    let mut i = 0;
    while i < runs.len() {
        let (period, repeat) = best_period(&runs[i..]);
        let group = runs[i..i + period].to_vec();
        if repeat == 1 {
            // Joins the previous unrepeated part rather than starting a new one.
            if let Some(last) = parts.last_mut().filter(|p| p.repeat == 1) {
                last.layers.extend(group);
            } else {
                parts.push(PatternPart {
                    repeat: 1,
                    layers: group,
                });
            }
        } else {
            parts.push(PatternPart {
                repeat: repeat as u32,
                layers: group,
            });
        }
        i += period * repeat;
    }
    parts
}

fn merge_runs(layers: &[LayerRun]) -> Vec<LayerRun> {
    let mut runs: Vec<LayerRun> = Vec::new();
    for l in layers {
        match runs.last_mut() {
            Some(last) if same(last, l) => last.count = last.count.saturating_add(l.count),
            _ => runs.push(l.clone()),
        }
    }
    runs
}

fn same(a: &LayerRun, b: &LayerRun) -> bool {
    a.mixer == b.mixer && a.mlp == b.mlp && a.norms == b.norms
}

/// The period (in runs) whose repeats from the start cover the most runs; (1, 1) when nothing
/// repeats.
fn best_period(runs: &[LayerRun]) -> (usize, usize) {
    let mut best = (1, 1);
    for p in 1..=MAX_PERIOD.min(runs.len() / 2) {
        let mut k = 1;
        while (k + 1) * p <= runs.len() && runs[k * p..(k + 1) * p] == runs[..p] {
            k += 1;
        }
        if k >= 2 && k * p > best.0 * best.1 {
            best = (p, k);
        }
    }
    best
}
