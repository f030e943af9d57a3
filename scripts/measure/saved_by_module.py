#!/usr/bin/env python3
"""Which module saves what for backward: every tensor packed by autograd (saved_tensors_hooks) during one forward
of the tiny Llama, deduplicated by storage, attributed to the innermost module running when it was packed.
Tensors that are parameters are skipped (stored anyway). Prints bytes per (module kind, saved shape, dtype).

    python saved_by_module.py full|lora-qv|lora-all [fp32|bf16] [dropout]
"""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from hf_peft import BATCH, SEQ, SHAPE, build  # noqa: E402


def main():
    kind = sys.argv[1]
    base = sys.argv[2] if len(sys.argv) > 2 else "fp32"
    drop = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    case = dict(peft="none" if kind == "full" else "lora", quant="none", base=base, attn="sdpa",
                targets=kind.split("-")[-1], r=8, lora_dropout=drop)
    model = build(case)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    stack = []
    for name, m in model.named_modules():
        def pre(mod, a, n=name):
            stack.append(n)

        def post(mod, a, o):
            stack.pop()
        m.register_forward_pre_hook(pre)
        m.register_forward_hook(post)
    seen, rows = set(), collections.Counter()

    def pack(t):
        st = t.untyped_storage()
        key = st.data_ptr()
        if key not in params and key not in seen:
            seen.add(key)
            where = stack[-1] if stack else "(loss)"
            parts = where.split(".")
            where = ".".join(p for p in parts if not p.isdigit() and p not in ("base_model", "model", "layers"))
            rows[(where, tuple(t.shape), str(t.dtype).replace("torch.", ""))] += st.nbytes()
        return t

    ids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(input_ids=ids, labels=ids).loss
    total = 0
    for (w, shp, dt), n in sorted(rows.items(), key=lambda kv: kv[0]):
        total += n
        print(f"{n:>12,}  {w:<40} {list(shp)} {dt}")
    print(f"{total:>12,}  total saved (non-parameter storages; ids/labels included)")
    del loss


if __name__ == "__main__":
    main()
