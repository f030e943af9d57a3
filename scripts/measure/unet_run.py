#!/usr/bin/env python3
"""A tiny Stable-Diffusion-1.5-shaped UNet (diffusers `UNet2DConditionModel`, random init) on CPU: one training
step and one inference pass, measured with the accountant (harness.py / tracker.py), plus what autograd saves per
module (`saved_by_module`).

    nice -n 10 /work/venvs-measure/diffusers/bin/python unet_run.py --out ../../tests/data/measured/unet-cpu-steps.json

The SD 1.5 `unet/config.json` structure (CrossAttnDownBlock2D × 3 + DownBlock2D, UNetMidBlock2DCrossAttn,
UpBlock2D + CrossAttnUpBlock2D × 3, layers_per_block 2, attention_head_dim 8 = 8 heads, GroupNorm 32, GEGLU
feed-forward, `use_linear_projection` false) at tiny widths: block_out_channels (32, 64, 128, 128),
cross_attention_dim 64, a 16×16×4 latent (a 128² image), 77 text tokens of width 64 (the CLIP text encoder's output,
given as an input), batch 2, FP32. Training: `model.train()`, AdamW (lr 1e-5, weight decay 1e-2: diffusers'
train_text_to_image.py defaults), loss = MSE between the predicted and the true noise, step 2 of two. Inference: one
`no_grad` forward (one denoising step). Environment: /work/venvs-measure/diffusers, a venv whose only packages
are diffusers (`--no-deps`) and requests/regex/Pillow/importlib_metadata, reading torch 2.15.0 from the hf venv
through a .pth file.
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
from hf_blocks_inspect import saved_by_module  # noqa: E402
from tracker import StorageTracker  # noqa: E402

SEED = 0
PACKAGES = ("diffusers", "numpy")
CONFIG = dict(
    sample_size=16, in_channels=4, out_channels=4, layers_per_block=2,
    block_out_channels=(32, 64, 128, 128),
    down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
    up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
    cross_attention_dim=64, attention_head_dim=8, norm_num_groups=32,
)
TEXT_TOKENS = 77
POINTS = [(2, 16), (1, 16), (2, 32)]


def build():
    from diffusers import UNet2DConditionModel
    torch.manual_seed(SEED)
    return UNet2DConditionModel(**CONFIG)


def inputs(b, side):
    g = torch.Generator().manual_seed(SEED + 1)
    x = torch.randn(b, 4, side, side, generator=g)
    t = torch.randint(0, 1000, (b,), generator=g)
    text = torch.randn(b, TEXT_TOKENS, CONFIG["cross_attention_dim"], generator=g)
    noise = torch.randn(b, 4, side, side, generator=g)
    return x, t, text, noise


def common(model, b, side):
    import diffusers
    return dict(model="unet2d-sd15-tiny", batch=b, latent=side, resolution=side * 8, dtype_mode="fp32",
                config={k: list(v) if isinstance(v, tuple) else v for k, v in CONFIG.items()},
                text_tokens=TEXT_TOKENS,
                n_params=sum(p.numel() for p in model.parameters()),
                param_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
                env=env_versions(PACKAGES), machine=platform.machine(),
                framework=dict(name="diffusers", version=f"diffusers {diffusers.__version__}",
                               settings=dict(cls="UNet2DConditionModel",
                                             attn_processor=type(model.attn_processors[
                                                 next(iter(model.attn_processors))]).__name__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(2)
    recs = []
    for b, side in POINTS:
        model = build().train()
        x, t, text, noise = inputs(b, side)

        def loss_fn():
            return torch.nn.functional.mse_loss(model(x, t, encoder_hidden_states=text).sample, noise)
        saved = saved_by_module(model, loss_fn)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=1e-2, foreach=True)
        out, _tr, check, timings = run_training(model, opt, [x, t, text, noise], loss_fn)
        rec = common(model, b, side)
        rec.update(name=f"unet_sd15tiny_b{b}_latent{side}_fp32_adamw_train", optimizer="adamw",
                   optimizer_foreach=True, optimizer_state_bytes=optimizer_state_bytes(opt), train=out,
                   saved_by_module=saved, allocator_check=check, timings_s=timings,
                   command=f"nice -n 10 /work/venvs-measure/diffusers/bin/python scripts/measure/unet_run.py")
        recs.append(rec)
        print(rec["name"], out["step2"]["phase_peaks"], saved["total_bytes"], flush=True)
        del opt, model

        model = build().eval()
        tr = StorageTracker()
        check, timings, res = {}, {}, {}
        with tr, torch.no_grad():
            def body():
                tr.label([x, t, text], "inputs")
                tr.classify_model(model)
                tr.mark("start")
                tr.set_phase("forward")
                o = model(x, t, encoder_hidden_states=text).sample
                tr.label([o], "logits")
                tr.mark("end_forward")
                del o
            res["forward"] = measure_region(tr, "forward", body, check, timings)
        rec = common(model, b, side)
        rec.update(name=f"unet_sd15tiny_b{b}_latent{side}_fp32_no_grad_infer", grad_mode="no_grad",
                   inference=res, allocator_check=check, timings_s=timings)
        recs.append(rec)
        print(rec["name"], res["forward"]["phase_peaks"], flush=True)
    with open(a.out, "w") as f:
        json.dump(recs, f, indent=1)


if __name__ == "__main__":
    main()
