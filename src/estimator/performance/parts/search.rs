//! The best training layout for a GPU budget and a global batch (issue 13 item 4): every
//! combination of TP, PP, virtual stages, micro-batch, sequence parallelism, recomputation and
//! ZeRO stage, with DP taking the rest of the budget; each is estimated (memory and the parts
//! model) and the fastest that fit are kept, with the Pareto front of step time against GPUs.
//!
//! Not searched (docs/time-model.md): the network tier of each parallel group (calculon's
//! per-group network choice — here TP stays inside a node and the rest is placed by rank
//! order), offload targets, TP communication style (RS/AG vs all-reduce moves the same bytes
//! here), context and expert parallelism; DP is the largest divisor of the batch the budget
//! allows (fewer GPUs show up through other TP × PP products).

use crate::estimator::estimate;
use crate::scenario::{Checkpointing, Mode, Scenario, ZeroStage};

/// What to search for.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    /// GPUs available (TP × PP × DP ≤ this).
    pub gpus: u32,
    /// Sequences per optimizer step (DP × micro-batch × accumulation = this).
    pub global_batch: u32,
    /// Layouts to keep (fastest first).
    pub top: usize,
}

/// One layout and what it costs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub virtual_stages: u32,
    pub micro_batch: u32,
    pub accumulation: u32,
    pub sequence_parallel: bool,
    pub checkpointing: Checkpointing,
    pub zero: ZeroStage,
    pub gpus: u32,
    pub step_s: f64,
    pub mfu: f64,
    /// GPU-hours × price per token, in the scenario's currency per million tokens.
    pub cost_per_mtoken: f64,
}

/// The search's answer.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SearchResult {
    /// The fastest layouts that fit, fastest first.
    pub best: Vec<Layout>,
    /// Step time against GPUs: for each GPU count, the fastest layout, kept when no layout with
    /// fewer or equally many GPUs is faster.
    pub pareto: Vec<Layout>,
    /// Layouts estimated.
    pub evaluated: u32,
}

const TP: [u32; 4] = [1, 2, 4, 8];
const MICRO: [u32; 4] = [1, 2, 4, 8];
const VIRTUAL: [u32; 3] = [1, 2, 4];
const RECOMPUTE: [Checkpointing; 3] = [
    Checkpointing::None,
    Checkpointing::Selective,
    Checkpointing::Full,
];
const ZERO: [ZeroStage; 2] = [ZeroStage::None, ZeroStage::Stage1];

/// Searches the layouts of `base` (a transformer training scenario; its model, precision,
/// optimizer, GPU and timing are kept).
pub fn search(base: &Scenario, o: &SearchOptions) -> SearchResult {
    let mut out = SearchResult::default();
    if base.mode != Mode::Training || o.gpus == 0 || o.global_batch == 0 {
        return out;
    }
    let t = &base.model.transformer;
    let layers = t.layers.max(1);
    let mut all: Vec<Layout> = Vec::new();
    let mut s = base.clone();
    for tp in TP.into_iter().filter(|&tp| {
        tp <= base.parallel.gpus_per_node.max(1) && t.heads.is_multiple_of(tp) && tp <= o.gpus
    }) {
        for pp in (1..=layers).filter(|p| layers.is_multiple_of(*p) && tp * p <= o.gpus) {
            let Some(dp) = largest_divisor_at_most(o.global_batch, o.gpus / (tp * pp)) else {
                continue;
            };
            let per_replica = o.global_batch / dp;
            for mb in MICRO.into_iter().filter(|m| per_replica.is_multiple_of(*m)) {
                for v in VIRTUAL
                    .into_iter()
                    .filter(|&v| v == 1 || (pp > 1 && (layers / pp).is_multiple_of(v)))
                {
                    for sp in [false, true].into_iter().filter(|&sp| !sp || tp > 1) {
                        for ck in RECOMPUTE {
                            for zero in ZERO.into_iter().filter(|&z| z == ZeroStage::None || dp > 1)
                            {
                                let p = &mut s.parallel;
                                (p.tp, p.pp, p.dp, p.pp_interleave) = (tp, pp, dp, v);
                                p.sequence_parallel = sp;
                                p.pp_microbatches = 0;
                                s.workload.micro_batch = mb;
                                s.workload.grad_accum_steps = per_replica / mb;
                                s.strategies.checkpointing = ck;
                                s.strategies.zero = zero;
                                let e = estimate(&s);
                                out.evaluated += 1;
                                if !e.memory.fits {
                                    continue;
                                }
                                let p = &e.performance;
                                let gpus = tp * pp * dp;
                                all.push(Layout {
                                    tp,
                                    pp,
                                    dp,
                                    virtual_stages: v,
                                    micro_batch: mb,
                                    accumulation: per_replica / mb,
                                    sequence_parallel: sp,
                                    checkpointing: ck,
                                    zero,
                                    gpus,
                                    step_s: p.step.total_s,
                                    mfu: p.throughput.mfu,
                                    cost_per_mtoken: cost_per_mtoken(
                                        p.step.total_s,
                                        gpus,
                                        p.cost.tokens_per_step,
                                        base.timing.price_per_gpu_hour,
                                    ),
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    all.sort_by(|a, b| a.step_s.total_cmp(&b.step_s));
    out.pareto = pareto(&all);
    all.truncate(o.top.max(1));
    out.best = all;
    out
}

/// Price of a million tokens: step × GPUs × price per GPU-hour ÷ tokens per step.
fn cost_per_mtoken(step_s: f64, gpus: u32, tokens: f64, price: f64) -> f64 {
    if tokens > 0.0 {
        step_s * f64::from(gpus) * price / 3600.0 / tokens * 1e6
    } else {
        0.0
    }
}

/// The largest divisor of `n` that is ≤ `cap`.
fn largest_divisor_at_most(n: u32, cap: u32) -> Option<u32> {
    (1..=cap.min(n)).rev().find(|d| n.is_multiple_of(*d))
}

/// From layouts sorted by step time: the fastest at each GPU count that beats every layout with
/// fewer GPUs, by GPU count ascending.
fn pareto(sorted: &[Layout]) -> Vec<Layout> {
    let mut front: Vec<Layout> = Vec::new();
    for l in sorted {
        if front.iter().all(|f| f.gpus > l.gpus) {
            front.push(*l);
        }
    }
    front.sort_by_key(|l| l.gpus);
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_and_front() {
        assert_eq!(largest_divisor_at_most(2520, 641), Some(630));
        assert_eq!(largest_divisor_at_most(7, 3), Some(1));
        assert_eq!(largest_divisor_at_most(7, 0), None);
    }
}
