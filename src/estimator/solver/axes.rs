//! The axes of the make-it-fit search and the options each offers a partial setting.

use super::space::{self, List, Setting};
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
}

/// What the options depend on: the scenario, its own setting and the GPU budget.
pub struct Space<'a> {
    pub orig: &'a Scenario,
    pub base: Setting,
    pub budget: u64,
}

impl Space<'_> {
    /// Every option of `axis` applied to `st`, cheapest first.
    pub fn choices(&self, st: &Setting, axis: Axis) -> List<Setting, 64> {
        let mut out = List::new();
        let s = self.orig;
        match axis {
            Axis::Layout => {
                for (tp, pp, dp) in layouts(s, self.budget).iter() {
                    let per_replica = self.per_replica(dp);
                    out.push(Setting {
                        tp,
                        pp,
                        dp,
                        micro_batch: per_replica,
                        grad_accum: 1,
                        ..*st
                    });
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
            Axis::MicroBatch => {
                if s.mode == Mode::Inference {
                    out.push(*st);
                } else {
                    let per_replica = self.per_replica(st.dp);
                    // Largest micro-batch (fewest accumulation steps) first.
                    let mut divs = [0u32; 64];
                    let mut n = 0;
                    for (slot, d) in divs.iter_mut().zip(space::divisors(per_replica).iter()) {
                        *slot = d;
                        n += 1;
                    }
                    for &m in divs.iter().take(n).rev() {
                        out.push(Setting {
                            micro_batch: m,
                            grad_accum: per_replica / m.max(1),
                            ..*st
                        });
                    }
                }
            }
        }
        out
    }

    /// Sequences per replica per optimizer step that keep the global batch.
    pub fn per_replica(&self, dp: u32) -> u32 {
        if self.orig.mode == Mode::Inference {
            return self.orig.workload.micro_batch;
        }
        let global = u64::from(self.base.micro_batch.max(1))
            * u64::from(self.base.grad_accum.max(1))
            * u64::from(self.base.dp.max(1));
        u32::try_from(global / u64::from(dp.max(1))).unwrap_or(u32::MAX)
    }
}

/// TP × PP × DP layouts within the budget: the scenario's own first, then TP over powers of two that
/// divide the heads (within a node), PP over powers of two up to the layers, and DP as large as the
/// global batch allows (training) or the scenario's own (inference).
fn layouts(s: &Scenario, budget: u64) -> List<(u32, u32, u32), 32> {
    let mut out = List::new();
    let p = &s.parallel;
    if p.gpus() <= budget {
        out.push((p.tp, p.pp, p.dp));
    }
    if s.model.family != ModelFamily::Transformer {
        return out;
    }
    let heads = s.model.transformer.heads.max(1);
    let layers = s.model.transformer.layers.max(1);
    let node = u64::from(p.gpus_per_node.max(1));
    let global = u64::from(s.workload.micro_batch.max(1))
        * u64::from(s.workload.grad_accum_steps.max(1))
        * u64::from(p.dp.max(1));
    let mut tp = 1u32;
    while u64::from(tp) <= budget.min(node) && tp <= heads {
        let mut pp = 1u32;
        while u64::from(tp) * u64::from(pp) <= budget && pp <= layers {
            let room = budget / (u64::from(tp) * u64::from(pp));
            let dp = match s.mode {
                Mode::Training => (1..=room.min(65_536))
                    .rev()
                    .find(|d| global.is_multiple_of(*d))
                    .unwrap_or(1),
                Mode::Inference => u64::from(p.dp.max(1)),
            };
            if heads.is_multiple_of(tp) && dp <= room {
                out.push((tp, pp, u32::try_from(dp).unwrap_or(1)));
            }
            pp *= 2;
        }
        tp *= 2;
    }
    out
}
