//! The model as llama.cpp's tensors see it, and the weight tensors of one layer.

use super::layer_kinds::LayerKinds;
use super::tensor_types::{self, Role};
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::blocks::{LayerKind, MixerShape, MlaShape, MlpShape};
use crate::scenario::{FfnKind, NormKind};
use crate::tensor::{GgufFileType, GgufType};

/// Dimensions in llama.cpp's names (`llama_hparams`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Dims {
    pub n_layer: u32,
    pub n_embd: u64,
    pub n_head: u64,
    pub n_head_kv: u64,
    pub head_dim: u64,
    pub n_ff: u64,
    pub n_vocab: u64,
    pub tied: bool,
    pub fused_qkv: bool,
    pub gated: bool,
    /// Routed experts (0 = dense) and shared experts, each `n_ff` wide; routed experts a token uses.
    pub n_expert: u64,
    pub n_shared: u64,
    pub n_expert_used: u64,
    /// One expert's width (`n_ff_exp`; `n_ff` when dense). A model with dense and MoE layers
    /// (DeepSeek's first layers) has `n_ff` of its dense layers.
    pub n_ff_exp: u64,
    /// The shared experts as one MLP (none: width 0).
    pub shexp: SharedExperts,
    /// LayerNorm keeps a bias beside each norm weight.
    pub norm_bias: bool,
    /// Biases on every projection (`model.transformer.bias`).
    pub bias: bool,
    /// Which layer graph llama.cpp builds, as far as the replayed compute-buffer plan
    /// (`compute::cpu_plan`) describes it.
    pub layers: LayerGraph,
    /// Some layer attends (softmax or latent attention): the graph has scores and a KQ mask. A
    /// model of recurrent layers only (Mamba) has neither.
    pub attention: bool,
    /// Sliding-window layers interleaved with a global one every `swa_period`-th layer (0: none).
    pub swa_period: u32,
    /// Latent attention as `deepseek2`'s graph builds it (with `LayerGraph::Mla`).
    pub mla: MlaDims,
    /// Mamba-2's mixer (with `LayerGraph::Mamba2`).
    pub mamba: MambaDims,
}

/// Mamba-2's mixer in llama.cpp's names (`ssm_d_inner`, `ssm_dt_rank` heads, `ssm_d_state`,
/// `ssm_n_group`, `ssm_d_conv`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MambaDims {
    pub d_inner: u64,
    pub n_head: u64,
    pub d_state: u64,
    pub n_group: u64,
    pub d_conv: u64,
}

/// DeepSeek-2/3's latent attention in llama.cpp's names (`n_lora_q`, `n_lora_kv`, `n_rot`, the
/// head sizes of `n_embd_head_k_mla` − `n_rot` and `n_embd_head_v_mla`), the leading dense layers
/// (`n_layer_dense_lead`) and the router's options `build_moe_ffn` reads from the file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MlaDims {
    pub q_lora: u64,
    pub kv_lora: u64,
    pub rope: u64,
    pub nope: u64,
    pub v: u64,
    pub dense_lead: u32,
    pub norm_w: bool,
    pub selection_bias: bool,
    pub groups: (u64, u64),
    pub scale: bool,
}

/// The shared experts of a mixture as llama.cpp stores them: one MLP of width `n_ff` (`n_ff_shexp`:
/// Qwen2-MoE's `expert_shared_feed_forward_length`; DeepSeek's `n_ff_exp × n_expert_shared`) and
/// whether a sigmoid gate (`ffn_gate_inp_shexp`, one F32 row) scales it (llama.cpp@0c1e57098
/// `src/models/qwen2moe.cpp`, `deepseek2.cpp` `load_arch_tensors`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedExperts {
    pub n_ff: u64,
    pub gate: bool,
}

/// A model's layers as llama.cpp's graph builds them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LayerGraph {
    /// Anything the replay does not describe (sliding windows, sinks, output gates, a mix of dense
    /// and MoE layers, a mix of Q/K-normalised and plain layers).
    #[default]
    Other,
    /// Global softmax attention and the same MLP in every layer, dense or a mixture of experts
    /// (`llama`, `qwen2`; Mixtral as `llama`).
    Llama,
    /// The same with a per-head RMSNorm of Q and K in every layer (`qwen3`, `qwen3moe`).
    LlamaQkNorm,
    /// Gemma 3 (`gemma3`): Q/K norms, four norms per layer, a dense gated MLP, sliding-window
    /// layers with the global one every `Dims::swa_period`-th layer.
    Gemma3,
    /// DeepSeek-2/3 (`deepseek2`): latent attention with a latent cache in every layer, leading
    /// dense SwiGLU layers, then routed experts with ungated shared ones (`Dims::mla`).
    Mla,
    /// Mamba-2 (`mamba2`): the same Mamba-2 mixer and no MLP in every layer (`Dims::mamba`).
    Mamba2,
}

