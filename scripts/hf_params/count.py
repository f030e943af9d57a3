#!/usr/bin/env python3
"""Exact parameter counts for the Hugging Face config.json fixtures in tests/data/hf/.

For every fixture listed in scripts/hf_params/sources.json this script builds the Transformers
class named by the config's `architectures` on the meta device (no weights, no memory) and writes
tests/data/hf/params.json with:

  total_params   sum(p.numel() for p in model.parameters())   (tied weights counted once)
  parts          the same parameters split by role (embeddings, lm_head, vision, encoder,
                 routed_experts, shared_experts, router, mtp ...), see `role()` below
  active_params  for MoE models: total - routed experts + top_k/E of the routed experts of
                 every MoE layer (i.e. everything dense + shared experts + top-k routed experts)
  kv_per_token_per_layer   cache elements per token and layer kind, from the resolved config

Install (PyPI only; the PyPI torch wheel for Linux x86_64 is a CUDA build and needs its nvidia-*
wheels to import, even for the meta device):

    python3 -m venv /work/venv-hf
    /work/venv-hf/bin/pip install torch==2.15.0 transformers==5.25.0

Run (from the repository root):

    nice -n 10 /work/venv-hf/bin/python scripts/hf_params/count.py            # all fixtures
    nice -n 10 /work/venv-hf/bin/python scripts/hf_params/count.py gpt2.json  # some of them

It rewrites tests/data/hf/params.json (records for files not named on the command line are kept).
Nothing is downloaded: configs are read from tests/data/hf/, classes come from the installed
transformers package.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "hf"
SOURCES = Path(__file__).resolve().parent / "sources.json"
OUT = DATA / "params.json"

# model_type values that this transformers release does not register, and the type whose
# configuration and modelling classes the published checkpoint actually uses.
MODEL_TYPE_ALIASES = {
    # moonshotai/Kimi-K2-Instruct: `"model_type": "kimi_k2"` (custom code in the Hub repo),
    # `"architectures": ["DeepseekV3ForCausalLM"]`; the model is DeepSeek-V3's architecture.
    "kimi_k2": "deepseek_v3",
}

VISION = re.compile(
    r"(^|\.)(vision_tower|visual|vision_model|multi_modal_projector|vision_embed|image_newline)(\.|$)"
)


def role(name: str) -> str:
    """The part a parameter belongs to (first match wins)."""
    if VISION.search(name):
        return "vision"
    if ".experts." in name:
        return "routed_experts"
    if "shared_expert" in name:  # shared_expert(s).*, shared_expert_gate
        return "shared_experts"
    if re.search(r"\.(mlp|block_sparse_moe|feed_forward)\.(gate|router)\.", name) or re.search(
        r"\.router\.", name
    ):
        return "router"
    if re.search(r"(^|\.)lm_head\.", name) or name.startswith("proj_out") or name.endswith("cls.predictions.decoder.weight"):
        return "lm_head"
    if re.search(r"(embed_tokens|embed_positions|wte|wpe|word_embeddings|position_embeddings|"
                 r"token_type_embeddings|^shared|\.embeddings\.|^backbone\.embeddings)", name):
        return "embeddings"
    return "other"


def text_cfg(cfg):
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


def build(fixture: dict):
    d = dict(fixture)
    quant = d.pop("quantization_config", None)
    mt = d.pop("model_type")
    mt = MODEL_TYPE_ALIASES.get(mt, mt)
    d.pop("auto_map", None)  # custom-code pointers: we count the Transformers class
    cfg = AutoConfig.for_model(mt, **d)
    arch = fixture["architectures"][0]
    cls = getattr(transformers, arch)
    with torch.device("meta"):
        model = cls(cfg)
    return cfg, cls, model, quant


def moe_shape(cfg):
    """(experts per MoE layer E, top-k) from the resolved text config, or None."""
    t = text_cfg(cfg)
    e = None
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        v = getattr(t, key, None)
        if isinstance(v, int) and v > 1:
            e = v
            break
    k = getattr(t, "num_experts_per_tok", None)
    if e is None or not k:
        return None
    return e, k


def count(cfg, model):
    total = sum(p.numel() for p in model.parameters())
    parts: dict[str, int] = {}
    routed_by_layer: dict[str, int] = {}
    enc = dec = 0
    for n, p in model.named_parameters():  # remove_duplicate=True: tied weights once
        r = role(n)
        parts[r] = parts.get(r, 0) + p.numel()
        if r == "routed_experts":
            layer = n.split(".experts.")[0]
            routed_by_layer[layer] = routed_by_layer.get(layer, 0) + p.numel()
        if re.search(r"(^|\.)encoder\.", n):
            enc += p.numel()
        if re.search(r"(^|\.)decoder\.", n):
            dec += p.numel()
    assert sum(parts.values()) == total, (sum(parts.values()), total)
    parts = dict(sorted(parts.items()))
    if getattr(cfg, "is_encoder_decoder", False):
        parts["encoder_total"] = enc
        parts["decoder_total"] = dec
    result = {"total_params": total, "parts": parts}
    ms = moe_shape(cfg)
    if routed_by_layer and ms:
        e, k = ms
        one_expert = {}
        active_routed = 0
        for layer, numel in routed_by_layer.items():
            assert numel % e == 0, (layer, numel, e)
            one_expert[layer] = numel // e
            active_routed += numel // e * k
        sizes = sorted(set(one_expert.values()))
        result["moe"] = {
            "experts_per_layer": e,
            "top_k": k,
            "moe_layers": len(routed_by_layer),
            "one_expert_params": sizes[0] if len(sizes) == 1 else sizes,
            "routed_total": parts["routed_experts"],
            "routed_active": active_routed,
        }
        result["active_params"] = total - parts["routed_experts"] + active_routed
        result["active_formula"] = (
            "total - routed_experts + sum over MoE layers of (routed numel of the layer / E) * top_k"
            " = everything dense (embeddings, lm_head, attention, norms, dense MLP layers, router,"
            " vision tower if any) + shared experts + top_k routed experts per MoE layer"
        )
    return result


def layer_numel(model, index: int) -> int:
    layers = None
    for name, mod in model.named_modules():
        if name.endswith("layers") and isinstance(mod, torch.nn.ModuleList):
            layers = mod
            break
    return sum(p.numel() for p in layers[index].parameters())


def mtp(cfg, model, fixture: dict):
    """DeepSeek-V3 / GLM-4.5 multi-token-prediction layers: in the checkpoint, not built here.

    Only what the file itself declares counts: DeepseekV3Config defaults num_nextn_predict_layers to 1,
    which would invent an MTP layer for a file that omits the field (the abridged Kimi-K2 copy).
    """
    t = text_cfg(cfg)
    n = fixture.get("num_nextn_predict_layers", (fixture.get("text_config") or {}).get("num_nextn_predict_layers", 0)) or 0
    if not n:
        return None
    h = t.hidden_size
    layer = layer_numel(model, t.num_hidden_layers - 1)  # same structure as the last (MoE) layer
    extra = 2 * h + 2 * h * h + h  # enorm + hnorm, eh_proj (2h -> h, no bias), shared_head.norm
    return {
        "num_nextn_predict_layers": n,
        "params": n * (layer + extra),
        "formula": "num_nextn_predict_layers * (numel of decoder layer num_hidden_layers-1 as built"
        " + enorm h + hnorm h + eh_proj 2h*h + shared_head.norm h); embed_tokens and shared_head.head"
        " are shared with the main model and not counted again",
        "decoder_layer_params": layer,
    }


def kv(cfg) -> dict:
    """Cache elements (not bytes) per token and per layer kind, from the resolved config."""
    t = text_cfg(cfg)
    mt = t.model_type
    out: dict = {}
    if mt in ("deepseek_v2", "deepseek_v3", "kimi_k2"):
        out["mla_latent"] = {
            "layers": t.num_hidden_layers,
            "per_token": t.kv_lora_rank + t.qk_rope_head_dim,
            "formula": "kv_lora_rank + qk_rope_head_dim (compressed cache, as DeepSeek/vLLM/SGLang store it)",
        }
        # What Transformers' own DynamicCache holds: DeepseekV2/V3Attention call cache.update() on the
        # compressed latent (kv_a_layernorm(c_kv), viewed [b, 1, s, kv_lora_rank]) and the roped shared key
        # ([b, 1, s, qk_rope_head_dim]) before expand_kv() (transformers 5.24.0 measured,
        # tests/data/measured/blocks-mla-cpu-steps.json; 5.25.0 same code).
        out["mla_hf_dynamic_cache"] = {
            "layers": t.num_hidden_layers,
            "per_token": t.kv_lora_rank + t.qk_rope_head_dim,
            "formula": "kv_lora_rank + qk_rope_head_dim (Transformers >= 5.24 caches the latent too, as 'keys'"
            " [b,1,s,kv_lora_rank] and 'values' [b,1,s,qk_rope_head_dim])",
        }
        out["mla_expanded_kv_not_cached"] = {
            "layers": t.num_hidden_layers,
            "per_token": t.num_attention_heads * (t.qk_nope_head_dim + t.qk_rope_head_dim + t.v_head_dim),
            "formula": "num_attention_heads * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim): the"
            " decompressed K and V that expand_kv() builds per forward (a transient, and what an engine that"
            " caches expanded K/V would hold); no cache in Transformers 5.24/5.25 stores it",
        }
        return out
    if mt in ("t5",):
        heads, dkv = t.num_heads, t.d_kv
        out["decoder_self_attention"] = {"layers": t.num_decoder_layers, "per_token": 2 * heads * dkv,
                                         "formula": "2 * num_heads * d_kv"}
        out["decoder_cross_attention_per_encoder_token"] = {"layers": t.num_decoder_layers,
                                                            "per_token": 2 * heads * dkv}
        return out
    if mt == "whisper":
        hd = t.d_model // t.decoder_attention_heads
        out["decoder_self_attention"] = {"layers": t.decoder_layers, "per_token": 2 * t.d_model,
                                         "formula": "2 * decoder_attention_heads * head_dim (= 2 * d_model)"}
        out["decoder_cross_attention_per_encoder_frame"] = {
            "layers": t.decoder_layers, "per_token": 2 * t.decoder_attention_heads * hd,
            "encoder_frames": t.max_source_positions}
        return out
    if mt in ("bert", "roberta"):
        return {"note": "encoder-only: no KV cache"}
    if mt == "mamba":
        return {"mamba": {
            "layers": t.num_hidden_layers, "per_token": 0,
            "conv_state_per_sequence": t.intermediate_size * t.conv_kernel,
            "ssm_state_per_sequence": t.intermediate_size * t.state_size,
            "formula": "conv: intermediate_size * conv_kernel; ssm: intermediate_size * state_size"}}
    if mt == "mamba2":
        # Mamba2Mixer: intermediate_size = int(expand * hidden_size) (Mamba2Config has no such field)
        inner = int(t.expand * t.hidden_size)
        conv_dim = inner + 2 * t.n_groups * t.state_size
        return {"mamba2": {
            "layers": t.num_hidden_layers, "per_token": 0,
            "conv_state_per_sequence": conv_dim * t.conv_kernel,
            "ssm_state_per_sequence": t.num_heads * t.head_dim * t.state_size,
            "formula": "conv: (expand*hidden_size + 2*n_groups*state_size) * conv_kernel;"
            " ssm: num_heads * head_dim * state_size"}}

    # decoder-only attention models (possibly hybrid)
    heads = t.num_attention_heads
    kvh = getattr(t, "num_key_value_heads", None) or heads
    hd = getattr(t, "head_dim", None) or t.hidden_size // heads
    gqa = 2 * kvh * hd
    n = t.num_hidden_layers
    layer_types = getattr(t, "layer_types", None)
    kinds: dict[str, int] = {}
    if mt == "jamba":
        kinds = {"attention": 0, "mamba": 0}
        for i in range(n):
            kinds["attention" if i % t.attn_layer_period == t.attn_layer_offset else "mamba"] += 1
    elif mt == "nemotron_h":
        pat = t.hybrid_override_pattern
        kinds = {"attention": pat.count("*"), "mamba": pat.count("M"), "mlp": pat.count("-")}
    elif layer_types:
        for lt in layer_types:
            kinds[lt] = kinds.get(lt, 0) + 1
    elif getattr(t, "sliding_window", None) and getattr(t, "use_sliding_window", True) is not False:
        kinds = {"sliding_attention": n}  # one window on every layer (Mistral-7B-v0.1, Phi-3)
    else:
        kinds = {"full_attention": n}
    for kind, count in kinds.items():
        if kind in ("full_attention", "attention"):
            out[kind] = {"layers": count, "per_token": gqa, "formula": "2 * num_key_value_heads * head_dim"}
        elif kind in ("sliding_attention", "chunked_attention"):
            window = getattr(t, "sliding_window", None) if kind == "sliding_attention" else getattr(
                t, "attention_chunk_size", None)
            out[kind] = {"layers": count, "per_token": gqa, "window_tokens": window,
                         "formula": "2 * num_key_value_heads * head_dim, for at most window_tokens tokens"}
        elif kind == "linear_attention":  # qwen3_next gated DeltaNet
            kd = t.linear_num_key_heads * t.linear_key_head_dim
            vd = t.linear_num_value_heads * t.linear_value_head_dim
            out[kind] = {"layers": count, "per_token": 0,
                         "conv_state_per_sequence": (2 * kd + vd) * t.linear_conv_kernel_dim,
                         "recurrent_state_per_sequence": t.linear_num_value_heads * t.linear_key_head_dim
                         * t.linear_value_head_dim,
                         "formula": "conv: (2*key_dim + value_dim) * linear_conv_kernel_dim;"
                         " recurrent: linear_num_value_heads * linear_key_head_dim * linear_value_head_dim"}
        elif kind == "mamba":
            if mt == "jamba":
                inner = t.mamba_expand * t.hidden_size
                out[kind] = {"layers": count, "per_token": 0,
                             "conv_state_per_sequence": inner * t.mamba_d_conv,
                             "ssm_state_per_sequence": inner * t.mamba_d_state,
                             "formula": "conv: mamba_expand*hidden * mamba_d_conv; ssm: mamba_expand*hidden * mamba_d_state"}
            else:  # nemotron_h (Mamba-2 mixer)
                inner = t.mamba_num_heads * t.mamba_head_dim
                conv_dim = inner + 2 * t.n_groups * t.ssm_state_size
                out[kind] = {"layers": count, "per_token": 0,
                             "conv_state_per_sequence": conv_dim * t.conv_kernel,
                             "ssm_state_per_sequence": t.mamba_num_heads * t.mamba_head_dim * t.ssm_state_size,
                             "formula": "conv: (mamba_num_heads*mamba_head_dim + 2*n_groups*ssm_state_size) * conv_kernel;"
                             " ssm: mamba_num_heads * mamba_head_dim * ssm_state_size"}
        else:
            out[kind] = {"layers": count, "per_token": 0}
    return out


def main(argv):
    sources = json.loads(SOURCES.read_text())
    files = argv or sorted(sources)
    records = {}
    if OUT.exists() and argv:
        records = {r["file"]: r for r in json.loads(OUT.read_text())["records"]}
    for f in files:
        meta = sources[f]
        fixture = json.loads((DATA / f).read_text())
        cfg, cls, model, quant = build(fixture)
        rec = {
            "file": f,
            "model_type": fixture["model_type"],
            "source": meta["source"],
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "class": cls.__name__,
        }
        rec.update(count(cfg, model))
        m = mtp(cfg, model, fixture)
        if m:
            rec["mtp_not_built"] = m
        rec["kv_per_token_per_layer"] = kv(cfg)
        notes = list(meta.get("notes", []))
        if quant:
            notes.append(
                f"quantization_config ({quant.get('quant_method')}) removed before building: counts are of the"
                " unquantized modules as Transformers defines them (one element per weight).")
        rec["notes"] = notes
        if "stored" in meta:
            rec["stored"] = meta["stored"]
        records[f] = rec
        print(f, cls.__name__, rec["total_params"], rec.get("active_params", ""), flush=True)
        del model
    out = {
        "generated_by": "scripts/hf_params/count.py",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "records": [records[k] for k in sorted(records)],
    }
    OUT.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
