//! The axes of the make-it-fit search and the options each offers a partial setting.

use super::batch::{self, Factors};
use super::space::{self, List, Setting};
use crate::estimator::performance::context_parallel::cp_degrees;
use crate::scenario::{Mode, ModelFamily, Scenario};

/// The search axes, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    Layout,
    Precision,
    Optimizer,
    Zero,
    Offload,
    Checkpointing,
    MicroBatch,
}

impl Axis {
    pub const ALL: [Axis; 7] = [
        Axis::Layout,
        Axis::Precision,
        Axis::Optimizer,
        Axis::Zero,
        Axis::Offload,
        Axis::Checkpointing,
        Axis::MicroBatch,
    ];
    /// Whether options are ordered by cost, so a fully fitting option dominates the ones after it.
    /// Layouts are not (TP and DP trade differently), so every layout is visited.
    pub fn ordered(self) -> bool {
        self != Axis::Layout
    }
    /// This axis's bit in [`Setting::change_mask`].
    pub const fn bit(self) -> u8 {
        match self {
            Axis::Precision => 1,
            Axis::Optimizer => 1 << 1,
            Axis::Checkpointing => 1 << 2,
            Axis::Zero => 1 << 3,
            Axis::Offload => 1 << 4,
            Axis::Layout => 1 << 5,
            Axis::MicroBatch => 1 << 6,
        }
    }
}

/// The micro-batches valid for one data-parallel degree (see [`batch::micro_batches`]).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Batches {
    dp: u32,
    /// Sequences per replica per optimizer step.
    per_replica: u64,
    /// Ascending.
    micro: List<u32, 64>,
}

/// What the options depend on: the scenario, its own setting and the layouts within the GPU budget
/// with their valid micro-batches, computed once, here.
pub struct Space<'a> {
    pub orig: &'a Scenario,
    pub base: Setting,
    layouts: List<(u32, u32, u32, u32), 96>,
    batches: List<Batches, 33>,
}

impl<'a> Space<'a> {
    pub fn new(orig: &'a Scenario, budget: u64) -> Self {
        let global = global_factors(orig);
        let mut batches = List::new();
        let layouts = layouts(orig, budget, &global, |dp, micro| {
            batches.push(Batches {
                dp,
                per_replica: global.div(dp).map_or(0, |f| f.value()),
                micro,
            });
        });
        Space {
            orig,
            base: Setting::of(orig),
            layouts,
            batches,
        }
    }

    fn batches(&self, dp: u32) -> Option<Batches> {
        self.batches.iter().find(|b| b.dp == dp)
    }

    /// The first (cheapest) or last (most memory-saving) option of `axis` applied to `st`; what
    /// `choices(st, axis)` would start or end with, without listing the micro-batches.
    pub fn extreme(&self, st: &Setting, axis: Axis, cheapest: bool) -> Option<Setting> {
        fn pick<T: Copy + PartialEq, const N: usize>(l: List<T, N>, first: bool) -> Option<T> {
            if first { l.first() } else { l.last() }
        }
        let (s, st) = (self.orig, *st);
        match axis {
            Axis::Precision => {
                pick(space::precisions(s), cheapest).map(|precision| Setting { precision, ..st })
            }
            Axis::Optimizer => {
                pick(space::optimizers(s), cheapest).map(|optimizer| Setting { optimizer, ..st })
            }
            Axis::Zero => {
                pick(space::zero_stages(s, st.dp), cheapest).map(|zero| Setting { zero, ..st })
            }
            Axis::Offload => {
                pick(space::offloads(s, st.zero), cheapest).map(|offload| Setting { offload, ..st })
            }
            Axis::Checkpointing => {
                pick(space::checkpointings(s), cheapest).map(|checkpointing| Setting {
                    checkpointing,
                    ..st
                })
            }
            Axis::MicroBatch => match self.batches(st.dp) {
                Some(b) if s.mode == Mode::Training => {
                    // Ascending micro-batches: the largest is the cheapest.
                    pick(b.micro, !cheapest).map(|m| split(st, b.per_replica, m))
                }
                _ => Some(st),
            },
            Axis::Layout => pick(self.choices(&st, axis), cheapest),
        }
    }

