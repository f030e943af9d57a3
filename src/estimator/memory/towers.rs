//! Memory of the stacks beside the language model (`model::tower_shape`): what the encoder of an
//! encoder-decoder model and the decoder's cross-attention save for backward, what the encoder
//! pass holds at its peak in inference, and the encoder's output kept while the decoder generates.
//! A vision tower's terms follow the encoder's (below, **derived**: not measured here).
//!
//! The rules are the Transformers 5.24.0 torch paths, **measured** on CPU op by op
//! (docs/blocks-measured.md "Encoder-decoder"; `scripts/measure/blocks_rules.py` `t5_layer`,
//! `whisper_layer`, exact against every FP32 record of
//! tests/data/measured/blocks-encdec-cpu-steps.json), generalised from the records' multi-head
//! shapes to `heads × head_dim` and from FP32 to the activation type: linear outputs count in the
//! activation type (`ec`), norm inputs and the encoder's output in the residual type (`er`),
//! statistics and the log-sum-exp in FP32, indices as int64.

use super::ctx::Ctx;
use crate::estimator::model::ResolvedModel;
use crate::estimator::model::tower_shape::{CrossShape, EncoderClass, EncoderShape, VisionShape};
use crate::scenario::NormKind;

/// Elements a norm saves per token: RMSNorm the input, 1/rms and the normalised input (2h + 1);
/// LayerNorm the input, mean and rstd (h + 2) (`native_layer_norm`).
fn norm_saved(norm: NormKind, h: f64) -> f64 {
    match norm {
        NormKind::RmsNorm => 2.0 * h + 1.0,
        NormKind::LayerNorm => h + 2.0,
    }
}

/// Saved bytes of one encoder layer for `b` samples (`blocks_rules.py` `whisper_layer`, `t5_layer`,
/// encoder branch). Whisper (SDPA): 2 norms, the q/k/v input (h), q, k, v, the output and its copy
/// into `out_proj` (5 · heads · head_dim), log-sum-exp (heads); fc1 input, GELU input and output
/// (h + 2f). T5 (explicit softmax with the position bias): q, v, Kᵀ and the `o` input
/// (4 · heads · head_dim), the softmax output (heads · S per token); ReLU FF h + f (gated-gelu:
/// h + 7f, `gelu_new` keeps four f-wide tensors of its own; measured, `blocks::moe::t5_gated`).
fn encoder_layer(c: &Ctx, e: &EncoderShape, b: f64) -> f64 {
    let (h, inner, t) = (e.hidden, e.heads * e.head_dim, b * e.len);
    let norms = 2.0 * vision_norm(c, e.class, e.norm, h);
    // Gated MLPs (T5 gated-gelu, Qwen2.5-VL's vision MLP: gate output, its activation, up output,
    // the product) save h + 4f; GELU h + 2f (input, GELU input and output); T5's ReLU h + f.
    let gated = h + 4.0 * e.ffn;
    let per_token = match e.class {
        EncoderClass::Whisper if e.gated => (h + 5.0 * inner + gated) * c.ec + 4.0 * e.heads,
        EncoderClass::Whisper => (h + 5.0 * inner + h + 2.0 * e.ffn) * c.ec + 4.0 * e.heads,
        // Measured (blocks-vision-cpu-steps.json): qkv output (3, v's storage), roped q and k (2),
        // the windows' outputs (1) and their concatenation, the `proj` input (1).
        // Under autocast the gated MLP's gate and up projections each save a 16-bit input cast
        // (beside qkv's: 3h; measured, the Qwen2.5-VL AMP record's `visual.blocks.*` rows).
        EncoderClass::RotaryVision if c.amp => {
            (3.0 * h + 7.0 * inner + 4.0 * e.ffn) * c.ec + 4.0 * e.heads
        }
        EncoderClass::RotaryVision => (h + 7.0 * inner + gated) * c.ec + 4.0 * e.heads,
        EncoderClass::T5 if c.amp => t5_layer_autocast(c, e),
        // `gelu_new` keeps 4f of its own (`blocks::moe::t5_gated`): h + 7f.
        EncoderClass::T5 if e.gated => (h + 4.0 * inner + h + 7.0 * e.ffn + e.heads * e.len) * c.ec,
        EncoderClass::T5 => (h + 4.0 * inner + h + e.ffn + e.heads * e.len) * c.ec,
    };
    t * (norms + per_token)
}

