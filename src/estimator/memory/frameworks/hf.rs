//! The Hugging Face family (Transformers + PEFT + bitsandbytes + TRL) under LoRA: what each adapted
//! layer and the stage around the layers keep for backward. Derived from the source and measured on
//! CPU (docs/frameworks/peft.md, bitsandbytes.md; records tests/data/measured/{peft,bitsandbytes}-
//! cpu-steps.json, held within 1 % per phase by tests/framework_hf.rs):
//!
//! - peft 0.21.2 `tuners/lora/layer.py` `Linear.forward`: per adapter `x = _cast_input_dtype(x,
//!   lora_A.weight.dtype)` (a copy only when the dtypes differ: FP32 adapters on a 16-bit base make
//!   **one FP32 copy per targeted linear**), then `lora_B(lora_A(dropout(x)))`: each adapter has its
//!   own `nn.Dropout`, so with p > 0 each saves its dropped copy and a mask, and the undropped input
//!   is no longer saved by anyone.
//! - SDPA / FlashAttention-2 return their output in (b, s, a, d) layout, so `o_proj`'s input is the
//!   kernel's saved output (same storage): a frozen `o_proj` drops nothing.
//! - A frozen embedding's output does not require grad: the first layer's input RMSNorm saves
//!   nothing, and that layer's q/k/v dropouts save no mask. A frozen final norm and LM head drop
//!   the normalised x and the head's input (which then stays alive only as a local at the loss).
//! - bitsandbytes ≤ 0.43.1 `MatMul4Bit.forward`: `ctx.tensors = (A, B)` keeps the input of every
//!   4-bit linear in the compute type (one copy per linear when it differs from the activation type).

use crate::estimator::memory::activations::{LayerActs, Sizes};
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::memory::peft::Ext;
use crate::estimator::model::ResolvedModel;
use crate::estimator::{Diagnostic, Diagnostics};
use crate::scenario::{
    ArchKind, AttentionKernel, Checkpointing, FfnKind, HfAttention, HfFramework, Implementation,
    Mode, MoeDispatcher, NormKind, PeftMethod, Profile, Scenario,
};

/// The settings as they are (every field is an enum: nothing to clamp). Destructured without `..`
/// so a new field does not compile until it is read here.
pub fn resolve(hf: &HfFramework) -> HfFramework {
    let HfFramework {
        attention,
        trainer,
        fused_loss,
        bitsandbytes,
    } = hf;
    HfFramework {
        attention: *attention,
        trainer: *trainer,
        fused_loss: *fused_loss,
        bitsandbytes: bitsandbytes.clone(),
    }
}

/// What the Hugging Face settings cannot express here: settings another profile (or a full
/// fine-tune) ignores, and FlashAttention-2 over FP32 activations (flash-attn 2.x supports FP16 and
/// BF16 only; Transformers' `_check_and_enable_flash_attn_2` raises for an FP32 model).
pub fn diagnostics(sc: &Scenario, d: &mut Diagnostics) {
    let i = &sc.implementation;
    // LitGPT reads the bitsandbytes release (its QLoRA runs Lightning's `BitsandbytesPrecision`:
    // `frameworks::Framework::bnb_legacy`); every other Hugging Face setting is ignored there.
    let mut read = i.hf.clone();
    if i.profile == Profile::LitGpt {
        read.bitsandbytes.version = crate::scenario::BnbVersion::default();
    }
    let hf_set = read != HfFramework::default();
    let peft = &sc.peft;
    let lora = peft.method != PeftMethod::Full;
    let lora_only = peft.lora_dropout > 0.0 || peft.inference_adapters;
    let megatron_set = (i.megatron_local_layers
        || i.megatron_moe_dispatcher != MoeDispatcher::AllGather)
        && i.profile != Profile::Megatron;
    if (i.profile != Profile::HuggingFace && hf_set) || (!lora && lora_only) || megatron_set {
        d.insert(Diagnostic::FrameworkSettingsIgnored);
    }
    let fa2 =
        i.profile == Profile::HuggingFace && i.hf.attention == Some(HfAttention::FlashAttention2);
    let act = sc.precision_types();
    let half = act.weight_compute_copies.unwrap_or(act.activations).bytes() <= 2.0;
    if fa2 && !half {
        d.insert(Diagnostic::FlashAttention2NeedsHalfPrecision);
    }
}

