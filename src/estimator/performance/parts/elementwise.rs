//! Memory-bound work: norms, activations, dropout, residual adds, softmax, the loss — timed by the
//! bytes they move at an achievable bandwidth that depends on the size of the transfer.
//!
//! Bandwidth efficiency by bytes per kernel: calculon-ai/calculon `systems/a100_80g.json` at
//! commit caa4b11f8fe1fee3ba57adaacb7590d7deabd053, `mem1.MB_efficiency` (≥ 100 MB 90 %,
//! ≥ 10 MB 75 %, ≥ 1 MB 60 %, smaller 30 %), the same table in its H100 file.

/// Achievable fraction of peak memory bandwidth for one kernel moving `bytes`.
pub fn bandwidth_efficiency(bytes: f64) -> f64 {
    let mb = bytes / 1e6;
    if mb >= 100.0 {
        0.9
    } else if mb >= 10.0 {
        0.75
    } else if mb >= 1.0 {
        0.6
    } else {
        0.3
    }
}

/// Time of one memory-bound kernel moving `bytes` at `bandwidth` B/s peak.
pub fn time(bytes: f64, bandwidth: f64) -> f64 {
    if bytes > 0.0 && bandwidth > 0.0 {
        bytes / (bandwidth * bandwidth_efficiency(bytes))
    } else {
        0.0
    }
}

/// Time of `kernels` kernels sharing `bytes` evenly, each at the efficiency of its own size; 0
/// without kernels.
pub fn time_in_kernels(bytes: f64, kernels: f64, bandwidth: f64) -> f64 {
    if kernels > 0.0 {
        time(bytes / kernels, bandwidth) * kernels
    } else {
        0.0
    }
}

/// Elementwise kernels of one transformer layer's forward for `tokens` tokens on one GPU, in
/// element counts, as Megatron-LM fuses them (Korthikanti et al. 2022 §4 lists the same ops for
/// the activation memory; the counts are reads + writes of each fused kernel):
/// - two LayerNorms, each reading and writing the hidden state: 2 × 2·h;
/// - two fused bias-dropout-add kernels (read the output and the residual, write the sum, a 1-byte
///   mask ≈ ½ element): 2 × 3.5·h;
/// - the fused bias-activation of the MLP (read and write the f-wide input; SwiGLU reads two);
///
/// The first two run on the full hidden state on every tensor-parallel rank unless sequence
/// parallelism splits them (Korthikanti §4.2.2). Returns (replicated-region elements, MLP
/// elements) per token, before dividing by TP.
pub fn layer_elements_per_token(hidden: f64, ffn: f64, swiglu: bool) -> (f64, f64) {
    let norms = 2.0 * 2.0 * hidden;
    let dropout_add = 2.0 * 3.5 * hidden;
    let act = if swiglu { 3.0 * ffn } else { 2.0 * ffn };
    (norms + dropout_add, act)
}

