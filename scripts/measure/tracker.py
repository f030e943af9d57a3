#!/usr/bin/env python3
# Origin: shared/tools/measure/tracker.py, the team's live-storage accountant (the method behind
# shared/reference/measured/ and tests/data/measured/pytorch-cpu-steps.json), copied into this repository for
# issue 12 ("Measure, don't guess") so that the records under tests/data/measured/ can be reproduced from the repo
# alone. Changes made here (issue 12):
#   * tensor subclasses are unwrapped: a traceable wrapper subclass (one with __tensor_flatten__: DTensor under
#     FSDP2 -> _local_tensor, torchao NF4Tensor -> quantized data and scalers, ...) is counted as the storages of
#     its inner tensors, recursively, never as the wrapper's own (data-less) storage;
#   * bitsandbytes Params4bit (a plain nn.Parameter subclass over a packed uint8 storage) is counted once with its
#     real bytes, and the tensors of its quant_state (absmax, code, nested state2 absmax/code/offset) are
#     registered and labelled as parameters too (classify_model);
#   * profile_peak_delta(): the torch.profiler(profile_memory=True) cross-check used for "allocator_check".
"""Live tensor-storage accounting for PyTorch (CPU or GPU): the method behind reference/measured/.

Extracted from the harness that produced reference/measured/pytorch-cpu-steps.json, so that new frameworks
(LitGPT, torchtune, PEFT + bitsandbytes, Megatron-Core where it runs, other Hugging Face architectures) can be
measured the same way. Usage (the pattern the reference harness used for one steady-state training step; see README.md):

    tr = StorageTracker()
    with tr:
        tr.begin_region("step2")
        tr.label([input_ids, labels], "inputs")
        tr.classify_model(model, optimizer)     # parameters, buffers, optimizer state
        tr.mark("start")
        tr.set_phase("forward");   loss = compute_loss(model, batch)
        tr.mark("end_forward")
        tr.set_phase("backward");  loss.backward(); del loss
        tr.classify_model(model, optimizer); tr.mark("end_backward")
        tr.set_phase("optimizer"); optimizer.step()
        tr.classify_model(model, optimizer); tr.mark("end_optimizer")
        tr.set_phase("zero_grad"); optimizer.zero_grad(set_to_none=True); tr.mark("end_step")
        tr.end_region()
    record = tr.regions["step2"]   # peak_total, peak_breakdown, phase_peaks, live_at, peak_op ...

Run the step once before measuring (optimizer state is created lazily in the first step).
"""
from __future__ import annotations
import weakref
import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass

