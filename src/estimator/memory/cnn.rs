//! Phases of a CNN / vision model with a layer-table network (not `Aggregate`): model states from
//! the exact parameters, activations from the op-by-op walk (`model::cnn`, docs/cnn.md).

use super::ctx::Ctx;
use super::states::ModelStates;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::cnn::resnet_walk::{self, Elt, Live};
use crate::estimator::model::cnn::{resnet, unet_walk, vit};
use crate::estimator::{Breakdown, Component, Phase, PhasePeaks};
use crate::scenario::{CnnNetwork, Mode, OptimizerKind};
use crate::units::Bytes;

/// What the phases add on top of the model states (from `memory::stage`).
pub struct Extra {
    pub opt_temp: f64,
    /// Autocast weight copies.
    pub casts: f64,
    /// Image batches resident on the GPU.
    pub inputs: f64,
}

/// The phases, or `None` for an `Aggregate` section (the caller's per-image figures apply).
pub fn phases(c: &Ctx, m: &ResolvedModel, st: &ModelStates, x: &Extra) -> Option<PhasePeaks> {
    let (network, res) = (m.cnn.network, m.cnn.resolution);
    if network == CnnNetwork::Aggregate {
        return None;
    }
    let weights = st.weights + m.cnn.buffer_bytes;
    let accumulated = c.grad_accum > 1.0;
    let e = Elt {
        act: c.ec,
        loss: if c.amp { 4.0 } else { c.ec },
        grad: if accumulated {
            0.0
        } else {
            st.grads / m.params.total.max(1.0)
        },
        image_cast: c.amp,
    };
    let (fwd, bwd, infer) = walk(network, res, c.b, e, c.mode)?;
    let mut out = PhasePeaks::default();
    let mut set = |ph: Phase, grads: f64, opt: f64, a: f64, t: f64| {
        let mut b = Breakdown::default();
        b.set(Component::Weights, Bytes(weights));
        b.set(Component::MasterWeights, Bytes(st.master));
        b.set(Component::Gradients, Bytes(grads));
        b.set(Component::OptimizerStates, Bytes(opt));
        b.set(Component::Activations, Bytes(a));
        b.set(Component::Transient, Bytes(t));
        out.set(ph, b);
    };
    let base = x.casts + x.inputs;
    match c.mode {
        Mode::Training => {
            let g_fwd = if accumulated { st.grads } else { 0.0 };
            set(
                Phase::Forward,
                g_fwd,
                st.optimizer,
                fwd.saved,
                fwd.transient + base,
            );
            let g_bwd = if accumulated { st.grads } else { bwd.grads };
            set(
                Phase::Backward,
                g_bwd,
                st.optimizer,
                bwd.saved,
                bwd.transient + base,
            );
            let opt_temp = x.opt_temp + sgd_temp(c, m, st);
            set(
                Phase::OptimizerStep,
                st.grads,
                st.optimizer,
                0.0,
                opt_temp + x.inputs,
            );
        }
        Mode::Inference => set(Phase::Prefill, 0.0, 0.0, infer, base),
    }
    Some(out)
}

/// (training forward peak, backward peak, inference working set) above the model states; only
/// the walks `mode` needs are run (the others are zero).
fn walk(network: CnnNetwork, res: f64, b: f64, e: Elt, mode: Mode) -> Option<(Live, Live, f64)> {
    if let Some(t) = resnet::table(network) {
        return Some(match mode {
            Mode::Training => (
                resnet_walk::forward_peak(&t, res, b, e),
                resnet_walk::backward_peak(&t, res, b, e),
                0.0,
            ),
            Mode::Inference => (
                Live::default(),
                Live::default(),
                resnet_walk::inference_peak(&t, res, b, e),
            ),
        });
    }
    if network == CnnNetwork::Sd15Unet {
        // The UNet on the VAE latent (side ÷ 8), block by block (`unet_walk`, measured).
        let (u, side) = (&unet_walk::SD15, res / 8.0);
        let saved = unet_walk::saved_bytes(u, side, b, e.act);
        let fwd = Live {
            saved,
            grads: 0.0,
            transient: 0.0,
        };
        return Some(match mode {
            Mode::Training => (
                fwd,
                unet_walk::backward_peak(u, side, b, e.act, e.grad),
                0.0,
            ),
            Mode::Inference => (
                Live::default(),
                Live::default(),
                unet_walk::inference_peak(u, side, b, e.act),
            ),
        });
    }
    let v = vit::table(network)?;
    // Vision transformers: the saved tensors of `vit` (ViT measured, DiT derived), the logits'
    // log-softmax and the two FP32 loss scalars (ViT's head; DiT's loss is an MSE on the noise,
    // not modelled beyond its saved tensors).
    let head = if v.dit {
        0.0
    } else {
        resnet_walk::CLASSES * b * e.loss + 8.0
    };
    let saved = b * (e.act * v.saved_elems(res) + v.saved_fp32(res)) + head;
    let fwd = Live {
        saved,
        grads: 0.0,
        transient: b * v.tokens(res) * v.width * e.act,
    };
    let bwd = v.backward_peak(res, b, e.act, e.grad, saved);
    Some((fwd, bwd, b * e.act * v.inference_elems(res)))
}

/// SGD's weight-decay copy (torch/optim/sgd.py `_single_tensor_sgd`: `grad = grad.add(param,
/// alpha=weight_decay)` per tensor; the `foreach` path adds to a list of copies of every gradient).
/// The torchvision recipe trains with weight decay 1e-4: the copy is assumed present (measured:
/// ResNet-50's largest tensor, 512·512·3·3 FP32).
fn sgd_temp(c: &Ctx, m: &ResolvedModel, st: &ModelStates) -> f64 {
    match c.optimizer {
        OptimizerKind::Sgd | OptimizerKind::SgdMomentum if c.foreach => st.grads,
        OptimizerKind::Sgd | OptimizerKind::SgdMomentum => {
            m.largest_tensor * st.grads / m.params.total.max(1.0)
        }
        _ => 0.0,
    }
}
