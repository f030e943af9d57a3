//! Edge inference with activation buffers reused by liveness (seed article §3.2: BERT-tiny under
//! 512 MB on a Snapdragon 865).
//!
//! An encoder layer's forward is a fixed sequence of ops, each writing one buffer. A naive plan gives
//! every op output its own allocation for the whole forward: the sum of all buffers. A plan that
//! reuses memory by liveness needs at least the largest set of buffers alive at once — the
//! "operator breadth" lower bound of Pisarchyk & Lee, "Efficient Memory Management for Deep Neural
//! Net Inference" (arXiv:2001.03288, §3), which TensorFlow Lite's arena planner approaches. This
//! module computes that peak live set; it never exceeds the naive sum. In-place element-wise ops
//! (softmax, GELU) are not assumed.

use crate::estimator::ResolvedModel;

/// The ops of one encoder layer, in execution order (each writes one buffer).
pub const OPS: [&str; 12] = [
    "Q projection",
    "K projection",
    "V projection",
    "attention scores",
    "softmax",
    "attention context",
    "output projection",
    "residual + norm 1",
    "FFN up",
    "GELU",
    "FFN down",
    "residual + norm 2",
];

/// Activation memory of one forward under the two plans (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ActivationPlan {
    /// Every op output kept for the whole forward (plus the embedding output).
    pub naive_bytes: f64,
    /// The largest set of buffers alive at once.
    pub reused_bytes: f64,
    /// The op at which the live set peaks (index into [`OPS`]).
    pub peak_op: usize,
}

/// One buffer: its size in elements and the ops that write (`born`) and last read it (`dies`).
#[derive(Clone, Copy)]
struct Buffer {
    elems: f64,
    born: usize,
    dies: usize,
}

/// Both plans for `layers` encoder layers over `tokens` = batch × sequence tokens.
pub fn activation_plan(
    batch: f64,
    seq: f64,
    hidden: f64,
    ffn: f64,
    heads: f64,
    layers: u32,
    elem_bytes: f64,
) -> ActivationPlan {
    let t = finite(batch) * finite(seq);
    let th = t * finite(hidden);
    let tf = t * finite(ffn);
    let scores = finite(heads) * finite(batch) * finite(seq) * finite(seq);
    let b = |elems, born, dies| Buffer { elems, born, dies };
    // x is the layer input (the previous layer's norm-2 output), alive until the first residual.
    let buffers = [
        b(th, 0, 7),     // x
        b(th, 0, 3),     // q
        b(th, 1, 3),     // k
        b(th, 2, 5),     // v
        b(scores, 3, 4), // scores
        b(scores, 4, 5), // probabilities
        b(th, 5, 6),     // context
        b(th, 6, 7),     // projection
        b(th, 7, 11),    // norm-1 output, alive until the second residual
        b(tf, 8, 9),     // FFN up
        b(tf, 9, 10),    // GELU
        b(th, 10, 11),   // FFN down
        b(th, 11, 11),   // norm-2 output = the next layer's x
    ];
    let mut peak = (0.0, 0);
    for op in 0..OPS.len() {
        let live: f64 = buffers
            .iter()
            .filter(|x| x.born <= op && op <= x.dies)
            .map(|x| x.elems)
            .sum();
        if live > peak.0 {
            peak = (live, op);
        }
    }
    let per_layer: f64 = buffers.iter().skip(1).map(|x| x.elems).sum();
    let e = finite(elem_bytes);
    ActivationPlan {
        naive_bytes: (th + f64::from(layers) * per_layer) * e,
        reused_bytes: if layers == 0 { th * e } else { peak.0 * e },
        peak_op: peak.1,
    }
}

/// The plans for a resolved transformer at `batch` sequences of `seq` tokens.
pub fn model_plan(m: &ResolvedModel, batch: f64, seq: f64, elem_bytes: f64) -> ActivationPlan {
    activation_plan(
        batch,
        seq,
        f64::from(m.hidden),
        f64::from(m.ffn),
        f64::from(m.heads),
        m.layers,
        elem_bytes,
    )
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x.max(0.0) } else { 0.0 }
}
