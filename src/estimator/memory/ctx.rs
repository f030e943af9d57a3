//! The numbers the memory model reads, sanitised once: every degree ≥ 1, every size finite and in
//! range, every fraction in [0, 1]. Out-of-range inputs are clamped and reported as
//! [`Diagnostic::InputClamped`]; the rest of the model can then compute without guards.

use crate::estimator::model::ResolvedModel;
use crate::estimator::{Diagnostic, Diagnostics};
use crate::scenario::{
    AttentionKernel, Checkpointing, DropoutMask, Mode, OffloadTarget, OptimizerKind, Profile,
    PruneKind, Scenario, ZeroStage,
};

/// Sanitised inputs of the memory model. Sizes are `f64` element counts, byte sizes are bytes per
/// element.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub mode: Mode,
    pub profile: Profile,
    /// Sequences per micro-batch on this GPU (static batch) or requests in flight (dynamic batching).
    pub b: f64,
    /// Training: tokens per sequence. Inference: prompt tokens.
    pub s: f64,
    /// Inference: generated tokens.
    pub generated: f64,
    pub grad_accum: f64,
    pub dropout: bool,
    pub mask_bytes: f64,
    pub tp: f64,
    pub pp: f64,
    pub dp: f64,
    pub sp: bool,
    /// Micro-batches per pipeline flush.
    pub pp_microbatches: f64,
    pub pp_interleave: f64,
    /// Activation (compute) element bytes.
    pub ec: f64,
    /// Residual-stream element bytes: FP32 under autocast (FP32 embeddings), else `ec`.
    pub er: f64,
    /// Autocast: FP32 weights with 16-bit compute copies.
    pub amp: bool,
    pub e_weights: f64,
    pub e_grads: f64,
    pub e_states: f64,
    pub e_master: f64,
    pub e_kv: f64,
    /// Seed article §4.1 per-layer precision: the attention block's activations in FP32.
    pub attention_fp32: bool,
    pub attention: AttentionKernel,
    pub checkpointing: Checkpointing,
    pub checkpoint_every: f64,
    pub compress8: bool,
    pub fused_ce: bool,
    pub zero: ZeroStage,
    pub offload_optimizer: OffloadTarget,
    pub offload_params: OffloadTarget,
    pub optimizer: OptimizerKind,
    pub foreach: bool,
    pub prune_fraction: f64,
    pub prune_kind: PruneKind,
    pub sharing_fraction: f64,
    pub all_logits: bool,
    /// Input batch bytes resident on the GPU: the micro-batch plus prefetched batches
    /// (`article::input_pipeline`; token ids + labels at 16 B/token by default).
    pub input_bytes: f64,
    /// The input is images (CNN pipelines); token inputs of non-transformer families are ignored.
    pub image_input: bool,
    pub dynamic_batching: bool,
    pub mean_length_fraction: f64,
    pub kv_block_tokens: f64,
    pub second_tier_bytes: f64,
    /// Gradient communication buckets when DP > 1, bytes.
    pub comm_bytes: f64,
}

/// Clamps `x` into [lo, hi]; NaN goes to `lo`. Diagnoses any change.
pub fn clamp(x: f64, lo: f64, hi: f64, d: &mut Diagnostics) -> f64 {
    // In range (the usual case): one test. NaN fails it.
    if x >= lo && x <= hi {
        return x;
    }
    d.insert(Diagnostic::InputClamped);
    if x.is_nan() { lo } else { x.clamp(lo, hi) }
}

/// `x.ceil()`, bit for bit (signed zeros, NaN and ±∞ included), without a call: on baseline x86-64
/// (no SSE4.1 `roundsd`) `f64::ceil` is a libm call, and the estimator rounds shard sizes several
/// times per estimate. Magnitudes ≥ 2⁵² are already integers; below that truncation through `i64`
/// is exact.
///
/// ```
/// use vram_explorer::estimator::memory::ctx::ceil;
/// for x in [0.0, -0.0, 0.5, -0.5, 2.0, 2.5, -2.5, 1e300, f64::INFINITY, 4503599627370495.5] {
///     assert_eq!(ceil(x).to_bits(), x.ceil().to_bits());
/// }
/// assert!(ceil(f64::NAN).is_nan());
/// ```
#[inline]
pub fn ceil(x: f64) -> f64 {
    const INTEGRAL: f64 = 4_503_599_627_370_496.0; // 2^52
    if x.abs() < INTEGRAL {
        let t = x as i64 as f64;
        if t < x { t + 1.0 } else { t.copysign(x) }
    } else {
        x
    }
}

fn clamp_u(x: u32, lo: u32, hi: u32, d: &mut Diagnostics) -> f64 {
    clamp(f64::from(x), f64::from(lo), f64::from(hi), d)
}

