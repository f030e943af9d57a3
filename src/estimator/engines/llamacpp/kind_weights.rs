//! One layer's weights by its kind, for models whose layers differ (llama.cpp@0c1e57098's tensors
//! per architecture, `src/models/*.cpp` `load_arch_tensors`; measured:
//! tests/data/measured/llamacpp-cpu-layer-kinds.json).

use super::dims::{Buft, Dims, tensor_bytes};
use super::tensor_types::{self, Role};
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlaShape, MlpShape};
use crate::scenario::{FfnKind, MambaVersion};
use crate::tensor::{GgufFileType, GgufType};

/// How one tensor is stored: its type by role and layer, its buffer's alignment.
struct Store<'a> {
    d: &'a Dims,
    q: tensor_types::Model,
    ftype: GgufFileType,
    il: u32,
    buft: Buft,
}

impl Store<'_> {
    /// A matrix's bytes; none for no rows (a tensor the model does not have: CUDA's row
    /// padding would otherwise count for it).
    fn w(&self, role: Role, ne0: u64, rows: u64) -> u64 {
        if rows == 0 {
            return 0;
        }
        let t = tensor_types::tensor_type(self.ftype, role, self.il, ne0, &self.q);
        tensor_bytes(t, ne0, rows, self.buft)
    }

    fn vec(&self, n: u64) -> u64 {
        tensor_bytes(GgufType::F32, n, 1, self.buft)
    }
}

/// An FFN's matrices as GGUF stores them, `(role, ne0, rows)`: up and gate `n_embd` wide with
/// `ff × n` rows, down `ff` wide with `n_embd × n` rows (`n` experts in one 3-D tensor, 1 for a
/// dense FFN); an ungated FFN's gate has no rows (0 bytes).
const fn ffn_matrices(e: u64, ff: u64, n: u64, gated: bool) -> [(Role, u64, u64); 3] {
    let gate_rows = if gated { ff * n } else { 0 };
    [
        (Role::FfnUp, e, ff * n),
        (Role::FfnGate, e, gate_rows),
        (Role::FfnDown, ff, e * n),
    ]
}

impl Store<'_> {
    /// The bytes of an FFN's matrices ([`ffn_matrices`]).
    fn ffn(&self, ff: u64, n: u64, gated: bool) -> u64 {
        ffn_matrices(self.d.n_embd, ff, n, gated)
            .iter()
            .map(|&(role, ne0, rows)| self.w(role, ne0, rows))
            .sum()
    }
}

fn u(x: f64) -> u64 {
    x.max(0.0) as u64
}

/// Weight bytes of repeating layer `il` of kind `k`: norms (F32, `k.norms` of them: Gemma's four),
/// the mixer ([`mixer_bytes`]) and the MLP ([`mlp_bytes`]).
pub fn kind_bytes(d: &Dims, k: &LayerKind, ftype: GgufFileType, il: u32, buft: Buft) -> u64 {
    let st = Store {
        d,
        q: d.quant_model(),
        ftype,
        il,
        buft,
    };
    let per_norm = if d.norm_bias { 2 } else { 1 };
    u(k.norms) * per_norm * st.vec(d.n_embd) + mixer_bytes(&st, k) + mlp_bytes(&st, k)
}

