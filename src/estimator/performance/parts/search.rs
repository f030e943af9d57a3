//! The best training layout for a GPU budget and a global batch (issue 13 item 4): every
//! combination of TP, PP, virtual stages (where the interleaved schedule runs: the step's
//! micro-batches a multiple of PP), micro-batch, sequence parallelism, recomputation,
//! ZeRO stage (0–3), optimizer offload to the host, for a mixture of experts the expert-parallel
//! degree and, from 32K tokens, context parallelism (`context_parallel::cp_degrees`), with DP
//! taking the rest of the budget; each is estimated (memory and the parts model) and the fastest
//! that fit are kept, with the Pareto front of step time against GPUs.
//!
//! ZeRO-2/3 and offload only where they change what fits: ZeRO-2 is tried when ZeRO-1 does not
//! fit (it moves the same bytes, ZeRO §5.2, and more under accumulation, reduce-scattering every
//! micro-batch: never faster), ZeRO-3 when ZeRO-2 does not (1.5× the traffic, ZeRO §7, in every
//! micro-batch), and optimizer offload when the same layout without it does not fit (it adds host
//! traffic and a host optimizer step).
//!
//! Not searched (docs/time-model.md): the network tier of each parallel group (calculon's
//! per-group network choice — here TP stays inside a node and the rest is placed by rank
//! order), parameter and activation offload, NVMe targets, TP communication style and overlap
//! (the scenario's `timing.parts.tp_overlap`; sequence parallelism itself is searched), the CP style (the scenario's own), expert
//! tensor parallelism other than TP or 1 (a Megatron-Core mixture tries both; others keep the
//! scenario's `model.moe.etp`); DP is the largest
//! divisor of the batch the budget allows (fewer GPUs show up through other TP × PP products).

use crate::estimator::estimate;
use crate::estimator::memory::ctx::{expert_ranks, expert_tp_degree};
use crate::estimator::performance::comm::interleave_runs;
use crate::estimator::performance::context_parallel::cp_degrees;
use crate::scenario::{Checkpointing, Mode, OffloadTarget, Scenario, ZeroStage};

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
    /// Context-parallel degree (`parallel.cp`): searched from 32K tokens on.
    pub cp: u32,
    pub virtual_stages: u32,
    pub micro_batch: u32,
    pub accumulation: u32,
    pub sequence_parallel: bool,
    pub checkpointing: Checkpointing,
    pub zero: ZeroStage,
    /// Where the optimizer states live (`None` or the host).
    pub offload_optimizer: OffloadTarget,
    /// Expert-parallel degree (`model.moe.ep`; 1 for dense models).
    pub ep: u32,
    /// Expert tensor-parallel degree (`model.moe.etp`; 0 = TP, the default).
    pub etp: u32,
    pub gpus: u32,
    pub step_s: f64,
    pub mfu: f64,
    /// GPU-hours × price per token, in the scenario's currency per million tokens.
    pub cost_per_mtoken: f64,
}

impl Layout {
    /// Writes this layout into `s` (what the search estimates, and what "apply" in the window
    /// does): parallel degrees, virtual stages, sequence parallelism, micro-batch and
    /// accumulation, recomputation, ZeRO stage, optimizer offload and expert parallelism; the
    /// pipeline's micro-batch count follows the accumulation (`pp_microbatches` = 0).
    pub fn apply_to(&self, s: &mut Scenario) {
        let p = &mut s.parallel;
        (p.tp, p.pp, p.dp, p.pp_interleave) = (self.tp, self.pp, self.dp, self.virtual_stages);
        p.sequence_parallel = self.sequence_parallel;
        p.cp = self.cp;
        p.pp_microbatches = 0;
        s.workload.micro_batch = self.micro_batch;
        s.workload.grad_accum_steps = self.accumulation;
        s.strategies.checkpointing = self.checkpointing;
        s.strategies.zero = self.zero;
        s.strategies.offload_optimizer = self.offload_optimizer;
        s.model.moe.ep = self.ep;
        s.model.moe.etp = self.etp;
    }

    /// Whether `s` already runs this layout: the fields [`apply_to`](Self::apply_to) writes hold
    /// its values (read each frame by the window: compared in place, no copy of the scenario).
    pub fn is_applied_in(&self, s: &Scenario) -> bool {
        let p = &s.parallel;
        (p.tp, p.pp, p.dp, p.pp_interleave) == (self.tp, self.pp, self.dp, self.virtual_stages)
            && p.sequence_parallel == self.sequence_parallel
            && p.cp == self.cp
            && p.pp_microbatches == 0
            && s.workload.micro_batch == self.micro_batch
            && s.workload.grad_accum_steps == self.accumulation
            && s.strategies.checkpointing == self.checkpointing
            && s.strategies.zero == self.zero
            && s.strategies.offload_optimizer == self.offload_optimizer
            && s.model.moe.ep == self.ep
            && self.expert_tp() == expert_tp_degree(p.tp, s.model.moe.etp, true)
    }