/// The encoder's weights autocast casts to 16 bits and caches for the forward (training, and the
/// prefill that runs the encoder; not a decode step, which does not): every layer's q, k, v, o and
/// MLP matrices (T5, Whisper), and Whisper's two stem convolutions (`conv1d` is on the list).
/// Measured: T5's AMP record casts its encoder's and decoder's matrices alike
/// (`autocast_param_casts` at the end of forward and at the prefill peak; the decode peak only the
/// decoder's). 0 without an encoder.
pub fn encoder_cast_elems(m: &ResolvedModel) -> f64 {
    if !m.towers.has_encoder() {
        return 0.0;
    }
    let e = &m.towers.encoder;
    let inner = e.heads * e.head_dim;
    let mats = if e.gated { 3.0 } else { 2.0 };
    let stem = if e.class == EncoderClass::Whisper {
        3.0 * e.hidden * (e.mel_bins + e.hidden)
    } else {
        0.0
    };
    e.layers * (4.0 * e.hidden * inner + mats * e.hidden * e.ffn) + stem
}

/// The vision tower's weights and biases autocast casts to 16 bits and caches while the tower
/// runs (training and the prefill; not a decode step, which does not run it): every layer's q/k/v
/// (fused or not) and output projections and MLP matrices with their biases, the patch embedding
/// (`conv3d` / `conv2d` are on autocast's list; no bias in Qwen2.5-VL, CLIP and SigLIP alike
/// counted without), and the projector's matrices and biases. Measured: Qwen2.5-VL's AMP record,
/// prefill `autocast_param_casts` − decode's = exactly these, 874,496 elements
/// (`vl_run.py --amp`). 0 without images.
pub fn vision_cast_elems(m: &ResolvedModel) -> f64 {
    let v = &m.towers.vision;
    if !m.towers.sees_images() {
        return 0.0;
    }
    let (h, f) = (v.hidden, v.ffn);
    let mlp = if v.gated {
        3.0 * h * f + 2.0 * f + h
    } else {
        2.0 * h * f + f + h
    };
    let layer = 4.0 * h * h + 4.0 * h + mlp;
    let projector = if v.proj_mid > 0.0 {
        v.proj_in * v.proj_mid + v.proj_mid * v.proj_out + v.proj_mid + v.proj_out
    } else {
        v.proj_in * v.proj_out + v.proj_out
    };
    v.layers * layer + v.patch_elems * h + projector
}

/// Of the autocast weight casts `casts` (bytes), those alive while the encoder runs its backward:
/// the cache was cleared when the forward's autocast region exited, and each decoder weight's cast
/// was freed when its matmul's backward ran, so only the encoder's are left (and only on the
/// Transformers torch paths, whose cast set includes them: `blocks::autocast_elems`).
pub fn casts_in_encoder_backward(c: &Ctx, m: &ResolvedModel, casts: f64) -> f64 {
    if c.amp && super::blocks::applies(c, m) {
        (c.ec * (encoder_cast_elems(m) + vision_cast_elems(m))).min(casts)
    } else {
        casts
    }
}

/// A T5 encoder block under autocast, per token (measured line by line on the AMP record,
/// `saved_tensors_hooks` with the calling frame; models/t5/modeling_t5.py, transformers 5.24.0):
/// q, k and v each save a 16-bit cast of the FP32 norm output (3h); the position bias makes SDPA
/// take its math path, which on CPU upcasts what autocast cast, so q, Kᵀ, V and the probabilities
/// stay FP32 as without autocast; the `o` input is a 16-bit cast of the FP32 output; the feed-forward
/// saves the `wi` input cast (h), the ReLU output (f, 16-bit) and — `T5DenseActDense` moves the
/// activations back to `wo`'s FP32 weight type before `wo` — `wo`'s own 16-bit cast (f). Gated
/// (`T5DenseGatedActDense` with `gelu_new`, measured: the t5-gated AMP record): two input casts,
/// `gelu_new`'s four saved tensors, the GELU and wi_1 outputs the product saves, and the same `wo`
/// cast (7f; the 16-bit product itself is not saved).
fn t5_layer_autocast(c: &Ctx, e: &EncoderShape) -> f64 {
    let (h, inner, f) = (e.hidden, e.heads * e.head_dim, e.ffn);
    let x = 4.0;
    let attention = 3.0 * h * c.ec + x * (3.0 * inner + e.heads * e.len) + inner * c.ec;
    let ff = if e.gated {
        2.0 * h * c.ec + 7.0 * f * c.ec
    } else {
        h * c.ec + 2.0 * f * c.ec
    };
    attention + ff
}

