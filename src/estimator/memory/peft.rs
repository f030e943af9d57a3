//! LoRA/QLoRA and quantized weights in the memory model: the frozen base (no gradients, no optimizer
//! state, fewer saved activations), the adapters' own states, quantized layer matrices with their
//! scales, and the de-quantization transient. Formulas and sources: docs/model.md §LoRA.

use super::activations::{LayerActs, Sizes};
use super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::lora::layer_adapters;
use crate::scenario::{
    FfnKind, LoraTargets, Mode, ModelFamily, NormKind, OptimizerKind, PeftMethod, Profile,
    Scenario, WeightFormat,
};

/// What the memory model reads about LoRA and weight quantization, resolved once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ext {
    /// LoRA or QLoRA in a training step of a transformer (`Full` otherwise).
    pub method: PeftMethod,
    pub targets: LoraTargets,
    pub adapters_per_layer: f64,
    /// The LoRA rank r (adapters are split over tensor-parallel ranks by
    /// `lora::rank_adapters_per_layer`).
    pub rank: u32,
    pub adapter_tensors_per_layer: f64,
    /// Rank-r values saved per token and layer (A·x of every targeted matrix).
    pub adapter_rows_per_token: f64,
    pub adapter_largest: f64,
    pub paged: bool,
    /// The scenario's optimizer (the base context's is set to plain SGD for the frozen base).
    pub optimizer: OptimizerKind,
    /// Bits per weight of the layers' matrices when they are stored quantized, and their format.
    pub layer_bits: Option<f64>,
    pub layer_storage: Option<crate::tensor::StorageFormat>,
    /// Only the routed experts are stored quantized (`quantization.experts_only`, not under QLoRA).
    pub experts_only: bool,
    /// bitsandbytes NF4: one matrix is de-quantized to the compute type per matmul.
    pub dequant_whole: bool,
    /// PEFT `lora_dropout` (0 = `nn.Identity`).
    pub dropout: f64,
    /// An adapter dropout saves a 1-byte bool mask (fused `native_dropout`, CUDA); else a mask of
    /// the adapter input's own type (`_dropout_impl`, CPU).
    pub mask_one_byte: bool,
    /// Bytes per element of the adapters and their input as the forward runs them: FP32 (PEFT
    /// `autocast_adapter_dtype=True`), or the compute type under FSDP's mixed precision, which
    /// gathers every parameter of a unit in `param_dtype`, adapters too, so PEFT's
    /// `_cast_input_dtype(x, lora_A.weight.dtype)` makes no copy (measured: the FSDP2 LoRA records).
    pub e_adapter: f64,
    /// bitsandbytes ≤ 0.43.1 under a 4-bit base in training: every frozen 4-bit linear keeps its
    /// input in the compute type (bytes per element).
    pub legacy_input: Option<f64>,
    /// bitsandbytes' `bnb_4bit_compute_dtype` (bytes) when the layers are stored in its 4-bit
    /// format: the type of the one de-quantized matrix per matmul.
    pub e_dequant: Option<f64>,
    /// The LM head is stored in the layers' 4-bit format too: LitGPT QLoRA, whose Lightning
    /// `BitsandbytesPrecision` replaces every `nn.Linear` (no `ignore_modules`; `litgpt/finetune/
    /// lora.py` lines 129–139 at 00af8b0d), the head included (docs/frameworks/litgpt.md).
    pub head_4bit: bool,
}

/// Weight elements of one layer's matrices as stored on one GPU before TP (experts after EP).
pub fn layer_matrix_elems(m: &ResolvedModel) -> f64 {
    layer_matrix_elems_stored(m, m.moe.stored_expert_fraction())
}

