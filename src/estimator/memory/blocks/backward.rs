//! The backward peak inside a mixture-of-experts layer late in backward (Transformers torch path,
//! `grouped_mm_experts_forward`'s autograd graph; measured on CPU: the records' step-2 backward peak
//! op is the experts' `_grouped_mm` backward, `scripts/measure/prefill_probe.py NAME --train` lists
//! what is live there). With small b·s the gradients a layer adds outweigh the activations its
//! backward frees, so the peak moves from the first layer's backward to a MoE layer near the input
//! (or the last one, when activations dominate): both ends of each MoE kind are candidates.
//!
//! At the gate_up `_grouped_mm` backward of a MoE layer: the gradients of the head and of every
//! layer after it, plus this layer's routed experts'; the saved activations of every layer before
//! it, and of this one all but its experts' (which backward has freed, except the gathered input,
//! h per routed row); in flight the residual stream's gradient and the MoE output's (3·t·h), the
//! routing-weight gradient (1 per row), the gate_up output's gradient (2·fe per row) and the
//! gathered input's (h per row).

use super::Flavour;
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::MlpShape;
use crate::scenario::{Checkpointing, OffloadTarget, ZeroStage};

/// One candidate's gradient, saved-activation and transient bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Late {
    pub grads: f64,
    pub acts: f64,
    pub transient: f64,
}

impl Late {
    pub fn total(&self) -> f64 {
        self.grads + self.acts + self.transient
    }
}

/// The largest late-backward candidate over the MoE kinds' first and last layers, when the rules
/// apply (`super::applies`) to a model on one stage (`whole`); `outside` the saved bytes outside the
/// layers that live through backward (the first stage's extra), `head_grad` the head's gradient
/// elements (allocated first in backward).
///
/// The rule holds where it was measured: every layer's activations saved and every gradient kept
/// whole on the GPU. Under full, every-k or per-op checkpointing the layers before hold only their
/// checkpoints (and what per-op keeps), and under
/// ZeRO-2/3 (FSDP alike) the gradients a layer adds are reduce-scattered to a 1/DP shard as they
/// come (under ZeRO-Offload copied to the host), so neither grows towards the input: the first layer's backward stays the peak, as the
/// general rule has it (`None`). Under expert parallelism a GPU holds and back-propagates
/// ⌈E/ep⌉ of each layer's experts.
pub fn late(c: &Ctx, m: &ResolvedModel, whole: bool, outside: f64, head_grad: f64) -> Option<Late> {
    // Selective recomputation keeps every saved tensor but the attention core's, which the fused
    // kernel these rules apply to does not keep anyway: the rule holds there too.
    let checkpointed = !matches!(
        c.checkpointing,
        Checkpointing::None | Checkpointing::Selective
    );
    if !whole || !super::applies(c, m) || checkpointed || sharded_grads(c) {
        return None;
    }
    let not_stored = 1.0 - m.moe.stored_expert_fraction();
    let (b, s) = (c.b, c.s);
    let fl = Flavour::of(m);
    let kinds = m.blocks.kinds();
    let h = f64::from(m.hidden);
    let t = b * s;
    let rows = t * f64::from(m.moe.top_k);
    let fe = f64::from(m.moe.ffn);
    let e = c.ec;
    let mut best: Option<Late> = None;
    for (i, k) in kinds.iter().enumerate() {
        if k.mlp != MlpShape::Moe || k.count == 0 {
            continue;
        }
        let own = super::layer(c, m, k, fl, b, s);
        // Forward order: (layers before, layers after) per kind, at the kind's first and last layer.
        for at_first in [true, false] {
            let mut grads = head_grad + k.routed * (1.0 - not_stored);
            let mut acts = outside + own.total() - own.mlp + e * rows * h;
            for (j, kj) in kinds.iter().enumerate() {
                let n = f64::from(kj.count);
                let same = f64::from(u8::from(i == j));
                let (before, after) = if at_first {
                    let before = f64::from(m.blocks.order.before(i, j));
                    (before, (n - before - same).max(0.0))
                } else {
                    let after = f64::from(m.blocks.order.after(i, j));
                    ((n - after - same).max(0.0), after)
                };
                grads += after * (kj.params - kj.routed * not_stored);
                acts += before * super::layer(c, m, kj, fl, b, s).total();
            }
            let cand = Late {
                grads: grads * c.e_grads,
                acts,
                transient: e * (3.0 * t * h + rows * (1.0 + 2.0 * fe + h)),
            };
            if best.is_none_or(|x| cand.total() > x.total()) {
                best = Some(cand);
            }
        }
    }
    best
}

/// Whether the gradients leave the GPU as backward produces them: ZeRO-2/3 (or FSDP) shards them
/// over more than one data-parallel rank, or ZeRO-Offload copies each reduced bucket to the
/// host's partition (DeepSpeed `stage_1_and_2.py` `copy_grads_in_partition` →
/// `async_inplace_copy_grad_to_fp32_buffer_from_gpu`; `stage3.py` `partition_grads` the same into
/// the host's FP32 gradient partition), even at one rank, or DeepSpeed stage 3 keeps them in its
/// partition buffer (counted whole beside the rule).
fn sharded_grads(c: &Ctx) -> bool {
    (matches!(c.zero, ZeroStage::Stage2 | ZeroStage::Stage3) && c.dp > 1.0)
        || (c.zero != ZeroStage::None && c.offload_optimizer != OffloadTarget::None)
        // DeepSpeed stage 3 copies every gradient into its partition buffer as it comes, at any
        // DP; the buffer is counted whole beside (`frameworks::deepspeed::buffers`).
        || (c.zero == ZeroStage::Stage3 && super::super::frameworks::deepspeed::applies(c))
}