/// The attention kernel a step runs: the Hugging Face profile's `attn_implementation` when set,
/// Megatron's own `DotProductAttention` (materialised) under its local layers, else
/// `strategies.attention`.
pub fn attention(i: &Implementation, strategy: AttentionKernel) -> AttentionKernel {
    match i.profile {
        Profile::HuggingFace => i.hf.attention_kernel(strategy),
        Profile::Megatron if i.megatron_local_layers => AttentionKernel::Materialized,
        _ => strategy,
    }
}

/// The Hugging Face profile's loss never materialises b·s·V logits (TRL's fused head, Liger,
/// Unsloth): the memory model's fused cross-entropy.
pub fn fused_head(profile: Profile, hf: &HfFramework) -> bool {
    profile == Profile::HuggingFace && hf.fused_head()
}

/// One group of linears that read the same input.
struct Group {
    /// Linears of the group with an adapter, and all of them.
    targeted: f64,
    consumers: f64,
    /// Elements of the input on this GPU.
    n: f64,
    /// Bytes per element of the input as the base computes it.
    e_in: f64,
    /// What the full fine-tune saves of this input for the group (bytes).
    full: f64,
    /// The input's storage is saved by another op anyway (the attention kernel's output).
    elsewhere: bool,
}

impl Group {
    /// Bytes the LoRA step saves of this input.
    fn lora(&self, x: &Ext, e_cast: f64) -> f64 {
        if x.dropout > 0.0 {
            let mask = if x.mask_one_byte { 1.0 } else { e_cast };
            self.targeted * (e_cast + mask) * self.n
        } else if e_cast != self.e_in {
            self.targeted * e_cast * self.n
        } else if self.targeted > 0.0 && !self.elsewhere {
            self.e_in * self.n
        } else {
            0.0
        }
    }

    /// bitsandbytes ≤ 0.43.1: the compute-type input every 4-bit linear keeps, beyond `saved`.
    fn legacy(&self, e_q: f64, saved_shared: bool) -> f64 {
        if e_q != self.e_in {
            self.consumers * e_q * self.n
        } else if saved_shared || self.elsewhere {
            0.0
        } else {
            self.e_in * self.n
        }
    }
}

fn count(flags: &[bool]) -> f64 {
    flags.iter().map(|&f| f64::from(u8::from(f))).sum()
}

/// The layer's four groups: q/k/v (the input norm's output), the MLP's input (the second norm's
/// output), `o_proj`'s input and `down_proj`'s input.
fn groups(c: &Ctx, m: &ResolvedModel, z: &Sizes, t: crate::scenario::LoraTargets) -> [Group; 4] {
    let ea = c.attention_bytes();
    let flash = c.attention == AttentionKernel::Flash;
    // The linears' input: under sequence parallelism the gathered sequence (`Sizes::lin_tr`).
    let n_h = z.bsh / z.lin_tr;
    // Under autocast each consumer makes its own 16-bit copy of an FP32 input; else one tensor.
    let full_in = |consumers: f64| {
        if c.amp {
            consumers * c.ec * n_h
        } else {
            c.er * n_h
        }
    };
    let (qkv_consumers, qkv_targeted) = if m.fused_qkv {
        (1.0, f64::from(u8::from(t.q || t.k || t.v)))
    } else {
        (3.0, count(&[t.q, t.k, t.v]))
    };
    let (mlp_consumers, mlp_targeted) = if m.ffn_kind == FfnKind::SwiGlu {
        (2.0, count(&[t.gate, t.up]))
    } else {
        (1.0, count(&[t.up]))
    };
    let shared = |targeted: f64, consumers: f64| Group {
        targeted,
        consumers,
        n: n_h,
        e_in: c.er,
        full: full_in(consumers),
        elsewhere: false,
    };
    [
        shared(qkv_targeted, qkv_consumers),
        shared(mlp_targeted, mlp_consumers),
        Group {
            targeted: count(&[t.o]),
            consumers: 1.0,
            n: z.bsq,
            e_in: ea,
            full: if flash { 0.0 } else { ea * z.bsq },
            elsewhere: flash,
        },
        Group {
            targeted: count(&[t.down]),
            consumers: 1.0,
            n: z.bsf,
            e_in: c.ec,
            full: c.ec * z.bsf,
            elsewhere: false,
        },
    ]
}