/// The encoder's saved bytes outside its layers for `b` samples: Whisper's stem (conv1 output
/// and its GELU over 2S frames — conv2 input —, conv2 output over S: 5·S·h; the GELU output is not saved: the position add keeps nothing), and the log-mel input
/// b · mel · 2S in FP32); T5's relative-position bucket indices (S² int64, block 0); the final
/// norm.
fn encoder_outside(c: &Ctx, e: &EncoderShape, b: f64) -> f64 {
    let t = b * e.len;
    let edges = match e.class {
        EncoderClass::Whisper | EncoderClass::RotaryVision => 5.0 * t * e.hidden * c.ec,
        EncoderClass::T5 => 8.0 * e.len * e.len,
    };
    edges + t * norm_saved(e.norm, e.hidden) * c.er
}

/// Saved bytes of the decoder's cross-attention layers for `b` samples of `s` decoder tokens,
/// beyond what the decoder-layer rules count (their self-attention, MLP and the layer's `norms`,
/// the cross-attention's included): per decoder token the q input (h), q and the output (2 · heads · head_dim), log-sum-exp (heads), and
/// for Whisper the copy into `out_proj` (heads · head_dim); per encoder position the cross K and V
/// (2 · kv_heads · head_dim); once, the encoder's output (h per position) every layer's
/// k_proj / v_proj reads — without autocast: under it they save their own 16-bit casts and the
/// FP32 output is held only until the loss ([`held_at_loss`]). T5's decoder adds its position
/// biases (`blocks_rules.py` `t5_layer`, decoder branch): a [1, 1, s, s] bool causal mask per
/// layer, and in block 0 the bucket indices (s² int64) and the cross-attention's zero bias
/// [1, heads, s, S] in the activation type, which SDPA saves as its mask (measured: the T5
/// records' `decoder.block.0` rows, FP32 and 16-bit under autocast).
fn cross(c: &Ctx, x: &CrossShape, e: &EncoderShape, b: f64, s: f64) -> f64 {
    if x.layers <= 0.0 {
        return 0.0;
    }
    let inner = x.heads * x.head_dim;
    let copy = if e.class == EncoderClass::Whisper {
        inner
    } else {
        0.0
    };
    let per_token = (e.hidden + 2.0 * inner + copy) * c.ec + 4.0 * x.heads;
    let per_position = 2.0 * x.kv_heads * x.head_dim * c.ec;
    let t5_bias = if e.class == EncoderClass::T5 {
        x.layers * s * s + 8.0 * s * s + c.ec * x.heads * s * e.len
    } else {
        0.0
    };
    let encoder_out = if c.amp {
        0.0
    } else {
        b * e.len * e.hidden * c.er
    };
    // Under autocast every layer's k and v projections cast the FP32 encoder output for
    // themselves (autocast caches only leaf casts): 2 · h per position per layer.
    let casts = if c.amp {
        x.layers * 2.0 * b * e.len * e.hidden * c.ec
    } else {
        0.0
    };
    x.layers * (b * s * per_token + b * e.len * per_position) + encoder_out + t5_bias + casts
}

/// Of the autocast weight casts `casts` (bytes) a prefill counts, those made after an encoder's
/// pass (the decoder's and the head's: autocast casts a weight when its matmul first runs), so not
/// live at the encoder's peak. Measured: Whisper's AMP record, whose prefill peak is at the head
/// (`prefill_probe.py whisper-d256_b2_s128_amp`: every weight's and bias's cast, the encoder's
/// first). 0 without autocast or an encoder.
pub fn casts_after_encoder(c: &Ctx, m: &ResolvedModel, casts: f64) -> f64 {
    if c.amp && (m.towers.has_encoder() || m.towers.sees_images()) {
        (casts - c.ec * (encoder_cast_elems(m) + vision_cast_elems(m))).max(0.0)
    } else {
        0.0
    }
}

/// What the model's output holds at the loss beside the saved tensors, for `b` samples: under
/// autocast the encoder's FP32 output (`encoder_last_hidden_state`; the cross k and v projections
/// saved 16-bit casts of it, so nothing else keeps it, and it is freed with the output after the
/// forward). Measured: T5's AMP record, forward peak − end of forward.
pub fn held_at_loss(c: &Ctx, m: &ResolvedModel, b: f64) -> f64 {
    let e = &m.towers.encoder;
    if c.amp && m.towers.has_encoder() && m.towers.cross.layers > 0.0 {
        b * e.len * e.hidden * c.er
    } else {
        0.0
    }
}

