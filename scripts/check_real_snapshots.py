#!/usr/bin/env python3
"""Figures of the real memory snapshots in tests/data/snapshots/real_*.pickle, computed here with
Python's own pickle module (no torch, no code shared with the Rust reader) and written to
tests/data/snapshots/real_expected.json for tests/measured_real.rs.

The replay is the one PyTorch's viewer does (torch/cuda/_memory_viz.py v2.5.0, `trace_plot`):
the state before the first recorded event is the state at the dump minus the net of the recorded
events; a block stops counting at its first free event (free_requested, then free_completed).

Run: python3 scripts/check_real_snapshots.py   (Python 3.8+, standard library only)
"""
import glob
import json
import os
import pickle

DIR = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "snapshots")


def moved_by_module(event):
    """Allocated under torch/nn/modules/module.py `_apply` (either path separator)."""
    return any(f["name"] == "_apply" and f["filename"].replace("\\", "/").endswith("torch/nn/modules/module.py")
               for f in event.get("frames", []))


def figures(snap):
    traces = snap.get("device_traces", [])
    device = max(range(len(traces)), key=lambda i: (len(traces[i]), -i)) if traces else 0
    trace = traces[device] if traces and traces[device] else []
    if not trace:
        device = snap["segments"][0]["device"] if snap["segments"] else 0
    segs = [s for s in snap["segments"] if s["device"] == device]
    reserved_end = sum(s["total_size"] for s in segs)
    allocated_end = sum(b["size"] for s in segs for b in s["blocks"] if b["state"].startswith("active"))
    freed = set()
    net_a = net_r = 0
    for e in trace:
        a = e["action"]
        if a == "alloc":
            net_a += e["size"]
        elif a in ("free_requested", "free_completed", "free"):
            if e["addr"] in freed:
                freed.discard(e["addr"])
            else:
                net_a -= e["size"]
                if a == "free_requested":
                    freed.add(e["addr"])
        elif a in ("segment_alloc", "segment_map"):
            net_r += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            net_r -= e["size"]
    alloc = max(allocated_end - net_a, 0)
    res = max(reserved_end - net_r, 0)
    peak_a, peak_r, res_at_peak = alloc, res, res
    peak_event, apply_at_peak = None, 0
    freed = set()
    live = {}
    for i, e in enumerate(trace):
        a = e["action"]
        if a == "alloc":
            alloc += e["size"]
            live[e["addr"]] = e
        elif a in ("free_requested", "free_completed", "free"):
            if e["addr"] in freed:
                freed.discard(e["addr"])
            else:
                alloc = max(alloc - e["size"], 0)
                live.pop(e["addr"], None)
                if a == "free_requested":
                    freed.add(e["addr"])
        elif a in ("segment_alloc", "segment_map"):
            res += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            res = max(res - e["size"], 0)
        peak_r = max(peak_r, res)
        if alloc > peak_a:
            peak_a, res_at_peak, peak_event = alloc, res, i
            apply_at_peak = sum(b["size"] for b in live.values() if moved_by_module(b))
    backward = [i for i, e in enumerate(trace) if any("backward" in f["name"] for f in e.get("frames", []))]
    return {
        "device": device,
        "events": len(trace),
        "segments": len(segs),
        "allocated_at_dump": allocated_end,
        "reserved_at_dump": reserved_end,
        "allocated_peak": peak_a,
        "reserved_peak": peak_r,
        "reserved_at_peak": res_at_peak,
        # The event after which allocated bytes peak (None: the peak is before the recording).
        "peak_event": peak_event,
        "first_backward_event": backward[0] if backward else None,
        # Bytes live at the peak that nn.Module._apply (model.to / .cuda) allocated: parameters.
        "module_apply_bytes_at_peak": apply_at_peak,
    }


def main():
    out = {}
    for path in sorted(glob.glob(os.path.join(DIR, "real_*.pickle"))):
        with open(path, "rb") as f:
            out[os.path.basename(path)] = figures(pickle.load(f))
    with open(os.path.join(DIR, "real_expected.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
