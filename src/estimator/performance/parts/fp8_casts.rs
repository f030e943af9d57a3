//! The casts an FP8 training recipe adds around its scaled matmuls: each linear's input, weight
//! and output gradient scaled by its absolute maximum and cast to FP8, in row-major and
//! column-major layouts (the backward's two GEMMs read the transposes).
//!
//! Bytes per cast element and which tensors are cast, from torchao's float8 roofline (pytorch/ao
//! at eab345c2268a7506355d506ebfc27b5d28e5e7d0, the commit of torchtitan's December 2024 H100
//! benchmarks, `torchao/float8/roofline_utils.py` `get_tensor_memory_traffic_bytes` and
//! `get_float8_mem_sympy`, dynamic tensorwise scaling under torch.compile), counted per linear as
//! it does: a linear's input and its output gradient have their max-abs reduction fused into the
//! op that produced them, and the cast reads them once and writes the FP8 result twice (2 + 2 × 1 B
//! at BF16); a weight is reduced by a kernel of its own before the cast (2 + 2 + 2 × 1); the
//! forward's input and weight casts are kept for the backward (nothing recast there). A model
//! with separate q/k/v and gate/up linears (Hugging Face, torchtitan) casts the hidden state once
//! per linear: three times for attention, twice for a SwiGLU MLP; Megatron-Core's fused QKV and
//! MLP-up (Transformer Engine's `LayerNormLinear` / `LayerNormMLP`, its `cast_transpose`) once each.
//! A weight is cast once per micro-batch (torchao's `Float8Linear` recasts it in every forward),
//! except under Megatron-Core's Transformer Engine linears, which cast it once per step: the
//! schedule calls `set_is_first_microbatch()` before a step's first micro-batch
//! (`megatron/core/pipeline_parallel/schedules.py` `forward_step`, NVIDIA/Megatron-LM at
//! 4dabc62385799f8256fb05ccf3dfd4a7218781bd), the TE wrappers pass `is_first_microbatch` to TE's
//! `Linear` / `LayerNormLinear` and clear it after their forward
//! (`megatron/core/extensions/transformer_engine.py` `TELinear.forward`), and TE reuses the FP8
//! weight it cached on the first micro-batch for the others ([`WeightCasts`]).
//! Not counted: the recast of a recomputed forward under activation checkpointing (the roofline
//! does not model it either), and a mixture of experts' inactive experts.

use crate::estimator::model::ResolvedModel;
use crate::scenario::FfnKind;

/// Bytes one activation or gradient element costs to cast: read at `element_bytes`, write FP8
/// twice.
fn activation_bytes(element_bytes: f64) -> f64 {
    element_bytes + 2.0
}

/// Bytes one weight element costs: the max-abs read, the cast's read, two FP8 writes.
fn weight_bytes(element_bytes: f64) -> f64 {
    2.0 * element_bytes + 2.0
}

/// One layer's casts on one GPU, forward and backward: the activations' and gradients' every
/// micro-batch, the weights' as [`WeightCasts`] says.
pub struct LayerCasts {
    /// Inputs and output gradients of one micro-batch, bytes.
    pub activation_bytes: f64,
    /// An input and an output-gradient cast per linear (for the per-kernel bandwidth efficiency).
    pub activation_kernels: f64,
    /// The layer's weight shard, bytes, one cast.
    pub weight_bytes: f64,
    /// A weight cast per linear.
    pub weight_kernels: f64,
}

/// How often a step casts its FP8 weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightCasts {
    /// In every micro-batch's forward (torchao `Float8Linear`).
    EveryMicroBatch,
    /// On the step's first micro-batch, cached for the others (Transformer Engine under
    /// Megatron-Core's `is_first_microbatch`).
    OncePerStep,
}

impl LayerCasts {
    /// Times `micro_batches` micro-batches' casts take at `bandwidth` B/s, seconds.
    pub fn step_time(&self, micro_batches: f64, weights: WeightCasts, bandwidth: f64) -> f64 {
        let weight_casts = match weights {
            WeightCasts::EveryMicroBatch => micro_batches,
            WeightCasts::OncePerStep => 1.0,
        };
        let time = super::elementwise::time_in_kernels;
        micro_batches * time(self.activation_bytes, self.activation_kernels, bandwidth)
            + weight_casts * time(self.weight_bytes, self.weight_kernels, bandwidth)
    }
}