    /// Every option of `axis` applied to `st`, cheapest first.
    pub fn choices(&self, st: &Setting, axis: Axis) -> List<Setting, 64> {
        let mut out = List::new();
        let s = self.orig;
        let training = s.mode == Mode::Training;
        match axis {
            Axis::Layout => {
                for (tp, pp, dp, cp) in self.layouts.iter() {
                    let layout = Setting {
                        tp,
                        pp,
                        dp,
                        cp,
                        ..*st
                    };
                    // Training: the largest valid micro-batch (the micro-batch axis refines it).
                    match self.batches(dp) {
                        Some(b) if training => {
                            if let Some(m) = b.micro.last() {
                                out.push(split(layout, b.per_replica, m));
                            }
                        }
                        _ => out.push(layout),
                    }
                }
            }
            Axis::Precision => {
                for precision in space::precisions(s).iter() {
                    out.push(Setting { precision, ..*st });
                }
            }
            Axis::Optimizer => {
                for optimizer in space::optimizers(s).iter() {
                    out.push(Setting { optimizer, ..*st });
                }
            }
            Axis::Zero => {
                for zero in space::zero_stages(s, st.dp).iter() {
                    out.push(Setting { zero, ..*st });
                }
            }
            Axis::Offload => {
                for offload in space::offloads(s, st.zero).iter() {
                    out.push(Setting { offload, ..*st });
                }
            }
            Axis::Checkpointing => {
                for checkpointing in space::checkpointings(s).iter() {
                    out.push(Setting {
                        checkpointing,
                        ..*st
                    });
                }
            }
            Axis::MicroBatch => match self.batches(st.dp) {
                Some(b) if training => {
                    // Largest micro-batch (fewest accumulation steps) first.
                    let mut micro = [0u32; 64];
                    let mut n = 0;
                    for (slot, m) in micro.iter_mut().zip(b.micro.iter()) {
                        *slot = m;
                        n += 1;
                    }
                    for &m in micro.iter().take(n).rev() {
                        out.push_distinct(split(*st, b.per_replica, m));
                    }
                }
                _ => out.push(*st),
            },
        }
        out
    }
}

/// `st` with `m` sequences per micro-batch and the accumulation that keeps `per_replica`.
fn split(st: Setting, per_replica: u64, m: u32) -> Setting {
    let accum = per_replica / u64::from(m.max(1));
    Setting {
        micro_batch: m,
        grad_accum: u32::try_from(accum).unwrap_or(u32::MAX),
        ..st
    }
}

/// The global batch (micro-batch × accumulation × DP) as prime factors (training; 1 in inference,
/// where the batch is not split).
fn global_factors(s: &Scenario) -> Factors {
    let mut f = Factors::one();
    if s.mode == Mode::Training {
        f.mul(s.workload.micro_batch.max(1));
        f.mul(s.workload.grad_accum_steps.max(1));
        f.mul(s.parallel.dp.max(1));
    }
    f
}

/// TP × PP × DP × CP layouts within the budget: the scenario's own first, then TP over powers of two
/// that divide the heads (within a node), PP over powers of two up to the layers, CP over
/// `performance::context_parallel::cp_degrees` (long sequences only), and DP the largest divisor of the global batch within the
/// room whose per-replica batch splits into a valid micro-batch × accumulation (training), or the
/// scenario's own (inference). `batches` is told each training DP once, with its valid micro-batches.
fn layouts(
    s: &Scenario,
    budget: u64,
    global: &Factors,
    mut batches: impl FnMut(u32, List<u32, 64>),
) -> List<(u32, u32, u32, u32), 96> {
    let mut out = List::new();
    let training = s.mode == Mode::Training;
    // Each DP is tried once (many TP × PP pairs share a room): (dp, has a valid split).
    let mut tried: List<(u32, bool), 64> = List::new();
    let mut tell = |dp: u32| -> bool {
        if let Some((_, ok)) = tried.iter().find(|(d, _)| *d == dp) {
            return ok;
        }
        let micro = global.div(dp).map(|f| batch::micro_batches(&f));
        let micro = micro.filter(|m| m.last().is_some());
        tried.push((dp, micro.is_some()));
        match micro {
            Some(m) => {
                batches(dp, m);
                true
            }
            None => false,
        }
    };
    let p = &s.parallel;
    if p.gpus() <= budget {
        if training {
            tell(p.dp);
        }
        out.push((p.tp, p.pp, p.dp, p.cp));
    }
    if s.model.family != ModelFamily::Transformer {
        return out;
    }
    let heads = s.model.transformer.heads.max(1);
    let layers = s.model.transformer.layers.max(1);
    let node = u64::from(p.gpus_per_node.max(1));
    let mut dps = [0u64; batch::DIVISORS];
    let n = global.divisors_upto(budget.min(batch::max_of("parallel.dp")), &mut dps);
    let dps = dps.get(..n).unwrap_or(&[]);
    let mut tp = 1u32;
    while u64::from(tp) <= budget.min(node) && tp <= heads && !out.is_full() {
        let mut pp = 1u32;
        while u64::from(tp) * u64::from(pp) <= budget
            && pp <= layers
            && (pp == 1 || s.framework_pipelines())
            && !out.is_full()
        {
            let room_tp_pp = budget / (u64::from(tp) * u64::from(pp));
            for cp in cp_degrees(s, room_tp_pp) {
                let room = room_tp_pp / u64::from(cp);
                let dp = if training {
                    dps.iter()
                        .rev()
                        .filter(|d| **d <= room)
                        .filter_map(|d| u32::try_from(*d).ok())
                        .find(|d| tell(*d))
                } else {
                    Some(p.dp.max(1)).filter(|d| u64::from(*d) <= room)
                };
                if let Some(dp) = dp.filter(|_| s.tp_splits_attention(tp)) {
                    out.push((tp, pp, dp, cp));
                }
            }
            pp *= 2;
        }
        tp *= 2;
    }
    out
}
