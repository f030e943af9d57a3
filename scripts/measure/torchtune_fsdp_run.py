#!/usr/bin/env python3
"""torchtune 0.6.1's distributed recipes on CPU with gloo at world size 2: the tiny Llama from torchtune's own
builders (`torchtune_run.build`, BF16 as the recipes build it), sharded by torchtune's own `training.shard_model`
with its `get_shard_conditions` (one `fully_shard` per `layers.i`, then the root; `reshard_after_forward=True`,
passed explicitly, so torch 2.15 reshards the root after forward too), stepped as
`recipes/{full,lora}_finetune_distributed.py` do: logits = model(tokens) (8 output chunks), labels shifted with an
ignore column, `CEWithChunkedOutputLoss`, `del logits`, backward, AdamW (foreach) step, zero_grad. Full, LoRA and
QLoRA (NF4 base, torchao) with the 70B / 405B configs' adapters (q, v, output projection and the MLP). Rank 0's step
2, every rank on its own batch.

    python torchtune_fsdp_run.py --out ../../tests/data/measured/torchtune-fsdp-cpu-steps.json
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from harness import (env_versions, gloo_rank0_records, local_bytes, measure_region,  # noqa: E402
                     optimizer_state_bytes, train_step)
from torchtune_run import BASE, BATCH, PACKAGES, SEED, build  # noqa: E402
from tracker import StorageTracker, watch_storage_resize  # noqa: E402

CASES = [dict(method=m, base="bf16", ffn=768, targets=None if m == "full" else "qvo-mlp", recipe_dtype=True)
         for m in ("full", "lora", "qlora")]


def measure(case, ws, rank):
    import torchtune
    from functools import partial
    from torchtune import training
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    t_all = time.time()
    model = build(case)
    # recipes/{full,lora}_finetune_distributed.py `_setup_model`: `custom_sharded_layers` unset
    # (the 70B LoRA and 405B QLoRA configs), so the conditions match `layers.i` only.
    training.shard_model(model, [partial(training.get_shard_conditions, names_to_match=None)],
                         cpu_offload=False, reshard_after_forward=True)
    loss_fn = CEWithChunkedOutputLoss(num_output_chunks=8)
    model.set_num_output_chunks(loss_fn.num_output_chunks)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    g = torch.Generator().manual_seed(SEED + 1 + rank)
    tokens = torch.randint(0, BASE["vocab"], (BATCH, case.get("seq", 256)), generator=g)
    labels = tokens.clone()
    ignore = torch.full((BATCH, 1), -100, dtype=labels.dtype)

    def step_loss():
        logits = model(tokens)
        lab = torch.hstack((labels[..., 1:], ignore))
        loss = loss_fn(logits, lab)
        del logits
        return loss

    tr = StorageTracker()
    check, timings, out = {}, {}, {}
    with tr, watch_storage_resize(tr):
        for name in ("step1", "step2"):
            out[name] = measure_region(tr, name, lambda: train_step(tr, model, opt, [tokens, labels, ignore],
                                                                    step_loss), check, timings)
    named = dict(model.named_parameters())
    n_emb = sum(p.numel() for n, p in named.items() if n.startswith("tok_embeddings"))
    n_head = sum(p.numel() for n, p in named.items() if n.startswith("output"))
    n_params = sum(p.numel() for p in named.values())
    settings = dict(method=case["method"], world_size=ws, backend="gloo", device="cpu", rank=rank,
                    api="fully_shard", shard_model="torchtune.training.shard_model(get_shard_conditions)",
                    reshard_after_forward=True, root_reshard_after_forward=True, custom_sharded_layers=False,
                    loss="after the root's forward",
                    loss_fn="torchtune.modules.loss.CEWithChunkedOutputLoss(num_output_chunks=8)",
                    nf4_base=case["method"] == "qlora", mixed_precision=None,
                    n_params_trainable=sum(p.numel() for p in trainable),
                    optimizer="torch.optim.AdamW(foreach=True)")
    if case["method"] != "full":
        settings.update(lora_rank=8, lora_alpha=16, lora_dropout=0.0, targets=case["targets"])
    tag = case["method"] if case["method"] == "full" else f"{case['method']}-{case['targets']}-r8_drop0"
    return dict(
        name=f"torchtune-fsdp2-ws{ws}-llama-tiny_f{case['ffn']}_b{BATCH}_s256_bf16_{tag}_adamw_sdpa",
        config=dict(model=f"llama-tiny-f{case['ffn']}", batch=BATCH, seq=256, dtype_mode="bf16", optimizer="adamw",
                    foreach=True, checkpointing=False, attn_impl="sdpa", dropout=False, dropout_kernel="native",
                    inference=False),
        framework=dict(name="torchtune", version=torchtune.__version__, settings=settings),
        family="llama", n_layers=BASE["n_layers"], hidden=BASE["hidden"], heads=BASE["heads"],
        kv_heads=BASE["kv_heads"], head_dim=BASE["hidden"] // BASE["heads"], ffn=case["ffn"], vocab=BASE["vocab"],
        max_positions=BASE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=256, batch=BATCH, dtype_mode="bf16",
        param_dtype="bfloat16" if case["method"] != "qlora" else "nf4", optimizer="adamw", optimizer_foreach=True,
        checkpointing=False, checkpointing_kwargs=None, attn_impl="sdpa", n_params=n_params,
        n_params_embeddings=n_emb, n_params_head=n_head, n_params_other=n_params - n_emb - n_head,
        param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=optimizer_state_bytes(opt), train=out,
        inference=None, attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(PACKAGES),
        attention_kernel={k: "sdpa_flash_cpu" for k in out})


def worker(rank, ws, port, path):
    gloo_rank0_records(rank, ws, port, path, [lambda c=c: measure(c, ws, rank) for c in CASES])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    mp.spawn(worker, args=(2, 29650, a.out), nprocs=2, join=True)


if __name__ == "__main__":
    main()