/// One layer's casts for `tokens` tokens on one GPU: the linears' inputs (QKV and MLP-up read the
/// hidden state, replicated on every tensor-parallel rank unless sequence parallel:
/// `replicated_div`; out and MLP-down their shard), their output gradients in the backward (out
/// and MLP-down the hidden state again), and the layer's weight shard once (its
/// matmul weights as the FLOP count takes them, `flops::layer_matmul_weights`: the active experts
/// and the router of a mixture of experts). `ffn` is the active FFN width; `fused_linears` says
/// QKV and gate/up are one linear each. The attention side is the mean over the model's layer
/// kinds ([`mixer_casts`]).
pub fn layer(
    m: &ResolvedModel,
    tokens: f64,
    tp: f64,
    replicated_div: f64,
    ffn: f64,
    element_bytes: f64,
    fused_linears: bool,
) -> LayerCasts {
    let h = f64::from(m.hidden);
    let swiglu = m.ffn_kind == FfnKind::SwiGlu;
    let up = if swiglu { 2.0 } else { 1.0 };
    let up_linears = if fused_linears { 1.0 } else { up };
    let mixer = mixer_casts(m, tp, replicated_div, fused_linears);
    // The MLP's hidden-width casts in the layers that have one (`ffn` is already the mean over
    // every layer).
    let with_mlp = crate::estimator::memory::layer_kinds::attention_and_mlp_shares(m).1;
    let inputs = mixer.inputs + with_mlp * up_linears * h / replicated_div + ffn / tp;
    let gradients = mixer.gradients + with_mlp * h / replicated_div + up * ffn / tp;
    let (projections, mlp) = crate::estimator::performance::flops::layer_matmul_weights(m);
    // The split weights' shard, the replicated ones (MLA's down projections, a router; K/V heads
    // beyond kv / TP) whole.
    let weights = (projections + mlp) / tp + m.replicated_matrices_beyond_split_per_layer(tp);
    let linears = mixer.linears + with_mlp * (up_linears + 1.0);
    LayerCasts {
        activation_bytes: tokens * (inputs + gradients) * activation_bytes(element_bytes),
        activation_kernels: 2.0 * linears,
        weight_bytes: weights * weight_bytes(element_bytes),
        weight_kernels: linears,
    }
}

/// A token mixer's linears on one rank: elements cast per token (inputs forward, output gradients
/// backward) and the linear count.
#[derive(Clone, Copy, Default)]
struct MixerCasts {
    inputs: f64,
    gradients: f64,
    linears: f64,
}

