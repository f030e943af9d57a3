#!/usr/bin/env python3
"""DiT (facebookresearch/DiT models.py, random init) on CPU: one training step and one inference pass, measured.

    python dit_run.py --models /path/to/DiT/models.py-directory --out ../../tests/data/measured/dit-cpu-steps.json

DiT-S/2 (the same DiTBlock code as DiT-XL/2 at depth 12, width 384, 6 heads) on the 32×32×4 latent of a 256² image,
batch 2, FP32. Training: `model.train()`, AdamW (lr 1e-4, weight decay 0: DiT's train.py), step 2 of two (steady
state), loss = MSE between the predicted noise (the first 4 output channels; learn_sigma doubles them) and random
noise — DiT's diffusion loss adds a variational-bound term on the sigma channels that this simplified loss leaves
out. Inference: `model.eval()`, one forward under `torch.no_grad()`. Same accountant and protocol as harness.py.

Environment as measured: the hf venv (torch 2.15.0) with timm 0.9.16 and torchvision 0.29.2 installed `--no-deps`
into /work/venvs-measure/cnn/site, and DiT's models.py at commit ed81ce2 (facebookresearch/DiT):
    PYTHONPATH=/work/venvs-measure/cnn/site nice -n 10 /work/venvs-measure/hf/bin/python dit_run.py \\
        --models /work/venvs-measure/cnn/dit --out ...
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import env_versions, measure_region, optimizer_state_bytes, run_training  # noqa: E402
from tracker import StorageTracker  # noqa: E402

SEED, BATCH, LATENT = 0, 2, 32
PACKAGES = ("timm", "torchvision", "numpy")


def build(models_dir):
    sys.path.insert(0, models_dir)
    from models import DiT_S_2
    torch.manual_seed(SEED)
    return DiT_S_2(input_size=LATENT)


def inputs():
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(BATCH, 4, LATENT, LATENT, generator=g)
    t = torch.randint(0, 1000, (BATCH,), generator=g)
    y = torch.randint(0, 1000, (BATCH,), generator=g)
    noise = torch.randn(BATCH, 4, LATENT, LATENT, generator=g)
    return x, t, y, noise


def common(model):
    return dict(model="DiT-S/2", batch=BATCH, latent=LATENT, resolution=LATENT * 8, dtype_mode="fp32",
                depth=12, hidden=384, heads=6, patch=2,
                n_params=sum(p.numel() for p in model.parameters()),
                n_params_trainable=sum(p.numel() for p in model.parameters() if p.requires_grad),
                param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
                env=env_versions(PACKAGES), machine=platform.machine(),
                framework=dict(name="DiT", version="facebookresearch/DiT@ed81ce2 models.py"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(2)
    recs = []
    model = build(a.models).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)
    x, t, y, noise = inputs()
    loss_fn = lambda: torch.nn.functional.mse_loss(model(x, t, y)[:, :4], noise)  # noqa: E731
    out, _tr, check, timings = run_training(model, opt, [x, t, y, noise], loss_fn)
    rec = common(model)
    rec.update(name="dit_s2_b2_latent32_fp32_adamw_train", optimizer="adamw",
               optimizer_state_bytes=optimizer_state_bytes(opt), train=out, allocator_check=check,
               timings_s=timings)
    recs.append(rec)
    print(rec["name"], out["step2"]["phase_peaks"], flush=True)

    model = build(a.models).eval()
    tr = StorageTracker()
    check, timings, res = {}, {}, {}
    with tr, torch.no_grad():
        def body():
            tr.label([x, t, y], "inputs")
            tr.classify_model(model)
            tr.mark("start")
            tr.set_phase("forward")
            o = model(x, t, y)
            tr.label([o], "logits")
            tr.mark("end_forward")
            del o
        res["forward"] = measure_region(tr, "forward", body, check, timings)
    rec = common(model)
    rec.update(name="dit_s2_b2_latent32_fp32_no_grad_infer", grad_mode="no_grad", inference=res,
               allocator_check=check, timings_s=timings)
    recs.append(rec)
    print(rec["name"], res["forward"]["phase_peaks"], flush=True)
    with open(a.out, "w") as f:
        json.dump(recs, f, indent=1)


if __name__ == "__main__":
    main()
