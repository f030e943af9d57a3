#!/usr/bin/env python3
"""What FSDP2 all-gathers for a frozen torchao NF4 weight (torchtune's QLoRA base): a `Linear` whose weight is
`to_nf4(...)`, `fully_shard`ed at world size 2 (CPU, gloo), then `unshard()`: the storage bytes of the sharded and of
the unsharded parameter (its packed data, block scales and scale factors). torchao's `NF4Tensor` implements
`fsdp_pre_all_gather` / `fsdp_post_all_gather`, so the unsharded parameter is an NF4Tensor, not BF16
(docs/frameworks/fsdp.md "A quantized base").

    python probe_fsdp_nf4.py --out ../../tests/data/measured/fsdp-nf4-unshard-probe.json
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402

from harness import env_versions  # noqa: E402

SHAPES = [(1024, 4096), (4096, 1024), (256, 1024)]


def nbytes(t) -> int:
    from torchao.dtypes.nf4tensor import NF4Tensor
    if isinstance(t, NF4Tensor):
        return sum(x.untyped_storage().nbytes() for x in (t.quantized_data, t.quantized_scalers,
                                                         t.quantization_factor))
    if hasattr(t, "_local_tensor"):
        return nbytes(t._local_tensor)
    return t.untyped_storage().nbytes()


def worker(rank, ws, port, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(ws))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=ws)
    from torch.distributed.fsdp import fully_shard
    from torchao.dtypes.nf4tensor import NF4Tensor, to_nf4
    rows = []
    for d_in, d_out in SHAPES:
        torch.manual_seed(0)
        lin = nn.Linear(d_in, d_out, bias=False, dtype=torch.bfloat16)
        lin.weight = nn.Parameter(to_nf4(lin.weight.data), requires_grad=False)
        m = nn.Sequential(lin)
        fully_shard(m)
        shard = nbytes(next(m.parameters()))
        m.unshard()
        p = next(m.parameters())
        rows.append(dict(d_in=d_in, d_out=d_out, elements=d_in * d_out, bf16_bytes=2 * d_in * d_out,
                         shard_bytes=shard, unsharded_bytes=nbytes(p),
                         unsharded_is_nf4=isinstance(p, NF4Tensor) or isinstance(getattr(p, "_local_tensor", None),
                                                                                  NF4Tensor)))
    if rank == 0:
        rec = dict(name="fsdp2-nf4-unshard-probe-ws2",
                   framework=dict(name="fsdp2", version=torch.__version__,
                                  settings=dict(api="fully_shard", world_size=ws, backend="gloo", device="cpu",
                                                quantization="torchao to_nf4 (block 64, scaler block 256)")),
                   rows=rows, env=env_versions(("torchao", "torchtune")))
        with open(out, "w") as f:
            json.dump(rec, f, indent=1)
        print(json.dumps(rows, indent=1))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    mp.spawn(worker, args=(2, 29677, os.path.abspath(a.out)), nprocs=2)


if __name__ == "__main__":
    main()
