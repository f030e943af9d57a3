#!/usr/bin/env python3
"""Saved-for-backward rules per block kind (Transformers 5.24.0 torch paths, CPU, FP32), checked against the
records of hf_blocks.py: every rule predicts the bytes each layer saves for backward at (b, s), and `--check`
compares them with the measured `saved_by_module.by_layer` of every FP32 record.

    python3 blocks_rules.py --check ../../tests/data/measured/blocks-*-cpu-steps.json   # rules vs measured
    python3 blocks_rules.py --cache ../../tests/data/measured/blocks-*-cpu-steps.json   # cache contents

Units: element counts per token (t = b*s tokens) or per sequence; bytes = elements * 4 (FP32) except where an
integer dtype is named (int64 = 8 B, int32 = 4 B, bool = 1 B). The derivation, op by op, is in
docs/blocks-measured.md; the comments name the module that saves each term (saved_tensors_hooks attribution).
"""
from __future__ import annotations

import argparse
import collections
import json

F32 = 4


def norm_rms(h):
    """RMSNorm (Llama/Mistral/Qwen/DeepSeek/Gemma): input x (h), 1/rms (1), normalized x*r (h) per token."""
    return 2 * h + 1


def norm_ln(h):
    """nn.LayerNorm: input x (h), mean (1), rstd (1) per token (native_layer_norm)."""
    return h + 2


def attn_sdpa(c, t, b, s, *, masked: bool, qk_norm: bool):
    """Self-attention through SDPA (flash-for-CPU kernel) + its q/k/v/o projections, bytes.

    Saved per token: the normed input the q/k/v projections share (h); with qk-norm (Qwen3, Gemma3) q_norm
    (2*nh*hd + nh) and k_norm (2*nkv*hd + nkv); the kernel's q, output (nh*hd each) and logsumexp (nh), and
    its k, v: nkv*hd each when no mask is passed (is_causal, GQA inside the kernel) or nh*hd each once a
    mask is needed (sliding window shorter than the sequence: repeat_kv expands K/V and the kernel keeps a
    b x 1 x s x s float mask). The o_proj input is the kernel output (a view)."""
    h, nh, nkv, hd = c["h"], c["nh"], c["nkv"], c["hd"]
    kv = nh if masked else nkv
    per_tok = h + 2 * nh * hd + 2 * kv * hd + nh
    if qk_norm:
        per_tok += (2 * nh * hd + nh) + (2 * nkv * hd + nkv)
    per_bss = 1 if masked else 0
    return F32 * (t * per_tok + b * s * s * per_bss)


def mlp_glu(c, t, f=None):
    """SwiGLU / GeGLU MLP: gate/up input (h), gate output (f, saved by the activation), up output and
    activation output (f each, saved by the product), product (f, down_proj input)."""
    f = c["f"] if f is None else f
    return F32 * t * (c["h"] + 4 * f)


def moe_grouped(c, t, fe, n_shared_f=0):
    """Top-k router + routed experts through Transformers' grouped_mm path (integrations/moe.py).

    Router, per token: its input (h), softmax probabilities over E experts (E, FP32), top-k indices (k int64),
    top-k sum (1) and top-k weights (k). Experts, per routed row (t*k rows): gathered input (h), gate_up
    output (2fe), activation input/output (2fe), down_proj output (h, saved by the routing-weight product),
    routing weight (1); plus three int64 index vectors of t*k and the E int32 group offsets."""
    h, E, k = c["h"], c["E"], c["k"]
    rows = t * k
    router = F32 * t * (h + E + 1 + k) + 8 * t * k
    experts = F32 * rows * (2 * h + 4 * fe + 1) + 3 * 8 * rows + 4 * E
    shared = mlp_glu(c, t, n_shared_f) if n_shared_f else 0
    return router + experts + shared


