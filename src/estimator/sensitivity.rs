//! Sensitivity ("tornado"): how much per-GPU memory and step time each knob changes when moved one
//! notch down and one notch up, everything else fixed.
//!
//! Numeric knobs move by a factor of two (the steps people try: batch 8 → 4 / 16); strategy knobs move
//! to the neighbouring option of a ladder ordered by the memory it keeps (ZeRO §5 for stages, Korthikanti
//! et al. 2022 Table 2 for checkpointing, ZeRO §3.1 for mixed-precision recipes). One scratch scenario
//! is reused for every estimate; the result is fixed-size.

use super::solver::{Target, step_time_s};
use super::{Diagnostics, Estimate, estimate, resolve};
use crate::scenario::{
    Axis, Checkpointing, Dtype, Mode, ModelFamily, OptimizerKind, PrecisionMode, Scenario,
    ShapeSource, ZeroStage,
};
use crate::units::Bytes;

/// A knob of the tornado, in display order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    MicroBatch,
    Context,
    /// Depth (layers) for dimension-given transformers, parameters otherwise.
    ModelSize,
    /// Hidden, FFN, heads and KV heads together (head size kept); transformers by dimensions only.
    Width,
    Precision,
    KvCache,
    Optimizer,
    Checkpointing,
    Zero,
    Tp,
    Pp,
    Dp,
}

impl Knob {
    pub const COUNT: usize = 12;
    pub const ALL: [Knob; Knob::COUNT] = [
        Knob::MicroBatch,
        Knob::Context,
        Knob::ModelSize,
        Knob::Width,
        Knob::Precision,
        Knob::KvCache,
        Knob::Optimizer,
        Knob::Checkpointing,
        Knob::Zero,
        Knob::Tp,
        Knob::Pp,
        Knob::Dp,
    ];

    pub const fn label(self) -> &'static str {
        match self {
            Knob::MicroBatch => "Batch",
            Knob::Context => "Sequence / context",
            Knob::ModelSize => "Model size",
            Knob::Width => "Width (hidden)",
            Knob::Precision => "Precision",
            Knob::KvCache => "KV cache type",
            Knob::Optimizer => "Optimizer",
            Knob::Checkpointing => "Checkpointing",
            Knob::Zero => "ZeRO stage",
            Knob::Tp => "Tensor parallel",
            Knob::Pp => "Pipeline parallel",
            Knob::Dp => "Data parallel",
        }
    }

    /// Moves the knob one notch (`up`: larger value / later ladder option). Returns false, leaving `s`
    /// unchanged, when there is no such notch for this scenario.
    pub fn step(self, s: &mut Scenario, up: bool) -> bool {
        let training = s.mode == Mode::Training;
        match self {
            Knob::MicroBatch => step_target(s, Target::MicroBatch, up),
            Knob::Context => step_target(s, Target::Context, up),
            Knob::ModelSize => step_target(s, Target::ModelSize, up),
            Knob::Tp => double(s, Axis::Tp, up),
            Knob::Pp => double(s, Axis::Pp, up),
            Knob::Dp => double(s, Axis::Dp, up),
            Knob::Width => step_width(s, up),
            Knob::Precision => step_precision(s, up),
            Knob::KvCache if !training => {
                let ladder = [Dtype::Fp8E4M3, Dtype::Bf16, Dtype::Fp32];
                let kv = &mut s.precision.kv_cache;
                let i = ladder.iter().position(|d| d.bits() == kv.bits());
                ladder_step(&ladder, i, up).map(|d| *kv = d).is_some()
            }
            Knob::Optimizer if training => {
                let ladder = [
                    OptimizerKind::Sgd,
                    OptimizerKind::Adafactor,
                    OptimizerKind::Adam8bit,
                    OptimizerKind::SgdMomentum,
                    OptimizerKind::AdamW,
                ];
                let k = &mut s.optimizer.kind;
                let own = if *k == OptimizerKind::Adam {
                    OptimizerKind::AdamW
                } else {
                    *k
                };
                let i = ladder.iter().position(|o| *o == own);
                ladder_step(&ladder, i, up).map(|o| *k = o).is_some()
            }
            Knob::Checkpointing if training => {
                let ladder = [
                    Checkpointing::None,
                    Checkpointing::Selective,
                    Checkpointing::EveryK,
                    Checkpointing::Full,
                ];
                let c = &mut s.strategies.checkpointing;
                let i = ladder.iter().position(|x| x == c);
                ladder_step(&ladder, i, up).map(|x| *c = x).is_some()
            }
            Knob::Zero if training => {
                let ladder = [
                    ZeroStage::None,
                    ZeroStage::Stage1,
                    ZeroStage::Stage2,
                    ZeroStage::Stage3,
                ];
                let z = &mut s.strategies.zero;
                let i = ladder.iter().position(|x| x == z);
                ladder_step(&ladder, i, up).map(|x| *z = x).is_some()
            }
            Knob::KvCache | Knob::Optimizer | Knob::Checkpointing | Knob::Zero => false,
        }
    }
}