/// [`layer_matrix_elems`] with `stored` of the routed experts on the GPU (1 = all of them).
pub fn layer_matrix_elems_stored(m: &ResolvedModel, stored: f64) -> f64 {
    if !m.blocks.is_flat() {
        // Layers of several kinds: the average layer's matrices, routed experts' weights as
        // stored (their biases are not matrix elements).
        let l = f64::from(m.layers.max(1));
        let unstored = 1.0 - stored;
        return m.blocks.sum(|k| k.matmul_w - k.routed_w * unstored) / l;
    }
    let h = f64::from(m.hidden);
    let (q, kv) = m.attention_widths();
    let mats = m.ffn_kind.matrices();
    let mlp = mats * h * f64::from(m.ffn);
    let routed = f64::from(m.moe.experts) * mlp * stored;
    let shared = if m.moe.experts == 0 {
        mlp
    } else {
        f64::from(m.moe.shared) * mlp
    };
    h * (2.0 * q + 2.0 * kv) + routed + shared + h * f64::from(m.moe.experts)
}

/// How the block matrices are stored under `method`: NF4 under QLoRA, `quantization.weights` under
/// LoRA and in a transformer's inference, as the precision says in a full fine-tune.
pub fn layer_format(sc: &Scenario, method: PeftMethod, transformer: bool) -> WeightFormat {
    match method {
        PeftMethod::Qlora => WeightFormat::Nf4,
        PeftMethod::Lora => sc.quantization.weights,
        PeftMethod::Full if sc.mode == Mode::Inference && transformer => sc.quantization.weights,
        PeftMethod::Full => WeightFormat::AsPrecision,
    }
}

/// Bits per weight of block matrices stored as `format` (rows of `hidden` inputs), `None` when
/// they are in the precision's type.
pub fn layer_bits(sc: &Scenario, format: WeightFormat, hidden: u32) -> Option<f64> {
    format.bits_per_weight(sc.quantization.group_size, hidden, sc.peft.double_quant)
}

impl Ext {
    pub fn new(sc: &Scenario, m: &ResolvedModel) -> Ext {
        let p = &sc.peft;
        let transformer = m.family == ModelFamily::Transformer;
        let serving_adapters = sc.mode == Mode::Inference && p.inference_adapters;
        let method = if (sc.mode == Mode::Training || serving_adapters) && transformer {
            p.method
        } else {
            PeftMethod::Full
        };
        let format = layer_format(sc, method, transformer);
        let hf_bnb = sc.implementation.profile == Profile::HuggingFace;
        let (params, tensors, rows, largest) = if method == PeftMethod::Full {
            (0.0, 0.0, 0.0, 0.0)
        } else {
            layer_adapters(m, p.rank, p.targets)
        };
        Ext {
            method,
            targets: p.targets,
            adapters_per_layer: params,
            rank: p.rank,
            adapter_tensors_per_layer: tensors,
            adapter_rows_per_token: rows,
            adapter_largest: largest,
            paged: p.paged_optimizer,
            optimizer: sc.optimizer.kind,
            layer_bits: layer_bits(sc, format, m.hidden),
            layer_storage: format.storage(sc.quantization.group_size, p.double_quant),
            dequant_whole: format.dequantizes_whole_matrix(),
            experts_only: sc.quantization.experts_only && method != PeftMethod::Qlora,
            dropout: if method == PeftMethod::Full {
                0.0
            } else {
                p.lora_dropout
            },
            mask_one_byte: sc.implementation.dropout_mask == crate::scenario::DropoutMask::OneByte,
            e_adapter: match sc.precision_types().weight_compute_copies {
                Some(compute) if super::ctx::fsdp_sharded(sc) => compute.bytes(),
                _ => 4.0,
            },
            // `implementation.hf.bitsandbytes` is the Hugging Face profile's (`BitsAndBytesConfig`).
            // torchtune's NF4 is torchao's: `linear_nf4` de-quantizes to the input's type
            // (torchao 0.10.0 `dtypes/nf4tensor.py` `LinearNF4.forward`: `weight.to(input.dtype)`), the compute
            // type (`None`); docs/frameworks/torchtune.md.
            e_dequant: if format != WeightFormat::Nf4 {
                None
            } else if hf_bnb {
                Some(sc.implementation.hf.bitsandbytes.compute_dtype.bytes())
            } else if sc.implementation.profile == Profile::LitGpt {
                Some(lightning_dequant_bytes(sc.precision.compute))
            } else {
                None
            },
            legacy_input: (hf_bnb
                && method == PeftMethod::Qlora
                && sc.mode == Mode::Training
                && sc.implementation.hf.bitsandbytes.version
                    == crate::scenario::BnbVersion::Legacy0_43_1)
                .then(|| sc.implementation.hf.bitsandbytes.compute_dtype.bytes()),
            head_4bit: method == PeftMethod::Qlora
                && sc.mode == Mode::Training
                && sc.implementation.profile == Profile::LitGpt,
        }
    }