class StorageTracker(TorchDispatchMode):
    """Exact accounting of live tensor storage bytes (see module docstring)."""

    ATTN_OPS = ("attention", "_softmax", "native_dropout", "bmm", "baddbmm", "matmul")

    def __init__(self):
        super().__init__()
        self.by_obj: dict[int, int] = {}  # id(storage) -> rid
        self.refs: dict[int, weakref.ref] = {}  # rid -> weakref (keeps callback alive)
        self.live: dict[int, list] = {}  # rid -> [nbytes, phase_created, tag]
        self.cur = 0
        self.next_rid = 0
        self.phase = "setup"
        self.op_idx = 0
        self.cur_op = None
        self.cat: dict[int, str] = {}  # rid -> fixed category (param/buffer/grad/optimizer_state/kv_cache/logits/...)
        self.region = None
        self.regions: dict[str, dict] = {}
        self.op_counts: dict[str, dict[str, int]] = {}

    # ---- storage bookkeeping --------------------------------------------------------
    def _on_free(self, rid, _ref):
        rec = self.live.get(rid)
        if rec is None:
            return
        if self.region is not None and self.region["pending"]:
            self._snapshot()
        del self.live[rid]
        self.refs.pop(rid, None)
        self.cur -= rec[0]

    def track_tensor(self, t, tag=None):
        """Register the storage behind t; returns its rid (for a wrapper subclass: the rid of its first inner
        storage; every inner storage is registered)."""
        if not isinstance(t, torch.Tensor) or t.device.type == "meta":
            return None
        if is_wrapper_subclass(t):
            rids = [self.track_tensor(i, tag) for i in inner_tensors(t)]
            rids = [r for r in rids if r is not None]
            return rids[0] if rids else None
        try:
            st = t.untyped_storage()
        except Exception:  # sparse / nested etc.
            return None
        key = id(st)
        rid = self.by_obj.get(key)
        n = st.nbytes()
        if rid is not None and rid in self.live:
            rec = self.live[rid]
            if rec[0] != n:  # storage resized (out= variants)
                self.cur += n - rec[0]
                rec[0] = n
                self._after_grow()
            return rid
        rid = self.next_rid
        self.next_rid += 1
        self.by_obj[key] = rid
        self.live[rid] = [n, self.phase, tag]

        def _cb(ref, rid=rid, key=key, self_ref=weakref.ref(self)):
            s = self_ref()
            if s is not None:
                if s.by_obj.get(key) == rid:
                    del s.by_obj[key]
                s._on_free(rid, ref)

        self.refs[rid] = weakref.ref(st, _cb)
        if n:
            self.cur += n
            self._after_grow()
        return rid

    def storage_resized(self, st):
        """A storage resized in place through the storage API (`UntypedStorage.resize_`, no aten op: FSDP1's
        flat parameter and FSDP2's all-gather outputs are allocated and freed this way): re-sync its bytes now."""
        rid = self.by_obj.get(id(st))
        rec = self.live.get(rid) if rid is not None else None
        if rec is None:
            return
        n = st.nbytes()
        if n < rec[0] and self.region is not None and self.region["pending"]:
            self._snapshot()
        self.cur += n - rec[0]
        rec[0] = n
        if n > 0:
            self._after_grow()

    def _after_grow(self):
        r = self.region
        if r is None:
            return
        if self.cur > r["peak"]:
            r["peak"] = self.cur
            r["pending"] = True
            r["peak_phase"] = self.phase
            r["peak_op"] = self.cur_op
            r["peak_op_idx"] = self.op_idx
        pp = r["phase_peaks"]
        if self.cur > pp.get(self.phase, 0):
            pp[self.phase] = self.cur

    def _snapshot(self):
        r = self.region
        r["peak_snapshot"] = {rid: (v[0], v[1], v[2]) for rid, v in self.live.items()}
        r["pending"] = False

    # ---- dispatch ------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
        self.cur_op = name
        self.op_idx += 1
        for a in flat_tensors(pytree.tree_leaves((args, kwargs))):
            if id_safe(a) and self.by_obj.get(id(a.untyped_storage())) is None:
                self.track_tensor(a, tag="preexisting_input")
        out = func(*args, **kwargs)
        tag = None
        if name == "_to_copy" and args and isinstance(args[0], torch.Tensor) and not is_wrapper_subclass(args[0]):
            src = self.by_obj.get(id(args[0].untyped_storage()))
            if src is not None and self.cat.get(src) == "params":
                tag = "autocast_param_casts"
        for o in pytree.tree_leaves(out):
            if isinstance(o, torch.Tensor):
                self.track_tensor(o, tag=tag)
        if self.region is not None and any(k in name for k in self.ATTN_OPS):
            d = self.op_counts.setdefault(self.region["name"], {})
            key = f"{self.phase}:{name}"
            d[key] = d.get(key, 0) + 1
        return out

    # ---- classification ------------------------------------------------------------
    def _rid_of(self, t):
        if not isinstance(t, torch.Tensor) or is_wrapper_subclass(t) or t.device.type == "meta":
            return None
        st = t.untyped_storage()
        rid = self.by_obj.get(id(st))
        if rid is None:
            rid = self.track_tensor(t)
        return rid

    def label(self, tensors, category):
        for t in flat_tensors(tensors):
            rid = self._rid_of(t)
            if rid is not None and rid not in self.cat:
                self.cat[rid] = category

    def classify_model(self, model, optimizer=None):
        # order matters: first label wins (a grad can never be a param, etc.)
        self.label(list(model.parameters()), "params")
        self.label(quant_state_tensors(model), "params")  # bitsandbytes 4-bit absmax/code (not buffers)
        self.label(list(model.buffers()), "buffers")
        self.label([p.grad for p in model.parameters() if p.grad is not None], "grads")
        if optimizer is not None:
            ts = [t for st in optimizer.state.values() for t in pytree.tree_leaves(st) if isinstance(t, torch.Tensor)]
            self.label(ts, "optimizer_states")

    def category_of(self, rid, phase_created, tag):
        c = self.cat.get(rid)
        if c is not None:
            return c
        if tag is not None:
            return tag
        return f"created_in_{phase_created}"

    def breakdown(self, items) -> dict:
        """items: iterable of (rid, nbytes, phase_created, tag) -> category totals."""
        out: dict[str, int] = {}
        for rid, n, ph, tag in items:
            c = self.category_of(rid, ph, tag)
            out[c] = out.get(c, 0) + n
        return summarize(out)

    def live_breakdown(self):
        return self.breakdown((rid, v[0], v[1], v[2]) for rid, v in self.live.items())

    # ---- regions -------------------------------------------------------------------
    def begin_region(self, name):
        self.op_idx = 0
        self.phase = "start"
        self.region = dict(name=name, peak=self.cur, pending=True, peak_phase="start", peak_op=None,
                           peak_op_idx=0, phase_peaks={}, start_total=self.cur, boundaries={},
                           peak_snapshot=None)

    def set_phase(self, phase):
        self.phase = phase

    def mark(self, label):
        if label == "start":  # pre-existing storages (params, optimizer state, inputs) are registered now
            self.region["start_total"] = self.cur
        self.region["boundaries"][label] = self.live_breakdown()

    def end_region(self):
        r = self.region
        if r["pending"]:
            self._snapshot()
        snap = r.pop("peak_snapshot") or {}
        res = dict(
            peak_total=r["peak"],
            peak_phase=r["peak_phase"],
            peak_op=r["peak_op"],
            peak_op_index=r["peak_op_idx"],
            n_ops=self.op_idx,
            start_total=r["start_total"],
            peak_breakdown=self.breakdown((rid, v[0], v[1], v[2]) for rid, v in snap.items()),
            phase_peaks=r["phase_peaks"],
            live_at=r["boundaries"],
        )
        self.regions[r["name"]] = res
        self.region = None
        return res