/// - attention: Q, K, V (or fused QKV), the output; per-head Q/K norms, sinks (`attn_sinks`, one
///   F32 per head), a gated query (Qwen3-Next: Q doubled), biases;
/// - latent attention (`deepseek2.cpp`): `attn_q_a` + its norm + `attn_q_b` (or `attn_q` without
///   a query latent), `attn_kv_a_mqa` + its norm, `attn_k_b` and `attn_v_b` (per head), the output;
///   these take the mix's base type (llama-quant.cpp has no rule of its own for them);
/// - Mamba-2 (`mamba2.cpp`): every tensor; another recurrent mixer: its matrix weights at the base
///   type (an approximation: its small F32 tensors are left out).
fn mixer_bytes(st: &Store, k: &LayerKind) -> u64 {
    let e = st.d.n_embd;
    match k.mixer {
        MixerShape::Attention { .. } => attention_bytes(st, &k.mixer),
        MixerShape::Mla(MlaShape {
            heads,
            q_lora,
            kv_lora,
            nope,
            rope,
            v,
            ..
        }) => {
            let (h, ql, kl) = (u(heads), u(q_lora), u(kv_lora));
            let qk = u(nope) + u(rope);
            let q_part = if ql > 0 {
                st.w(Role::AttnQ, e, ql) + st.vec(ql) + st.w(Role::AttnQ, ql, h * qk)
            } else {
                st.w(Role::AttnQ, e, h * qk)
            };
            q_part
                + st.w(Role::AttnQ, e, kl + u(rope))
                + st.vec(kl)
                + st.w(Role::AttnQ, u(nope), kl * h)
                + st.w(Role::AttnQ, kl, u(v) * h)
                + st.w(Role::AttnOutput, h * u(v), e)
        }
        MixerShape::Mamba {
            inner,
            heads,
            conv_channels,
            d_conv,
            version: MambaVersion::Mamba2,
            ..
        } => {
            // `mamba2.cpp`: ssm_in (z, x, B, C and dt in one), the F32 depthwise convolution and its
            // bias, dt bias, A, D, the grouped norm, ssm_out.
            let (di, nh, conv) = (u(inner), u(heads), u(conv_channels));
            st.w(Role::AttnQ, e, di + conv + nh)
                + tensor_bytes(GgufType::F32, u(d_conv), conv, st.buft)
                + st.vec(conv)
                + 3 * st.vec(nh)
                + st.vec(di)
                + st.w(Role::AttnOutput, di, e)
        }
        MixerShape::Mamba { .. } | MixerShape::DeltaNet { .. } => {
            st.w(Role::AttnQ, e, u(k.mixer_w) / e.max(1))
        }
        MixerShape::Empty => 0,
    }
}

/// Q, K, V (or fused QKV) and the output of softmax attention, with their optional parts.
fn attention_bytes(st: &Store, mixer: &MixerShape) -> u64 {
    let (d, e) = (st.d, st.d.n_embd);
    let MixerShape::Attention {
        heads,
        kv_heads,
        head_dim,
        qk_norm,
        sinks,
        output_gate,
        qkv_bias,
        out_bias,
        ..
    } = *mixer
    else {
        return 0;
    };
    let hd = u(head_dim);
    let q_out = u(heads) * hd;
    let kv_out = u(kv_heads) * hd;
    let q_rows = if output_gate { 2 * q_out } else { q_out };
    let mut a = if d.fused_qkv {
        st.w(Role::AttnQkv, e, q_rows + 2 * kv_out)
    } else {
        st.w(Role::AttnQ, e, q_rows) + st.w(Role::AttnK, e, kv_out) + st.w(Role::AttnV, e, kv_out)
    };
    a += st.w(Role::AttnOutput, q_out, e);
    // Optional tensors (`create_tensor_qkv`'s `TENSOR_NOT_REQUIRED` biases, `bo`): present
    // when the checkpoint has them, e.g. Qwen2's q, k and v biases.
    if d.bias || qkv_bias {
        a += st.vec(q_rows) + 2 * st.vec(kv_out);
    }
    if d.bias || out_bias {
        a += st.vec(e);
    }
    if qk_norm {
        a += 2 * st.vec(hd);
    }
    if sinks {
        a += st.vec(u(heads));
    }
    a
}

/// A dense MLP of its own width, or routed experts (`ffn_*_exps`), the F32 router and the shared
/// experts as one MLP (`ffn_*_shexp`, `Dims::shexp` wide) with Qwen2-MoE's F32 gate row.
fn mlp_bytes(st: &Store, k: &LayerKind) -> u64 {
    let (d, e) = (st.d, st.d.n_embd);
    let mlp = |f: u64, n: u64, gated: bool| st.ffn(f, n, gated);
    match k.mlp {
        MlpShape::Dense { ffn, kind } => {
            let f = u(ffn);
            let bias = if d.bias { st.vec(f) + st.vec(e) } else { 0 };
            mlp(f, 1, kind == FfnKind::SwiGlu) + bias
        }
        MlpShape::Moe => {
            let shared = if d.n_shared > 0 {
                mlp(d.shexp.n_ff, 1, d.gated)
            } else {
                0
            };
            let shared_gate = if d.shexp.gate { st.vec(e) } else { 0 };
            tensor_bytes(GgufType::F32, e, d.n_expert, st.buft)
                + routed_bytes(st, k)
                + shared
                + shared_gate
        }
        MlpShape::None => 0,
    }
}

