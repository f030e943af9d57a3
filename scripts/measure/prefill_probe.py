#!/usr/bin/env python3
"""What is live at the peak of one Transformers prefill (no_grad) of a hf_blocks case: every storage created in
the prefill, with the op that created it, its shape, dtype and bytes, and the module running when it was made.
Used to derive the per-kind prefill rules of src/estimator/memory/blocks/prefill.rs (docs/blocks-measured.md).

    python prefill_probe.py NAME_SUBSTRING [--b B --s S] [--decode]

Not a record writer: prints a table. Same build and inputs as hf_blocks.py (seed 0).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from hf_blocks import build, make_inputs, SEED  # noqa: E402
from hf_blocks_cases import expand, case_name  # noqa: E402
from hf_blocks_inspect import cache_tensors  # noqa: E402
from tracker import StorageTracker  # noqa: E402


class Probe(StorageTracker):
    def __init__(self):
        super().__init__()
        self.info = {}
        self.module = ["-"]

    def track_tensor(self, t, tag=None):
        rid = super().track_tensor(t, tag)
        if rid is not None and rid not in self.info and isinstance(t, torch.Tensor):
            self.info[rid] = (self.cur_op, tuple(t.shape), str(t.dtype).replace("torch.", ""), self.module[-1])
        return rid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("--decode", action="store_true")
    ap.add_argument("--train", action="store_true", help="step 2 of training instead (AdamW), peak of backward")
    a = ap.parse_args()
    torch.set_num_threads(2)
    run = next(r for r in expand() if a.name in case_name(*r))
    group, c, b, s, mode = run
    print(case_name(*run))
    model, cfg, kw = build(c, s)
    g = torch.Generator().manual_seed(SEED + 1)
    train_kw, pre_kw, dec_kw, train_in, pre_in, dec_in = make_inputs(c, cfg, b, s, g)
    tr = Probe()
    if a.train:
        return train(tr, model, train_kw, train_in, mode == "amp_bf16")
    model.eval()
    for n, mod in model.named_modules():
        mod.register_forward_pre_hook(lambda m, i, n=n: tr.module.append(n))
        mod.register_forward_hook(lambda m, i, o: (tr.module.pop(), None)[1])
    amp = mode == "amp_bf16"
    with tr, torch.no_grad():
        tr.begin_region("prefill")
        tr.label(pre_in, "inputs")
        tr.classify_model(model)
        tr.mark("start")
        tr.set_phase("prefill")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            o = model(**pre_kw, use_cache=True)
        cache = o.cache
        # An encoder-decoder's decode reads the encoder's output again (as hf_blocks.py passes it).
        enc = getattr(o, "encoder_last_hidden_state", None)
        extra = dict(encoder_outputs=(enc,)) if enc is not None else {}
        if enc is not None:
            tr.label([enc], "encoder_states")
        tr.label(cache_tensors(cache), "kv_cache")
        tr.label([o.logits], "logits")
        del o
        if a.decode:
            tr.end_region()
            tr.begin_region("decode")
            tr.label(dec_in, "inputs")
            if enc is not None:
                tr.label([enc], "encoder_states")
            tr.label(cache_tensors(cache), "kv_cache")
            tr.classify_model(model)
            tr.mark("start")
            tr.set_phase("decode")
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
                o = model(**dec_kw, **extra, cache=cache, use_cache=True)
            tr.label(cache_tensors(o.cache), "kv_cache")
        r = tr.region
        if r["pending"]:
            tr._snapshot()
        snap = r["peak_snapshot"]
        res = tr.end_region()
    print("peak", res["peak_total"], "op", res["peak_op"], res["peak_op_index"], "/", res["n_ops"])
    print(res["peak_breakdown"])
    rows = []
    for rid, (n, ph, tag) in snap.items():
        cat = tr.category_of(rid, ph, tag)
        if cat in ("params", "buffers") or n == 0:
            continue
        op, shape, dt, mod = tr.info.get(rid, ("?", (), "?", "?"))
        rows.append((cat, mod, op, shape, dt, n, rid))
    rows.sort(key=lambda x: x[-1])
    for cat, mod, op, shape, dt, n, rid in rows:
        print(f"{cat:22} {mod:40} {str(op):28} {str(shape):28} {dt:9} {n:>10}")
    print("total listed", sum(x[5] for x in rows))


def train(tr, model, train_kw, train_in, amp):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    grads_at = {}

    def loss_fn():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            return model(**train_kw).loss
    loss_fn().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    for n, mod in model.named_modules():
        mod.register_forward_pre_hook(lambda m, i, n=n: tr.module.append(n))
        mod.register_forward_hook(lambda m, i, o: (tr.module.pop(), None)[1])
        mod.register_full_backward_pre_hook(lambda m, go, n=n: (tr.module.append("bwd:" + n), None)[1])
    with tr:
        tr.begin_region("step2")
        tr.label(train_in, "inputs")
        tr.classify_model(model, opt)
        tr.mark("start")
        tr.set_phase("forward")
        loss = loss_fn()
        tr.set_phase("backward")
        loss.backward()
        del loss
        tr.classify_model(model, opt)
        r = tr.region
        if r["pending"]:
            tr._snapshot()
        snap = r["peak_snapshot"]
        res = tr.end_region()
    print("peak", res["peak_total"], res["peak_phase"], "op", res["peak_op"], res["peak_op_index"], "/", res["n_ops"])
    print(res["peak_breakdown"])
    rows = []
    for rid, (n, ph, tag) in snap.items():
        cat = tr.category_of(rid, ph, tag)
        if cat in ("params", "buffers", "optimizer_states") or n == 0:
            continue
        op, shape, dt, mod = tr.info.get(rid, ("?", (), "?", "?"))
        rows.append((cat, mod, op, shape, dt, n, rid))
    rows.sort(key=lambda x: x[-1])
    for cat, mod, op, shape, dt, n, rid in rows:
        if cat == "created_in_backward" or n > 100000:
            print(f"{cat:22} {mod:40} {str(op):28} {str(shape):28} {dt:9} {n:>10}")
    print("total listed", sum(x[5] for x in rows))


if __name__ == "__main__":
    main()