impl Dims {
    pub fn of(m: &ResolvedModel, bias: bool) -> Dims {
        let head_dim = u64::from(m.head_dim.max(1));
        let kinds = m.blocks.kinds();
        let swa_period = LayerKinds::of(m).swa_period();
        let qk_norm = !kinds.is_empty() && kinds.iter().all(has_qk_norm);
        Dims {
            n_layer: m.layers.max(1),
            n_embd: u64::from(m.hidden.max(1)),
            n_head: u64::from(m.heads.max(1)),
            n_head_kv: u64::from(m.kv_heads.max(1)),
            head_dim,
            n_ff: u64::from(m.ffn.max(1)),
            n_vocab: u64::from(m.vocab.max(1)),
            tied: m.tied_embeddings,
            fused_qkv: m.fused_qkv,
            gated: m.ffn_kind == FfnKind::SwiGlu,
            n_expert: u64::from(m.moe.experts),
            n_shared: u64::from(if m.moe.experts > 0 { m.moe.shared } else { 0 }),
            n_expert_used: u64::from(if m.moe.experts > 0 { m.moe.top_k } else { 0 }),
            n_ff_exp: u64::from(if m.moe.experts > 0 { m.moe.ffn } else { m.ffn }.max(1)),
            shexp: if m.moe.experts > 0 && m.moe.shared > 0 {
                SharedExperts {
                    n_ff: u64::from(m.moe.shared) * u64::from(m.moe.shared_ffn),
                    gate: m.moe.shared_gate,
                }
            } else {
                SharedExperts::default()
            },
            norm_bias: m.norm == NormKind::LayerNorm,
            bias,
            attention: kinds.is_empty()
                || kinds
                    .iter()
                    .any(|k| matches!(k.mixer, MixerShape::Attention { .. } | MixerShape::Mla(_))),
            swa_period: swa_period.unwrap_or(0),
            mla: mla(m).unwrap_or_default(),
            mamba: mamba2(m).unwrap_or_default(),
            layers: if gemma3(m, swa_period) {
                LayerGraph::Gemma3
            } else if mla(m).is_some() {
                LayerGraph::Mla
            } else if mamba2(m).is_some() {
                LayerGraph::Mamba2
            } else if !kinds.iter().all(plain_layer) || !one_mlp_kind(kinds) {
                LayerGraph::Other
            } else if qk_norm {
                LayerGraph::LlamaQkNorm
            } else if kinds.iter().any(has_qk_norm) {
                LayerGraph::Other
            } else {
                LayerGraph::Llama
            },
        }
    }

    /// FFN rows one token's activations span: `n_ff`, or `n_ff` for each of the top-k experts
    /// (`ggml_mul_mat_id` outputs `[n_ff, k, T]`, llama.cpp@0c1e57098 `build_moe_ffn`), or the
    /// shared experts' width where that is wider (they run after the routed ones are summed:
    /// `src/models/qwen2moe.cpp`, `deepseek2.cpp`).
    pub const fn ffn_per_token(&self) -> u64 {
        if self.n_expert > 0 {
            let routed = self.n_ff_exp
                * if self.n_expert_used > 1 {
                    self.n_expert_used
                } else {
                    1
                };
            if self.shexp.n_ff > routed {
                self.shexp.n_ff
            } else {
                routed
            }
        } else {
            self.n_ff
        }
    }

    /// `n_embd_k_gqa` = `n_embd_v_gqa`: K (or V) elements per token per layer.
    pub const fn n_embd_kv(&self) -> u64 {
        self.n_head_kv * self.head_dim
    }

    pub fn quant_model(&self) -> tensor_types::Model {
        tensor_types::Model {
            n_layer: self.n_layer,
            n_expert: self.n_expert as u32,
            n_gqa: (self.n_head / self.n_head_kv.max(1)) as u32,
            is_70b: self.n_layer == 80 && self.n_head != self.n_head_kv,
            tied_embeddings: self.tied,
        }
    }
}

/// Gemma 3's layers: two kinds, sliding-window and global attention laid out as llama.cpp's
/// `set_swa_pattern` does, both with Q/K norms, four norms, no sinks or output gate, a dense MLP.
fn gemma3(m: &ResolvedModel, swa_period: Option<u32>) -> bool {
    let kinds = m.blocks.kinds();
    let gemma_layer = |k: &LayerKind| {
        k.norms == 4.0
            && matches!(k.mlp, MlpShape::Dense { .. })
            && matches!(
                k.mixer,
                MixerShape::Attention {
                    qk_norm: true,
                    sinks: false,
                    output_gate: false,
                    chunked: false,
                    ..
                }
            )
    };
    kinds.len() == 2 && kinds.iter().all(gemma_layer) && m.tied_embeddings && swa_period.is_some()
}