def is_wrapper_subclass(t) -> bool:
    """A traceable wrapper subclass (DTensor, torchao NF4Tensor, ...): its own storage holds no data; the data are
    in the inner tensors named by __tensor_flatten__. Plain Parameter subclasses (bitsandbytes Params4bit,
    Int8Params) are not wrappers: their storage is the data and is counted as it is."""
    return type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter and hasattr(t, "__tensor_flatten__") \
        and is_traceable_wrapper_subclass(t)


def inner_tensors(t):
    """The inner tensors of a wrapper subclass, recursively unwrapped (DTensor -> _local_tensor; NF4Tensor ->
    quantized_data, quantized_scalers, quantization_factor, scaler_mean, nf4)."""
    names, _ctx = t.__tensor_flatten__()
    out = []
    for n in names:
        i = getattr(t, n)
        if isinstance(i, torch.Tensor):
            out.extend(inner_tensors(i) if is_wrapper_subclass(i) else [i])
    return out


def flat_tensors(items):
    """Tensors in items with every wrapper subclass replaced by its inner tensors."""
    out = []
    for a in items:
        if isinstance(a, torch.Tensor):
            out.extend(inner_tensors(a) if is_wrapper_subclass(a) else [a])
    return out


def quant_state_tensors(model):
    """Tensors of bitsandbytes 4-bit quant states (Params4bit.quant_state: absmax, code, offset, nested state2)."""
    out, seen = [], set()

    def walk(qs, depth=0):
        if qs is None or depth > 3 or id(qs) in seen:
            return
        seen.add(id(qs))
        for n in ("absmax", "code", "offset"):
            v = getattr(qs, n, None)
            if isinstance(v, torch.Tensor):
                out.append(v)
        walk(getattr(qs, "state2", None), depth + 1)

    for p in model.parameters():
        walk(getattr(p, "quant_state", None))
    return out


def quant_state_bytes(model) -> int:
    seen, n = set(), 0
    for t in quant_state_tensors(model):
        st = t.untyped_storage()
        if id(st) not in seen:
            seen.add(id(st))
            n += st.nbytes()
    return n


def profile_peak_delta(prof) -> tuple[int, int]:
    """torch.profiler(profile_memory=True) cross-check: (peak of the running sum of the CPU allocator's
    alloc/free events, number of events). The running sum starts at 0 when the profiler starts, so this is the
    allocator's peak above what was live when profiling began: compare with peak_total - start_total."""
    evs = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    evs.sort(key=lambda e: e.start_ns())
    cur = peak = 0
    for e in evs:
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak, len(evs)


def id_safe(t):
    try:
        t.untyped_storage()
        return True
    except Exception:
        return False


MAIN_CATS = ("params", "grads", "optimizer_states")


def summarize(d: dict) -> dict:
    """Fold detail categories into the 4 requested ones, keep the detail."""
    main = {k: d.get(k, 0) for k in MAIN_CATS}
    other = {k: v for k, v in d.items() if k not in MAIN_CATS}
    main["activations_temporaries"] = sum(other.values())
    main["total"] = sum(d.values())
    main["detail"] = dict(sorted(other.items()))
    return main


class watch_storage_resize:
    """Routes `torch.UntypedStorage.resize_` (a Python-level call that no TorchDispatchMode sees) to
    `tracker.storage_resized` while active."""

    def __init__(self, tracker):
        self.tracker = tracker
        self.orig = None

    def __enter__(self):
        self.orig = orig = torch.UntypedStorage.resize_
        tr = self.tracker

        def resize_(st, size):
            out = orig(st, size)
            tr.storage_resized(st)
            return out

        torch.UntypedStorage.resize_ = resize_
        return self

    def __exit__(self, *exc):
        torch.UntypedStorage.resize_ = self.orig

