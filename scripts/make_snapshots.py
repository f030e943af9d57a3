#!/usr/bin/env python3
"""Writes the memory-snapshot test files under tests/data/snapshots/ (no torch needed).

The layout is the one `torch.cuda.memory._dump_snapshot` pickles, from the TypedDicts `Segment`,
`Block`, `Frame`, `TraceEntry` in PyTorch `torch/cuda/memory.py` (v2.5.0): a dict with `segments`
(each with `blocks`) and `device_traces` (one event list per device, with `frames`). The events
replay a small training step the way the caching allocator would record it: parameters moved by
`Module._apply`, a cuBLAS workspace, forward layer by layer (saved activations and freed
temporaries), the loss, backward (`AccumulateGrad` gradients, saved activations freed), and Adam's
`_init_group` state plus `_multi_tensor_adam` temporaries. Sizes are multiples of 512 B (the
allocator's granule). The expected figures go to expected.json beside the files.

Run: python3 scripts/make_snapshots.py   (Python 3.8+, standard library only)
"""
import datetime
import json
import os
import pickle

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "snapshots")
MIB = 1 << 20
SEGMENT = 20 * MIB


def fr(filename, name, line=1):
    return {"filename": filename, "line": line, "name": name}


TRAIN = fr("train.py", "train_step", 40)
FWD = [fr("model.py", "forward", 12), fr("torch/nn/modules/module.py", "_call_impl", 1562), TRAIN]
BWD = [fr("torch/autograd/graph.py", "_engine_run_backward", 825),
       fr("torch/_tensor.py", "backward", 581), TRAIN]
GRAD = [fr("", "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)", 0)] + BWD
INIT = [fr("torch/nn/modules/module.py", "_apply", 780), fr("torch/nn/modules/module.py", "to", 1152),
        fr("train.py", "<module>", 10)]
OPT_INIT = [fr("torch/optim/adam.py", "_init_group", 150), fr("torch/optim/adam.py", "step", 220), TRAIN]
OPT_TMP = [fr("torch/optim/adam.py", "_multi_tensor_adam", 600), fr("torch/optim/adam.py", "step", 230), TRAIN]
CUBLAS = [fr("", "at::cuda::getCUDABlasLtWorkspace()", 0)] + FWD


class Sim:
    def __init__(self, device=0):
        self.events, self.live, self.next_addr = [], {}, 0x7F0000000000
        self.allocated = self.reserved = 0
        self.device = device
        self.peak = (0, 0, {})
        self.kind_of = {}
        self.segments = []

    def _grow(self):
        while self.allocated > self.reserved:
            addr = 0x7E0000000000 + self.reserved
            self.events.append({"action": "segment_alloc", "addr": addr, "size": SEGMENT,
                                "stream": 0, "frames": [], "time_us": len(self.events)})
            self.segments.append(addr)
            self.reserved += SEGMENT

    def alloc(self, size, frames, kind, record=True):
        addr = self.next_addr
        self.next_addr += size
        self.live[addr] = size
        self.kind_of[addr] = kind
        self.allocated += size
        if record:
            self._grow()
            self.events.append({"action": "alloc", "addr": addr, "size": size, "stream": 0,
                                "frames": frames, "time_us": len(self.events)})
        else:
            while self.allocated > self.reserved:
                self.segments.append(0x7E0000000000 + self.reserved)
                self.reserved += SEGMENT
        self._track()
        return addr

    def free(self, addr, frames):
        size = self.live.pop(addr)
        self.allocated -= size
        for action in ("free_requested", "free_completed"):
            self.events.append({"action": action, "addr": addr, "size": size, "stream": 0,
                                "frames": frames, "time_us": len(self.events)})
        self._track()

    def _track(self):
        if self.allocated > self.peak[0]:
            by = {}
            for a, s in self.live.items():
                by[self.kind_of[a]] = by.get(self.kind_of[a], 0) + s
            self.peak = (self.allocated, self.reserved, by)

    def snapshot(self):
        blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated",
                   "frames": []} for a, s in sorted(self.live.items())]
        free = self.reserved - self.allocated
        segs = []
        for i, addr in enumerate(self.segments):
            segs.append({"device": self.device, "address": addr, "total_size": SEGMENT,
                         "allocated_size": 0, "active_size": 0, "requested_size": 0, "stream": 0,
                         "segment_type": "large", "is_expandable": False, "frames": [],
                         "blocks": blocks if i == 0 else []})
        if segs:
            segs[0]["blocks"] = blocks + [{"address": 0, "size": free, "requested_size": 0,
                                           "state": "inactive", "frames": []}]
        traces = [[] for _ in range(self.device)] + [self.events]
        return {"segments": segs, "device_traces": traces,
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None}}


