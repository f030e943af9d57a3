"""What a Transformers cache holds, and what each module saves for backward (used by hf_blocks.py)."""
from __future__ import annotations

import collections
import re

import torch

DT = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16", torch.int64: "int64",
      torch.bool: "bool", torch.int32: "int32"}


def _dt(t):
    return DT.get(t.dtype, str(t.dtype).replace("torch.", ""))


def _layer_tensors(layer):
    """(name, tensor) of one cache layer: K/V of attention layers, conv/recurrent states of linear-attention and
    Mamba layers (Transformers 5.x cache_utils: DynamicLayer, DynamicSlidingWindowLayer, LinearAttentionLayer)."""
    out = []
    for n in ("keys", "values"):
        t = getattr(layer, n, None)
        if isinstance(t, torch.Tensor):
            out.append((n, t))
    for n in ("conv_states", "recurrent_states"):
        d = getattr(layer, n, None)
        if isinstance(d, dict):
            for i, t in d.items():
                if isinstance(t, torch.Tensor):
                    out.append((f"{n}[{i}]", t))
        elif isinstance(d, torch.Tensor):
            out.append((n, d))
    return out


def _sub_caches(cache):
    """[(prefix, Cache)]: an EncoderDecoderCache is its self-attention and cross-attention caches."""
    if cache is None:
        return []
    if hasattr(cache, "self_attention_cache") and hasattr(cache, "cross_attention_cache"):
        return [("self", cache.self_attention_cache), ("cross", cache.cross_attention_cache)]
    return [("", cache)]


def cache_tensors(cache):
    return [t for _, c in _sub_caches(cache) for layer in getattr(c, "layers", []) or []
            for _, t in _layer_tensors(layer)]


def cache_layout(cache):
    """Per layer: class, sliding window if any, seq length seen, and each tensor's shape/dtype/storage bytes."""
    rows = []
    for prefix, c in _sub_caches(cache):
        for i, layer in enumerate(getattr(c, "layers", []) or []):
            row = dict(cache=prefix or "decoder", layer=i, cls=type(layer).__name__)
            sw = getattr(layer, "sliding_window", None)
            if isinstance(sw, int):
                row["sliding_window"] = sw
            cl = getattr(layer, "cumulative_length", None)
            if isinstance(cl, int):
                row["cumulative_length"] = cl
            row["tensors"] = {n: dict(shape=list(t.shape), dtype=_dt(t), bytes=t.untyped_storage().nbytes())
                              for n, t in _layer_tensors(layer)}
            row["bytes"] = sum(v["bytes"] for v in row["tensors"].values())
            rows.append(row)
    return rows


def _where(path: str) -> str:
    parts = [p for p in path.split(".") if p not in ("model", "base_model")]
    return ".".join(parts) or "(top)"


def layer_of(module_path: str) -> str:
    """'encoder.block.3.layer.0.SelfAttention' -> 'encoder.block.3'; 'layers.1.mlp' -> 'layers.1'; else
    'outside_layers' (embeddings, final norm, LM head, loss)."""
    m = re.match(r"^(.*?\b(?:layers|block))\.(\d+)", module_path)
    return f"{m.group(1)}.{m.group(2)}" if m else "outside_layers"


def saved_by_module(model, loss_fn):
    """Every tensor autograd packs during one forward of loss_fn(), deduplicated by storage, attributed to the
    innermost module running when it was packed; parameters are skipped (they are stored anyway).
    Returns rows (module path with layer index, module class, shape, dtype, bytes) and totals per layer and per
    module class."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    stack, handles = [], []
    for name, m in model.named_modules():
        def pre(mod, a, n=name):
            stack.append((n, type(mod).__name__))

        def post(mod, a, o):
            stack.pop()
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    seen, rows = set(), collections.Counter()

    def pack(t):
        st = t.untyped_storage()
        key = st.data_ptr()
        if key not in params and key not in seen and st.nbytes() > 0:
            seen.add(key)
            n, cls = stack[-1] if stack else ("(loss)", "")
            rows[(_where(n), cls, tuple(t.shape), _dt(t))] += st.nbytes()
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = loss_fn()
        del loss
    finally:
        for h in handles:
            h.remove()
    out_rows, by_layer, by_cls = [], collections.Counter(), collections.Counter()
    for (w, cls, shp, dt), n in sorted(rows.items(), key=lambda kv: kv[0][0]):
        out_rows.append(dict(module=w, cls=cls, shape=list(shp), dtype=dt, bytes=n))
        by_layer[layer_of(w)] += n
        by_cls[cls or "(loss)"] += n
    return dict(total_bytes=sum(rows.values()), by_layer=dict(by_layer), by_module_class=dict(by_cls),
                rows=out_rows)