def moe_eager_experts_extra(c, t, fe):
    """experts_implementation="eager" (a Python loop over the experts hit) instead of grouped_mm: per routed row
    2*fe more FP32 elements are kept (the per-expert gate/up halves are separate storages) and two int64 index
    vectors (token, top-k slot) replace the three int64 vectors and the int32 offsets."""
    rows = t * c["k"]
    return F32 * rows * 2 * fe + 2 * 8 * rows - (3 * 8 * rows + 4 * c["E"])


def router_deepseek(c, t):
    """DeepseekV3TopkRouter (sigmoid scores, group-limited top-k): input (h), scores (E), top-2 per group
    (n_group*2 int64), chosen groups (topk_group int64), score mask (E bool), top-k indices (k int64), top-k
    sum (1) and weights (k)."""
    h, E, k, g, tg = c["h"], c["E"], c["k"], c["n_group"], c["topk_group"]
    return t * (F32 * (h + E + 1 + k) + 8 * (2 * g + tg + k) + E)


def mla_attention(c, b, s, t):
    """DeepseekV3Attention (q/k head dim qk_nope+qk_rope differs from v_head_dim, so SDPA runs its math path:
    matmul, softmax, matmul). Per token: the shared normed input (h); with q_lora: q_a_layernorm (2*qr + 1)
    and q_b_proj input (qr); kv_a_layernorm input (a view of the kv_a output, kv_lora_rank + qk_rope), its
    normalized x (kv_lora_rank) and 1/rms (1); kv_b_proj input (kv_lora_rank); q and k^T (nh*(nope+rope)
    each); the kv_b output that V is a view of (nh*(nope+v)); o_proj input (nh*v). Per b*s^2: the softmax
    output (nh)."""
    h, nh, r, dr, dn, dv = c["h"], c["nh"], c["r"], c["dr"], c["dn"], c["dv"]
    dq = dn + dr
    # V is a view of the kv_b output, [b, nh, s, v] with head stride nope+v; the second matmul flattens it to
    # [b*nh, s, v]: a view when b == 1 (the saved storage is the whole kv_b output, nh*(nope+v) per token), a
    # contiguous copy when b > 1 (nh*v per token)
    v_saved = nh * (dn + dv) if b == 1 else nh * dv
    per_tok = h + (r + dr) + r + 1 + r + 2 * nh * dq + v_saved + nh * dv
    if c["qr"]:
        per_tok += 2 * c["qr"] + 1 + c["qr"]
    return F32 * (t * per_tok + b * s * s * nh)