    /// "TP 8 · PP 4 (v 2) · DP 16 · micro 1 × 8 · SP · selective recompute · ZeRO-1" (micro-batch
    /// size × accumulation steps; nothing said for no ZeRO, no offload, EP 1). The recomputation is
    /// always named ("no recompute" too): a row that drops the current scenario's checkpointing
    /// must not read like the current layout.
    pub fn summary(&self) -> String {
        let mut out = format!("TP {} · PP {}", self.tp, self.pp);
        if self.virtual_stages > 1 {
            out += &format!(" (v {})", self.virtual_stages);
        }
        if self.cp > 1 {
            out += &format!(" · CP {}", self.cp);
        }
        out += &format!(
            " · DP {} · micro {} × {}",
            self.dp, self.micro_batch, self.accumulation
        );
        if self.sequence_parallel {
            out += " · SP";
        }
        out += match self.checkpointing {
            Checkpointing::None => " · no recompute",
            Checkpointing::Selective => " · selective recompute",
            Checkpointing::Full => " · full recompute",
            Checkpointing::EveryK => " · every-k recompute",
            Checkpointing::PerOp => " · per-op recompute",
        };
        out += match self.zero {
            ZeroStage::None => "",
            ZeroStage::Stage1 => " · ZeRO-1",
            ZeroStage::Stage2 => " · ZeRO-2",
            ZeroStage::Stage3 => " · ZeRO-3",
        };
        if self.offload_optimizer != OffloadTarget::None {
            out += " · optimizer offload";
        }
        if self.ep > 1 {
            out += &format!(" · EP {}", self.ep);
        }
        if self.expert_tp() != self.tp.max(1) {
            out += &format!(" · expert TP {}", self.expert_tp());
        }
        out
    }

    /// The expert TP degree this layout runs: its `etp` where set and dividing its TP, else TP
    /// (`memory::ctx::expert_tp_degree`; the search writes 0 for a dense model).
    pub fn expert_tp(&self) -> u32 {
        expert_tp_degree(self.tp, self.etp, true)
    }
}

