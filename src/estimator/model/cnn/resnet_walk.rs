//! What a torchvision ResNet keeps in memory, walked op by op over [`ResNetTable`] (no allocation):
//! the tensors autograd saves in a training forward, the live tensors of the backward (its peak),
//! and the inference working set under `torch.no_grad()`.
//!
//! What each op saves for backward (PyTorch 2.15 `tools/autograd/derivatives.yaml`; docs/cnn.md §1):
//! - `convolution`: `input` and `weight` (`convolution_backward(grad, input, weight, ...)`);
//! - `native_batch_norm` (training): `input`, `weight`, the running buffers and `save_mean`,
//!   `save_invstd` (C FP32 each);
//! - `relu_` (in place, `inplace=True` in torchvision): `result`, the same storage as the BN output;
//! - `max_pool2d_with_indices`: `self` and the int64 `indices`;
//! - `_adaptive_avg_pool2d`: `self` (the last block's output, already saved by its ReLU);
//! - `add_` (the residual, in place on the BN output): nothing;
//! - `addmm` (`fc`): `mat1` (the pooled features) and the weight;
//! - `_log_softmax` (cross-entropy): `result`; `nll_loss`: its input (the same) and a scalar.
//!
//! The backward runs nodes in reverse creation order (a downsample branch, created after the main
//! branch's last BN, first); each node allocates its input gradients and parameter gradients, then
//! its incoming gradient and the tensors only it still saved are freed; the two gradients reaching a
//! block input are summed out of place (`InputBuffer::accumulate`). Checked against the measured
//! op-by-op trace of torchvision ResNet-50 on CPU (tests/data/measured/torchvision-cpu-steps.json).

use super::resnet::{Block, ResNetTable, stem_sides};

/// Element bytes of the tensors the walk counts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Elt {
    /// Feature maps (the compute type: 4 in FP32, 2 under AMP or 16-bit training).
    pub act: f64,
    /// Logits and log-probabilities (autocast runs `log_softmax` in FP32).
    pub loss: f64,
    /// Parameter gradients.
    pub grad: f64,
    /// Under autocast the first conv saves a 16-bit copy of the FP32 image.
    pub image_cast: bool,
}

/// BN batch statistics saved per channel (`save_mean`, `save_invstd`, FP32), and the FP32 loss and
/// `total_weight` scalars of `nll_loss` (measured: 8 bytes).
const STAT_BYTES: f64 = 8.0;
const LOSS_SCALARS: f64 = 8.0;
/// ImageNet classes of torchvision's `fc`.
pub const CLASSES: f64 = 1000.0;

/// Live bytes of a training step above the model states, at a point of the walk.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Live {
    /// Saved activations still held.
    pub saved: f64,
    /// Parameter gradients allocated so far.
    pub grads: f64,
    /// Activation gradients (and, in the forward, outputs not saved).
    pub transient: f64,
}

impl Live {
    pub fn total(&self) -> f64 {
        self.saved + self.grads + self.transient
    }
}

struct Sim {
    now: Live,
    peak: Live,
}

impl Sim {
    /// One backward node: allocates `alloc` activation-gradient bytes and `pg` parameter-gradient
    /// bytes (the peak is taken here), then frees `free_t` gradient and `free_s` saved bytes.
    fn op(&mut self, alloc: f64, pg: f64, free_t: f64, free_s: f64) {
        self.now.transient += alloc;
        self.now.grads += pg;
        if self.now.total() > self.peak.total() {
            self.peak = self.now;
        }
        self.now.transient -= free_t;
        self.now.saved -= free_s;
    }
}

/// Bytes a training forward saves for backward at batch `b` and side `res` (everything live at the
/// end of the forward but the logits).
pub fn saved_bytes(t: &ResNetTable, res: f64, b: f64, e: Elt) -> f64 {
    let (h1, h2) = stem_sides(res);
    let mut maps = 2.0 * 64.0 * h1 * h1 + 64.0 * h2 * h2;
    let mut bytes = 64.0 * h2 * h2 * b * 8.0; // maxpool indices
    let mut bn = 64.0;
    for i in 0..t.block_count() {
        let k = t.block(res, i);
        maps += k.maps().iter().sum::<f64>() + k.ds_map();
        bn += k.bn_channels();
    }
    maps += t.final_channels();
    bytes += maps * b * e.act + CLASSES * b * e.loss + bn * STAT_BYTES + LOSS_SCALARS;
    if e.image_cast {
        bytes += 3.0 * res * res * b * e.act;
    }
    bytes
}

/// The training forward's peak above the model states: all saved tensors plus the logits (freed
/// once `log_softmax` has run). A downsample branch's BN output (live until the residual add) is
/// smaller than what the rest of the forward saves after it.
pub fn forward_peak(t: &ResNetTable, res: f64, b: f64, e: Elt) -> Live {
    Live {
        saved: saved_bytes(t, res, b, e),
        grads: 0.0,
        transient: CLASSES * b * e.loss,
    }
}