/// Mamba-2's layers as llama.cpp's `mamba2` graph has them: one kind, a Mamba-2 mixer without an
/// MLP, the groups dividing the inner width.
fn mamba2(m: &ResolvedModel) -> Option<MambaDims> {
    let [k] = m.blocks.kinds() else {
        return None;
    };
    let MixerShape::Mamba {
        inner,
        heads,
        conv_channels,
        d_conv,
        d_state,
        version: crate::scenario::MambaVersion::Mamba2,
        ..
    } = k.mixer
    else {
        return None;
    };
    let u = |x: f64| x.max(0.0) as u64;
    let (d_inner, n_head, d_state) = (u(inner), u(heads), u(d_state));
    let groups = u(conv_channels).checked_sub(d_inner)? / (2 * d_state).max(1);
    let ok = matches!(k.mlp, MlpShape::None)
        && n_head > 0
        && groups > 0
        && d_inner.is_multiple_of(n_head)
        && d_inner.is_multiple_of(groups)
        && u(d_conv) > 1;
    ok.then_some(MambaDims {
        d_inner,
        n_head,
        d_state,
        n_group: groups,
        d_conv: u(d_conv),
    })
}

/// DeepSeek-2/3's layers as llama.cpp's `deepseek2` graph has them: latent attention with a
/// latent cache everywhere, SwiGLU, dense layers only before the first mixture of experts, shared
/// experts without a gate.
fn mla(m: &ResolvedModel) -> Option<MlaDims> {
    let kinds = LayerKinds::of(m);
    let mut dense_lead = 0;
    let mut dims = None;
    for il in 0..m.layers {
        let k = kinds.at(il)?;
        let MixerShape::Mla(MlaShape {
            q_lora,
            kv_lora,
            nope,
            rope,
            v,
            latent_cache: true,
            ..
        }) = k.mixer
        else {
            return None;
        };
        match k.mlp {
            MlpShape::Dense {
                kind: FfnKind::SwiGlu,
                ..
            } if dense_lead == il => dense_lead += 1,
            MlpShape::Moe => {}
            _ => return None,
        }
        let u = |x: f64| x.max(0.0) as u64;
        dims = Some((u(q_lora), u(kv_lora), u(nope), u(rope), u(v)));
    }
    let (q_lora, kv_lora, nope, rope, v) = dims?;
    let moe = &m.moe;
    let ok = m.ffn_kind == FfnKind::SwiGlu && !moe.shared_gate && m.norm != NormKind::LayerNorm;
    ok.then_some(MlaDims {
        q_lora,
        kv_lora,
        rope,
        nope,
        v,
        dense_lead,
        norm_w: moe.norm_top_k,
        selection_bias: moe.selection_bias,
        groups: (u64::from(moe.groups.0), u64::from(moe.groups.1)),
        scale: moe.scaled,
    })
}

/// Every layer's MLP is dense, or every layer's a mixture of experts.
fn one_mlp_kind(kinds: &[LayerKind]) -> bool {
    let moe = |k: &LayerKind| matches!(k.mlp, MlpShape::Moe);
    kinds.iter().all(moe) || !kinds.iter().any(moe)
}

/// A global attention layer without sinks or an output gate, with a dense MLP or a mixture of
/// experts.
fn plain_layer(k: &LayerKind) -> bool {
    let attention = matches!(
        k.mixer,
        MixerShape::Attention {
            window,
            sinks: false,
            output_gate: false,
            ..
        } if window == 0.0
    );
    attention && matches!(k.mlp, MlpShape::Dense { .. } | MlpShape::Moe)
}

fn has_qk_norm(k: &LayerKind) -> bool {
    matches!(k.mixer, MixerShape::Attention { qk_norm: true, .. })
}

/// A backend buffer's rules for one tensor: alignment and CUDA's row padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buft {
    /// `TENSOR_ALIGNMENT` 32 B (ggml-impl.h); also the GGUF data alignment of a mapped file.
    Cpu,
    /// 128 B (`ggml_backend_cuda_buffer_type_get_alignment`), plus `MATRIX_ROW_PADDING` 512
    /// elements of one row for a quantized tensor whose rows are not a multiple of 512
    /// (`ggml_backend_cuda_buffer_type_get_alloc_size`, ggml-cuda.cu).
    Cuda,
}