/// The decoder's cross-attention k and v weights (elements) autocast casts when the encoder's
/// output is projected: in training and in the prefill, not in a decode step, which reads the
/// cross keys and values from the cache (`T5Attention.forward`, `WhisperAttention.forward`:
/// `is_updated` → the cached layer; transformers 5.24.0). Measured: the T5 AMP record's
/// `autocast_param_casts` at the decode peak lack exactly these (`prefill_probe.py
/// t5-d256_b2_s128_amp --decode`). Whisper's v_proj bias is cast too (inference casts biases).
pub fn cross_kv_cast_elems(m: &ResolvedModel) -> f64 {
    let (x, e) = (&m.towers.cross, &m.towers.encoder);
    if !m.towers.has_encoder() || x.layers <= 0.0 {
        return 0.0;
    }
    let kv = x.kv_heads * x.head_dim;
    let bias = if e.class == EncoderClass::Whisper {
        kv
    } else {
        0.0
    };
    x.layers * (2.0 * e.hidden * kv + bias)
}

/// Bytes the encoder, the cross-attention and the vision tower save for backward in one
/// micro-batch of `b` samples of `s` decoder tokens (the first pipeline stage holds them).
pub fn saved(c: &Ctx, m: &ResolvedModel, b: f64, s: f64) -> f64 {
    let tw = &m.towers;
    let vision = if tw.sees_images() {
        vision_saved(c, &tw.vision, b)
    } else {
        0.0
    };
    if !tw.has_encoder() {
        return vision;
    }
    let e = &tw.encoder;
    vision
        + e.layers * encoder_layer(c, e, b)
        + encoder_outside(c, e, b)
        + cross(c, &tw.cross, e, b, s)
}

/// The vision tower's layers as an SDPA encoder over its patches (the Whisper-class rule above:
/// two norms, the q/k/v input, q, k, v, the output and its copy, log-sum-exp, the MLP; gated MLPs
/// as SwiGLU, h + 4f), per image.
fn vision_as_encoder(v: &VisionShape) -> EncoderShape {
    EncoderShape {
        class: if v.rotary {
            EncoderClass::RotaryVision
        } else {
            EncoderClass::Whisper
        },
        layers: v.layers,
        hidden: v.hidden,
        heads: v.heads,
        head_dim: (v.hidden / v.heads.max(1.0)).floor().max(1.0),
        ffn: v.ffn,
        gated: v.gated,
        norm: v.norm,
        len: v.patches,
        mel_bins: 0.0,
    }
}

/// Saved bytes of the vision tower for `b` samples of `images` images each (the encoder rules;
/// the rotary class measured with a tiny Qwen2.5-VL, the others derived): per image every layer ([`encoder_layer`] over the patches; an MLP without bias
/// saves the same as one with), the final norm over the patches, and the projector: its input
/// (patches merged: `tokens` × in), the middle activation's input and output (2 · mid) per token.
fn vision_saved(c: &Ctx, v: &VisionShape, b: f64) -> f64 {
    let n = b * v.images;
    let e = vision_as_encoder(v);
    let layers = v.layers * encoder_layer(c, &e, n);
    let norm = n * v.patches * vision_norm(c, e.class, v.norm, v.hidden);
    let projector = n * v.tokens * (v.proj_in + 2.0 * v.proj_mid) * c.ec;
    // Under autocast the patch embedding's conv saves a 16-bit cast of the FP32 pixels (measured:
    // Qwen2.5-VL's AMP record, `patch_embed.proj`; the pixels themselves count as inputs).
    let pixels = if c.amp { n * v.pixels * c.ec } else { 0.0 };
    layers + norm + projector + pixels
}

/// Bytes one norm saves per token in an encoder or vision layer. Qwen2.5-VL's vision tower under
/// autocast carries a 16-bit residual (the patch embedding's conv returns 16 bits and nothing
/// promotes it: no position table is added), so its RMSNorm (`Qwen2RMSNorm`: `x.to(float32)`,
/// 1/rms, `(x · 1/rms).to(input_dtype)`) keeps an FP32 upcast, 1/rms and a 16-bit normalised x:
/// 4h + 4 + 2h (measured: the AMP record's `norm1`, `norm2`, `merger.ln_q` rows). Otherwise
/// `norm_saved` in the residual type.
fn vision_norm(c: &Ctx, class: EncoderClass, norm: NormKind, h: f64) -> f64 {
    if c.amp && class == EncoderClass::RotaryVision && norm == NormKind::RmsNorm {
        4.0 * h + 4.0 + c.ec * h
    } else {
        norm_saved(norm, h) * c.er
    }
}

