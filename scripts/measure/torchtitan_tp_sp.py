#!/usr/bin/env python3
"""What a torchtitan block saves under DTensor tensor + sequence parallelism, on CPU (gloo, world size 2), with
torchtitan's own code: its llama3 `Transformer` (random init) parallelised by its own `apply_tp`
(torchtitan 0.2.2 `torchtitan/models/llama3/infra/parallelize.py`: `SequenceParallel` norms,
`PrepareModuleInput(Shard(1) -> Replicate())` before attention and the feed-forward, colwise wq/wk/wv/w1/w3,
rowwise wo/w2 with `output_layouts=Shard(1)`), optionally with its `apply_ac` (full, or the per-op policy).

The question it answers: under DTensor sequence parallelism, does a column-parallel linear save the
all-gathered (whole-sequence) input or its sequence shard? Megatron saves the shard and gathers it again in
backward; DTensor's `PrepareModuleInput` redistributes before the linears run, so autograd saves the
gathered tensor. Per layer = (saved at the end of the forward with 4 layers - with 2 layers) / 2, rank 0.

    python torchtitan_tp_sp.py --out ../../tests/data/measured/torchtitan-tp-sp-cpu.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SHAPE = dict(dim=256, n_heads=4, n_kv_heads=2, vocab_size=2048, multiple_of=256)
BATCH, SEQ = 2, 128
MODES = ("none", "full", "op")
DTYPES = ("float32", "bfloat16")


def build(layers: int, mode: str, dtype, mesh):
    """The model; `mesh` None: no tensor parallelism (the same block on one rank, for comparison)."""
    import torch
    from torchtitan.config.job_config import ActivationCheckpoint
    from torchtitan.distributed.activation_checkpoint import apply_ac
    from torchtitan.models.llama3.infra.parallelize import _op_sac_save_list, apply_tp
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    from torchtitan.models.llama3.model.model import Transformer

    torch.manual_seed(0)
    args = TransformerModelArgs(**SHAPE, n_layers=layers, max_seq_len=SEQ, rope_theta=500000)
    model = Transformer(args)
    with torch.no_grad():
        model.init_weights()
    model = model.to(dtype)  # BF16 parameters and activations, as FSDP2's mixed precision computes
    if mesh is not None:
        apply_tp(model, mesh, loss_parallel=True, enable_float8_tensorwise_tp=False)
    if mode != "none":  # torchtitan applies TP first, then AC (parallelize_llama)
        cfg = ActivationCheckpoint(mode="selective" if mode == "op" else "full", selective_ac_option="op")
        apply_ac(model, cfg, op_sac_save_list=_op_sac_save_list)
    return model


def saved(layers: int, mode: str, dt: str, mesh) -> dict:
    import torch
    from torch.distributed.tensor.parallel import loss_parallel

    from tracker import StorageTracker

    dtype = getattr(torch, dt)
    model = build(layers, mode, dtype, mesh)
    ids = torch.randint(0, SHAPE["vocab_size"], (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    tr = StorageTracker()
    with tr:
        tr.begin_region(f"{layers}-{mode}-{dt}")
        tr.label([ids], "inputs")
        tr.classify_model(model)
        tr.mark("start")
        tr.set_phase("forward")
        pred = model(ids)
        tr.label([pred], "logits")
        tr.mark("end_of_forward")
        tr.set_phase("backward")
        with loss_parallel() if mesh is not None else contextlib.nullcontext():
            loss = torch.nn.functional.cross_entropy(pred.flatten(0, 1).float(), ids.flatten(0, 1))
            del pred
            loss.backward()
        del loss
        res = tr.end_region()
    at = res["live_at"]["end_of_forward"]["detail"]
    return dict(saved_in_forward_bytes=int(at.get("created_in_forward", 0)), logits_bytes=int(at.get("logits", 0)))


def run(rank: int, world: int, out_path: str) -> None:
    import torch.distributed as dist

    from harness import env_versions, gloo_mesh

    mesh = gloo_mesh(rank, world, 29519)
    runs = []
    for (tp, dt, mode) in ((tp, dt, mode) for tp in (1, world) for dt in DTYPES for mode in MODES):
        if True:
            on = mesh if tp > 1 else None
            # Some forwards leave tensors alive that the block does not save (lazily built state on
            # a configuration's first run; collective outputs still registered: 131,072–393,216 B
            # more at 2 layers, run to run): each figure is the least of three runs.
            two, four = (
                min((saved(n, mode, dt, on) for _ in range(3)), key=lambda r: r["saved_in_forward_bytes"])
                for n in (2, 4)
            )
            per_layer = (four["saved_in_forward_bytes"] - two["saved_in_forward_bytes"]) / 2
            runs.append(dict(tp=tp, dtype=dt, mode=mode, layers_2=two, layers_4=four, per_layer_saved_bytes=per_layer))
            if rank == 0:
                print(tp, dt, mode, per_layer, flush=True)
    dist.destroy_process_group()
    if rank == 0:
        doc = dict(
            kind="dtensor_tp_sp_saved_bytes",
            framework=dict(
                name="torchtitan",
                version="0.2.2",
                code="torchtitan.models.llama3.infra.parallelize.apply_tp (loss_parallel=True), "
                "torchtitan.distributed.activation_checkpoint.apply_ac, "
                "torchtitan.models.llama3.model.model.Transformer",
            ),
            env=env_versions(["torch", "torchtitan"]),
            device="cpu (gloo)",
            world=world,
            rank=rank,
            shape=dict(SHAPE, batch=BATCH, seq=SEQ),
            runs=runs,
            notes="Storages created in the forward and live at its end on rank 0 ('created_in_forward', DTensor "
            "unwrapped to its local tensor; the logits labelled apart), per layer from the 4- and 2-layer models, each the least of three runs. "
            "Runs with tp 1 build the same model without apply_tp; tp 2 runs are DTensor TP + SP. On CPU SDPA runs _scaled_dot_product_flash_attention_for_cpu (output and log-sum-exp kept; not in "
            "the per-op save list, so recomputed under the op policy).",
        )
        with open(out_path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def main() -> None:
    import torch.multiprocessing as mp

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="torchtitan-tp-sp-cpu.json")
    a = ap.parse_args()
    mp.spawn(run, args=(2, a.out), nprocs=2, join=True)


if __name__ == "__main__":
    main()
