#!/usr/bin/env python3
"""A tiny random-init Qwen2.5-VL (`Qwen2_5_VLForConditionalGeneration`, Transformers 5.24.0) on CPU with one image
per sequence: training steps and a prefill + one decoded token, measured with the step protocol of harness.py
(the same record schema as hf_blocks.py's, plus `image`).

    nice -n 10 /work/venvs-measure/hf/bin/python vl_run.py --out ../../tests/data/measured/blocks-vision-cpu-steps.json

Language model: hidden 256, 2 layers, 4 heads / 2 KV heads of 64, MLP 512, vocab 2048, M-RoPE sections
(8, 12, 12). Vision tower: 2 blocks of width 128, 4 heads, MLP 256 (gated SiLU), patch 14 over 2 frames, window
112 px, block 1 full attention, the 2 × 2 patch merger into 256. One image of side 112 (8 × 8 = 64 patches →
16 image tokens) or 224 (256 patches → 64 tokens) per sequence, placed after 4 text tokens between the
vision start/end tokens; the rest text. Labels = input ids (the image positions included, as a plain causal-LM
loss would). AdamW (foreach), FP32, SDPA, seed 0, 2 threads.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (env_versions, measure_and_write, optimizer_state_bytes, run_inference,  # noqa: E402
                     run_training, storage_bytes)
from hf_blocks_inspect import cache_layout, cache_tensors, saved_by_module  # noqa: E402

SEED = 0
PACKAGES = ("transformers", "accelerate", "numpy", "safetensors")
IMAGE_TOKEN, VIDEO_TOKEN, VSTART, VEND = 2000, 2001, 2002, 2003
KW = dict(
    text_config=dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                     intermediate_size=512, vocab_size=2048, max_position_embeddings=1024,
                     rope_scaling={"type": "mrope", "mrope_section": [8, 12, 12]}),
    vision_config=dict(depth=2, hidden_size=128, num_heads=4, intermediate_size=256, patch_size=14,
                       spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=256, window_size=112,
                       fullatt_block_indexes=[1]),
    image_token_id=IMAGE_TOKEN, video_token_id=VIDEO_TOKEN, vision_start_token_id=VSTART,
    vision_end_token_id=VEND)
# (batch, image side, sequence length)
POINTS = [(1, 112, 48), (2, 112, 48), (1, 224, 96), (2, 224, 128)]


# The AMP-bf16 point (torch.autocast on CPU, FP32 master weights): `--amp`.
AMP_POINTS = [(2, 224, 128)]


def name(b, side, s, mode="fp32"):
    return f"qwen2_5_vl-tiny_img{side}_b{b}_s{s}_{mode}_adamw"


def build():
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    cfg = Qwen2_5_VLConfig(**KW)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(SEED)
    return Qwen2_5_VLForConditionalGeneration(cfg).train(), cfg


def batch(b, side, s, g):
    grid = side // 14
    patches = grid * grid
    tokens = patches // 4
    ids = torch.randint(0, 1000, (b, s), generator=g)
    ids[:, 4] = VSTART
    ids[:, 5:5 + tokens] = IMAGE_TOKEN
    ids[:, 5 + tokens] = VEND
    pix = torch.randn(b * patches, 3 * 2 * 14 * 14, generator=g)
    thw = torch.tensor([[1, grid, grid]] * b)
    return ids, pix, thw


def measure(b, side, s, amp=False):
    import transformers
    mode = "amp_bf16" if amp else "fp32"
    t_all = time.time()
    model, cfg = build()
    g = torch.Generator().manual_seed(SEED + 1)
    ids, pix, thw = batch(b, side, s, g)
    pids, ppix, pthw = batch(b, side, s, g)
    dids = torch.randint(0, 1000, (b, 1), generator=g)

    def loss_fn():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            return model(input_ids=ids, pixel_values=pix, image_grid_thw=thw, labels=ids).loss

    saved = saved_by_module(model, loss_fn)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    train, _tr, check, timings = run_training(model, opt, [ids, pix, thw], loss_fn)
    opt_bytes = optimizer_state_bytes(opt)
    del opt
    gc.collect()
    model.eval()
    layouts = {}

    def prefill():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            o = model(input_ids=pids, pixel_values=ppix, image_grid_thw=pthw, use_cache=True)
        layouts["prefill"] = cache_layout(o.past_key_values if hasattr(o, "past_key_values") else o.cache)
        return o.logits, getattr(o, "past_key_values", None)
    prefill.inputs = [pids, ppix, pthw]

    def decode(cache):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            o = model(input_ids=dids, past_key_values=cache, use_cache=True)
        layouts["decode"] = cache_layout(o.past_key_values)
        return o.logits, o.past_key_values
    decode.inputs = [dids]
    inf, _itr, icheck, itimings = run_inference(model, prefill, decode, cache_tensors)
    check.update(icheck)
    timings.update(itimings)
    named = dict(model.named_parameters())
    return dict(
        name=name(b, side, s, mode), group="vision",
        config=dict(model="qwen2_5_vl-tiny", batch=b, seq=s, dtype_mode=mode, optimizer="adamw", foreach=True,
                    checkpointing=False, attn_impl="sdpa", dropout=False, inference=True),
        framework=dict(name="transformers", version=f"transformers {transformers.__version__}",
                       settings=dict(model_type="qwen2_5_vl", cls="Qwen2_5_VLForConditionalGeneration",
                                     config_kwargs=KW)),
        image=dict(side=side, patches=(side // 14) ** 2, tokens=(side // 14) ** 2 // 4, per_sequence=1),
        family="qwen2_5_vl", seq=s, batch=b, dtype_mode=mode, param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=False, n_params=sum(p.numel() for p in named.values()),
        param_bytes=storage_bytes(named.values()), optimizer_state_bytes=opt_bytes, train=train, inference=inf,
        cache_layout=layouts, saved_by_module=saved, timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(PACKAGES),
        machine=dict(machine=platform.machine(), logical_cpus=os.cpu_count()),
        command="nice -n 10 python scripts/measure/vl_run.py" + (" --amp" if amp else "")
        + " --out tests/data/measured/blocks-vision-cpu-steps.json")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--amp", action="store_true", help="the AMP-bf16 points only (written to --out; merge by hand)")
    a = ap.parse_args()
    torch.set_num_threads(2)
    if a.amp:
        measure_and_write(a.out, [(name(*p, "amp_bf16"), lambda p=p: measure(*p, amp=True)) for p in AMP_POINTS])
        return
    measure_and_write(a.out, [(name(*p), lambda p=p: measure(*p)) for p in POINTS])


if __name__ == "__main__":
    main()
