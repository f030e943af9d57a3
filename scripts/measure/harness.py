"""Shared measuring harness: one training step / inference step under StorageTracker + torch.profiler.

Produces the per-region dicts of tests/data/measured/pytorch-cpu-steps.json (train.step1/step2,
inference.prefill/decode, attention_ops_seen, timings_s, allocator_check, attention_kernel). Framework scripts
(hf_peft.py, litgpt_run.py) build the model and say how to compute a loss, a prefill and a decode.
"""
from __future__ import annotations

import gc
import json
import platform
import time
import traceback
from importlib import metadata

import torch
from torch.profiler import ProfilerActivity, profile

from tracker import StorageTracker, profile_peak_delta


def measure_region(tr: StorageTracker, name: str, body, check: dict, timings: dict):
    """Run body() inside region `name`, with torch.profiler(profile_memory=True) around it for the cross-check."""
    t0 = time.time()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        tr.begin_region(name)
        body()
        res = tr.end_region()
    timings[name] = round(time.time() - t0, 2)
    alloc_peak, n = profile_peak_delta(prof)
    check[name] = dict(allocator_peak_delta=alloc_peak, tracker_peak_delta=res["peak_total"] - res["start_total"],
                       diff_bytes=alloc_peak - (res["peak_total"] - res["start_total"]), n_alloc_events=n)
    return res


def train_step(tr, model, optimizer, inputs, loss_fn):
    """One step, exactly the phases of the reference harness (see tracker.py docstring)."""
    tr.label(inputs, "inputs")
    tr.classify_model(model, optimizer)
    tr.mark("start")
    tr.set_phase("forward")
    loss = loss_fn()
    tr.mark("end_forward")
    tr.set_phase("backward")
    loss.backward()
    del loss
    tr.classify_model(model, optimizer)
    tr.mark("end_backward")
    tr.set_phase("optimizer")
    optimizer.step()
    tr.classify_model(model, optimizer)
    tr.mark("end_optimizer")
    tr.set_phase("zero_grad")
    optimizer.zero_grad(set_to_none=True)
    tr.mark("end_step")


def run_training(model, optimizer, inputs, loss_fn):
    tr = StorageTracker()
    check, timings = {}, {}
    out = {}
    with tr:
        for step in ("step1", "step2"):
            out[step] = measure_region(tr, step, lambda: train_step(tr, model, optimizer, inputs, loss_fn),
                                       check, timings)
    return out, tr, check, timings


def run_inference(model, prefill_fn, decode_fn, kv_tensors):
    """prefill_fn() -> (logits, cache); decode_fn(cache) -> (logits, cache); kv_tensors(cache) -> list."""
    tr = StorageTracker()
    check, timings = {}, {}
    out = {}
    state = {}
    with tr, torch.no_grad():
        def prefill():
            inputs = prefill_fn.inputs
            tr.label(inputs, "inputs")
            tr.label(getattr(prefill_fn, "kv_pre", lambda: [])(), "kv_cache")  # a preallocated cache (LitGPT)
            tr.label(getattr(prefill_fn, "extra_buffers", lambda: [])(), "buffers")  # non-buffer attributes
            tr.classify_model(model)
            tr.mark("start")
            tr.set_phase("prefill")
            logits, cache = prefill_fn()
            tr.label(kv_tensors(cache), "kv_cache")
            tr.label([logits], "logits")
            for cat, ts in getattr(prefill_fn, "post_labels", dict)().items():  # e.g. encoder states kept
                tr.label(ts, cat)
            tr.mark("end_forward")
            state["cache"] = cache
            del logits
        out["prefill"] = measure_region(tr, "prefill", prefill, check, timings)

        def decode():
            tr.label(decode_fn.inputs, "inputs")
            tr.label(kv_tensors(state["cache"]), "kv_cache")
            for cat, ts in getattr(prefill_fn, "post_labels", dict)().items():
                tr.label(ts, cat)
            tr.classify_model(model)
            tr.mark("start")
            tr.set_phase("decode")
            logits, cache = decode_fn(state["cache"])
            tr.label(kv_tensors(cache), "kv_cache")
            tr.label([logits], "logits")
            tr.mark("end_forward")
            state["cache"] = cache
            del logits
        out["decode"] = measure_region(tr, "decode", decode, check, timings)
    return out, tr, check, timings