/// Bytes a tensor of `rows` rows of `ne0` elements of `t` takes in a buffer of `buft`.
///
/// ```
/// use vram_explorer::estimator::engines::llamacpp::dims::{Buft, tensor_bytes};
/// use vram_explorer::tensor::GgufType;
/// assert_eq!(tensor_bytes(GgufType::Q4K, 4096, 4096, Buft::Cuda), 9_437_184);
/// // a 3584-wide Q4_K row gains a 512 − 0 … row chunk on CUDA: 3584 % 512 = 0, none here
/// assert_eq!(tensor_bytes(GgufType::F32, 4096, 1, Buft::Cpu), 16_384);
/// ```
pub const fn tensor_bytes(t: GgufType, ne0: u64, rows: u64, buft: Buft) -> u64 {
    let mut size = t.bytes(ne0) * rows;
    let align = match buft {
        Buft::Cpu => 32,
        Buft::Cuda => {
            if t.is_quantized() && !ne0.is_multiple_of(512) {
                size += t.bytes(512 - ne0 % 512);
            }
            128
        }
    };
    size.div_ceil(align) * align
}

/// Weight bytes of repeating layer `il` in a buffer of `buft`: norms (F32), attention, MLP or
/// experts, each in the type `tensor_types` gives it.
pub fn layer_bytes(d: &Dims, ftype: GgufFileType, il: u32, buft: Buft) -> u64 {
    let q = d.quant_model();
    let e = d.n_embd;
    let (q_out, kv_out) = (d.n_head * d.head_dim, d.n_embd_kv());
    let w = |role: Role, ne0: u64, rows: u64| {
        let t = tensor_types::tensor_type(ftype, role, il, ne0, &q);
        tensor_bytes(t, ne0, rows, buft)
    };
    let vec = |n: u64| tensor_bytes(GgufType::F32, n, 1, buft);
    let norms = if d.norm_bias { 4 } else { 2 };
    let mut total = norms * vec(e);
    if d.fused_qkv {
        total += w(Role::AttnQkv, e, q_out + 2 * kv_out);
    } else {
        total += w(Role::AttnQ, e, q_out) + w(Role::AttnK, e, kv_out) + w(Role::AttnV, e, kv_out);
    }
    total += w(Role::AttnOutput, q_out, e);
    if d.bias {
        total += if d.fused_qkv {
            vec(q_out + 2 * kv_out)
        } else {
            vec(q_out) + 2 * vec(kv_out)
        } + vec(e);
    }
    let mlps = if d.n_expert > 0 {
        // Routed experts as one 3-D tensor per matrix (`ffn_*_exps`), the router F32.
        total += tensor_bytes(GgufType::F32, e, d.n_expert, buft);
        d.n_expert + d.n_shared
    } else {
        1
    };
    let f = d.n_ff;
    let up = w(Role::FfnUp, e, f * mlps);
    let gate = if d.gated {
        w(Role::FfnGate, e, f * mlps)
    } else {
        0
    };
    let down = w(Role::FfnDown, f, e * mlps);
    total += up + gate + down;
    if d.bias {
        total += vec(f) * mlps + vec(e);
    }
    total
}

/// The token embedding (input layer, always on the CPU).
pub fn token_embd_bytes(d: &Dims, ftype: GgufFileType, buft: Buft) -> u64 {
    let q = d.quant_model();
    let t = tensor_types::tensor_type(ftype, Role::TokenEmbd, 0, d.n_embd, &q);
    tensor_bytes(t, d.n_embd, d.n_vocab, buft)
}

/// The output layer: `output_norm` and `output` (with tied embeddings llama.cpp creates the output
/// as a duplicate of `token_embd` on the output device, so its bytes count again there).
pub fn output_bytes(d: &Dims, ftype: GgufFileType, buft: Buft) -> u64 {
    let norm = tensor_bytes(GgufType::F32, d.n_embd, 1, buft) * if d.norm_bias { 2 } else { 1 };
    norm + output_matrix_bytes(d, ftype, buft)
}

/// The output matrix alone (`output`, or `token_embd` when tied).
pub fn output_matrix_bytes(d: &Dims, ftype: GgufFileType, buft: Buft) -> u64 {
    tensor_bytes(output_matrix_type(d, ftype), d.n_embd, d.n_vocab, buft)
}

/// The output matrix's GGUF type (`token_embd`'s when tied).
pub fn output_matrix_type(d: &Dims, ftype: GgufFileType) -> GgufType {
    let role = if d.tied {
        Role::TokenEmbd
    } else {
        Role::Output
    };
    tensor_types::tensor_type(ftype, role, 0, d.n_embd, &d.quant_model())
}
