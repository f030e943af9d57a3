//! torchvision ResNets as a fixed table of stages, walked block by block (no allocation).
//!
//! Source: pytorch/vision `torchvision/models/resnet.py` at v0.29.2 (`ResNet`, `BasicBlock`,
//! `Bottleneck`): stem conv 7×7/2 (3→64, no bias) + BN + ReLU(inplace) + maxpool 3×3/2 pad 1; four
//! stages of widths 64, 128, 256, 512 (× expansion 4 for `Bottleneck`), the stride 2 of stages 2–4
//! on the first block's 3×3 conv ("ResNet v1.5"), a downsample (1×1 conv with the block's stride +
//! BN) where the stride or the width changes; adaptive average pool to 1×1; `fc` to 1,000 classes
//! (with bias). Every conv is bias-free and followed by a BatchNorm (weight + bias; running mean and
//! variance buffers plus an int64 `num_batches_tracked`).

use crate::scenario::CnnNetwork;

/// Blocks per stage and whether the block is a `Bottleneck` (expansion 4) or a `BasicBlock`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResNetTable {
    pub blocks: [u32; 4],
    pub bottleneck: bool,
}

/// resnet18: BasicBlock [2, 2, 2, 2]; resnet50: Bottleneck [3, 4, 6, 3]; resnet101: Bottleneck
/// [3, 4, 23, 3] (`resnet.py` `resnet18` / `resnet50` / `resnet101`).
pub fn table(n: CnnNetwork) -> Option<ResNetTable> {
    let (blocks, bottleneck) = match n {
        CnnNetwork::ResNet18 => ([2, 2, 2, 2], false),
        CnnNetwork::ResNet50 => ([3, 4, 6, 3], true),
        CnnNetwork::ResNet101 => ([3, 4, 23, 3], true),
        _ => return None,
    };
    Some(ResNetTable { blocks, bottleneck })
}

/// Output side of a convolution or pooling: ⌊(h + 2·pad − k) / stride⌋ + 1 (PyTorch `Conv2d` /
/// `MaxPool2d` docs, "Shape").
pub fn out_side(h: f64, k: f64, stride: f64, pad: f64) -> f64 {
    ((h + 2.0 * pad - k) / stride).floor().max(0.0) + 1.0
}

/// One residual block: input width and side, bottleneck width, output width and side, and whether
/// it has a downsample branch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Block {
    pub c_in: f64,
    pub h_in: f64,
    pub mid: f64,
    pub c_out: f64,
    pub h_out: f64,
    pub downsample: bool,
    pub bottleneck: bool,
    /// The first block after the stem (its input is the maxpool output, which nothing else saves).
    pub first: bool,
}

/// The stem's sides: after conv1 (7×7/2, pad 3) and after the maxpool (3×3/2, pad 1).
pub fn stem_sides(res: f64) -> (f64, f64) {
    let h1 = out_side(res, 7.0, 2.0, 3.0);
    (h1, out_side(h1, 3.0, 2.0, 1.0))
}

impl ResNetTable {
    pub fn block_count(&self) -> u32 {
        self.blocks.iter().sum()
    }

    pub fn expansion(&self) -> f64 {
        if self.bottleneck { 4.0 } else { 1.0 }
    }

    /// Channels out of the last stage (the `fc` input): 512 × expansion.
    pub fn final_channels(&self) -> f64 {
        512.0 * self.expansion()
    }