    pub fn lora(&self) -> bool {
        self.method != PeftMethod::Full
    }

    /// The context of the frozen base: no gradients, no master copy, no optimizer state.
    pub fn base_ctx(&self, c: Ctx) -> Ctx {
        if !self.lora() {
            return c;
        }
        Ctx {
            e_grads: 0.0,
            e_master: 0.0,
            optimizer: OptimizerKind::Sgd,
            ..c
        }
    }

    /// Autocast copies left when the layer matrices are quantized (only the head's are cast), plus
    /// bitsandbytes' de-quantized matrix (the largest of a layer, in the compute type).
    pub fn casts(&self, c: &Ctx, m: &ResolvedModel, casts: f64, cast_elems: f64) -> f64 {
        if self.layer_bits.is_none() {
            return casts;
        }
        // The layers' part of the cast set, on the cast set's own basis: every routed expert
        // (`cast_elems` counts them all, on this GPU or not), less what autocast leaves out on the
        // torch paths (`blocks::autocast_elems`). With the stored experts only, expert parallelism
        // turned the other GPUs' experts into "kept" casts.
        let all = f64::from(m.layers) * layer_matrix_elems_stored(m, 1.0);
        let layers = if c.amp && super::blocks::applies(c, m) {
            all - super::blocks::not_autocast_elems(m)
        } else {
            all
        };
        let kept = casts * (1.0 - layers / cast_elems.max(1.0)).max(0.0);
        let h = f64::from(m.hidden);
        let widest = (h * f64::from(m.ffn)).max(h * f64::from(m.heads) * f64::from(m.head_dim));
        // A 4-bit head is the widest matrix bitsandbytes de-quantizes (once per logit chunk).
        let widest = if self.head_4bit {
            widest.max(m.params.head)
        } else {
            widest
        };
        let dequant = if self.dequant_whole {
            self.e_dequant.unwrap_or(c.ec) * widest / c.tp
        } else {
            0.0
        };
        kept + dequant
    }
}

/// Bytes per weight element bitsandbytes de-quantizes to, at once, under Lightning's
/// `BitsandbytesPrecision` (LitGPT QLoRA): `_Linear4bit.quantize` quantizes from FP16
/// (`weight.contiguous().to(device=device, dtype=torch.half)`, lightning
/// `fabric/plugins/precision/bitsandbytes.py` line 334 at f5d82504, 2024-07-29, LitGPT's pin
/// 2.4.0.dev20240728), so the quant state's dtype is FP16 (bitsandbytes 0.42.0 `functional.py`
/// line 969, `dtype=A.dtype`); `dequantize_4bit` allocates its output in that dtype (line 1026) and
/// `MatMul4Bit` casts it to the input's (`.to(A.dtype)`, `autograd/_functions.py` lines 516 and 546):
/// an FP16 and a compute-type copy of the matrix are live together unless the compute type is FP16.
fn lightning_dequant_bytes(compute: crate::tensor::Dtype) -> f64 {
    let fp16 = crate::tensor::Dtype::Fp16;
    if compute == fp16 {
        fp16.bytes()
    } else {
        fp16.bytes() + compute.bytes()
    }
}