/// The routed experts' tensors of a layer of kind `k` (`ffn_{gate,up,down}_exps`; 0 without):
/// what a token reads only its top-k share of.
fn routed_bytes(st: &Store, k: &LayerKind) -> u64 {
    if !matches!(k.mlp, MlpShape::Moe) {
        return 0;
    }
    st.ffn(st.d.n_ff_exp, st.d.n_expert, st.d.gated)
}

/// [`routed_bytes`] of repeating layer `il` of kind `k` in a buffer of `buft`.
pub fn kind_routed_bytes(d: &Dims, k: &LayerKind, ftype: GgufFileType, il: u32, buft: Buft) -> u64 {
    let st = Store {
        d,
        q: d.quant_model(),
        ftype,
        il,
        buft,
    };
    routed_bytes(&st, k)
}

/// The FFN weights of one layer that a tensor override keeps in host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostFfn {
    /// Their bytes in the host (CPU) buffer.
    pub host: u64,
    /// Their bytes had they stayed on the GPU (what the GPU's buffer no longer holds).
    pub gpu: u64,
    /// Of `host`, the routed experts.
    pub routed: u64,
    /// The largest of them as a CUDA compute-buffer copy (the op-offload copy, `compute.rs`).
    pub largest_copy: u64,
}

impl HostFfn {
    /// Of a GPU layer's `routed` expert bytes, those this override removes.
    pub const fn routed_gpu(&self, routed: u64) -> u64 {
        if self.routed > 0 { routed } else { 0 }
    }
}

/// What `--cpu-moe` / `--n-cpu-moe` (`experts`: `ffn_{up,gate,down}_exps`) and `--n-cpu-ffn`
/// (`dense`: `ffn_{up,gate,down}` and their biases) move to host memory from repeating layer
/// `il` of kind `k` (`None`: a model without kinds, read from [`Dims`]). Shared experts, the
/// router and the norms stay (their names do not match the overrides' patterns, `common/common.h`
/// `LLM_FFN_EXPS_REGEX`, `LLM_FFN_DENSE_REGEX`).
pub fn host_ffn(
    d: &Dims,
    k: Option<&LayerKind>,
    ftype: GgufFileType,
    il: u32,
    (experts, dense): (bool, bool),
) -> HostFfn {
    let store = |buft| Store {
        d,
        q: d.quant_model(),
        ftype,
        il,
        buft,
    };
    let (cpu, cuda) = (store(Buft::Cpu), store(Buft::Cuda));
    // A dense FFN is gated by its own kind (a model without kinds: by the model's).
    let (routed_ff, dense_ff, dense_gated) = match k.map(|k| k.mlp) {
        Some(MlpShape::Moe) => (d.n_ff_exp, 0, false),
        Some(MlpShape::Dense { ffn, kind }) => (0, u(ffn), kind == FfnKind::SwiGlu),
        Some(MlpShape::None) => (0, 0, false),
        None if d.n_expert > 0 => (d.n_ff, 0, false),
        None => (0, d.n_ff, d.gated),
    };
    let mut out = HostFfn::default();
    let mut matrices = |ff: u64, n: u64, gated: bool, routed: bool| {
        for (role, ne0, rows) in ffn_matrices(d.n_embd, ff, n, gated) {
            let (host, gpu) = (cpu.w(role, ne0, rows), cuda.w(role, ne0, rows));
            out.host += host;
            out.gpu += gpu;
            if routed {
                out.routed += host;
            }
            out.largest_copy = out.largest_copy.max(gpu);
        }
    };
    if experts && routed_ff > 0 {
        matrices(routed_ff, d.n_expert, d.gated, true);
    }
    if dense && dense_ff > 0 {
        matrices(dense_ff, 1, dense_gated, false);
        if d.bias {
            out.host += cpu.vec(dense_ff) + cpu.vec(d.n_embd);
            out.gpu += cuda.vec(dense_ff) + cuda.vec(d.n_embd);
        }
    }
    out
}