    /// Block `i` (0-based, stage order) at input resolution `res`: stage widths 64·2^stage, stride 2 on
    /// the first block of stages 2–4 (3×3 conv, pad 1; the 1×1 downsample has the same stride).
    /// Constant time: a loop over the four stages, not the blocks.
    pub fn block(&self, res: f64, i: u32) -> Block {
        let (_, mut h) = stem_sides(res);
        let mut c_in = 64.0;
        let mut first_of_stage = 0u32;
        for (stage, &n) in self.blocks.iter().enumerate() {
            let mid = 64.0 * f64::from(1u32 << stage);
            let c_out = mid * self.expansion();
            let stride = if stage > 0 { 2.0 } else { 1.0 };
            let h_out = out_side(h, 3.0, stride, 1.0);
            if i < first_of_stage + n {
                let j = i - first_of_stage;
                let (c, h_in) = if j == 0 { (c_in, h) } else { (c_out, h_out) };
                return Block {
                    c_in: c,
                    h_in,
                    mid,
                    c_out,
                    h_out,
                    downsample: j == 0 && (stride > 1.0 || c_in != c_out),
                    bottleneck: self.bottleneck,
                    first: i == 0,
                };
            }
            first_of_stage += n;
            c_in = c_out;
            h = h_out;
        }
        Block::default()
    }
}

impl Block {
    /// Conv weights (bias-free): bottleneck 1×1 c_in→mid, 3×3 mid→mid, 1×1 mid→out; basic 3×3
    /// c_in→mid, 3×3 mid→mid; downsample 1×1 c_in→out.
    pub fn conv_weights(&self) -> [f64; 4] {
        let ds = if self.downsample {
            self.c_in * self.c_out
        } else {
            0.0
        };
        if self.bottleneck {
            [
                self.c_in * self.mid,
                self.mid * self.mid * 9.0,
                self.mid * self.c_out,
                ds,
            ]
        } else {
            [
                self.c_in * self.mid * 9.0,
                self.mid * self.mid * 9.0,
                0.0,
                ds,
            ]
        }
    }

    /// BatchNorm channels: one BN per conv.
    pub fn bn_channels(&self) -> f64 {
        let ds = if self.downsample { self.c_out } else { 0.0 };
        if self.bottleneck {
            2.0 * self.mid + self.c_out + ds
        } else {
            2.0 * self.mid + ds
        }
    }

    /// Parameter tensors: a weight per conv, weight + bias per BN.
    pub fn tensors(&self) -> f64 {
        let convs =
            if self.bottleneck { 3.0 } else { 2.0 } + if self.downsample { 1.0 } else { 0.0 };
        3.0 * convs
    }

    /// Forward multiply-accumulates per image: C_out · C_in · k² · H_out² per conv.
    pub fn macs(&self) -> f64 {
        let [w1, w2, w3, ds] = self.conv_weights();
        let (hi, ho) = (self.h_in * self.h_in, self.h_out * self.h_out);
        if self.bottleneck {
            w1 * hi + (w2 + w3 + ds) * ho
        } else {
            (w1 + w2 + ds) * ho
        }
    }

    /// Elements per image of the feature maps the block creates, in forward order:
    /// bottleneck [conv1 out (mid·H_in²), bn1/relu1 out, conv2 out (mid·H_out²), bn2/relu2 out,
    /// conv3 out (out·H_out²), block out (bn3 out, `+= identity` and ReLU in place)], basic
    /// [conv1 out, bn1/relu1 out, conv2 out, block out, 0, 0] (both on mid·H_out²).
    pub fn maps(&self) -> [f64; 6] {
        let (hi, ho) = (self.h_in * self.h_in, self.h_out * self.h_out);
        if self.bottleneck {
            let (a, b, o) = (self.mid * hi, self.mid * ho, self.c_out * ho);
            [a, a, b, b, o, o]
        } else {
            let a = self.mid * ho;
            [a, a, a, a, 0.0, 0.0]
        }
    }

    /// Elements per image of the downsample conv's output (saved by its BN), 0 without one.
    pub fn ds_map(&self) -> f64 {
        if self.downsample {
            self.c_out * self.h_out * self.h_out
        } else {
            0.0
        }
    }

    pub fn input_map(&self) -> f64 {
        self.c_in * self.h_in * self.h_in
    }

    pub fn output_map(&self) -> f64 {
        self.c_out * self.h_out * self.h_out
    }
}
