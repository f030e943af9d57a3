#!/usr/bin/env python3
"""LitGPT full fine-tune and LoRA (litgpt.lora) on a tiny random-init Llama-shaped Config, measured on CPU.

    python litgpt_run.py --out records.json [--only SUBSTRING]

The step follows litgpt/finetune/{full,lora}.py `fit()`: logits = model(input_ids, lm_head_chunk_size=128);
logits[-1] = logits[-1][..., :-1, :]; loss = chunked_cross_entropy(logits, targets[..., 1:]); backward; AdamW
(litgpt's default optimizer, torch.optim.AdamW). Precision "32-true" (FP32) or "bf16-true" (model and optimizer
in BF16). Inference follows litgpt/generate/base.py: set_kv_cache(batch, max_seq_length) preallocates the cache,
prefill = model(idx, input_pos=arange(s)), decode = model(next, input_pos=[s]).
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (attention_kernel, env_versions, measure_and_write, optimizer_state_bytes,  # noqa: E402
                     run_inference, run_training, selected, storage_bytes)

SEED = 0
SHAPE = dict(n_layers=4, hidden=256, heads=4, kv_heads=2, ffn=688, vocab=32000, max_positions=2048)
BATCH, SEQ = 2, 256
PACKAGES = ("litgpt", "lightning", "numpy", "safetensors", "huggingface-hub")


def config_kwargs():
    return dict(name="llama-tiny-measure", block_size=SHAPE["max_positions"], vocab_size=SHAPE["vocab"],
                padded_vocab_size=SHAPE["vocab"], n_layer=SHAPE["n_layers"], n_head=SHAPE["heads"],
                n_embd=SHAPE["hidden"], n_query_groups=SHAPE["kv_heads"], head_size=SHAPE["hidden"] // SHAPE["heads"],
                rotary_percentage=1.0, parallel_residual=False, bias=False, norm_class_name="RMSNorm",
                norm_eps=1e-5, mlp_class_name="LLaMAMLP", intermediate_size=SHAPE["ffn"])


def build(case):
    torch.manual_seed(SEED)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[case["base"]]
    if case["method"] == "full":
        from litgpt.config import Config
        from litgpt.model import GPT
        model = GPT(Config(**config_kwargs()))
    else:
        from litgpt.lora import GPT, Config, mark_only_lora_as_trainable
        all_ = case["targets"] == "all"
        cfg = Config(**config_kwargs(), lora_r=case["r"], lora_alpha=2 * case["r"], lora_dropout=case["lora_dropout"],
                     lora_query=True, lora_key=all_, lora_value=True, lora_projection=all_, lora_mlp=all_,
                     lora_head=False)
        model = GPT(cfg)
        mark_only_lora_as_trainable(model)
    model = model.to(dtype)
    model.max_seq_length = SEQ + 1
    model.train()
    return model


def case_name(c):
    tag = "full" if c["method"] == "full" else f"lora-{c['targets']}-r{c['r']}_drop{c['lora_dropout']:g}"
    return f"litgpt-llama-tiny_b{BATCH}_s{SEQ}_{c['base']}_{tag}_adamw_sdpa"


def kv_of(model):
    out = []
    for b in model.transformer.h:
        kv = getattr(b.attn, "kv_cache", None)
        if kv is not None:
            out += [kv.k, kv.v]
    return out


def measure(case):
    import litgpt
    from litgpt.utils import chunked_cross_entropy
    t_all = time.time()
    model = build(case)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    g = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=g)
    targets = ids.clone()

    # As in litgpt/finetune/lora.py fit(): `logits` is a local of the training loop, so the chunked logits of a
    # step stay alive through its backward and optimizer step and until the next step's forward has returned.
    held = {}

    def loss_fn():
        logits = model(ids, lm_head_chunk_size=128)
        held["logits"] = logits
        logits[-1] = logits[-1][..., :-1, :]
        return chunked_cross_entropy(logits, targets[..., 1:])

    train, tr, check, timings = run_training(model, opt, [ids, targets], loss_fn)
    ops_seen = dict(tr.op_counts)
    opt_bytes = optimizer_state_bytes(opt)
    del opt, tr
    held.clear()
    gc.collect()

    model.eval()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[case["base"]]
    model.set_kv_cache(batch_size=BATCH, max_seq_length=SEQ + 1, dtype=dtype)
    pids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=g)
    dids = torch.randint(0, SHAPE["vocab"], (BATCH, 1), generator=g)
    ppos = torch.arange(SEQ)
    dpos = torch.tensor([SEQ])

    def prefill():
        return model(pids, input_pos=ppos, input_pos_maxp1=SEQ), None
    prefill.inputs = [pids, ppos]
    prefill.kv_pre = lambda: kv_of(model)
    # the causal mask of set_kv_cache is a plain attribute (not a registered buffer): label it as one
    prefill.extra_buffers = lambda: [t for t in (getattr(model, "mask_cache", None),) if t is not None]

    def decode(_cache):
        return model(dids, input_pos=dpos, input_pos_maxp1=SEQ + 1), None
    decode.inputs = [dids, dpos]

    inf, itr, icheck, itimings = run_inference(model, prefill, decode, lambda _c: kv_of(model))
    ops_seen.update(itr.op_counts)
    check.update(icheck)
    timings.update(itimings)
    model.clear_kv_cache()

    named = dict(model.named_parameters())
    n_params = sum(p.numel() for p in named.values())
    n_emb = sum(p.numel() for n, p in named.items() if n.startswith("transformer.wte"))
    n_head = sum(p.numel() for n, p in named.items() if n.startswith("lm_head"))
    n_adapter = sum(p.numel() for n, p in named.items() if "lora_" in n)
    n_train = sum(p.numel() for p in named.values() if p.requires_grad)
    settings = dict(method=case["method"], precision={"fp32": "32-true", "bf16": "bf16-true"}[case["base"]],
                    lm_head_chunk_size=128, loss="litgpt.utils.chunked_cross_entropy(chunk_size=128)",
                    logits_held_as_in_fit=True)
    if case["method"] == "lora":
        settings.update(lora_r=case["r"], lora_alpha=2 * case["r"], lora_dropout=case["lora_dropout"],
                        lora_query=True, lora_key=case["targets"] == "all", lora_value=True,
                        lora_projection=case["targets"] == "all", lora_mlp=case["targets"] == "all",
                        lora_head=False)
    settings.update(n_params_trainable=n_train, n_params_adapter=n_adapter)
    pd = {"fp32": "float32", "bf16": "bfloat16"}[case["base"]]
    rec = dict(
        name=case_name(case),
        config=dict(model="llama-tiny", batch=BATCH, seq=SEQ, dtype_mode=case["base"], optimizer="adamw",
                    foreach=True, checkpointing=False, attn_impl="sdpa", dropout=case.get("lora_dropout", 0.0) > 0,
                    dropout_kernel="native", inference=True),
        framework=dict(name="litgpt", version=litgpt.__version__ if hasattr(litgpt, "__version__") else
                       __import__("importlib").metadata.version("litgpt"), settings=settings),
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=SHAPE["hidden"] // SHAPE["heads"], ffn=SHAPE["ffn"], vocab=SHAPE["vocab"],
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm",
        dropout_p=case.get("lora_dropout", 0.0), dropout_kernel="native", seq=SEQ, batch=BATCH,
        dtype_mode=case["base"], param_dtype=pd, optimizer="adamw", optimizer_foreach=True, checkpointing=False,
        checkpointing_kwargs=None, attn_impl="sdpa", n_params=n_params, n_params_embeddings=n_emb,
        n_params_head=n_head, n_params_other=n_params - n_emb - n_head, param_bytes=storage_bytes(named.values()),
        optimizer_state_bytes=opt_bytes, train=train, inference=inf, attention_ops_seen=ops_seen,
        timings_s=timings, allocator_check=check, wall_s=round(time.time() - t_all, 1),
        env=env_versions(PACKAGES), attention_kernel={k: attention_kernel(v) for k, v in ops_seen.items()},
    )
    return rec


def cases():
    out = [dict(method="full", base=b) for b in ("fp32", "bf16")]
    for base in ("fp32", "bf16"):
        for targets in ("qv", "all"):
            out.append(dict(method="lora", base=base, targets=targets, r=8, lora_dropout=0.0))
    out.append(dict(method="lora", base="fp32", targets="all", r=8, lora_dropout=0.05))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None, help="substrings (comma-separated) of the record names to run")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(2)
    chosen = selected(cases(), case_name, a.only)
    if a.list:
        print("\n".join(case_name(c) for c in chosen))
        return
    measure_and_write(a.out, [(case_name(c), lambda c=c: measure(c)) for c in chosen])


if __name__ == "__main__":
    main()