/// Memory-bound kernels of one eager PyTorch decoder layer's forward, per token at 16-bit
/// activations, in bytes (each op's tensor inputs read and its result written once), split as the
/// fused count is: the hidden-width region (norms, residual adds, dropout) replicated on every
/// tensor-parallel rank unless sequence parallel, and the attention-side and MLP-side ops each
/// rank runs on its shard. Derived op by op, and measured on CPU with the aten ops an eager CUDA
/// step dispatches (tests/data/measured/eager-elementwise-traffic.json: transformers 5.24.0
/// `models/llama/modeling_llama.py` and torchtitan 9dec370, torch 2.15.0; `tests/eager_elementwise.rs`
/// holds the sum to both, −0.5 %: the broadcast cos/sin reads):
/// - `LlamaRMSNorm`: upcast to FP32 (2 + 4 B per element), `pow` (4 + 4), `mean` (4), multiply by
///   the reciprocal root (4 + 4), cast back (4 + 2), multiply by the weight (2 + 2): 36 B per
///   element, two per layer. `nn.LayerNorm` is one kernel (2 + 2);
/// - two residual adds (2 + 2 + 2 each); hidden dropout, when on, `native_dropout` writes a 1-byte
///   mask beside its output (2 + 2 + 1 each, two per layer);
/// - rotary embedding on q and k ([`rotary`]);
/// - the activation: SwiGLU `silu(gate)·up` (4 + 6 B per FFN element), GELU one kernel (4),
///   squared ReLU `relu` then `square` (4 + 4).
///
/// Not counted: Hugging Face repeats no K/V under SDPA without a padding mask (GQA runs inside the
/// kernel); torchtitan's `repeat_kv` copies them (measured 8 B per query-width element, the
/// expanded read counted at its full size: 5.6 % of its forward); a mixture of experts' routing and
/// permutation ops (those are [`moe_routing`]). The attention side's ops are per mixer kind:
/// [`rotary`] for softmax attention, [`mla`] for latent attention. Other activation widths
/// scale the bytes by `element_bytes / 2` (in FP32 the casts vanish but every tensor doubles: an
/// approximation).
pub struct EagerLayer {
    /// Hidden-width ops, bytes per token.
    pub replicated: f64,
    /// Their kernel count (for the per-kernel bandwidth efficiency).
    pub replicated_kernels: f64,
    /// Activation over the (active) FFN width, bytes per token before TP.
    pub mlp: f64,
    pub mlp_kernels: f64,
}

/// The eager layer's forward traffic outside its attention (see [`EagerLayer`]); `ffn` is the
/// active FFN width.
pub fn eager_layer(hidden: f64, ffn: f64, shape: EagerShape, element_bytes: f64) -> EagerLayer {
    let (norm, norm_kernels) = if shape.rms_norm {
        (36.0, 6.0)
    } else {
        (4.0, 1.0)
    };
    let (drop, drop_kernels) = if shape.dropout {
        (5.0, 1.0)
    } else {
        (0.0, 0.0)
    };
    let (act, act_kernels) = match shape.activation {
        Activation::SwiGlu => (10.0, 2.0),
        Activation::Gelu => (4.0, 1.0),
        Activation::SquaredRelu => (8.0, 2.0),
    };
    let scale = element_bytes / 2.0;
    EagerLayer {
        replicated: scale * hidden * 2.0 * (norm + 6.0 + drop),
        replicated_kernels: 2.0 * (norm_kernels + 1.0 + drop_kernels),
        mlp: scale * act * ffn,
        mlp_kernels: act_kernels,
    }
}

/// Rotary embedding of a softmax attention's queries and keys in eager PyTorch, forward bytes per
/// token and kernels for the rank's `q` and `kv` widths (heads × head dim; K/V heads replicated when
/// tensor parallelism exceeds them): `q·cos + rotate_half(q)·sin` (Transformers 5.24
/// `apply_rotary_pos_emb`: `neg` 2, `cat` 4, two multiplies 4 each, the add 6: 20 B per element at
/// BF16, five kernels per tensor); torchtitan's complex form (9dec370 `apply_rotary_emb`: FP32
/// upcast 6, complex multiply 8, cast back 6) moves the same 20. Measured with the Llama layer
/// (tests/data/measured/eager-elementwise-traffic.json).
pub fn rotary(q: f64, kv: f64, element_bytes: f64) -> (f64, f64) {
    (20.0 * (q + kv) * element_bytes / 2.0, 10.0)
}