def attention_kernel(ops: dict) -> str:
    keys = " ".join(ops)
    if "flash_attention_for_cpu" in keys:
        return "sdpa_flash_cpu"
    if "efficient_attention" in keys:
        return "sdpa_efficient"
    if "_softmax" in keys and ("bmm" in keys or "matmul" in keys):
        return "eager_softmax"
    return "sdpa_math" if "_softmax" in keys else "unknown"


def env_versions(packages) -> dict:
    env = {}
    for p in packages:
        try:
            env[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    env["torch"] = torch.__version__
    env["python"] = platform.python_version()
    env["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    env["threads"] = torch.get_num_threads()
    return env


def optimizer_state_bytes(optimizer) -> int:
    seen, n = set(), 0
    for st in optimizer.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor):
                s = v.untyped_storage()
                if id(s) not in seen:
                    seen.add(id(s))
                    n += s.nbytes()
    return n


def storage_bytes(tensors) -> int:
    seen, n = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if id(s) not in seen:
            seen.add(id(s))
            n += s.nbytes()
    return n


def measure_and_write(out: str, jobs) -> None:
    """Runs each `(label, job)` (`job()` returns one record), keeps going past a failure (printed and
    written to `out`.failed.json), and writes the records to `out` as a JSON list."""
    recs, failed = [], []
    for label, job in jobs:
        print("==", label, flush=True)
        try:
            r = job()
            recs.append(r)
            s2 = r["train"]["step2"]
            check = {k: v["diff_bytes"] for k, v in r["allocator_check"].items()}
            print(f"   step2 peak {s2['peak_total']:,} phases {s2['phase_peaks']} check {check}", flush=True)
        except Exception as e:  # keep going; the failure is reported
            traceback.print_exc()
            failed.append(dict(name=label, error=f"{type(e).__name__}: {e}"))
        gc.collect()
    with open(out, "w") as f:
        json.dump(recs, f, indent=1)
    if failed:
        with open(out + ".failed.json", "w") as f:
            json.dump(failed, f, indent=1)
        print("FAILED:", json.dumps(failed, indent=1))


def selected(cases, name, only: str | None):
    """The cases whose name contains one of the comma-separated substrings of `only` (all when None)."""
    return [c for c in cases if not only or any(s in name(c) for s in only.split(","))]


def local_bytes(params) -> int:
    """Storage bytes of the parameters on this rank (a DTensor's local shard)."""
    ts = [p._local_tensor if hasattr(p, "_local_tensor") else p for p in params]
    return storage_bytes(ts)


def gloo_mesh(rank: int, world: int, port: int):
    """Join a CPU process group (gloo, loopback, one thread per rank) and return its 1-D device mesh."""
    import os

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    return init_device_mesh("cpu", (world,))


def gloo_rank0_records(rank: int, ws: int, port: int, path: str, runs) -> None:
    """One rank of a CPU process group (gloo, loopback, one thread): runs every measurement in
    `runs` (callables returning a record) on every rank; rank 0 prints each and writes them to
    `path` as a JSON list."""
    import os

    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(ws))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=ws)
    recs = []
    for run in runs:
        r = run()
        if rank == 0:
            s2 = r["train"]["step2"]
            print(r["name"], f"{s2['peak_total']:,}", s2["phase_peaks"], flush=True)
            recs.append(r)
    if rank == 0:
        with open(path, "w") as f:
            json.dump(recs, f, indent=1)
    dist.destroy_process_group()