/// The attention side's casts, the mean over the layer kinds:
/// - softmax attention: q, k, v (one fused QKV linear under Transformer Engine or a fused model)
///   read the hidden state, out reads the rank's heads; their output gradients are q, the rank's K/V
///   (heads replicated when tensor parallelism exceeds them) and the hidden state;
/// - latent attention (DeepSeek-V2 §2.1; Megatron-Core `MLASelfAttention`: the down projections
///   replicated on every rank, the up projections column-parallel): q_a and kv_a read the hidden
///   state, q_b and kv_b the latents, out the rank's heads × v; their output gradients are the
///   latents (kv_a's with the shared RoPE key), the rank's heads × (nope + rope) and × (nope + v),
///   and the hidden state. Without a query latent one q projection;
/// - Mamba-2 under Megatron-Core (r0.14 `megatron/core/ssm/mamba_mixer.py` `MambaMixer`: `in_proj`
///   a column-parallel `TELayerNormColumnParallelLinear`, `out_proj` a row-parallel
///   `TERowParallelLinear`; the convolution and the scan stay 16-bit): in_proj reads the hidden
///   state, out_proj the rank's inner width; their output gradients are in_proj's rank share
///   (2·inner + 2·groups·state + heads) / TP and the hidden state. Two linears;
/// - Mamba-2 and Mamba-1 elsewhere (Transformers `Mamba2Mixer` / `MambaMixer` on their CUDA kernels,
///   the path the memory rules assume): only `in_proj` runs as a module a float8 recipe converts;
///   `cuda_kernels_forward` hands out_proj's (Mamba-1: x_proj's, dt_proj's and out_proj's) weights
///   to mamba_ssm's fused function (`mamba_split_conv1d_scan_combined`, `mamba_inner_fn`), which
///   multiplies them in 16-bit `F.linear`. One linear, its output gradient in_proj's width (Mamba-1
///   2·inner) / TP;
/// - gated DeltaNet (Transformers `Qwen3NextGatedDeltaNet`): in_proj_qkvz (hidden → 2·key + 2·value)
///   and in_proj_ba (hidden → 2·value heads) read the hidden state, out_proj the value width;
///   their output gradients are those widths ÷ TP and the hidden state. Three linears; two under
///   Megatron-Core, whose `GatedDeltaNet` fuses both input projections into one column-parallel
///   `in_proj` of the same widths (`fused_linears`).
fn mixer_casts(m: &ResolvedModel, tp: f64, replicated_div: f64, fused_linears: bool) -> MixerCasts {
    use crate::estimator::model::blocks::MixerShape;
    let h = f64::from(m.hidden);
    let hidden = h / replicated_div;
    let qkv_linears = if fused_linears || m.fused_qkv {
        1.0
    } else {
        3.0
    };
    let attention = |q: f64, kv_rank: f64| MixerCasts {
        inputs: qkv_linears * hidden + q / tp,
        gradients: hidden + q / tp + 2.0 * kv_rank,
        linears: qkv_linears + 1.0,
    };
    let (q_model, _) = m.attention_widths();
    let fallback = attention(q_model, m.kv_width_rank(tp));
    let layers = f64::from(m.blocks.layers());
    if layers <= 0.0 {
        return fallback;
    }
    let mut sum = MixerCasts::default();
    for k in m.blocks.kinds() {
        let c = match k.mixer {
            MixerShape::Attention {
                heads, head_dim, ..
            } => attention(heads * head_dim, k.mixer.kv_width_rank(tp)),
            MixerShape::Mla(s) => {
                let heads = s.heads / tp;
                // The down projections run on the rank's tokens under sequence parallelism (their
                // outputs are gathered before the up projections), so their output gradients are
                // ÷ `replicated_div` as the hidden state is.
                let (q_in, q_grad, q_linears) = if s.q_lora > 0.0 {
                    (
                        hidden + s.q_lora,
                        s.q_lora / replicated_div + heads * s.qk_head_dim(),
                        2.0,
                    )
                } else {
                    (hidden, heads * s.qk_head_dim(), 1.0)
                };
                MixerCasts {
                    inputs: q_in + hidden + s.kv_lora + heads * s.v,
                    gradients: q_grad
                        + s.kv_latent_width() / replicated_div
                        + heads * s.kv_b_head_dim()
                        + hidden,
                    linears: q_linears + 3.0,
                }
            }
            // An MLP-only layer has no mixer to cast for.
            MixerShape::Empty => MixerCasts::default(),
            MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => {
                recurrent_casts(&k.mixer, tp, hidden, fused_linears)
            }
        };
        let n = f64::from(k.count);
        sum.inputs += n * c.inputs;
        sum.gradients += n * c.gradients;
        sum.linears += n * c.linears;
    }
    MixerCasts {
        inputs: sum.inputs / layers,
        gradients: sum.gradients / layers,
        linears: sum.linears / layers,
    }
}