/// Multi-head latent attention's memory-bound ops in eager PyTorch (Transformers 5.24.0
/// `models/deepseek_v3/modeling_deepseek_v3.py` `DeepseekV3Attention`), forward bytes per token and
/// kernels at the rank's `heads`, derived op by op:
/// - the RMSNorms of the query latent (`q_a_layernorm`, absent when `q_lora` = 0) and the key/value
///   latent (`kv_a_layernorm`): 36 B per element each, as `LlamaRMSNorm`'s;
/// - the decoupled RoPE on the heads' `rope` query columns and the one shared `rope`-wide key,
///   interleaved (`apply_rotary_pos_emb_interleave`: four multiplies 2 B per element each, a
///   subtraction and an addition 3 each, the `cat` 4: 18 B per element, seven kernels per tensor);
/// - the query assembled (`cat(q_pass, q_rot)`, 4 B per element of heads × `qk_head_dim`) and the
///   key (`expand_kv`: two `copy_` into a new tensor, reading the source and writing the
///   destination, 4 B per element; the accountant counts 6, the destination as an argument too).
///
/// 36·(q_lora + kv_lora) + 18·rope·(heads + 1) + 8·heads·qk_head_dim at BF16; other widths scale
/// by `element_bytes / 2` as [`eager_layer`]'s. Measured with the elementwise accountant at eight
/// shapes (tests/data/measured/eager-mla-traffic.json, `scripts/measure/mla_traffic_probe.py`; a
/// third of each `copy_`, the destination's read, taken off): the formula is 0.37–0.52 % under
/// each layer's measured forward (the broadcast cos/sin reads, as in the Llama record), nothing
/// fitted. DeepSeek-V2's class (`apply_rotary_emb`, complex) moves
/// 20 B per rotary element, not 18: taken as V3's.
pub fn mla(
    heads: f64,
    q_lora: f64,
    kv_lora: f64,
    qk_head_dim: f64,
    rope: f64,
    element_bytes: f64,
) -> (f64, f64) {
    let bytes = 36.0 * (q_lora + kv_lora) + 18.0 * rope * (heads + 1.0) + 8.0 * heads * qk_head_dim;
    let norm_kernels = if q_lora > 0.0 { 12.0 } else { 6.0 };
    (bytes * element_bytes / 2.0, norm_kernels + 14.0 + 3.0)
}

/// Bytes latent attention's autograd backward moves per byte of its forward ([`mla`]): 2.94–3.18
/// over the seven solving shapes of tests/data/measured/eager-mla-traffic.json (the rest of the
/// layer's backward taken at [`EAGER_BACKWARD_RATIO`]; the backward's `copy_` destinations taken off
/// as the forward's), mean 3.00; 3.0 taken (the held-out eighth: 3.05).
pub const MLA_BACKWARD_RATIO: f64 = 3.0;

/// What decides an eager layer's kernels.
#[derive(Clone, Copy)]
pub struct EagerShape {
    pub rms_norm: bool,
    pub dropout: bool,
    pub activation: Activation,
}

#[derive(Clone, Copy)]
pub enum Activation {
    SwiGlu,
    Gelu,
    SquaredRelu,
}

/// A mixture of experts' routing and token permutation in eager Transformers (5.24.0
/// `MixtralSparseMoeBlock` with its default experts implementation: router softmax in FP32, top-k,
/// the routing weights renormalised, the tokens sorted by expert and gathered for one grouped GEMM,
/// the outputs weighted, summed over the k copies in FP32 and cast back), forward bytes per token
/// and kernels, beyond a dense layer of the active FFN width (k experts' SwiGLU are
/// [`eager_layer`]'s with `ffn` = k × the expert width). Measured with the elementwise accountant
/// at five (experts, top-k, hidden) shapes (tests/data/measured/eager-moe-routing-traffic.json,
/// `scripts/measure/moe_routing_traffic_probe.py`; the constant and the k term read from the ops
/// that change with neither h nor E, the rest solved on four shapes, the fifth held out: +0.08 %
/// forward, +0.10 % backward) term by term: 12.125·h (the FP32 sum
/// and its cast, one gather's index tensors) + 20.2·k·h (each copy's gather, weighting and share
/// of the sum) + 18.1·E (the FP32 router probabilities, top-k, the expert histogram) + 128·k (the
/// sort, index and position tensors) + 160 B, at BF16; other widths scale by `element_bytes / 2` as
/// [`eager_layer`]'s do. About 16 kernels. Other implementations (a loop over experts, LitGPT's
/// masks) move other bytes: this one is taken for every eager profile.
pub fn moe_routing(hidden: f64, top_k: f64, experts: f64, element_bytes: f64) -> (f64, f64) {
    let bytes = 12.125 * hidden + 20.2 * top_k * hidden + 18.1 * experts + 128.0 * top_k + 160.0;
    (bytes * element_bytes / 2.0, 16.0)
}