fn ladder_step<T: Copy>(ladder: &[T], at: Option<usize>, up: bool) -> Option<T> {
    let i = at?;
    let j = if up {
        i.checked_add(1)?
    } else {
        i.checked_sub(1)?
    };
    ladder.get(j).copied()
}

/// Doubles or halves a parallel degree within its valid range ([`Axis::range`]); a pipeline has at
/// most one stage per layer.
fn double(s: &mut Scenario, axis: Axis, up: bool) -> bool {
    let (lo, mut hi) = axis.range(s);
    if axis == Axis::Pp {
        // At most one stage per layer of the model as resolved (a parameter-count shape has its
        // own depth).
        let layers = super::model::resolve(&s.model, &mut Diagnostics::default()).layers;
        hi = hi.min(f64::from(layers.max(1)));
    }
    let v = axis.get(s);
    let next = if up { v * 2.0 } else { (v / 2.0).floor() };
    if next < lo || next > hi || next == v {
        return false;
    }
    axis.set(s, next);
    true
}

fn step_target(s: &mut Scenario, t: Target, up: bool) -> bool {
    let Some((lo, hi)) = t.range(s) else {
        return false;
    };
    let v = t.get(s);
    let next = if up { v.saturating_mul(2) } else { v / 2 };
    if next < lo || next > hi || next == v {
        return false;
    }
    t.set(s, next);
    true
}

fn step_width(s: &mut Scenario, up: bool) -> bool {
    if s.model.family != ModelFamily::Transformer || s.model.shape != ShapeSource::Dimensions {
        return false;
    }
    let t = &mut s.model.transformer;
    let head_dim = t.head_dim();
    let mqa = t.kv_heads <= 1;
    let fields = [t.hidden, t.ffn, t.heads, t.kv_heads];
    if !up
        && fields
            .iter()
            .enumerate()
            .any(|(i, v)| (i != 3 || !mqa) && v % 2 != 0)
    {
        return false;
    }
    let f = |v: u32| if up { v.saturating_mul(2) } else { v / 2 };
    t.hidden = f(t.hidden);
    t.ffn = f(t.ffn);
    t.heads = f(t.heads);
    if !mqa {
        t.kv_heads = f(t.kv_heads);
    }
    if t.head_dim > 0 {
        t.head_dim = head_dim;
    }
    t.hidden > 0 && t.heads > 0
}

