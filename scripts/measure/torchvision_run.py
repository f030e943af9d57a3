#!/usr/bin/env python3
"""torchvision ResNet-18 / ResNet-50 and ViT-B/16 (random init) on CPU: one training step and one inference pass, measured.

    python torchvision_run.py --out ../../tests/data/measured/torchvision-cpu-steps.json [--only NAME_SUBSTRING]
    python torchvision_run.py --list

Training: `model.train()`, FP32, cross-entropy on random labels over 1,000 classes, SGD (momentum 0.9,
weight decay 1e-4: the torchvision reference recipe) or AdamW (defaults); step1 then step2 (steady state), each
split into forward / backward / optimizer / zero_grad exactly as `harness.train_step`. Inference: `model.eval()`,
one forward pass under `torch.no_grad()` or `torch.inference_mode()`, the logits kept to the end of the region.

Every region runs under the StorageTracker (exact live storage bytes) and torch.profiler(profile_memory=True)
(the allocator cross-check), as in harness.py. Record schema: the one of pytorch-cpu-steps.json ("train") plus
"inference" for the inference records.

Environment as measured: the hf venv (torch 2.15.0+cu132) with torchvision 0.29.2 installed `--no-deps` into
/work/venvs-measure/cnn/site (no torchvision wheel for torch 2.15 on PyPI; only torchvision's pure-Python model
definitions are used, none of its C++ operators):
    PYTHONPATH=/work/venvs-measure/cnn/site nice -n 10 /work/venvs-measure/hf/bin/python torchvision_run.py --out ...
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import env_versions, measure_region, optimizer_state_bytes, run_training, selected  # noqa: E402
from tracker import StorageTracker  # noqa: E402

SEED = 0
PACKAGES = ("torchvision", "pillow", "numpy")

TRAIN = [
    # (model, batch, resolution, optimizer)
    ("resnet50", 2, 224, "sgd"),
    ("resnet50", 4, 224, "sgd"),
    ("resnet50", 8, 224, "sgd"),
    ("resnet50", 4, 224, "adamw"),
    ("resnet50", 8, 224, "adamw"),
    ("resnet50", 4, 128, "sgd"),
    ("resnet18", 4, 224, "sgd"),
    ("resnet18", 8, 224, "adamw"),
    ("vit_b_16", 2, 224, "sgd"),
]
INFER = [
    # (model, batch, resolution, mode)
    ("resnet50", 2, 224, "no_grad"),
    ("resnet50", 8, 224, "no_grad"),
    ("resnet50", 8, 224, "inference_mode"),
    ("resnet50", 4, 128, "no_grad"),
    ("resnet18", 8, 224, "no_grad"),
    ("resnet18", 8, 224, "inference_mode"),
    ("vit_b_16", 2, 224, "no_grad"),
]


def train_name(c):
    return f"{c[0]}_b{c[1]}_r{c[2]}_fp32_{c[3]}_train"


def infer_name(c):
    return f"{c[0]}_b{c[1]}_r{c[2]}_fp32_{c[3]}_infer"


def build(arch):
    import torchvision.models as tvm
    torch.manual_seed(SEED)
    return getattr(tvm, arch)()


def common(arch, model, batch, res):
    return dict(model=arch, batch=batch, resolution=res, dtype_mode="fp32",
                n_params=sum(p.numel() for p in model.parameters()),
                param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
                buffer_bytes=sum(b.numel() * b.element_size() for b in model.buffers()),
                framework=dict(name="torchvision", version=env_versions(PACKAGES).get("torchvision")),
                env=env_versions(PACKAGES), machine=platform.machine())


def run_train(case):
    arch, batch, res, opt = case
    model = build(arch).train()
    if opt == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(batch, 3, res, res, generator=g)
    y = torch.randint(0, 1000, (batch,), generator=g)
    loss_fn = lambda: torch.nn.functional.cross_entropy(model(x), y)  # noqa: E731
    out, _tr, check, timings = run_training(model, optimizer, [x, y], loss_fn)
    rec = common(arch, model, batch, res)
    rec.update(name=train_name(case), optimizer=opt, optimizer_foreach=optimizer.defaults.get("foreach"),
               optimizer_state_bytes=optimizer_state_bytes(optimizer), input_bytes=x.nbytes + y.nbytes,
               train=out, allocator_check=check, timings_s=timings)
    return rec


def run_infer(case):
    arch, batch, res, mode = case
    model = build(arch).eval()
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(batch, 3, res, res, generator=g)
    ctx = torch.no_grad if mode == "no_grad" else torch.inference_mode
    tr = StorageTracker()
    check, timings, out = {}, {}, {}
    with tr, ctx():
        def body():
            tr.label([x], "inputs")
            tr.classify_model(model)
            tr.mark("start")
            tr.set_phase("forward")
            logits = model(x)
            tr.label([logits], "logits")
            tr.mark("end_forward")
            del logits
        out["forward"] = measure_region(tr, "forward", body, check, timings)
    rec = common(arch, model, batch, res)
    rec.update(name=infer_name(case), grad_mode=mode, input_bytes=x.nbytes, inference=out,
               allocator_check=check, timings_s=timings)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--only")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(2)
    jobs = [(train_name(c), run_train, c) for c in selected(TRAIN, train_name, a.only)]
    jobs += [(infer_name(c), run_infer, c) for c in selected(INFER, infer_name, a.only)]
    if a.list:
        print("\n".join(j[0] for j in jobs))
        return
    recs, failed = [], []
    for label, job, case in jobs:
        print("==", label, flush=True)
        try:
            r = job(case)
            recs.append(r)
            reg = r["train"]["step2"] if "train" in r else r["inference"]["forward"]
            print(f"   peak {reg['peak_total']:,} phases {reg['phase_peaks']}", flush=True)
        except Exception as e:  # keep going; the failure is reported
            traceback.print_exc()
            failed.append(dict(name=label, error=f"{type(e).__name__}: {e}"))
        gc.collect()
        with open(a.out, "w") as f:
            json.dump(recs, f, indent=1)
    if failed:
        with open(a.out + ".failed.json", "w") as f:
            json.dump(failed, f, indent=1)
        print("FAILED:", json.dumps(failed, indent=1))


if __name__ == "__main__":
    main()