/// Bytes the routing's autograd backward moves per byte of its forward: 2.88–3.12 over the four
/// solving shapes (the dense part's backward taken at [`EAGER_BACKWARD_RATIO`]), 3.0 taken (the
/// held-out fifth's backward then within 0.1 %).
pub const MOE_ROUTING_BACKWARD_RATIO: f64 = 3.0;

/// Bytes an eager layer's autograd backward moves per byte of its forward: 2.285 for Hugging Face's
/// Llama layer (taken), 2.10 for torchtitan's, whose forward also holds `repeat_kv`'s copies
/// (tests/data/measured/eager-elementwise-traffic.json; the upcasts and their casts back run
/// again, the norm's and the rotary embedding's gradients take several products each). The fused
/// count's backward is 2× its forward.
pub const EAGER_BACKWARD_RATIO: f64 = 2.285;

/// Elements the materialised softmax path moves per token and head column: fused
/// scale-mask-softmax reads and writes the scores (2), dropout reads them, writes them and a mask
/// (2.5) — Megatron-LM `fused_softmax` + attention dropout; zero under a fused (flash) kernel.
pub const SOFTMAX_ELEMENTS: f64 = 4.5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_transfers_run_below_large_ones() {
        assert!(time(1e5, 2e12) * 1e3 > time(1e8, 2e12));
        assert_eq!(bandwidth_efficiency(2e8), 0.9);
        assert_eq!(time(0.0, 2e12), 0.0);
        let (rep, mlp) = layer_elements_per_token(1.0, 4.0, false);
        assert_eq!((rep, mlp), (11.0, 8.0));
    }

    const LLAMA: EagerShape = EagerShape {
        rms_norm: true,
        dropout: false,
        activation: Activation::SwiGlu,
    };

    #[test]
    fn every_eager_branch_counts_its_ops() {
        // Llama: two RMSNorms (36 B) and two adds (6 B) per hidden element, SwiGLU 10 B per FFN
        // element; RoPE 20 B per q and kv element.
        let llama = eager_layer(1.0, 4.0, LLAMA, 2.0);
        assert_eq!((llama.replicated, llama.mlp), (84.0, 40.0));
        assert_eq!((llama.replicated_kernels, llama.mlp_kernels), (14.0, 2.0));
        assert_eq!(rotary(2.0, 1.0, 2.0), (60.0, 10.0));
        // GPT-2 / BERT: LayerNorm one kernel (4 B), dropout 5 B (a 1-byte mask), GELU one kernel
        // (4 B).
        let gpt = eager_layer(
            1.0,
            4.0,
            EagerShape {
                rms_norm: false,
                dropout: true,
                activation: Activation::Gelu,
            },
            2.0,
        );
        assert_eq!((gpt.replicated, gpt.mlp), (2.0 * (4.0 + 6.0 + 5.0), 16.0));
        assert_eq!(gpt.replicated_kernels, 6.0);
        let relu2 = eager_layer(
            1.0,
            1.0,
            EagerShape {
                activation: Activation::SquaredRelu,
                ..LLAMA
            },
            2.0,
        );
        assert_eq!(relu2.mlp, 8.0);
        // FP32 activations scale every term by 4 / 2.
        let fp32 = eager_layer(1.0, 4.0, LLAMA, 4.0);
        assert_eq!((fp32.replicated, fp32.mlp), (168.0, 80.0));
        assert_eq!(rotary(2.0, 1.0, 4.0).0, 120.0);
    }

    #[test]
    fn latent_attention_counts_its_norms_rotary_and_assembly() {
        // DeepSeek-V3's attention on one rank: 36·(1536 + 512) + 18·64·129 + 8·128·192.
        let (bytes, kernels) = mla(128.0, 1536.0, 512.0, 192.0, 64.0, 2.0);
        assert_eq!(bytes, 73_728.0 + 148_608.0 + 196_608.0);
        assert_eq!(kernels, 29.0);
        // Without a query latent (DeepSeek-V2-Lite) one norm fewer.
        assert_eq!(mla(16.0, 0.0, 512.0, 192.0, 64.0, 2.0).1, 23.0);
    }
}
