//! The strategy space "make it fit" searches: each axis a short list ordered from the cheapest (in step
//! time) to the most memory-saving option, and a `Setting` — one point of the space — that is applied
//! to a scratch scenario by assigning fields (never cloning).

use crate::scenario::{
    Checkpointing, Dtype, Mode, OffloadTarget, OptimizerKind, PrecisionMode, PrecisionSpec,
    Scenario, ZeroStage,
};

/// A short fixed-capacity list (no allocation in the search).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct List<T: Copy, const N: usize> {
    items: [Option<T>; N],
    len: usize,
}

impl<T: Copy + PartialEq, const N: usize> List<T, N> {
    pub fn new() -> Self {
        List {
            items: [None; N],
            len: 0,
        }
    }
    /// Appends unless full or already present.
    pub fn push(&mut self, v: T) {
        if self.len < N
            && !self.iter().any(|x| x == v)
            && let Some(slot) = self.items.get_mut(self.len)
        {
            *slot = Some(v);
            self.len += 1;
        }
    }
    /// Appends unless full, without the duplicate check (for items distinct by construction: the
    /// check is quadratic in the length).
    pub fn push_distinct(&mut self, v: T) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = Some(v);
            self.len += 1;
        }
    }
    pub fn is_full(&self) -> bool {
        self.len >= N
    }
    pub fn first(&self) -> Option<T> {
        self.iter().next()
    }
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.items.iter().take(self.len).flatten().copied()
    }
    pub fn last(&self) -> Option<T> {
        self.iter().last()
    }
}

/// How element types are assigned: the fields of [`PrecisionSpec`] the search changes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrecisionChoice {
    pub mode: PrecisionMode,
    pub compute: Dtype,
    pub weights: Dtype,
    pub activations: Dtype,
    pub kv_cache: Dtype,
}

impl PrecisionChoice {
    pub fn of(p: &PrecisionSpec) -> Self {
        PrecisionChoice {
            mode: p.mode,
            compute: p.compute,
            weights: p.weights,
            activations: p.activations,
            kv_cache: p.kv_cache,
        }
    }
    pub fn apply(self, p: &mut PrecisionSpec) {
        p.mode = self.mode;
        p.compute = self.compute;
        p.weights = self.weights;
        p.activations = self.activations;
        p.kv_cache = self.kv_cache;
    }
}

/// What is offloaded to host memory (ZeRO-Offload, Ren et al. 2021; parameters need ZeRO-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Offload {
    None,
    Optimizer,
    OptimizerAndParams,
}

impl Offload {
    pub fn of(s: &Scenario) -> Self {
        let opt = s.strategies.offload_optimizer != OffloadTarget::None;
        let params = s.strategies.offload_params != OffloadTarget::None;
        match (opt, params) {
            (_, true) => Offload::OptimizerAndParams,
            (true, false) => Offload::Optimizer,
            (false, false) => Offload::None,
        }
    }
    /// Sets the offload fields, keeping the user's target (CPU or NVMe) where one was chosen.
    pub fn apply(self, s: &mut Scenario, orig: &Scenario) {
        let keep = |t: OffloadTarget| {
            if t == OffloadTarget::None {
                OffloadTarget::Cpu
            } else {
                t
            }
        };
        let st = &mut s.strategies;
        st.offload_optimizer = match self {
            Offload::None => OffloadTarget::None,
            _ => keep(orig.strategies.offload_optimizer),
        };
        st.offload_params = match self {
            Offload::OptimizerAndParams => keep(orig.strategies.offload_params),
            _ => OffloadTarget::None,
        };
    }
}

/// One point of the space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Setting {
    pub precision: PrecisionChoice,
    pub optimizer: OptimizerKind,
    pub checkpointing: Checkpointing,
    pub zero: ZeroStage,
    pub offload: Offload,
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    /// Context-parallel degree (1 unless the sequence is long: `axes::long_context`).
    pub cp: u32,
    pub micro_batch: u32,
    pub grad_accum: u32,
}

impl Setting {
    pub fn of(s: &Scenario) -> Self {
        Setting {
            precision: PrecisionChoice::of(&s.precision),
            optimizer: s.optimizer.kind,
            checkpointing: s.strategies.checkpointing,
            zero: s.strategies.zero,
            offload: Offload::of(s),
            tp: s.parallel.tp,
            pp: s.parallel.pp,
            dp: s.parallel.dp,
            cp: s.parallel.cp,
            micro_batch: s.workload.micro_batch,
            grad_accum: s.workload.grad_accum_steps,
        }
    }

    /// Writes the setting into `s` (a scratch copy of `orig`), field by field.
    pub fn apply(&self, s: &mut Scenario, orig: &Scenario) {
        self.precision.apply(&mut s.precision);
        s.optimizer.kind = self.optimizer;
        s.strategies.checkpointing = self.checkpointing;
        s.strategies.zero = self.zero;
        self.offload.apply(s, orig);
        // Through the axis, which brings sequence parallelism where TP needs it (a Megatron MoE).
        s.parallel.sequence_parallel = orig.parallel.sequence_parallel;
        crate::scenario::Axis::Tp.set(s, f64::from(self.tp));
        s.parallel.pp = self.pp;
        s.parallel.dp = self.dp;
        s.parallel.cp = self.cp;
        s.workload.micro_batch = self.micro_batch;
        s.workload.grad_accum_steps = self.grad_accum;
    }

