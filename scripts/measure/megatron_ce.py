#!/usr/bin/env python3
"""Megatron-Core's vocab-parallel cross-entropy alone (tensor-parallel size 1, gloo, one CPU process), measured
with the tracker, beside torch's cross_entropy on the same logits (what HF's ForCausalLMLoss does after its FP32
upcast). A full Megatron training step needs CUDA (fused kernels, TE); this function is plain torch.

    python megatron_ce.py > ../../tests/data/measured/megatron-core-cross-entropy.json
    torchrun --nproc-per-node 2 megatron_ce.py > /tmp/ce-tp2.json   # TP 2: Megatron's rows, rank 0's
"""
import json
import os
import sys
from importlib import metadata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tracker import StorageTracker, profile_peak_delta  # noqa: E402

S, B, V = 256, 2, 32000


H = 64  # the hidden size of the stand-in output layer


def measure(name, fn, dtype, tp=1):
    """The logits are the output of a stand-in output layer (hidden [s, b, H] that requires grad @ a frozen
    [V, H] weight), as in a model: nothing but autograd holds them after the forward, and their gradient flows
    into the layer's matmul (no .grad of b·s·V is kept)."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(S, B, H, generator=g).to(dtype).requires_grad_(True)
    weight = (torch.randn(V // tp, H, generator=g) * 0.1).to(dtype)
    target = torch.randint(0, V, (S, B), generator=g)
    tr = StorageTracker()
    with tr:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            tr.begin_region(name)
            tr.label([hidden, weight], "params")
            tr.label([target], "inputs")
            tr.mark("start")
            tr.set_phase("forward")
            loss = fn(hidden @ weight.t(), target)
            tr.mark("end_forward")
            tr.set_phase("backward")
            loss.backward()
            del loss
            tr.label([hidden.grad], "grads")
            tr.mark("end_backward")
            r = tr.end_region()
    logits_bytes = S * B * (V // tp) * torch.empty((), dtype=dtype).element_size()
    ef = r["live_at"]["end_forward"]
    ap, n = profile_peak_delta(prof)
    return dict(name=name, tp=tp, logits_shape=[S, B, V // tp], logits_dtype=str(dtype).replace("torch.", ""),
                logits_bytes=logits_bytes,
                saved_for_backward=ef["total"] - r["start_total"],
                forward_peak_above_start=r["phase_peaks"].get("forward", 0) - r["start_total"],
                backward_peak_above_start=r["phase_peaks"].get("backward", 0) - r["start_total"],
                peak_op=r["peak_op"], end_forward=ef, end_backward=r["live_at"]["end_backward"],
                allocator_check=dict(allocator_peak_delta=ap, tracker_peak_delta=r["peak_total"] - r["start_total"],
                                     diff_bytes=ap - (r["peak_total"] - r["start_total"]), n_alloc_events=n))


def main():
    torch.set_num_threads(2)
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29561")
    tp = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    dist.init_process_group("gloo", rank=rank, world_size=tp)
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)
    from megatron.core.tensor_parallel.cross_entropy import vocab_parallel_cross_entropy

    def mcore(lg, t):
        return vocab_parallel_cross_entropy(lg, t).sum()

    def mcore_float(lg, t):  # as GPTModel.compute_language_model_loss does for 16-bit logits (see the doc)
        return vocab_parallel_cross_entropy(lg.float(), t).sum()

    def torch_ce(lg, t):  # HF ForCausalLMLoss: logits.float() then cross_entropy (log_softmax + nll)
        return torch.nn.functional.cross_entropy(lg.float().view(-1, V), t.view(-1), reduction="sum")

    if tp > 1:  # each rank holds V/TP of the vocabulary: Megatron's rows only, rank 0's printed
        rows = [measure(f"megatron vocab_parallel_cross_entropy fp32 tp{tp}", mcore, torch.float32, tp),
                measure(f"megatron vocab_parallel_cross_entropy bf16 logits tp{tp}", mcore, torch.bfloat16, tp),
                measure(f"megatron vocab_parallel_cross_entropy bf16 logits .float() tp{tp}", mcore_float,
                        torch.bfloat16, tp)]
        if rank == 0:
            print(json.dumps(dict(rows=rows), indent=1))
        dist.destroy_process_group()
        return
    rows = [measure("megatron vocab_parallel_cross_entropy fp32", mcore, torch.float32),
            measure("torch cross_entropy fp32 (HF ForCausalLMLoss)", torch_ce, torch.float32),
            measure("megatron vocab_parallel_cross_entropy bf16 logits", mcore, torch.bfloat16),
            measure("megatron vocab_parallel_cross_entropy bf16 logits .float()", mcore_float, torch.bfloat16),
            measure("torch cross_entropy bf16 logits .float() (HF ForCausalLMLoss)", torch_ce, torch.bfloat16)]
    env = {p: metadata.version(p) for p in ("megatron-core",)}
    env.update(torch=torch.__version__, threads=torch.get_num_threads())
    print(json.dumps(dict(env=env, shape=dict(s=S, b=B, V=V), rows=rows), indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