impl Ctx {
    pub fn new(sc: &Scenario, m: &ResolvedModel, d: &mut Diagnostics) -> Ctx {
        let w = &sc.workload;
        let inf = &sc.inference;
        let par = &sc.parallel;
        let st = &sc.strategies;
        let p = sc.precision.resolve();
        let dynamic = sc.mode == Mode::Inference && inf.dynamic_batching;
        let b = if dynamic {
            clamp_u(inf.concurrent_requests, 1, 1 << 20, d)
        } else {
            clamp_u(w.micro_batch, 1, 65_536, d)
        };
        let s = match sc.mode {
            Mode::Training => clamp_u(w.seq_len, 1, 10_000_000, d),
            Mode::Inference => clamp_u(inf.prompt_tokens, 1, 10_000_000, d),
        };
        let amp = p.weight_compute_copies.is_some();
        let ec = if amp {
            p.weight_compute_copies.map_or(2.0, |c| c.bytes())
        } else {
            p.activations.bytes()
        };
        let tp = clamp_u(par.tp, 1, 65_536, d);
        let pp = clamp_u(par.pp, 1, 65_536, d);
        let dp = clamp_u(par.dp, 1, 1 << 20, d);
        let layers = f64::from(m.layers.max(1));
        let ga = clamp_u(w.grad_accum_steps, 1, 1 << 20, d);
        let mb = if par.pp_microbatches == 0 {
            ga
        } else {
            clamp_u(par.pp_microbatches, 1, 1 << 20, d)
        };
        Ctx {
            mode: sc.mode,
            profile: sc.implementation.profile,
            b,
            s,
            generated: clamp_u(inf.generated_tokens, 0, 10_000_000, d),
            grad_accum: ga,
            dropout: w.dropout && sc.mode == Mode::Training,
            mask_bytes: match sc.implementation.dropout_mask {
                DropoutMask::OneByte => 1.0,
                DropoutMask::Float => ec,
            },
            tp,
            pp: pp.min(layers),
            dp,
            sp: par.sequence_parallel && tp > 1.0,
            pp_microbatches: mb,
            pp_interleave: clamp_u(par.pp_interleave, 1, 1024, d),
            ec,
            er: if amp { 4.0 } else { ec },
            amp,
            e_weights: p.weights.bytes(),
            e_grads: p.gradients.bytes(),
            e_states: p.optimizer_states.bytes(),
            e_master: p.master_weights.map_or(0.0, |t| t.bytes()),
            e_kv: p.kv_cache.bytes(),
            attention_fp32: p.attention_fp32,
            attention: st.attention,
            checkpointing: st.checkpointing,
            checkpoint_every: if st.checkpoint_every == 0 {
                ceil(layers.sqrt())
            } else {
                clamp_u(st.checkpoint_every, 1, 10_000, d)
            },
            compress8: st.activation_compression_8bit,
            fused_ce: sc.implementation.fused_cross_entropy,
            zero: st.zero,
            offload_optimizer: st.offload_optimizer,
            offload_params: st.offload_params,
            optimizer: sc.optimizer.kind,
            foreach: sc.optimizer.foreach,
            prune_fraction: clamp(st.prune_fraction, 0.0, 0.99, d),
            prune_kind: st.prune_kind,
            sharing_fraction: clamp(st.weight_sharing_fraction, 0.0, 0.999, d),
            all_logits: inf.all_logits,
            input_bytes: input_bytes(sc, b, s),
            image_input: sc.input.kind == crate::scenario::InputKind::Images,
            dynamic_batching: dynamic,
            mean_length_fraction: clamp(inf.mean_length_fraction, 1e-3, 1.0, d),
            kv_block_tokens: clamp_u(inf.kv_block_tokens, 0, 1 << 20, d),
            second_tier_bytes: clamp(st.second_tier_gib, 0.0, 1e6, d) * crate::units::GIB,
            comm_bytes: clamp(sc.overheads.comm_buffer_mib, 0.0, 1e6, d) * crate::units::MIB,
        }
    }

    /// Element bytes of saved activations after optional 8-bit compression: 1 byte plus an FP32
    /// scale per 128-element group (ActNN, Chen et al. 2021, per-group quantisation).
    pub fn saved_scale(&self) -> f64 {
        if self.compress8 {
            (1.0 + 4.0 / 128.0) / self.ec.max(1.0)
        } else {
            1.0
        }
    }
}

/// Input bytes on the GPU for `b` samples of `s` tokens (clamped values), finite and ≥ 0.
fn input_bytes(sc: &Scenario, b: f64, s: f64) -> f64 {
    use crate::estimator::article::input_pipeline::sample_bytes;
    let batches = 1.0 + f64::from(sc.input.gpu_prefetch_batches);
    let x = sample_bytes(&sc.input, s) * b * batches;
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}
