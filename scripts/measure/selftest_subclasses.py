#!/usr/bin/env python3
"""Self-test of the tracker's tensor-subclass handling (run in the hf venv):
FSDP2 (`fully_shard`, parameters, gradients and AdamW states are DTensors) on one gloo rank — the tracker must count
the local shards' bytes; bitsandbytes Params4bit — counted once with its packed bytes plus its quant_state."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29544", RANK="0", WORLD_SIZE="1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from tracker import StorageTracker, is_wrapper_subclass, quant_state_bytes  # noqa: E402


def fsdp2():
    from torch.distributed.fsdp import fully_shard
    dist.init_process_group("gloo", rank=0, world_size=1)
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
    fully_shard(m[0])
    fully_shard(m[2])
    fully_shard(m)
    assert is_wrapper_subclass(next(m.parameters()))
    opt = torch.optim.AdamW(m.parameters(), foreach=False)
    x = torch.randn(64, 256)
    m(x).sum().backward()
    opt.step()
    opt.zero_grad()
    tr = StorageTracker()
    with tr:
        tr.begin_region("s")
        tr.label([x], "inputs")
        tr.classify_model(m, opt)
        tr.mark("start")
        tr.set_phase("forward")
        y = m(x).sum()
        tr.set_phase("backward")
        y.backward()
        del y
        tr.classify_model(m, opt)
        tr.mark("end_backward")
        r = tr.end_region()
    n = sum(p.numel() for p in m.parameters())
    n_tensors = len(list(m.parameters()))
    assert r["live_at"]["start"]["params"] == 4 * n, r["live_at"]["start"]
    assert r["live_at"]["start"]["optimizer_states"] == 8 * n + 4 * n_tensors, r["live_at"]["start"]
    assert r["live_at"]["end_backward"]["grads"] == 4 * n
    dist.destroy_process_group()
    print("FSDP2/DTensor: ok", 4 * n, "B params")


def params4bit():
    import bitsandbytes as bnb
    for dq, expect in ((False, 688 * 256 // 64 * 4 + 16 * 4),  # FP32 absmax per 64 + the 16-entry NF4 code
                       (True, 688 * 256 // 64 + 11 * 4 + 256 * 4 + 4 + 16 * 4)):  # uint8 absmax, FP32 per 256
        lin = bnb.nn.Linear4bit(256, 688, bias=False, compute_dtype=torch.float32, quant_type="nf4")
        lin.weight = bnb.nn.Params4bit(torch.randn(688, 256), requires_grad=False, quant_type="nf4",
                                       compress_statistics=dq)._quantize("cpu")
        tr = StorageTracker()
        with tr:
            tr.begin_region("q")
            tr.classify_model(lin)
            tr.mark("start")
            r = tr.end_region()
        packed = 688 * 256 // 2
        qs = quant_state_bytes(lin)
        assert qs == expect, (dq, qs, expect)
        assert r["live_at"]["start"]["params"] == packed + qs, r["live_at"]["start"]
        print(f"Params4bit (double quant {dq}): ok", packed, "+", qs, "B")


if __name__ == "__main__":
    fsdp2()
    params4bit()
