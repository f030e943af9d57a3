#!/usr/bin/env python3
"""torchtitan's per-op selective activation checkpointing on CPU, with torchtitan's own code: its llama3
`Transformer` (random init, FP32) and its `apply_ac` with `ActivationCheckpoint(mode="selective",
selective_ac_option="op")` and the llama3 `_op_sac_save_list` (torchtitan 0.2.2). The tracker counts the
storages created in the forward that are still live at its end (saved for backward, plus the logits), with
no checkpointing, full checkpointing and the per-op policy; one backward checks that the step runs.

    python torchtitan_sac.py --out ../../tests/data/measured/torchtitan-per-op-sac-cpu.json

On CPU, `F.scaled_dot_product_attention` runs `_scaled_dot_product_flash_attention_for_cpu`, which is not in
the save list: the attention output is recomputed here, where on CUDA the flash / cuDNN kernel's is kept.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import env_versions  # noqa: E402
from tracker import StorageTracker  # noqa: E402

SHAPE = dict(dim=256, n_layers=4, n_heads=4, n_kv_heads=2, vocab_size=2048, multiple_of=256)
BATCH, SEQ = 2, 128


def build(mode: str):
    from torchtitan.config.job_config import ActivationCheckpoint
    from torchtitan.distributed.activation_checkpoint import apply_ac
    from torchtitan.models.llama3.infra.parallelize import _op_sac_save_list
    from torchtitan.models.llama3.model.args import TransformerModelArgs
    from torchtitan.models.llama3.model.model import Transformer

    torch.manual_seed(0)
    args = TransformerModelArgs(**SHAPE, max_seq_len=SEQ, rope_theta=500000)
    model = Transformer(args)
    with torch.no_grad():  # as torchtitan's trainer initialises (train.py: under no_grad)
        model.init_weights()
    if mode != "none":
        cfg = ActivationCheckpoint(mode="selective" if mode == "op" else "full", selective_ac_option="op")
        apply_ac(model, cfg, op_sac_save_list=_op_sac_save_list)
    return model, args


def measure(mode: str) -> dict:
    model, args = build(mode)
    ids = torch.randint(0, SHAPE["vocab_size"], (BATCH, SEQ), generator=torch.Generator().manual_seed(1))
    tr = StorageTracker()
    with tr:
        tr.begin_region(mode)
        tr.label([ids], "inputs")
        tr.classify_model(model)
        tr.mark("start")
        tr.set_phase("forward")
        logits = model(ids)
        tr.label([logits], "logits")
        tr.mark("end_of_forward")
        tr.set_phase("backward")
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids.flatten(0, 1))
        loss.backward()
        del loss, logits
        res = tr.end_region()
    at = res["live_at"]["end_of_forward"]
    ffn = model.layers["0"].feed_forward.w1.weight.shape[0]
    return dict(
        mode=mode,
        saved_in_forward_bytes=int(at["detail"].get("created_in_forward", 0)),
        logits_bytes=int(at["detail"].get("logits", 0)),
        live_at_end_of_forward=at,
        peak_total_bytes=int(res["peak_total"]),
        peak_phase=res["peak_phase"],
        ffn=int(ffn),
        head_dim=args.dim // args.n_heads,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(2)
    runs = [measure(m) for m in ("none", "full", "op")]
    by = {r["mode"]: r for r in runs}
    layers = SHAPE["n_layers"]
    record = dict(
        kind="per_op_sac_saved_bytes",
        framework=dict(name="torchtitan", version="0.2.2",
                       code="torchtitan.distributed.activation_checkpoint.apply_ac, "
                            "torchtitan.models.llama3.infra.parallelize._op_sac_save_list, "
                            "torchtitan.models.llama3.model.model.Transformer"),
        env=env_versions(["torch", "torchtitan"]),
        device="cpu",
        dtype="float32",
        shape=dict(SHAPE, batch=BATCH, seq=SEQ, ffn=by["op"]["ffn"], head_dim=by["op"]["head_dim"]),
        runs=runs,
        per_layer_kept_beyond_full_bytes=(by["op"]["saved_in_forward_bytes"]
                                          - by["full"]["saved_in_forward_bytes"]) / layers,
        notes="Storages created in the forward and live at its end ('created_in_forward'; the logits labelled "
              "apart). On CPU SDPA runs _scaled_dot_product_flash_attention_for_cpu, not in the save list, so "
              "its output is recomputed (on CUDA the flash / cuDNN kernel's output is kept).",
    )
    with open(a.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(json.dumps({r["mode"]: r["saved_in_forward_bytes"] for r in runs}),
          record["per_layer_kept_beyond_full_bytes"])


if __name__ == "__main__":
    main()