/// A recurrent mixer's linears (Mamba-1/2, gated DeltaNet), as [`mixer_casts`] lists them;
/// `hidden` is the hidden width ÷ the sequence-parallel divisor.
fn recurrent_casts(
    mixer: &crate::estimator::model::blocks::MixerShape,
    tp: f64,
    hidden: f64,
    fused_linears: bool,
) -> MixerCasts {
    use crate::estimator::model::blocks::MixerShape;
    use crate::scenario::MambaVersion;
    match *mixer {
        MixerShape::Mamba {
            inner,
            heads,
            conv_channels,
            version,
            ..
        } => {
            // in_proj writes z, x, B, C and Δ (conv_channels = inner + 2·groups·state); Mamba-1's
            // writes x and z.
            let in_proj = match version {
                MambaVersion::Mamba2 => inner + conv_channels + heads,
                MambaVersion::Mamba1 => 2.0 * inner,
            };
            let in_only = MixerCasts {
                inputs: hidden,
                gradients: in_proj / tp,
                linears: 1.0,
            };
            if fused_linears && version == MambaVersion::Mamba2 {
                MixerCasts {
                    inputs: in_only.inputs + inner / tp,
                    gradients: in_only.gradients + hidden,
                    linears: 2.0,
                }
            } else {
                in_only
            }
        }
        MixerShape::DeltaNet {
            key_dim,
            value_dim,
            value_heads,
            ..
        } => {
            let in_linears = if fused_linears { 1.0 } else { 2.0 };
            MixerCasts {
                inputs: in_linears * hidden + value_dim / tp,
                gradients: (2.0 * key_dim + 2.0 * value_dim + 2.0 * value_heads) / tp + hidden,
                linears: in_linears + 1.0,
            }
        }
        MixerShape::Attention { .. } | MixerShape::Mla(_) | MixerShape::Empty => {
            MixerCasts::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bf16_cast_moves_four_bytes_an_activation_and_six_a_weight() {
        assert_eq!(activation_bytes(2.0), 4.0);
        assert_eq!(weight_bytes(2.0), 6.0);
    }

    /// DeepSeek-V3's latent attention on one rank (TP 1): q_a, kv_a (the hidden state), q_b (the
    /// 1,536-wide latent), kv_b (512) and out (128 heads × 128) read 32,768 elements per token;
    /// their output gradients are 1,536 + 128 × 192 + 512 + 64 + 128 × 256 + 7,168 = 66,624; five
    /// linears (before, softmax attention's count at the first MLA kind's 128 heads × 192 for q, k
    /// and v: 31,744 and 80,896 with a fused QKV).
    #[test]
    fn latent_attention_casts_its_own_linears() {
        let s = crate::presets::bundled_scenario("deepseek-v3-inference-8xh200-fp8").unwrap();
        let m = crate::estimator::model::resolve(&s.model, &mut Default::default());
        let c = mixer_casts(&m, 1.0, 1.0, true);
        assert_eq!(
            (c.inputs, c.gradients, c.linears),
            (32_768.0, 66_624.0, 5.0)
        );
    }

    /// Eight layers of one mixer on a 1,024-wide model, resolved.
    fn eight_layers_of(mixer: crate::scenario::Mixer) -> ResolvedModel {
        use crate::scenario::{LayerRun, Mlp, PatternPart, Scenario};
        let mut s = Scenario::default();
        (s.model.transformer.layers, s.model.transformer.hidden) = (8, 1024);
        s.model.pattern = vec![PatternPart {
            repeat: 8,
            layers: vec![LayerRun {
                count: 1,
                mixer,
                mlp: Mlp::None,
                norms: 1,
            }],
        }];
        crate::estimator::model::resolve(&s.model, &mut Default::default())
    }

    /// Mamba-2 (inner 2,048, 8 groups of state 128, 32 heads) under Megatron-Core casts in_proj's
    /// input (the hidden state, 1,024) and out_proj's (the inner width, 2,048); their output
    /// gradients are in_proj's 2·2,048 + 2·8·128 + 32 = 6,176 and the hidden state. At TP 2 the
    /// rank's shares halve. On Transformers' CUDA path out_proj runs inside mamba_ssm's fused
    /// function: in_proj alone.
    #[test]
    fn mamba2_casts_its_two_projections() {
        use crate::scenario::{Mamba, Mixer};
        let m = eight_layers_of(Mixer::Mamba(Mamba {
            d_state: 128,
            expand: 2,
            n_groups: 8,
            head_dim: 64,
            ..Mamba::default()
        }));
        let c = mixer_casts(&m, 1.0, 1.0, true);
        assert_eq!((c.inputs, c.gradients, c.linears), (3_072.0, 7_200.0, 2.0));
        let c = mixer_casts(&m, 2.0, 1.0, true);
        assert_eq!((c.inputs, c.gradients, c.linears), (2_048.0, 4_112.0, 2.0));
        let c = mixer_casts(&m, 1.0, 1.0, false);
        assert_eq!((c.inputs, c.gradients, c.linears), (1_024.0, 6_176.0, 1.0));
    }

    /// Gated DeltaNet (4 key heads of 64, 8 value heads of 64): the Hugging Face module's two input
    /// projections each read the hidden state, Megatron-Core's fused one reads it once; out_proj
    /// reads the value width (512); the output gradients are 2·256 + 2·512 + 2·8 = 1,552 and the
    /// hidden state.
    #[test]
    fn gated_delta_net_casts_its_projections() {
        use crate::scenario::{GatedDeltaNet, Mixer};
        let m = eight_layers_of(Mixer::GatedDeltaNet(GatedDeltaNet {
            key_heads: 4,
            value_heads: 8,
            key_head_dim: 64,
            value_head_dim: 64,
            ..GatedDeltaNet::default()
        }));
        let c = mixer_casts(&m, 1.0, 1.0, false);
        assert_eq!((c.inputs, c.gradients, c.linears), (2_560.0, 2_576.0, 3.0));
        let c = mixer_casts(&m, 1.0, 1.0, true);
        assert_eq!((c.inputs, c.gradients, c.linears), (1_536.0, 2_576.0, 2.0));
    }
}
