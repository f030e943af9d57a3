#!/usr/bin/env python3
"""DeepSpeed on its CPU accelerator (DS_ACCELERATOR=cpu), gloo: the tiny Llama, ZeRO stages 0-3, FP32, torch
AdamW as the client optimizer; step 1 then step 2 (measured) through the engine
(engine(ids) -> engine.backward(loss) -> engine.step()). One process, or several under torch.distributed.run
(each rank measures its own process; rank 0 writes --out):

    DS_ACCELERATOR=cpu python deepspeed_run.py --out records.json
    DS_ACCELERATOR=cpu python -m torch.distributed.run --nproc_per_node 2 deepspeed_run.py \
        --stages 3,3s,3sr,3sd --out records-ws2.json
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29571")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("LOCAL_RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (env_versions, measure_and_write, measure_region, optimizer_state_bytes,  # noqa: E402
                     storage_bytes)
from tracker import StorageTracker  # noqa: E402

SHAPE = dict(n_layers=4, hidden=256, heads=4, kv_heads=2, ffn=688, vocab=32000, max_positions=2048)
BATCH, SEQ = 2, 256


def zero_tensors(opt, depth=0, seen=None):
    """Tensors held by the ZeRO optimizer object (flat partitions, IPG buckets, ...): attribute values that are
    tensors or lists/tuples/dicts of tensors, one level of nesting."""
    seen = set() if seen is None else seen
    out = []
    for k, v in list(vars(opt).items()):
        vals = [v] if isinstance(v, torch.Tensor) else list(v.values()) if isinstance(v, dict) else \
            list(v) if isinstance(v, (list, tuple)) else []
        for x in vals:
            xs = [x] if isinstance(x, torch.Tensor) else list(x) if isinstance(x, (list, tuple)) else []
            for t in xs:
                if isinstance(t, torch.Tensor) and id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
    return out


def measure(stage, small_buckets=False, no_reuse=False, reuse_2e7=False):
    import deepspeed
    from transformers import LlamaConfig, LlamaForCausalLM
    t_all = time.time()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=SHAPE["vocab"], hidden_size=SHAPE["hidden"], intermediate_size=SHAPE["ffn"],
                      num_hidden_layers=SHAPE["n_layers"], num_attention_heads=SHAPE["heads"],
                      num_key_value_heads=SHAPE["kv_heads"], max_position_embeddings=SHAPE["max_positions"],
                      tie_word_embeddings=False, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    ds_config = {"train_micro_batch_size_per_gpu": BATCH, "gradient_accumulation_steps": 1,
                 "zero_optimization": {"stage": stage, **({"reduce_bucket_size": 1_000_000,
                                                               "allgather_bucket_size": 1_000_000,
                                                               "stage3_prefetch_bucket_size": 1_000_000}
                                                            if small_buckets else {}),
                                       # Release each parameter after its use and fetch nothing
                                       # ahead (stage 3's reuse-distance and prefetch rules off).
                                       **({"stage3_max_reuse_distance": 0, "stage3_prefetch_bucket_size": 0}
                                          if no_reuse else {}),
                                       # Keep a parameter only when its backward use is within
                                       # 2e7 elements of parameter traffic (here: the head and
                                       # the blocks' MLP matrices, not the embedding).
                                       **({"stage3_max_reuse_distance": 20_000_000,
                                           "stage3_prefetch_bucket_size": 0} if reuse_2e7 else {})},
                 "fp16": {"enabled": False}, "bf16": {"enabled": False},
                 "steps_per_print": 1000, "wall_clock_breakdown": False}
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=ds_config)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=g)
    tr = StorageTracker()
    check, timings, out = {}, {}, {}

    def inner_opt():
        o = optimizer
        while hasattr(o, "optimizer") and o.optimizer is not o:
            o = o.optimizer
        return o

    def master():
        o = optimizer
        ts = []
        for n in ("single_partition_of_fp32_groups", "fp32_partitioned_groups_flat"):
            ts += [t for t in getattr(o, n, []) or [] if isinstance(t, torch.Tensor)]
        return ts

    def step():
        tr.label([ids], "inputs")
        tr.classify_model(engine.module, inner_opt())
        tr.label(master(), "master_params")  # ZeRO's FP32 partition (the optimizer's own copy)
        if stage > 0:
            tr.label(zero_tensors(optimizer), "zero_buffers")
        tr.mark("start")
        tr.set_phase("forward")
        loss = engine(input_ids=ids, labels=ids).loss
        tr.mark("end_forward")
        tr.set_phase("backward")
        engine.backward(loss)
        del loss
        tr.classify_model(engine.module, inner_opt())
        tr.mark("end_backward")
        tr.set_phase("optimizer")
        engine.step()
        tr.classify_model(engine.module, inner_opt())
        tr.mark("end_optimizer")

    with tr:
        for name in ("step1", "step2"):
            out[name] = measure_region(tr, name, step, check, timings)
    named = dict(engine.module.named_parameters())
    n_params = sum(p.numel() for p in named.values())
    return dict(
        name=f"deepspeed-zero{stage}{'-smallbuckets' if small_buckets else ''}{'-noreuse' if no_reuse else ''}{'-reuse2e7' if reuse_2e7 else ''}"
             f"{'-ws' + os.environ['WORLD_SIZE'] if int(os.environ.get('WORLD_SIZE', '1')) > 1 else ''}"
             f"-llama-tiny_b{BATCH}_s{SEQ}_fp32_adamw_sdpa",
        config=dict(model="llama-tiny", batch=BATCH, seq=SEQ, dtype_mode="fp32", optimizer="adamw", foreach=True,
                    checkpointing=False, attn_impl="sdpa", dropout=False, dropout_kernel="native", inference=False),
        framework=dict(name="deepspeed", version=deepspeed.__version__,
                       settings=dict(accelerator="cpu", zero_stage=stage,
                                     world_size=int(os.environ.get("WORLD_SIZE", "1")), ds_config=ds_config,
                                     client_optimizer="torch.optim.AdamW(foreach=True)",
                                     optimizer_wrapper=type(optimizer).__name__)),
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=64, ffn=SHAPE["ffn"], vocab=SHAPE["vocab"],
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=SEQ, batch=BATCH, dtype_mode="fp32", param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=False, checkpointing_kwargs=None, attn_impl="sdpa", n_params=n_params,
        n_params_embeddings=SHAPE["vocab"] * SHAPE["hidden"], n_params_head=SHAPE["vocab"] * SHAPE["hidden"],
        n_params_other=n_params - 2 * SHAPE["vocab"] * SHAPE["hidden"], param_bytes=storage_bytes(named.values()),
        optimizer_state_bytes=optimizer_state_bytes(inner_opt()), train=out, inference=None,
        attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(("deepspeed", "transformers", "numpy")),
        attention_kernel={k: "sdpa_flash_cpu" for k in out})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--stages", default="0,1,2,3,2s,3s",
                    help="ZeRO stages; a suffix s: 1e6-element buckets; r: stage 3 without reuse or "
                         "prefetch; d: stage 3 reuse distance 2e7, no prefetch")
    a = ap.parse_args()
    torch.set_num_threads(2)
    import deepspeed
    deepspeed.init_distributed(dist_backend="gloo")
    jobs = [
        (f"zero{st}", lambda st=st: measure(int(st[0]), small_buckets="s" in st[1:], no_reuse="r" in st[1:],
                                          reuse_2e7="d" in st[1:]))
        for st in a.stages.split(",")
    ]
    # Every rank runs the jobs (their collectives need each other); rank 0's records are written
    # to --out, another rank's beside it (`.rank<N>.json`), which the tests do not read.
    rank = int(os.environ.get("RANK", "0"))
    out = a.out if rank == 0 else f"{a.out}.rank{rank}.json"
    measure_and_write(out, jobs)


if __name__ == "__main__":
    main()