def mamba2_layer(c, b, s):
    """Mamba2 block (pre-norm + Mamba2Mixer.torch_forward, transformers 5.24 modeling_mamba2.py, no mamba_ssm):
    in_proj -> causal depthwise conv1d + SiLU over xBC -> chunked SSD scan (ssd_naive chunk loop) -> gated
    RMSNorm -> out_proj. di = nh*hd, cd = di + 2*g*N (conv channels), dproj = di + cd + nh (in_proj width),
    L = chunk_size, nc = ceil(s/L).

    Per token: norm (2h+1) and in_proj input (h); in_proj output (dproj) and the padded conv output (cd, plus
    (k-1)*cd per sequence); SiLU(conv) (cd) and x*dt (di); dt before/after softplus (2nh) and clamped dt (nh);
    the scan's per-chunk tensors: 3 of nh*L (segment-sum decay L x L per chunk, its exp, C.B scores), 5 of
    nh*N (B, C and their broadcasts per head), 3 of nh*hd (x chunks, intra-chunk outputs), 2 of nh (A*dt
    cumsum), 2 of nh*hd*N/L (chunk states before/after the inter-chunk recurrence, per chunk); gated RMSNorm
    (4*di + g) and out_proj input (di). Per sequence: nh*hd*N (the extra initial state in the inter-chunk
    recurrence) and nh*(nc+1)^2 (inter-chunk decay). Constants: A and -exp(A) (2nh), two L x L bool masks,
    two (nc+1)^2 bool masks."""
    h, nh, hd, N, g, L, k = c["h"], c["nh"], c["hd"], c["N"], c["g"], c["L"], c["k"]
    t = b * s
    di = nh * hd
    cd = di + 2 * g * N
    dproj = di + cd + nh
    nc = -(-s // L)
    per_tok = (2 * h + 1) + h + dproj + cd + cd + 3 * nh + 3 * di + g + di
    # the scan pads the sequence to nc*L tokens (zero padding when s % L != 0): x*dt and the scan output y
    # (the gated norm's input is a view of it) are stored padded
    per_padded_tok = 2 * di + 3 * nh * L + 5 * nh * N + 3 * nh * hd + 2 * nh + 2 * nh * hd * N // L
    per_seq = cd * (k - 1) + nh * hd * N + nh * (nc + 1) ** 2
    return F32 * (t * per_tok + b * nc * L * per_padded_tok + b * per_seq + 2 * nh) + 2 * L * L \
        + 2 * (nc + 1) ** 2


def gpt_oss_layer(c, b, s, idx):
    """GptOssDecoderLayer, eager attention with sinks (the class has no SDPA path) + top-k MoE (grouped_mm).

    Attention per token: normed input (h); q and V expanded to nh heads (nh*hd each) and K^T (nh*hd) kept by
    the two matmuls; the per-row max of [scores | sink] (nh, int64 index); the softmax over s+1 columns
    (nh*(s+1) per token: nh*b*s^2 + nh*t); o_proj input (h). Sliding and full layers save the same (eager
    computes every score; the window only masks). Router: input (h), top-k indices (k int64), top-k weights
    after their softmax (k). Experts per routed row: gathered input (h), gate_up with bias (2f), the clamped
    gate and up, sigmoid, GLU and (up+1)*glu (5f), down output (h, kept by the routing-weight product),
    weight (1); four int64 index vectors of t*k and E int32 offsets."""
    h, nh, hd, f, E, k = c["h"], c["nh"], c["hd"], c["f"], c["E"], c["k"]
    t = b * s
    rows = t * k
    out = F32 * t * (2 * norm_rms(h) + h + 3 * nh * hd + nh + h) + 8 * t * nh + F32 * b * nh * s * s
    out += F32 * t * (h + k) + 8 * t * k
    out += F32 * rows * (2 * h + 7 * f + 1) + 4 * 8 * rows + 4 * E
    if idx == 0:
        out += rope_tables(s, hd // 2)
    return out


def whisper_layer(c, b, s_enc, s_dec, stack, idx):
    """WhisperEncoderLayer / WhisperDecoderLayer (pre-LayerNorm, SDPA, GELU MLP, dropout p = 0).

    Encoder, per frame: 2 LayerNorms (h + 2 each), q/k/v input (h), SDPA q, k, v, output (4h, MHA),
    logsumexp (nh), out_proj input (h, a copy of the transposed output), fc1 input (h), GELU input and output
    (2f). Decoder, per decoder token: 3 LayerNorms, self-attention as above (6h + nh), cross-attention q
    input, q, output, out_proj input (4h) and logsumexp (nh), fc1/GELU (h + 2f); per encoder frame the
    cross-attention K and V (2h); the first decoder layer also holds the encoder output (h per frame) that
    every layer's k_proj/v_proj reads."""
    h, nh, f = c["h"], c["nh"], c["f"]
    if stack == "encoder":
        return F32 * b * s_enc * (2 * norm_ln(h) + 7 * h + nh + 2 * f)
    out = F32 * b * s_dec * (3 * norm_ln(h) + 6 * h + nh + 4 * h + nh + h + 2 * f) + F32 * b * s_enc * 2 * h
    if idx == 0:
        out += F32 * b * s_enc * h
    return out


def t5_layer(c, b, s_enc, s_dec, stack, idx):
    """T5Block (T5LayerNorm = RMS without mean, ReLU FF, relative position bias, dropout p = 0).

    Encoder self-attention (explicit matmul/softmax with the position bias added): per token the normed input
    (h), q, v and K^T (3*nh*dkv), o input (nh*dkv); per b*s^2 the softmax output (nh). FF: wi input (h), ReLU
    output (f, also the wo input). Decoder: self-attention as the encoder's plus a b x 1 x s x s bool causal
    mask (1 x 1 x s x s, shared by the batch); cross-attention through SDPA (no bias): q input (h), q and output (2*nh*dkv), logsumexp (nh), and per
    encoder token K and V (2*nh*dkv). Block 0 of each stack also keeps the relative-position bucket indices
    (s^2 int64); decoder block 0 also keeps its position bias and bias + mask (2 * nh * s^2) and the encoder
    output (h per encoder token)."""
    h, nh, dkv, f = c["h"], c["nh"], c["dkv"], c["f"]
    inner = nh * dkv
    if stack == "encoder":
        t = b * s_enc
        out = F32 * t * (2 * (2 * h + 1) + h + 4 * inner + h + f) + F32 * b * nh * s_enc ** 2
        if idx == 0:
            out += 8 * s_enc ** 2
        return out
    t = b * s_dec
    out = F32 * t * (3 * (2 * h + 1) + h + 4 * inner + h + 2 * inner + nh + h + f)
    out += F32 * b * nh * s_dec ** 2 + s_dec ** 2 + F32 * b * s_enc * 2 * inner
    if idx == 0:
        out += 8 * s_dec ** 2 + 2 * F32 * nh * s_dec ** 2 + F32 * b * s_enc * h
    return out


def nemotron_h_layer(kw, b, s, idx):
    """NemotronHBlock: one mixer per layer after an RMSNorm (2h+1): 'M' Mamba-2 (mamba2_layer), '*' attention
    without RoPE (SDPA, GQA, no mask: h + 2*nh*hd + 2*nkv*hd + nh per token), '-' MLP up -> ReLU^2 -> down
    (up input h, ReLU output f, its square f)."""
    kind = kw["hybrid_override_pattern"][idx]
    h, t = kw["hidden_size"], b * s
    if kind == "M":
        c = dict(h=h, nh=kw["mamba_num_heads"], hd=kw["mamba_head_dim"], N=kw["ssm_state_size"],
                 g=kw["n_groups"], L=kw["chunk_size"], k=kw["conv_kernel"])
        return mamba2_layer(c, b, s)
    if kind == "*":
        c = dict(h=h, nh=kw["num_attention_heads"], nkv=kw["num_key_value_heads"], hd=kw["head_dim"])
        return F32 * t * norm_rms(h) + attn_sdpa(c, t, b, s, masked=False, qk_norm=False)
    return F32 * t * (norm_rms(h) + h + 2 * kw["intermediate_size"])


def gated_deltanet(c, b, s):
    """Qwen3NextGatedDeltaNet, torch path (torch_causal_conv1d_update/torch_chunk_gated_delta_rule, no fla):
    in_proj_qkvz/ba -> causal conv1d + SiLU over q,k,v -> l2-normed q, k repeated to nv heads -> chunked
    delta rule (chunk C = 64) -> gated RMSNorm with z -> out_proj. Kd = nk*dk, Vd = nv*dv, cd = 2*Kd + Vd.

    Per token: input (h); conv input and padded output (2*cd, plus (k-1)*cd per sequence); beta/decay pieces
    (3*nv), l2-normed q and k (2*nv*dk) and their scales (2*nv); padded to whole chunks (nc*C tokens): the
    scaled/chunked q, k and k*beta forms (10*nv*dk), v, v*beta and the corrected v (3*nv*dv), the C x C
    intra-chunk decay and attention tensors (5*nv*C), g cumsum pieces (4*nv); per chunk nv decays and one
    nv*dk*dv state; gated RMSNorm (5*Vd + nv) and out_proj input (Vd). At b > 1 one [b*nv, C, dk] tensor
    (per layer, not per chunk) fewer is kept than at b = 1. Exact for whole chunks; for s % C != 0 some chunk
    tensors are not padded and the rule over-states (up to ~10 % at s = 100). Constants: 2*nv (A, dt bias) and one C x C bool
    mask."""
    h, nk, dk, nv, dv, k, C = c["h"], c["nk"], c["dk"], c["nv"], c["dv"], c["k"], c["C"]
    Kd, Vd = nk * dk, nv * dv
    cd = 2 * Kd + Vd
    t = b * s
    nc = -(-s // C)
    tp = b * nc * C  # chunked tensors are padded to whole chunks
    per_tok = h + 2 * cd + 3 * nv + 2 * nv * dk + 2 * nv + 5 * Vd + nv + Vd
    per_padded = 10 * nv * dk + 3 * nv * dv + 5 * nv * C + 4 * nv
    out = F32 * (t * per_tok + tp * per_padded + b * nc * (nv + nv * dk * dv) + b * cd * (k - 1) + 2 * nv)
    if b > 1:  # one [b*nv, C, dk] tensor is a view of an already-counted storage when b > 1 (a copy at b = 1)
        out -= F32 * b * nv * C * dk
    return out + C * C


def qwen3_next_layer(kw, b, s, idx):
    """Qwen3NextDecoderLayer: 2 RMSNorms (2h+1 per token, (1+w) h each); mixer = gated DeltaNet on 'linear'
    layers, gated full attention every full_attention_interval-th layer; MLP = sparse MoE (grouped_mm) with a
    sigmoid-gated shared expert."""
    h, t = kw["hidden_size"], b * s
    out = F32 * (t * 2 * norm_rms(h) + 2 * h)
    if (idx + 1) % kw["full_attention_interval"] == 0:
        nh, nkv, hd = kw["num_attention_heads"], kw["num_key_value_heads"], kw["head_dim"]
        # q_proj emits q and its gate (2*nh*hd, q_norm keeps that storage), q_norm output (nh*hd) + 1/rms (nh),
        # k_norm (2*nkv*hd + nkv), SDPA (q, out, k, v, lse), sigmoid(gate) and attention output (2*nh*hd),
        # o_proj input (nh*hd), q/k/v input (h); partial RoPE tables on the first such layer
        out += F32 * t * (h + 3 * nh * hd + nh + 2 * nkv * hd + nkv + 2 * nh * hd + 2 * nkv * hd + nh
                          + 2 * nh * hd + nh * hd) + F32 * 2 * hd
        if idx + 1 == kw["full_attention_interval"]:
            out += rope_tables(s, int(hd * kw.get("partial_rotary_factor", 0.25)))
    else:
        c = dict(h=h, nk=kw["linear_num_key_heads"], dk=kw["linear_key_head_dim"], nv=kw["linear_num_value_heads"],
                 dv=kw["linear_value_head_dim"], k=kw["linear_conv_kernel_dim"], C=64)
        out += gated_deltanet(c, b, s)
    E, k, fe, fs = kw["num_experts"], kw["num_experts_per_tok"], kw["moe_intermediate_size"], \
        kw["shared_expert_intermediate_size"]
    rows = t * k
    out += F32 * t * (h + E + 1 + k) + 8 * rows                       # router (input shared with the expert)
    out += F32 * rows * (2 * h + 4 * fe + 1) + 3 * 8 * rows + 4 * E  # routed experts, grouped_mm
    out += F32 * t * 4 * fs + F32 * t * (1 + h)                       # shared expert GLU, sigmoid gate * output
    return out


def rope_tables(s, rot_dim):
    """cos and sin [1, s, rot_dim] (FP32), shared by every layer using that rotary embedding; attributed to the
    first such layer."""
    return F32 * 2 * s * rot_dim


def llama_like(c, b, s, layer, *, sliding: bool, qk_norm: bool, gemma: bool, first_of_rope: bool,
               moe_fe=None):
    t = b * s
    h = c["h"]
    masked = sliding and s > c["window"]
    n_norms = 4 if gemma else 2
    out = F32 * t * n_norms * norm_rms(h)
    if gemma:  # Gemma3RMSNorm computes (1 + weight) per call: h per norm, hd per q/k norm
        out += F32 * (n_norms * h + 2 * c["hd"])
    out += attn_sdpa(c, t, b, s, masked=masked, qk_norm=qk_norm)
    out += moe_grouped(c, t, moe_fe) if moe_fe else mlp_glu(c, t)
    if first_of_rope:
        out += rope_tables(s, c["hd"])
    return out


def deepseek(kw, b, s, idx):
    t = b * s
    c = dict(h=kw["hidden_size"], nh=kw["num_attention_heads"], r=kw["kv_lora_rank"], dr=kw["qk_rope_head_dim"],
             dn=kw["qk_nope_head_dim"], dv=kw["v_head_dim"], qr=kw["q_lora_rank"], E=kw["n_routed_experts"],
             k=kw["num_experts_per_tok"], n_group=kw["n_group"], topk_group=kw["topk_group"])
    out = F32 * t * 2 * norm_rms(c["h"]) + mla_attention(c, b, s, t)
    if idx < kw["first_k_dense_replace"]:
        out += mlp_glu(dict(h=c["h"], f=kw["intermediate_size"]), t)
    else:
        fe = kw["moe_intermediate_size"]
        rows = t * c["k"]
        out += router_deepseek(c, t)
        out += F32 * rows * (2 * c["h"] + 4 * fe + 1) + 3 * 8 * rows + 4 * c["E"]
        out += F32 * t * 4 * kw["n_shared_experts"] * fe  # shared expert GLU; its input is the router's
    if idx == 0:
        out += rope_tables(s, c["dr"])
    return out


def predict(model: str, kw: dict, b: int, s: int, layer: str, dec_tokens: int | None = None):
    """Predicted saved bytes of one layer (None when no rule covers it)."""
    idx = int(layer.rsplit(".", 1)[1])
    if model.startswith("deepseek_v3"):
        return deepseek(kw, b, s, idx)
    if model.startswith("qwen3_next"):
        return qwen3_next_layer(kw, b, s, idx)
    if model.startswith("gpt_oss"):
        c = dict(h=kw["hidden_size"], nh=kw["num_attention_heads"], hd=kw["head_dim"], f=kw["intermediate_size"],
                 E=kw["num_local_experts"], k=kw["num_experts_per_tok"])
        return gpt_oss_layer(c, b, s, idx)
    if model.startswith("nemotron_h"):
        return nemotron_h_layer(kw, b, s, idx)
    if model.startswith("whisper"):
        c = dict(h=kw["d_model"], nh=kw["encoder_attention_heads"], f=kw["encoder_ffn_dim"])
        return whisper_layer(c, b, s, dec_tokens, layer.split(".")[0], idx)
    if model.startswith("t5"):
        c = dict(h=kw["d_model"], nh=kw["num_heads"], dkv=kw["d_kv"], f=kw["d_ff"])
        return t5_layer(c, b, s, dec_tokens, layer.split(".")[0], idx)
    if model.startswith("mamba2"):
        c = dict(h=kw["hidden_size"], nh=kw["num_heads"], hd=kw["head_dim"], N=kw["state_size"],
                 g=kw["n_groups"], L=kw["chunk_size"], k=kw["conv_kernel"])
        return mamba2_layer(c, b, s)
    if model.startswith("mistral"):
        c = dict(h=kw["hidden_size"], nh=kw["num_attention_heads"], nkv=kw["num_key_value_heads"],
                 hd=kw["head_dim"], f=kw["intermediate_size"], window=kw["sliding_window"])
        return llama_like(c, b, s, idx, sliding=True, qk_norm=False, gemma=False, first_of_rope=idx == 0)
    if model.startswith("gemma3_text"):
        c = dict(h=kw["hidden_size"], nh=kw["num_attention_heads"], nkv=kw["num_key_value_heads"],
                 hd=kw["head_dim"], f=kw["intermediate_size"], window=kw["sliding_window"])
        kinds = kw["layer_types"]
        sliding = kinds[idx] == "sliding_attention"
        first = kinds.index(kinds[idx]) == idx  # local and global layers have separate rotary tables
        return llama_like(c, b, s, idx, sliding=sliding, qk_norm=True, gemma=True, first_of_rope=first)
    if model.startswith("qwen3_moe") or model.startswith("mixtral"):
        c = dict(h=kw["hidden_size"], nh=kw["num_attention_heads"], nkv=kw["num_key_value_heads"],
                 hd=kw["head_dim"], window=None,
                 E=kw.get("num_experts", kw.get("num_local_experts")), k=kw["num_experts_per_tok"])
        fe = kw.get("moe_intermediate_size", kw.get("intermediate_size"))
        out = llama_like(c, b, s, idx, sliding=False, qk_norm=model.startswith("qwen3"), gemma=False,
                         first_of_rope=idx == 0, moe_fe=fe)
        if model.endswith("eager_experts"):
            out += moe_eager_experts_extra(c, b * s, fe)
        return out
    return None


def check(paths):
    """One Markdown row per FP32 record: the layers' saved bytes by the rules vs measured (sum over layers) and
    the worst single layer."""
    print("| record | layers | rules (B) | measured (B) | error | worst layer |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    worst_by_model = collections.defaultdict(float)
    for p in paths:
        for r in json.load(open(p)):
            if r["dtype_mode"] != "fp32":
                continue
            kw = r["framework"]["settings"]["config_kwargs"]
            tot_p = tot_m = 0
            worst = 0.0
            n = 0
            for layer, measured in r["saved_by_module"]["by_layer"].items():
                if layer == "outside_layers":
                    continue
                pred = predict(r["config"]["model"], kw, r["batch"], r["seq"], layer,
                               r["framework"]["settings"].get("decoder_tokens"))
                if pred is None:
                    continue
                n += 1
                tot_p += pred
                tot_m += measured
                worst = max(worst, abs(pred - measured) / measured)
            if not n:
                continue
            worst_by_model[r["config"]["model"]] = max(worst_by_model[r["config"]["model"]], worst)
            print(f"| {r['name']} | {n} | {tot_p:,} | {tot_m:,} | {100 * (tot_p - tot_m) / tot_m:+.3f} % |"
                  f" {100 * worst:.3f} % |")
    print()
    for k, v in worst_by_model.items():
        print(f"- {k}: worst layer |error| {100 * v:.3f} %")


def cache_table(paths):
    """Per model and point: what the cache holds after prefill and after one decoded token, per layer kind."""
    print("| record | cache layer (count) | tensors after prefill | after decode | bytes/layer prefill -> decode |")
    print("| --- | --- | --- | --- | ---: |")
    for p in paths:
        for r in json.load(open(p)):
            if r["dtype_mode"] != "fp32" or "cache_layout" not in r:
                continue
            pre, dec = r["cache_layout"].get("prefill", []), r["cache_layout"].get("decode", [])
            kinds = collections.OrderedDict()
            for a, b_ in zip(pre, dec):
                key = (a["cache"], a["cls"], a.get("sliding_window"))
                shp = lambda row: ", ".join(f"{n} {v['shape']}" for n, v in row["tensors"].items())
                kinds.setdefault(key, [0, shp(a), shp(b_), a["bytes"], b_["bytes"]])[0] += 1
            for (cache, cls, sw), (cnt, sa, sb, ba, bb) in kinds.items():
                w = f", window {sw}" if sw else ""
                print(f"| {r['name']} | {cache} {cls}{w} (x{cnt}) | {sa} | {sb} | {ba:,} -> {bb:,} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", nargs="+")
    ap.add_argument("--cache", nargs="+")
    a = ap.parse_args()
    if a.check:
        check(a.check)
    if a.cache:
        cache_table(a.cache)