def training(layers=4, param=4 * MIB, act=3 * MIB, tmp=2 * MIB):
    s = Sim()
    params = [s.alloc(param, INIT, "before_recording", record=False) for _ in range(2)]
    params += [s.alloc(param, INIT, "parameters") for _ in range(layers - 2)]
    s.alloc(1 * MIB, CUBLAS, "workspaces")
    saved = []
    for _ in range(layers):
        saved.append(s.alloc(act, FWD, "saved_activations"))
        t = s.alloc(tmp, FWD, "temporaries")
        s.free(t, FWD)
    # Alive from the loss to its backward: saved for backward like any activation.
    logits = s.alloc(6 * MIB, FWD, "saved_activations")
    grads = []
    for i in reversed(range(layers)):
        grads.append(s.alloc(param, GRAD, "gradients"))
        if i == layers - 1:
            s.free(logits, BWD)
        t = s.alloc(tmp, BWD, "temporaries")
        s.free(t, BWD)
        s.free(saved[i], BWD)
    for _ in range(layers):
        s.alloc(param, OPT_INIT, "optimizer_state")
        s.alloc(param, OPT_INIT, "optimizer_state")
    t = s.alloc(2 * param, OPT_TMP, "temporaries")
    s.free(t, OPT_TMP)
    return s


def demo(layers=32, param=503_316_480, ckpt=33_554_432, recompute=402_653_184, logits=2_101_346_304):
    """A demo run shaped like the bundled preset llama3-8b-full-finetune-h100 (bf16 weights,
    gradients and two 8-bit-free bf16 Adam moments per layer, full checkpointing, fp32 logits): the
    README screenshot. Sizes are the generator's choices, not a measurement."""
    s = Sim()
    s_seg = 2 << 30
    global SEGMENT
    saved_segment, SEGMENT = SEGMENT, s_seg
    for _ in range(layers):
        s.alloc(param, INIT, "parameters")
    s.alloc(32 * MIB, CUBLAS, "workspaces")
    saved = []
    for _ in range(layers):
        saved.append(s.alloc(ckpt, FWD, "saved_activations"))
        t = s.alloc(recompute // 4, FWD, "temporaries")
        s.free(t, FWD)
    out = s.alloc(logits, FWD, "saved_activations")
    up = s.alloc(logits, FWD, "temporaries")
    s.free(up, FWD)
    for i in reversed(range(layers)):
        t = s.alloc(recompute, BWD, "temporaries")
        if i == layers - 1:
            s.free(out, BWD)
        s.alloc(param, GRAD, "gradients")
        s.free(t, BWD)
        s.free(saved[i], BWD)
    for _ in range(layers):
        s.alloc(param // 2, OPT_INIT, "optimizer_state")
        s.alloc(param // 2, OPT_INIT, "optimizer_state")
    t = s.alloc(2 * param, OPT_TMP, "temporaries")
    s.free(t, OPT_TMP)
    SEGMENT = saved_segment
    return s


def main():
    os.makedirs(OUT, exist_ok=True)
    sim = training()
    snap = sim.snapshot()
    files = {
        "training_step.pickle": pickle.dumps(snap, protocol=4),
        "training_step_protocol2.pickle": pickle.dumps(snap, protocol=2),
        "training_step_protocol0.pickle": pickle.dumps(snap, protocol=0),
        "no_history.pickle": pickle.dumps({"segments": snap["segments"], "device_traces": []}, protocol=4),
        "truncated.pickle": pickle.dumps(snap, protocol=4)[: 3000],
        "wrong_type.pickle": pickle.dumps({"segments": [{"total_size": "large"}], "device_traces": []}, protocol=4),
        "object_reference.pickle": pickle.dumps({"segments": [datetime.date(2024, 1, 1)]}, protocol=4),
        # A string that says it is 2^62 bytes long (then ends).
        "huge_count.pickle": b"\x80\x04\x8d" + (1 << 62).to_bytes(8, "little") + b"abc",
        # 100,000 nested lists (the deserialiser would recurse 100,000 deep).
        "deep_nesting.pickle": b"\x80\x02" + b"]" * 100_000 + b"a" * 99_999 + b".",
        # 30 levels of a list holding the previous level twice: 2^30 elements once expanded.
        "shared_blowup.pickle": b"\x80\x02]q\x00" + b"".join(
            b"(h" + bytes([i]) + b"h" + bytes([i]) + b"lq" + bytes([i + 1]) for i in range(30)) + b".",
    }
    files["demo_llama3_8b_step.pickle"] = pickle.dumps(demo().snapshot(), protocol=4)
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    allocated, reserved, by = sim.peak
    expected = {"allocated_peak": allocated, "reserved_at_peak": reserved,
                "reserved_peak": sim.reserved, "at_peak": by, "events": len(sim.events)}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(expected, sort_keys=True))


if __name__ == "__main__":
    main()