/// What an encoder-decoder keeps for the whole request beside the caches: the encoder's output
/// the decoder reads (Transformers keeps `encoder_outputs` through `generate`; measured: the
/// records' `encoder_states`, b · S · h in the residual type) and Whisper's log-mel input
/// (b · mel · 2S FP32, `input_features` stays referenced: the records' `inputs` at decode).
pub fn encoder_states(c: &Ctx, m: &ResolvedModel, b: f64) -> f64 {
    let e = &m.towers.encoder;
    let states = if m.towers.has_encoder() {
        b * e.len * e.hidden * c.er
    } else {
        0.0
    };
    states + inputs(m, b)
}

/// The towers' input tensors for `b` samples, alive for the whole step or request (the conv
/// stems save them; `generate` keeps them in its keyword arguments): Whisper's log-mel features
/// (b · mel · 2S FP32: the stem's stride-2 conv halves 2S frames to S) and the images' pixels
/// (b · images · channels · frames · side² FP32; measured: the records' `inputs`).
pub fn inputs(m: &ResolvedModel, b: f64) -> f64 {
    let tw = &m.towers;
    let mel = if tw.has_encoder() {
        4.0 * b * tw.encoder.mel_bins * 2.0 * tw.encoder.len
    } else {
        0.0
    };
    let pixels = if tw.sees_images() {
        4.0 * b * tw.vision.images * tw.vision.pixels
    } else {
        0.0
    };
    mel + pixels
}

/// T5's position biases during a prefill of `s` decoder tokens over `c`'s encoder: computed in
/// block 0 and passed to every block until the decoder stack returns (not live at the LM head;
/// measured: the AMP record's prefill peak, the head's `mm`): the self-attention's relative bias
/// (`relative_attention_bias` lookup, [s, s, heads] FP32) and the cross-attention's zero bias
/// ([1, heads, s, S] in the activation type). Measured: the T5 FP32 records' prefill peak (the
/// last block's cross-attention) holds exactly these two (`prefill_probe.py t5-d256_b2_s128_fp32`).
pub fn t5_prefill_bias(c: &Ctx, m: &ResolvedModel, s: f64) -> f64 {
    let tw = &m.towers;
    if tw.encoder.class == EncoderClass::T5 && tw.cross.layers > 0.0 {
        tw.cross.heads * s * (4.0 * s + c.ec * tw.encoder.len)
    } else {
        0.0
    }
}

/// The encoder pass's working set under `no_grad` for `b` samples: the stem or embedding output
/// (alive through the whole encoder: Whisper's `inputs_embeds`), the layer input, the residual and
/// the normed input, and the MLP's f-wide intermediates (GELU / ReLU: 2, gated: 3); Whisper's
/// log-mel input. Measured: the Whisper records' prefill peak lies in encoder layer 0's GELU,
/// b · S · (4h + 2f) elements + the input (`blocks-encdec-cpu-steps.json`).
fn encoder_pass(c: &Ctx, e: &EncoderShape, b: f64) -> f64 {
    let f_live = if e.gated { 3.0 } else { 2.0 };
    b * e.len * (4.0 * e.hidden + f_live * e.ffn) * c.ec
}

/// The prefill's transient with an encoder or a vision tower: the larger of the decoder's prefill
/// transient (with the encoder's output beside it), and the encoder or vision pass, which run
/// before any cache exists and before the decoder's autocast casts are made (so they compete with
/// `later`, the cache and those casts, too; `casts_after_encoder`; the vision pass's working set
/// is the encoder pass's rule over the patches of every image, plus the pixels: **derived**).
pub fn prefill_transient(c: &Ctx, m: &ResolvedModel, b: f64, decoder: f64, later: f64) -> f64 {
    let tw = &m.towers;
    let vision = if tw.sees_images() {
        encoder_pass(c, &vision_as_encoder(&tw.vision), b * tw.vision.images)
    } else {
        0.0
    };
    let encoder = if tw.has_encoder() {
        encoder_pass(c, &tw.encoder, b)
    } else {
        0.0
    };
    let pass = encoder.max(vision) + inputs(m, b);
    (decoder + encoder_states(c, m, b) + vision_held(c, m, b)).max(pass - later)
}