impl SearchOptions {
    /// The scenario's own budget: its GPU count (TP × PP × DP) and global batch (DP × micro-batch
    /// × accumulation), each replaced by a non-zero override.
    pub fn for_scenario(s: &Scenario, gpus: u32, global_batch: u32, top: usize) -> SearchOptions {
        let own_gpus = u32::try_from(s.parallel.gpus()).unwrap_or(u32::MAX);
        let own_batch = s
            .parallel
            .dp
            .max(1)
            .saturating_mul(s.workload.micro_batch.max(1))
            .saturating_mul(s.workload.grad_accum_steps.max(1));
        SearchOptions {
            gpus: if gpus == 0 { own_gpus } else { gpus },
            global_batch: if global_batch == 0 {
                own_batch
            } else {
                global_batch
            },
            top,
        }
    }
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
const ZERO: [ZeroStage; 4] = [
    ZeroStage::None,
    ZeroStage::Stage1,
    ZeroStage::Stage2,
    ZeroStage::Stage3,
];

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
        tp <= base.parallel.gpus_per_node.max(1) && base.tp_splits_attention(tp) && tp <= o.gpus
    }) {
        let pipelines = base.framework_pipelines();
        let pps = (1..=layers)
            .filter(|p| layers.is_multiple_of(*p) && tp * p <= o.gpus && (*p == 1 || pipelines));
        let room = |pp: u32| u64::from(o.gpus / (tp * pp));
        for (pp, cp) in pps.flat_map(|pp| cp_degrees(base, room(pp)).map(move |cp| (pp, cp))) {
            let Some(dp) = largest_divisor_at_most(o.global_batch, o.gpus / (tp * pp * cp)) else {
                continue;
            };
            let per_replica = o.global_batch / dp;
            for mb in MICRO.into_iter().filter(|m| per_replica.is_multiple_of(*m)) {
                // Interleaving only where it runs: the step's micro-batches a multiple of the
                // stages (`comm::interleave_runs`; Megatron-Core refuses the rest).
                let accumulation = per_replica / mb;
                for v in VIRTUAL.into_iter().filter(|&v| {
                    v == 1
                        || (pp > 1
                            && (layers / pp).is_multiple_of(v)
                            && interleave_runs(pp, accumulation))
                }) {
                    let frame = Layout {
                        tp,
                        pp,
                        dp,
                        cp,
                        virtual_stages: v,
                        micro_batch: mb,
                        accumulation,
                        sequence_parallel: false,
                        checkpointing: Checkpointing::None,
                        zero: ZeroStage::None,
                        offload_optimizer: OffloadTarget::None,
                        ep: 1,
                        etp: base.model.moe.etp,
                        gpus: tp * pp * dp * cp,
                        step_s: 0.0,
                        mfu: 0.0,
                        cost_per_mtoken: 0.0,
                    };
                    search_frame(base, &mut s, frame, &mut all, &mut out.evaluated);
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

/// Whether the search sets the expert TP setting rather than keeping the scenario's: 0 for a dense
/// model (where it has no effect), TP or 1 for a Megatron-Core mixture of experts.
pub fn searches_expert_tp(s: &Scenario) -> bool {
    s.model.moe.experts == 0 || s.implementation.profile == crate::scenario::Profile::Megatron
}

/// Expert tensor-parallel settings (`model.moe.etp`) to try at tensor-parallel degree `tp`: a
/// Megatron-Core mixture of experts at TP > 1 tries its experts split over TP (0, the default) and
/// whole on each rank (1, `--expert-tensor-parallel-size 1`, as DeepSeek-V3's recipe runs them),
/// at TP 1 the default; a dense model 0; a mixture under another profile keeps its own.
fn expert_tp_choices(s: &Scenario, tp: u32) -> impl Iterator<Item = u32> {
    let (first, second) = if !searches_expert_tp(s) {
        (s.model.moe.etp, None)
    } else if tp > 1 && s.model.moe.experts > 0 {
        (0, Some(1))
    } else {
        (0, None)
    };
    std::iter::once(first).chain(second)
}

/// Expert-parallel degrees for `dp` data-parallel ranks (DP × CP: context-parallel ranks hold the
/// same weights and join the expert groups, as in Megatron-Core's expert rank generator) at
/// tensor-parallel degree `tp` and expert TP setting `etp`: 1 for a dense model, else the powers
/// of two that divide both the experts and the ranks EP is carved out of, DP × CP × TP / ETP
/// (DP × CP at the default ETP = TP; `memory::ctx::expert_tp`).
fn expert_degrees(s: &Scenario, dp: u32, tp: u32, etp: u32) -> impl Iterator<Item = u32> {
    let experts = s.model.moe.experts;
    let etp = expert_tp_degree(tp, etp, true);
    let ranks = expert_ranks(f64::from(dp), f64::from(tp), f64::from(etp));
    let edp = ranks.min(f64::from(u32::MAX)) as u32;
    (0..16)
        .map(|k| 1u32 << k)
        .take_while(move |&e| e == 1 || (e <= experts && e <= edp))
        .filter(move |&e| e == 1 || (experts.is_multiple_of(e) && edp.is_multiple_of(e)))
}

/// Every sequence-parallel × recomputation × EP × ZeRO × offload choice of one frame (TP, PP, DP,
/// micro-batch, virtual stages): ZeRO-2/3 and offload only where the cheaper choice does not fit.
fn search_frame(
    base: &Scenario,
    s: &mut Scenario,
    frame: Layout,
    all: &mut Vec<Layout>,
    evaluated: &mut u32,
) {
    // Megatron-Core refuses a mixture of experts at TP > 1 without sequence parallelism.
    let needs_sp = frame.tp > 1 && base.megatron_moe_needs_sp();
    for sp in [false, true]
        .into_iter()
        .filter(|&sp| (!sp || frame.tp > 1) && (sp || !needs_sp))
    {
        for ck in RECOMPUTE {
            let expert_layouts = expert_tp_choices(base, frame.tp).flat_map(|etp| {
                expert_degrees(base, frame.dp.saturating_mul(frame.cp), frame.tp, etp)
                    .map(move |ep| (etp, ep))
            });
            for (etp, ep) in expert_layouts {
                let mut fitted = false;
                for zero in ZERO
                    .into_iter()
                    .filter(|&z| z == ZeroStage::None || frame.dp > 1)
                {
                    if fitted && matches!(zero, ZeroStage::Stage2 | ZeroStage::Stage3) {
                        break;
                    }
                    for offload in [OffloadTarget::None, OffloadTarget::Cpu] {
                        let l = Layout {
                            sequence_parallel: sp,
                            checkpointing: ck,
                            zero,
                            offload_optimizer: offload,
                            ep,
                            etp,
                            ..frame
                        };
                        *evaluated += 1;
                        if let Some(l) = evaluate(base, s, l) {
                            all.push(l);
                            // Only a fit without offload makes the larger stages pointless.
                            fitted |= offload == OffloadTarget::None;
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// `l` estimated on `s` (a scratch copy of `base`), with its time and cost, if it fits.
fn evaluate(base: &Scenario, s: &mut Scenario, mut l: Layout) -> Option<Layout> {
    l.apply_to(s);
    let e = estimate(s);
    if !e.memory.fits {
        return None;
    }
    let p = &e.performance;
    l.step_s = p.step.total_s;
    l.mfu = p.throughput.mfu;
    l.cost_per_mtoken = cost_per_mtoken(
        p.step.total_s,
        l.gpus,
        p.cost.tokens_per_step,
        base.timing.price_per_gpu_hour,
    );
    Some(l)
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
