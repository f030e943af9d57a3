//! Mamba-2 and gated DeltaNet under the Transformers torch paths (no `mamba_ssm`, no
//! flash-linear-attention): `Mamba2Mixer.torch_forward` (models/mamba2/modeling_mamba2.py) and
//! `Qwen3NextGatedDeltaNet` with `torch_chunk_gated_delta_rule` (models/qwen3_next/
//! modeling_qwen3_next.py), transformers 5.24.0; docs/blocks-measured.md "Mamba-2" and "Gated
//! DeltaNet". Measured on CPU; both pad the sequence to whole chunks.

use super::Dims;
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::model::blocks::{LayerKind, MixerShape};

/// Mamba-2 mixer (the block's norm is counted with the layer's norms). di = nh·hd, cd = di + 2gN,
/// dproj = di + cd + nh, L = chunk, nc = ⌈s / L⌉. Per token: in_proj input (h) and output (dproj),
/// padded conv output and SiLU(conv) (2cd), x·dt (di... padded, below), dt before/after softplus
/// and clamped (3nh), gated RMSNorm (4di + g) and out_proj input (di), the scan output (di).
/// Per padded token (nc·L per sequence): x·dt and y (2di), 3 of nh·L (segment sums, their exp,
/// C·B), 5 of nh·N, 3 of nh·hd, 2 of nh, 2 chunk states nh·hd·N / L. Per sequence: conv padding
/// cd·(k − 1), one more state nh·hd·N and the inter-chunk decay nh·(nc + 1)². Constants: A and
/// −exp(A) (2nh), two L×L and two (nc + 1)² bool masks.
pub fn mamba2(c: &Ctx, d: &Dims, k: &LayerKind) -> f64 {
    let MixerShape::Mamba {
        inner,
        heads,
        conv_channels,
        d_conv,
        d_state,
        chunk,
        ..
    } = k.mixer
    else {
        return 0.0;
    };
    let e = c.ec;
    let (nh, n, l) = (heads, d_state, chunk.max(1.0));
    let hd = inner / nh.max(1.0);
    let di = inner;
    let cd = conv_channels;
    let g = ((cd - di) / (2.0 * n.max(1.0))).max(0.0);
    let dproj = di + cd + nh;
    let nc = (d.s / l).ceil();
    if c.amp {
        return mamba2_autocast(c, d, [nh, n, l, hd, di, cd, g, nc, d_conv]);
    }
    let per_tok = d.h + dproj + 2.0 * cd + 3.0 * nh + 3.0 * di + g + di;
    let per_padded = 2.0 * di
        + 3.0 * nh * l
        + 5.0 * nh * n
        + 3.0 * nh * hd
        + 2.0 * nh
        + (2.0 * nh * hd * n / l).floor();
    let per_seq = cd * (d_conv - 1.0) + nh * hd * n + nh * (nc + 1.0) * (nc + 1.0);
    e * (d.t * per_tok + d.b * nc * l * per_padded + d.b * per_seq + 2.0 * nh)
        + 2.0 * l * l
        + 2.0 * (nc + 1.0) * (nc + 1.0)
}

/// `Mamba2Mixer` under autocast, source line by source line of `mamba2_chunk_scan` and the mixer
/// (models/mamba2/modeling_mamba2.py, transformers 5.24.0): each `einsum` is a `bmm` on autocast's
/// list, so it saves 16-bit casts of its FP32 operands (C and B, M and x, B·decay and x, the chunk
/// states, C and the states) and returns 16 bits (G, the states, C·states); `.float()` makes FP32
/// copies of x, dt, B, C and the gate (`MambaRMSNormGated`), which the FP32 path shares with the
/// in_proj output; softplus and clamp stay 16-bit (not on the CPU FP32 list). Per token: the
/// in_proj input cast (h), the conv's input and padded output (2cd), dt (2nh 16-bit, 2nh FP32), x
/// in FP32 (di), the gated norm (4di + g, FP32) and the out_proj input cast (di). Per padded token:
/// padded x and y (2di), the decay L (nh·L), decay pieces (2nh), B (nh·N) in FP32; G, M (2nh·L),
/// the casts of C, B, B·decay, C again (4nh·N), of x twice and C·states (3nh·hd), and two chunk
/// states (2nh·hd·N / L) in 16 bits. Per sequence: conv padding, the initial state (16-bit) and
/// the inter-chunk decay (FP32 and its 16-bit cast). Exact against the AMP record's
/// `saved_by_module` (one line per source line: `saved_tensors_hooks` with the stack's frame).
fn mamba2_autocast(c: &Ctx, d: &Dims, [nh, n, l, hd, di, cd, g, nc, k]: [f64; 9]) -> f64 {
    let (e, x) = (c.ec, super::fp32_op(c));
    let per_tok = e * (d.h + 2.0 * cd + 2.0 * nh + di) + x * (di + 2.0 * nh + 4.0 * di + g);
    let per_padded = x * (2.0 * di + nh * l + 2.0 * nh + nh * n)
        + e * (2.0 * nh * l + 4.0 * nh * n + 3.0 * nh * hd + 2.0 * nh * hd * n / l);
    let decay = nh * (nc + 1.0) * (nc + 1.0);
    let per_seq = e * (cd * (k - 1.0) + nh * hd * n + decay) + x * decay;
    d.t * per_tok
        + d.b * nc * l * per_padded
        + d.b * per_seq
        + x * 2.0 * nh
        + 2.0 * l * l
        + 2.0 * (nc + 1.0) * (nc + 1.0)
}

/// Gated DeltaNet mixer, chunk C = 64 (`torch_chunk_gated_delta_rule`). Kd = nk·dk, Vd = nv·dv,
/// cd = 2Kd + Vd. Per token: input (h), conv input and padded output (2cd), β/decay pieces (3nv),
/// l2-normed q and k (2nv·dk) and their scales (2nv), gated RMSNorm (5Vd + nv), out_proj input
/// (Vd). Per padded token: chunked q, k, k·β forms (10nv·dk), v, v·β and the corrected v (3nv·dv),
/// C×C decay and attention tensors (5nv·C), g cumsum pieces (4nv). Per chunk: nv decays and one
/// nv·dk·dv state; per sequence the conv padding cd·(k − 1). At b > 1 one [b·nv, C, dk] tensor is
/// a view of a counted storage. Exact for whole chunks; over-states when s % 64 ≠ 0 (measured).
pub fn delta_net(c: &Ctx, d: &Dims, k: &LayerKind) -> f64 {
    let MixerShape::DeltaNet {
        key_dim,
        value_dim,
        value_heads,
        key_head_dim,
        value_head_dim,
        conv_kernel,
    } = k.mixer
    else {
        return 0.0;
    };
    const C: f64 = 64.0;
    let e = c.ec;
    let (nv, dk, dv) = (value_heads, key_head_dim, value_head_dim);
    let cd = 2.0 * key_dim + value_dim;
    let nc = (d.s / C).ceil();
    let padded = d.b * nc * C;
    let per_tok =
        d.h + 2.0 * cd + 3.0 * nv + 2.0 * nv * dk + 2.0 * nv + 5.0 * value_dim + nv + value_dim;
    let per_padded = 10.0 * nv * dk + 3.0 * nv * dv + 5.0 * nv * C + 4.0 * nv;
    let mut out = e
        * (d.t * per_tok
            + padded * per_padded
            + d.b * nc * (nv + nv * dk * dv)
            + d.b * cd * (conv_kernel - 1.0)
            + 2.0 * nv);
    if d.b > 1.0 {
        out -= e * d.b * nv * C * dk;
    }
    out + C * C
}