    /// Which axes differ from `orig`, one bit per axis (tie-break and dominance: fewer changes first).
    pub fn change_mask(&self, orig: &Setting) -> u8 {
        let layout = (self.tp, self.pp, self.dp, self.cp) != (orig.tp, orig.pp, orig.dp, orig.cp);
        let batch = (self.micro_batch, self.grad_accum) != (orig.micro_batch, orig.grad_accum);
        [
            self.precision != orig.precision,
            self.optimizer != orig.optimizer,
            self.checkpointing != orig.checkpointing,
            self.zero != orig.zero,
            self.offload != orig.offload,
            layout,
            batch,
        ]
        .iter()
        .enumerate()
        .fold(0u8, |m, (i, c)| if *c { m | (1 << i) } else { m })
    }
}

/// The 16-bit type to switch to: the scenario's own if it is 16-bit, else BF16.
fn half(p: &PrecisionSpec) -> Dtype {
    if p.compute.bits() == 16 {
        p.compute
    } else {
        Dtype::Bf16
    }
}

/// Precision choices: the scenario's own first, then the mixed-precision recipes (training) or weight
/// quantisation and an FP8 KV cache (inference), in order of the memory they save.
pub fn precisions(s: &Scenario) -> List<PrecisionChoice, 8> {
    let orig = PrecisionChoice::of(&s.precision);
    let mut out = List::new();
    out.push(orig);
    let h = half(&s.precision);
    let with = |mode, weights| PrecisionChoice {
        mode,
        compute: h,
        weights,
        activations: h,
        kv_cache: orig.kv_cache,
    };
    match s.mode {
        Mode::Training => {
            // ZeRO §3.1: Amp (fp32 states, 16-bit activations), 2 + 2 + 12 B/param, pure 16-bit.
            for mode in [
                PrecisionMode::Amp,
                PrecisionMode::MasterWeights,
                PrecisionMode::Uniform,
            ] {
                out.push(with(mode, h));
            }
        }
        Mode::Inference => {
            // Weight-only quantisation (activations stay 16-bit), then an FP8 KV cache.
            let resolved = s.precision_types();
            let kv8 = Dtype::Fp8E4M3;
            let fp8_kv = resolved.kv_cache.bits() > kv8.bits();
            if fp8_kv {
                out.push(PrecisionChoice {
                    kv_cache: kv8,
                    ..orig
                });
            }
            for weights in [h, Dtype::Int8, Dtype::Int4] {
                if weights.bits() < resolved.weights.bits() {
                    let c = with(PrecisionMode::Custom, weights);
                    out.push(c);
                    if fp8_kv {
                        out.push(PrecisionChoice { kv_cache: kv8, ..c });
                    }
                }
            }
        }
    }
    out
}

/// Optimizers that keep the training recipe (no switch to SGD): Adam → 8-bit Adam (Dettmers et al.
/// 2021, 2 B/param of state) → Adafactor (Shazeer & Stern 2018, factored second moment).
pub fn optimizers(s: &Scenario) -> List<OptimizerKind, 4> {
    let mut out = List::new();
    out.push(s.optimizer.kind);
    if s.mode == Mode::Training {
        match s.optimizer.kind {
            OptimizerKind::Adam | OptimizerKind::AdamW => {
                out.push(OptimizerKind::Adam8bit);
                out.push(OptimizerKind::Adafactor);
            }
            OptimizerKind::Adam8bit => out.push(OptimizerKind::Adafactor),
            _ => {}
        }
    }
    out
}

/// Checkpointing from the scenario's own to full recomputation (Korthikanti et al. 2022 §5: selective
/// costs 2–7 %, full 30–40 %).
pub fn checkpointings(s: &Scenario) -> List<Checkpointing, 4> {
    let mut out = List::new();
    out.push(s.strategies.checkpointing);
    if s.mode == Mode::Training {
        let rank = |c: Checkpointing| match c {
            Checkpointing::None => 0,
            Checkpointing::Selective => 1,
            Checkpointing::EveryK | Checkpointing::PerOp => 2,
            Checkpointing::Full => 3,
        };
        for c in [Checkpointing::Selective, Checkpointing::Full] {
            if rank(c) > rank(s.strategies.checkpointing) {
                out.push(c);
            }
        }
    }
    out
}

/// ZeRO stages for a data-parallel degree: all four with DP > 1 (ZeRO §5); with DP = 1 only the
/// scenario's own, plus stage 3 when parameters are offloaded (ZeRO-Infinity on one GPU).
pub fn zero_stages(s: &Scenario, dp: u32) -> List<ZeroStage, 4> {
    let mut out = List::new();
    if s.mode == Mode::Inference {
        out.push(s.strategies.zero);
        return out;
    }
    if dp > 1 {
        for z in [
            ZeroStage::None,
            ZeroStage::Stage1,
            ZeroStage::Stage2,
            ZeroStage::Stage3,
        ] {
            out.push(z);
        }
    } else {
        out.push(s.strategies.zero);
        out.push(ZeroStage::Stage3);
    }
    out
}

/// Offload levels from the scenario's own upward; parameter offload only with ZeRO-3.
pub fn offloads(s: &Scenario, zero: ZeroStage) -> List<Offload, 3> {
    let mut out = List::new();
    let own = Offload::of(s);
    if s.mode == Mode::Inference {
        out.push(own);
        return out;
    }
    for o in [
        Offload::None,
        Offload::Optimizer,
        Offload::OptimizerAndParams,
    ] {
        if o >= own && (o != Offload::OptimizerAndParams || zero == ZeroStage::Stage3) {
            out.push(o);
        }
    }
    out
}