/// The backward's peak above the model states (saved, parameter gradients and activation
/// gradients at the op where their sum is largest), walking the nodes in execution order.
pub fn backward_peak(t: &ResNetTable, res: f64, b: f64, e: Elt) -> Live {
    let all = saved_bytes(t, res, b, e);
    let mut s = Sim {
        now: Live {
            saved: all,
            ..Live::default()
        },
        peak: Live::default(),
    };
    let (fa, lo) = (b * e.act, b * e.loss);
    let cf = t.final_channels();
    let last = t.block(res, t.block_count().saturating_sub(1));
    // nll_loss, log_softmax, fc (addmm: input grad, weight + bias grads), avgpool (expand + div).
    s.op(lo, 0.0, 0.0, 0.0);
    s.op(lo, 0.0, lo, lo);
    s.op(cf * fa, (cf * CLASSES + CLASSES) * e.grad, lo, cf * fa);
    s.op(last.output_map() * fa, 0.0, cf * fa, 0.0);
    for i in (0..t.block_count()).rev() {
        block_backward(&mut s, &t.block(res, i), fa, e.grad);
    }
    let (h1, h2) = stem_sides(res);
    let (r0, p) = (64.0 * h1 * h1 * fa, 64.0 * h2 * h2 * fa);
    s.op(r0, 0.0, p, 64.0 * h2 * h2 * b * 8.0); // maxpool: frees the indices
    s.op(r0, 0.0, r0, r0); // relu: frees its output
    s.op(r0, 128.0 * e.grad, r0, r0 + 64.0 * STAT_BYTES); // bn1: frees conv1's output
    s.op(0.0, 64.0 * 3.0 * 49.0 * e.grad, r0, 0.0); // conv1: weight grad only
    s.peak
}

/// One block's backward (order as in the module doc). `fa` = batch × feature-map element bytes.
fn block_backward(s: &mut Sim, k: &Block, fa: f64, eg: f64) {
    let m = k.maps().map(|x| x * fa);
    let (x, d) = (k.input_map() * fa, k.ds_map() * fa);
    let y = k.output_map() * fa;
    let [w1, w2, w3, wds] = k.conv_weights().map(|w| w * eg);
    let (bn_mid, bn_out) = (2.0 * k.mid * eg, 2.0 * k.c_out * eg);
    let (st_mid, st_out) = (k.mid * STAT_BYTES, k.c_out * STAT_BYTES);
    s.op(y, 0.0, y, y); // final relu: frees the block output
    if k.downsample {
        s.op(d, bn_out, 0.0, d + st_out);
        s.op(x, wds, d, 0.0);
    }
    let gp = if k.downsample { y } else { 0.0 };
    let first_input = if k.first { x } else { 0.0 };
    if k.bottleneck {
        s.op(m[4], bn_out, gp, m[4] + st_out); // bn3
        s.op(m[3], w3, m[4], 0.0); // conv3
        s.op(m[2], 0.0, m[3], m[3]); // relu2
        s.op(m[2], bn_mid, m[2], m[2] + st_mid); // bn2
    } else {
        s.op(m[2], bn_mid, gp, m[2] + st_mid); // bn2
    }
    s.op(m[1], w2, m[2], 0.0); // conv2
    s.op(m[0], 0.0, m[1], m[1]); // relu1
    s.op(m[0], bn_mid, m[0], m[0] + st_mid); // bn1
    s.op(x, w1, m[0], first_input); // conv1
    let other = if k.downsample { x } else { y };
    s.op(x, 0.0, x + other, 0.0); // the two gradients of the block input, summed
}

/// Peak bytes of live feature maps during an inference forward (`model.eval()`, `torch.no_grad()`
/// or `torch.inference_mode()`), the input image excluded: BN makes a new tensor, ReLU works in
/// place, a block keeps its input (the identity) until its residual add, and a map is freed as
/// soon as the next op has consumed it.
pub fn inference_peak(t: &ResNetTable, res: f64, b: f64, e: Elt) -> f64 {
    let (h1, h2) = stem_sides(res);
    let (a0, p) = (64.0 * h1 * h1, 64.0 * h2 * h2);
    let mut peak = (2.0 * a0).max(a0 + p);
    for i in 0..t.block_count() {
        let k = t.block(res, i);
        let m = k.maps();
        let (x, y, d) = (k.input_map(), k.output_map(), k.ds_map());
        let steps = if k.bottleneck { 3 } else { 2 };
        let mut input = x;
        for j in 0..steps {
            let (conv, bn) = (m[2 * j], m[2 * j + 1]);
            let keep = if j == 0 { 0.0 } else { input };
            peak = peak.max(x + keep + conv).max(x + conv + bn);
            input = bn;
        }
        peak = peak.max(x + y + 2.0 * d);
    }
    let cf = t.final_channels();
    peak = peak.max(t.block(res, t.block_count().saturating_sub(1)).output_map() + cf);
    peak * b * e.act
}