/// Training: pure 16-bit < 16-bit + FP32 master < AMP < pure FP32 (ZeRO §3.1 bytes per parameter);
/// inference: weights INT4 < INT8 < 16-bit < FP32.
fn step_precision(s: &mut Scenario, up: bool) -> bool {
    let p = &mut s.precision;
    let half = if p.compute.bits() == 16 {
        p.compute
    } else {
        Dtype::Bf16
    };
    let ladder = [
        (PrecisionMode::Uniform, half),
        (PrecisionMode::MasterWeights, half),
        (PrecisionMode::Amp, half),
        (PrecisionMode::Uniform, Dtype::Fp32),
    ];
    match s.mode {
        Mode::Training => {
            let i = ladder
                .iter()
                .position(|(m, c)| *m == p.mode && *c == p.compute);
            ladder_step(&ladder, i, up)
                .map(|(m, c)| {
                    p.mode = m;
                    p.compute = c;
                })
                .is_some()
        }
        Mode::Inference => {
            let ladder = [Dtype::Int4, Dtype::Int8, half, Dtype::Fp32];
            let w = p.resolve().weights;
            let i = ladder.iter().position(|d| d.bits() == w.bits());
            let Some(next) = ladder_step(&ladder, i, up) else {
                return false;
            };
            if p.mode != PrecisionMode::Custom {
                p.activations = if p.compute.bits() <= 16 {
                    p.compute
                } else {
                    half
                };
                p.mode = PrecisionMode::Custom;
            }
            p.weights = next;
            true
        }
    }
}

/// The effect of one notch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Notch {
    /// Per-GPU total (what a GPU shows) after − before.
    pub memory_delta: Bytes,
    /// Step time after − before, seconds.
    pub time_delta_s: f64,
    /// Whether the moved scenario fits.
    pub fits: bool,
}

/// One knob's two notches (`None`: no such notch for this scenario).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub knob: Knob,
    pub down: Option<Notch>,
    pub up: Option<Notch>,
}

impl Row {
    /// The larger memory change of the two notches, bytes (sort key of a tornado).
    pub fn memory_span(&self) -> f64 {
        let m = |n: Option<Notch>| n.map_or(0.0, |n| n.memory_delta.get().abs());
        m(self.down).max(m(self.up))
    }
}

/// The tornado of a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sensitivity {
    pub base_memory: Bytes,
    pub base_time_s: f64,
    /// In [`Knob::ALL`] order.
    pub rows: [Row; Knob::COUNT],
}

/// Copies back every field a knob may touch (no allocation: these sections hold no strings).
fn restore(scratch: &mut Scenario, s: &Scenario) {
    scratch.model.clone_from(&s.model);
    scratch.workload.clone_from(&s.workload);
    scratch.inference.clone_from(&s.inference);
    scratch.precision.clone_from(&s.precision);
    scratch.optimizer.clone_from(&s.optimizer);
    scratch.strategies.clone_from(&s.strategies);
    scratch.parallel.clone_from(&s.parallel);
}

/// Computes the tornado: 1 + up to 2 × [`Knob::COUNT`] estimates on one scratch scenario.
pub fn sensitivity(s: &Scenario) -> Sensitivity {
    // Knobs move the values the estimator sees (in range), not the raw ones.
    let mut model = crate::estimator::ResolvedModel::default();
    let resolved = resolve(s, &mut model, &mut Diagnostics::default());
    let s = &resolved.scenario;
    let base = estimate(s);
    let mut scratch = s.clone();
    let mut rows = Knob::ALL.map(|knob| Row {
        knob,
        down: None,
        up: None,
    });
    for row in rows.iter_mut() {
        for up in [false, true] {
            restore(&mut scratch, s);
            if !row.knob.step(&mut scratch, up) {
                continue;
            }
            let notch = Some(delta(&base, &estimate(&scratch)));
            if up {
                row.up = notch;
            } else {
                row.down = notch;
            }
        }
    }
    Sensitivity {
        base_memory: base.memory.gpu_total,
        base_time_s: step_time_s(&base),
        rows,
    }
}

fn delta(base: &Estimate, moved: &Estimate) -> Notch {
    let dt = step_time_s(moved) - step_time_s(base);
    Notch {
        memory_delta: moved.memory.gpu_total - base.memory.gpu_total,
        time_delta_s: if dt.is_finite() { dt } else { 0.0 },
        fits: moved.memory.fits,
    }
}
