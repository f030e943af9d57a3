#!/usr/bin/env python3
"""FSDP2 under `torch.distributed.pipelining` on CPU (gloo, 4 ranks: PP 2 x FSDP 2), as torchtitan runs it:
its llama3 `Transformer` (random init, FP32 shards) split into two stages by deleting the other stage's layers
(the model's forward passes through missing modules), each block and the stage `fully_shard`-ed with
`MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)` and `reshard_after_forward=False` (torchtitan's
policy under PP), `Schedule1F1B` over the micro-batches, AdamW (foreach).

Step 2 is recorded on rank 0 of each stage (the tracker, with `watch_storage_resize` for FSDP's storage resizes):
the bytes live after each micro-batch's backward and just before `perform_reduce_grad`, by the phase that created
them. What the backward created and still holds there is the stage's unsharded gradients, which the estimator
charges as `fsdp::pipeline_gradients` (stage parameters x 4 B under an FP32 reduce type).

    python fsdp_pipeline.py --out ../../tests/data/measured/fsdp-pipeline-cpu.json
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPE = dict(dim=256, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=2048, multiple_of=256)
LOCAL_BATCH, SEQ, MICROBATCHES = 4, 64, 2


def stage_model(model, stage: int, stages: int):
    m = copy.deepcopy(model)
    per = SHAPE["n_layers"] // stages
    keep = {str(i) for i in range(stage * per, (stage + 1) * per)}
    for name in list(m.layers.keys()):
        if name not in keep:
            del m.layers[name]
    if stage != 0:
        m.tok_embeddings = None
    if stage != stages - 1:
        m.norm = None
        m.output = None
    return m


def run(rank: int, world: int, out_path: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    from torchtitan.models.llama3.model.model import Transformer

    from harness import env_versions
    from tracker import StorageTracker, watch_storage_resize

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("pp", "dp"))
    stage_idx = mesh["pp"].get_local_rank()
    stages = mesh["pp"].size()

    torch.manual_seed(0)
    args = TransformerModelArgs(**SHAPE, max_seq_len=SEQ, rope_theta=500000)
    whole = Transformer(args)
    with torch.no_grad():
        whole.init_weights()
    m = stage_model(whole, stage_idx, stages)
    del whole
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in m.layers.values():
        fully_shard(layer, mesh=mesh["dp"], mp_policy=mp, reshard_after_forward=False)
    fully_shard(m, mesh=mesh["dp"], mp_policy=mp, reshard_after_forward=False)
    stage = PipelineStage(m, stage_idx, stages, torch.device("cpu"), group=mesh["pp"].get_group())

    def loss_fn(pred, labels):
        return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))

    schedule = Schedule1F1B(stage, n_microbatches=MICROBATCHES, loss_fn=loss_fn)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, foreach=True)
    gen = torch.Generator().manual_seed(1 + mesh["dp"].get_local_rank())
    tokens = torch.randint(0, SHAPE["vocab_size"], (LOCAL_BATCH, SEQ), generator=gen)
    labels = torch.randint(0, SHAPE["vocab_size"], (LOCAL_BATCH, SEQ), generator=gen)

    def step():
        if stage_idx == 0:
            schedule.step(tokens)
        else:
            schedule.step(target=labels, losses=[])
        opt.step()
        opt.zero_grad()

    step()  # step 1: optimizer states appear
    tr = StorageTracker()
    marks = []
    backward_one_chunk, perform_reduce_grad = stage.backward_one_chunk, stage.perform_reduce_grad

    def backward_marked(*a, **k):
        tr.set_phase("backward")
        out = backward_one_chunk(*a, **k)
        marks.append(f"after_backward_{len(marks)}")
        tr.mark(marks[-1])
        tr.set_phase("forward")
        return out

    def reduce_marked(*a, **k):
        tr.mark("before_reduce")
        tr.set_phase("reduce")
        out = perform_reduce_grad(*a, **k)
        tr.mark("after_reduce")
        tr.set_phase("optimizer")
        return out

    stage.backward_one_chunk, stage.perform_reduce_grad = backward_marked, reduce_marked
    with tr, watch_storage_resize(tr):
        tr.begin_region("step2")
        tr.classify_model(m, opt)
        tr.mark("start")
        tr.set_phase("forward")  # micro-batch backwards are tagged "backward" by the wrapper
        step()
        tr.mark("end")
        res = tr.end_region()
    params = sum(p.numel() for p in m.parameters())  # the stage's parameters (DTensor global sizes)
    rec = dict(
        stage=stage_idx,
        stages=stages,
        dp=mesh["dp"].size(),
        microbatches=MICROBATCHES,
        local_batch=LOCAL_BATCH,
        seq=SEQ,
        shape=SHAPE,
        stage_parameters=int(params),
        layers=len(m.layers),
        live_at={k: v for k, v in res["live_at"].items()},
        peak_total_bytes=int(res["peak_total"]),
        start_total_bytes=int(res["start_total"]),
    )
    gathered = [None] * world
    dist.all_gather_object(gathered, rec)
    dist.destroy_process_group()
    if rank == 0:
        recs = [r for r in gathered if r is not None]
        recs = [next(r for r in recs if r["stage"] == s) for s in range(stages)]
        doc = dict(
            about="FSDP2 under torch.distributed.pipelining on CPU/gloo, PP 2 x FSDP 2, step 2, rank 0 of "
            "each stage (scripts/measure/fsdp_pipeline.py); bytes live at the marks by creating phase",
            versions=env_versions(["torchtitan"]),
            records=recs,
        )
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=1)
        print(json.dumps([{k: r[k] for k in ("stage", "stage_parameters", "layers")} for r in recs]))


def main() -> None:
    import torch.multiprocessing as mp

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="fsdp-pipeline-cpu.json")
    a = ap.parse_args()
    mp.spawn(run, args=(4, a.out), nprocs=4, join=True)


if __name__ == "__main__":
    main()
