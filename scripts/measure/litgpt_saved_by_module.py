#!/usr/bin/env python3
"""LitGPT counterpart of saved_by_module.py: saved tensors per module for full fp32, LoRA q,v fp32, full bf16."""
import collections, sys
import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from litgpt_run import build, BATCH, SEQ, SHAPE
from litgpt.utils import chunked_cross_entropy
for case in (dict(method="full", base="fp32"), dict(method="lora", base="fp32", targets="qv", r=8, lora_dropout=0.0),
             dict(method="full", base="bf16")):
    model = build(case)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    stack = []
    for name, m in model.named_modules():
        def pre(mod, a, n=name): stack.append(n)
        def post(mod, a, o): stack.pop()
        m.register_forward_pre_hook(pre); m.register_forward_hook(post)
    seen, rows = set(), collections.Counter()
    def pack(t):
        k = t.untyped_storage().data_ptr()
        if k not in params and k not in seen:
            seen.add(k)
            w = stack[-1] if stack else "(loss)"
            w = ".".join(p for p in w.split(".") if not p.isdigit() and p not in ("transformer", "h"))
            rows[(w, tuple(t.shape), str(t.dtype).replace("torch.", ""))] += t.untyped_storage().nbytes()
        return t
    ids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(ids, lm_head_chunk_size=128); logits[-1] = logits[-1][..., :-1, :]
        loss = chunked_cross_entropy(logits, ids[..., 1:])
    print("###", case); tot = 0
    for (w, s, d), n in sorted(rows.items()):
        tot += n; print(f"{n:>12,}  {w:<32} {list(s)} {d}")
    print(f"{tot:>12,}  total")