/// Saved activations of one layer with a frozen base (training with LoRA).
///
/// For y = x·Wᵀ PyTorch saves x only to compute W's gradient and W only to compute x's (autograd
/// `derivatives.yaml`, `mm`: `self: mm_mat1_backward(grad, mat2, …)`, `mat2: mm_mat2_backward(grad,
/// self, …)`; the generated code saves a tensor only if an output that needs it requires grad). A
/// frozen matrix therefore keeps the weight (stored anyway, or its autocast copy, counted in
/// `casts`) and drops its input, unless another op saves the same tensor. A LoRA branch B·A·x saves
/// x (for A's gradient) and the rank-r A·x (for B's). A frozen RMSNorm weight no longer needs the
/// normalised x that `weight * x` saved for it. Activation functions, the attention core and
/// LayerNorm (`native_layer_norm` needs its input for the input gradient) save what they did.
pub fn lora_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, x: &Ext, a: LayerActs) -> LayerActs {
    if !x.lora() || c.mode != Mode::Training {
        return a;
    }
    // PEFT's adapters (FP32 input copies, one dropout per adapter) are the Hugging Face framework's,
    // not its kernels': LitGPT and torchtune run Hugging Face's kernels (`c.profile`) with their
    // own adapters (`frameworks::{litgpt, torchtune}::lora_layer` after the rules below).
    if c.framework.profile == Profile::HuggingFace {
        return super::frameworks::hf::lora_layer(c, m, z, x, a);
    }
    let t = x.targets;
    let k = c.saved_scale();
    let gated = m.ffn_kind == FfnKind::SwiGlu;
    let ea = c.attention_bytes();
    let h_in = |consumers: f64, targeted: f64| -> f64 {
        // The norm output as the linears' input: one autocast copy per consuming linear (HF under
        // autocast), else one shared tensor kept if any consumer is targeted.
        if c.profile == Profile::HuggingFace && c.amp {
            (consumers - targeted).max(0.0) * c.ec * z.bsh / z.lin_tr
        } else if targeted == 0.0 {
            (if c.profile == Profile::HuggingFace {
                c.er
            } else {
                c.ec
            }) * z.bsh
                / z.lin_tr
        } else {
            0.0
        }
    };
    let qkv_consumers = if m.fused_qkv || c.profile == Profile::Megatron {
        1.0
    } else {
        3.0
    };
    let qkv_targeted = if qkv_consumers == 1.0 {
        f64::from(t.q || t.k || t.v)
    } else {
        f64::from(u8::from(t.q) + u8::from(t.k) + u8::from(t.v))
    };
    let mlp_consumers = if gated && c.profile == Profile::HuggingFace {
        2.0
    } else {
        1.0
    };
    let mlp_targeted = if mlp_consumers == 1.0 {
        f64::from(t.up || (gated && t.gate))
    } else {
        f64::from(u8::from(t.gate) + u8::from(t.up))
    };
    let rms_weight = if c.profile == Profile::HuggingFace && m.norm == NormKind::RmsNorm {
        super::layer_kinds::sublayers_per_layer(m) * c.er * z.bsh / z.tr
    } else {
        0.0
    };
    let (attention, mlp) = super::layer_kinds::attention_and_mlp_shares(m);
    let (qkv_in, mlp_in) = (
        h_in(qkv_consumers, qkv_targeted) * k * attention,
        h_in(mlp_consumers, mlp_targeted) * k * mlp,
    );
    // HF counts the linears' input copies with the norms; Megatron with the attention and the MLP.
    let (norm_drop, attn_in, mlp_in) = if c.profile == Profile::HuggingFace {
        (qkv_in + mlp_in + rms_weight * k, 0.0, 0.0)
    } else {
        (0.0, qkv_in, mlp_in)
    };
    let o_drop = if t.o { 0.0 } else { ea * z.bsq * k * attention };
    let down_drop = if t.down { 0.0 } else { c.ec * z.bsf * k * mlp };
    let ranks = c.ec * z.bs * x.adapter_rows_per_token * k;
    LayerActs {
        attention: (a.attention - o_drop - attn_in).max(0.0),
        mlp: (a.mlp - down_drop - mlp_in).max(0.0) + ranks,
        norm: (a.norm - norm_drop).max(0.0),
        ..a
    }
}