/// What Qwen2.5-VL's vision pass leaves alive through the language model's prefill
/// (`Qwen2_5_VLModel.forward`, transformers 5.24.0): the vision output object it holds (the last
/// block's hidden state, patches × vision width per image, and the merged image embeddings, tokens ×
/// width), the embeddings concatenated over the batch's images (`torch.cat`) and the two bool
/// image-token masks (b · s each); and M-RoPE's cos and sin, built from (3, b, s) position ids, are
/// [b, s, head_dim] rather than one [1, s, ·] table (the LM's rule counts one sequence's).
/// Measured: the records' prefill peak (the language model's last MLP) lists exactly these
/// (`scripts/measure/vl_run.py` cases; 590,336 of the 590,704 B the rule missed at b = 2, 224 px).
/// Other vision towers (CLIP, SigLIP: learned positions) are not measured and get none.
fn vision_held(c: &Ctx, m: &ResolvedModel, b: f64) -> f64 {
    let v = &m.towers.vision;
    if !m.towers.sees_images() || !v.rotary {
        return 0.0;
    }
    let n = b * v.images;
    let vision_out = n * (v.patches * v.hidden + v.tokens * v.proj_out) * c.ec;
    let gathered = n * v.tokens * v.proj_out * c.ec;
    let masks = 2.0 * b * c.s;
    let mrope = 2.0 * (b - 1.0).max(0.0) * c.s * f64::from(m.head_dim) * 4.0;
    vision_out + gathered + masks + mrope
}

/// A tower's backward, which runs after the language model's (so the decoder's gradients all
/// exist) while the tower's own saved tensors are still alive: (gradients, saved activations) bytes
/// at the larger of its two ends — its last layer's backward (every tower tensor saved, no tower
/// gradient yet) and its first layer's (one layer and the rest saved, every gradient but that
/// layer's). Measured: the Whisper and Qwen2.5-VL records' backward peaks (all but the tower's
/// gradients plus the tower's saved set). `grads`: the stage's gradient bytes. `None` without a
/// running tower or off the first stage.
pub fn encoder_backward(
    c: &Ctx,
    m: &ResolvedModel,
    b: f64,
    grads: f64,
    first: bool,
) -> Option<(f64, f64)> {
    let tw = &m.towers;
    if !first || c.mode != crate::scenario::Mode::Training {
        return None;
    }
    let tower_grads = ((tw.params - tw.frozen).max(0.0) * c.e_grads).min(grads);
    // A tied head's gradient meets the token embedding's as the decoder's backward ends, while
    // the tower's saved set is still alive: the two V × h gradients being summed (measured: the
    // Whisper records' backward peak is that `add`, 2 · V · h beside one b · S · h gradient).
    let tied = if m.tied_embeddings {
        2.0 * super::training::vocab_matrix_gradient(c, m)
    } else {
        0.0
    };
    let ends = |e: &EncoderShape, n: f64, outside: f64| {
        let layer = encoder_layer(c, e, n);
        let flowing = n * e.len * e.hidden * c.ec;
        let last = (
            grads - tower_grads,
            e.layers * layer + outside + flowing + tied,
        );
        // At the first layer's backward the tied sum is done and its two V × h operands freed:
        // the decoder's embedding ran its backward before the encoder's (the autograd engine takes
        // the later-created node first, and the encoder's output is consumed only once every
        // decoder layer's cross-attention gradient is in).
        let first_layer = (
            grads - tower_grads / e.layers.max(1.0),
            layer + outside + flowing,
        );
        if last.0 + last.1 >= first_layer.0 + first_layer.1 {
            last
        } else {
            first_layer
        }
    };
    let encoder = tw
        .has_encoder()
        .then(|| ends(&tw.encoder, b, encoder_outside(c, &tw.encoder, b)));
    let vision = tw.sees_images().then(|| {
        let v = &tw.vision;
        let n = b * v.images;
        let outside = vision_saved(c, v, b) - v.layers * encoder_layer(c, &vision_as_encoder(v), n);
        ends(&vision_as_encoder(v), n, outside)
    });
    match (encoder, vision) {
        (Some(e), Some(v)) => Some(if e.0 + e.1 >= v.0 + v.1 { e } else { v }),
        (e, v) => e.or(v),
    }
}