/// Saved activations of one adapted layer under the Hugging Face profile (module docs).
pub fn lora_layer(c: &Ctx, m: &ResolvedModel, z: &Sizes, x: &Ext, a: LayerActs) -> LayerActs {
    let k = c.saved_scale();
    // What lora_A sees without dropout: autocast's 16-bit copy, else the adapter's own type.
    let e_cast = if c.amp { c.ec } else { x.e_adapter };
    let delta = |g: &Group| {
        let lora = g.lora(x, e_cast);
        let legacy = x.legacy_input.map_or(0.0, |e_q| {
            g.legacy(
                e_q,
                x.dropout == 0.0 && e_cast == g.e_in && g.targeted > 0.0,
            )
        });
        (lora + legacy - g.full) * k
    };
    let [qkv, mlp_in, o, down] = groups(c, m, z, x.targets);
    let (attention, mlp) = super::super::layer_kinds::attention_and_mlp_shares(m);
    let delta = |g: &Group, share: f64| delta(g) * share;
    let rms_weight = if m.norm == NormKind::RmsNorm {
        super::super::layer_kinds::sublayers_per_layer(m) * c.er * z.bsh / z.tr * k
    } else {
        0.0
    };
    let ranks = e_cast * z.bs * x.adapter_rows_per_token * k;
    LayerActs {
        attention: (a.attention + delta(&o, attention)).max(0.0),
        mlp: (a.mlp + delta(&down, mlp)).max(0.0) + ranks,
        // HF counts the linears' input copies with the norms.
        norm: (a.norm + delta(&qkv, attention) + delta(&mlp_in, mlp) - rms_weight).max(0.0),
        ..a
    }
}

/// What a stage saves beyond its layers under LoRA (Hugging Face profile, decoder with RMSNorm),
/// and what stays alive at the loss: (saved bytes, forward transient bytes). Module docs.
pub fn lora_stage(
    c: &Ctx,
    m: &ResolvedModel,
    z: &Sizes,
    x: &Ext,
    (first, last): (bool, bool),
) -> (f64, f64) {
    // The framework, not the kernels: LitGPT and torchtune (whose `c.profile` is HuggingFace) count
    // their frozen first and last stage in `frameworks::{first_stage, final_norm}`.
    let hf_decoder = c.framework.profile == Profile::HuggingFace
        && m.arch == ArchKind::Decoder
        && m.norm == NormKind::RmsNorm;
    if !x.lora() || c.mode != Mode::Training || !hf_decoder {
        return (0.0, 0.0);
    }
    let k = c.saved_scale();
    // A norm's own tensors are on the sequence shard; the linears' inputs (the adapters' dropout
    // masks, the head's input) gathered under sequence parallelism (`Sizes::lin_tr`).
    let (n_h, n_in) = (z.bsh / z.tr, z.bsh / z.lin_tr);
    let mut saved = 0.0;
    // Under full (or every-k) checkpointing a layer keeps only its input, whatever it requires.
    let per_op = matches!(
        c.checkpointing,
        Checkpointing::None | Checkpointing::Selective
    );
    // Layer 0's first pre-norm and its Q, K, V adapters, where it has them (a pattern may start
    // with an empty or a Mamba layer).
    let (norm0, attention0) = super::super::layer_kinds::first_layer_norm_and_attention(m);
    if first && per_op && norm0 {
        // Layer 0's input RMSNorm (FP32 `pow` input, FP32 rsqrt) and its q/k/v dropout masks.
        saved -= (4.0 * n_h + 4.0 * z.bs / z.tr) * k;
        if x.dropout > 0.0 && attention0 {
            let t = x.targets;
            let qkv = if m.fused_qkv {
                f64::from(u8::from(t.q || t.k || t.v))
            } else {
                count(&[t.q, t.k, t.v])
            };
            let e_cast = if c.amp { c.ec } else { x.e_adapter };
            let mask = if x.mask_one_byte { 1.0 } else { e_cast };
            saved -= qkv * mask * n_in * k;
        }
    }
    let mut transient = 0.0;
    if last {
        // The frozen final norm's normalised x; the frozen head's input unless a fused head saves
        // it anyway (TRL's `_ChunkedLogProbFunction`, Liger: `save_for_backward(hidden, …)`).
        saved -= c.er * n_h * k;
        if !c.fused_ce {
            saved -= c.ec * n_in * k;
            transient = c.er * n_in;
        }
    }
    (saved, transient)
}
