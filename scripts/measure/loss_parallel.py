#!/usr/bin/env python3
"""PyTorch's DTensor `loss_parallel()` on CPU (gloo, world size 2), as torchtitan runs its output layer and loss
under tensor parallelism (torchtitan 9dec370 train.py: `loss_fn(pred, labels)` =
`F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))` inside `loss_parallel()`, then `del pred`
and `loss.backward()`; parallelize_llama.py: `output` is `ColwiseParallel(input_layouts=Shard(1),
output_layouts=Shard(-1), use_local_output=False)`).

Each rank feeds its sequence shard of the final hidden states (BF16 or FP32, a leaf) through the column-parallel output
linear and the loss. The tracker records, per rank, the bytes live beyond the start at: the logits, the
forward's peak inside the loss, the end of the loss (its saved tensors), and the backward's peak until the
output linear's input gradient exists. Units: bytes; N = b·s tokens, Vr = V / 2 columns per rank.

    python loss_parallel.py --out ../../tests/data/measured/dtensor-loss-parallel-cpu.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CASES = [  # (batch, seq, hidden, vocab, head and logits type)
    (2, 64, 64, 4096, "bfloat16"),
    (1, 128, 128, 8192, "bfloat16"),
    (4, 32, 96, 6144, "bfloat16"),
    (2, 64, 64, 4096, "float32"),
]


def run(rank: int, world: int, out_path: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, loss_parallel, parallelize_module

    from harness import env_versions, gloo_mesh
    from torch.profiler import ProfilerActivity, profile
    from tracker import StorageTracker, profile_peak_delta

    mesh = gloo_mesh(rank, world, 29517)
    records = []
    for b, s, h, v, dt in CASES:
        dtype = getattr(torch, dt)
        torch.manual_seed(0)
        head = torch.nn.Linear(h, v, bias=False, dtype=dtype)
        parallelize_module(
            head,
            mesh,
            ColwiseParallel(input_layouts=Shard(1), output_layouts=Shard(-1), use_local_output=False),
        )
        x = torch.randn(b, s // world, h, dtype=dtype, requires_grad=True)
        labels = torch.randint(0, v, (b, s), generator=torch.Generator().manual_seed(1))
        tr = StorageTracker()
        prof = lambda: profile(activities=[ProfilerActivity.CPU], profile_memory=True)  # noqa: E731
        with tr:
            tr.begin_region(f"b{b}_s{s}_h{h}_v{v}_{dt}")
            tr.label([x, labels], "inputs")
            tr.classify_model(head)
            tr.mark("start")
            tr.set_phase("forward")
            with loss_parallel():
                # The tracker does not see the ops DTensor's handlers run inside a dispatched op (a
                # dispatch mode is off inside its own handler), so each window's peak is the CPU
                # allocator's, from the profiler's memory events.
                with prof() as p_fwd:
                    pred = head(x)
                    tr.mark("logits")
                    loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
                tr.mark("after_loss")
                tr.set_phase("backward")
                with prof() as p_bwd:
                    del pred
                    loss.backward()
            tr.mark("end_of_backward")
            res = tr.end_region()
        start = res["live_at"]["start"]["total"]
        n, vr = b * s, v // world
        records.append(
            dict(
                batch=b,
                seq=s,
                hidden=h,
                vocab=v,
                dtype=dt,
                world=world,
                rank=rank,
                tokens=n,
                vocab_per_rank=vr,
                logits_elements=n * vr,
                live_beyond_start={k: int(a["total"] - start) for k, a in res["live_at"].items()},
                forward_allocator_peak_beyond_start=profile_peak_delta(p_fwd)[0],
                backward_allocator_peak_beyond_after_loss=profile_peak_delta(p_bwd)[0],
                tracker_peak_beyond_start=int(res["peak_total"] - start),
                peak_phase=res["peak_phase"],
                phase_peaks_beyond_start={k: int(t - start) for k, t in res["phase_peaks"].items()},
                peak_op=res["peak_op"],
                loss=float(loss),
            )
        )
    dist.destroy_process_group()
    if rank == 0:
        doc = dict(
            about="DTensor loss_parallel() cross-entropy on CPU/gloo, world size 2, as torchtitan runs it "
            "(scripts/measure/loss_parallel.py); bytes beyond the region's start, rank 0",
            versions=env_versions([]),
            records=records,
        )
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=1)
        print(json.dumps(records, indent=1))


def main() -> None:
    import torch.multiprocessing as mp

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="dtensor-loss-parallel-cpu.json")
    a = ap.parse_args()
    mp.spawn(run, args=(2, a.out), nprocs=2, join=True)


if __name__ == "__main__":
    main()
