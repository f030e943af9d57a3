#!/usr/bin/env python3
"""Eager decode: the aten ops one decode step of Hugging Face `generate` dispatches per decoder layer and per
step, and their CPU cost here (issue 13: a served request's fixed overhead). Each non-view aten op of an eager
CUDA run is one kernel launch from Python, so the count is what an eager GPU step issues. Evidence for
`PartsTiming::eager_op_us` and `estimator::performance::launch` (docs/time-model.md "Fixed overhead per forward").

Run: /work/venvs-measure/hf/bin/python decode_ops_probe.py   (transformers 5.24.0, torch 2.15.0, CPU)
"""
import collections, json, statistics, sys, time
import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

# Ops that only make a view or metadata: no kernel on a GPU.
VIEWS = {"view", "_unsafe_view", "transpose", "t", "expand", "slice", "select", "unsqueeze", "squeeze",
         "as_strided", "detach", "alias", "permute", "split", "split_with_sizes", "unbind", "lift_fresh",
         "empty", "empty_strided", "_reshape_alias", "unflatten", "sym_size", "sym_stride", "is_same_size",
         "_local_scalar_dense", "resolve_conj", "resolve_neg", "result_type"}


class Count(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name not in VIEWS:
            self.ops[name] += 1
        return func(*args, **(kwargs or {}))


def model(layers, attn, dtype=torch.float32):
    cfg = LlamaConfig(dtype=dtype, vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                      attn_implementation=attn)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(dtype).eval()


def decode_ops(layers, attn):
    """Counted in BF16, as GPUs serve: each RMSNorm then casts to FP32 and back (two more ops)."""
    m = model(layers, attn, torch.bfloat16)
    ids = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        cache = DynamicCache(config=m.config)
        out = m(input_ids=ids, past_key_values=cache, use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        c = Count()
        with c:
            m(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
    return c.ops


def step_time(layers, attn, steps=200):
    """Wall time of one eager decode step at tiny sizes (compute negligible): the per-op CPU cost."""
    m = model(layers, attn, torch.bfloat16)
    torch.set_num_threads(1)
    ids = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        out = m(input_ids=ids, past_key_values=DynamicCache(config=m.config), use_cache=True)
        cache, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        ts = []
        for _ in range(steps):
            t0 = time.perf_counter()
            o = m(input_ids=nxt, past_key_values=cache, use_cache=True)
            ts.append(time.perf_counter() - t0)
            nxt = o.logits[:, -1:].argmax(-1)
    return statistics.median(ts)


def generate_token_time(layers, new=64):
    """Wall time per generated token of greedy `generate` (its loop, logits processing and stopping checks
    included), from the difference of two lengths so the prefill cancels."""
    m = model(layers, "sdpa", torch.bfloat16)
    torch.set_num_threads(1)
    m.generation_config.pad_token_id = 0
    ids = torch.randint(0, 256, (1, 16))
    def run(n):
        with torch.no_grad():
            t0 = time.perf_counter()
            m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                       do_sample=False, disable_compile=True)
            return time.perf_counter() - t0
    run(8)
    return (statistics.median(run(2 * new) for _ in range(5)) - statistics.median(run(new) for _ in range(5))) / new


def main():
    # Host times are noisy on a shared machine and noise only adds: each is the lowest of three runs.
    counts = {}
    for attn in ("sdpa", "eager"):
        a, b = decode_ops(2, attn), decode_ops(4, attn)
        per_layer = (sum(b.values()) - sum(a.values())) / 2
        counts[attn] = {"ops_per_layer": per_layer, "ops_outside_layers": sum(a.values()) - 2 * per_layer,
                        "layer_ops": {k: (b[k] - a[k]) / 2 for k in sorted(b) if b[k] != a[k]}}
    op_us = min((step_time(6, "sdpa") - step_time(2, "sdpa")) / 4 * 1e6 / counts["sdpa"]["ops_per_layer"]
                for _ in range(3))
    runs = [(generate_token_time(2), generate_token_time(6)) for _ in range(3)]
    outside = min((g2 - 2 * (g6 - g2) / 4) * 1e6 for g2, g6 in runs)
    print(json.dumps({
        "source": "scripts/measure/decode_ops_probe.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
        "model": "LlamaForCausalLM, hidden 64, 4 heads / 2 KV heads, FFN 128, vocab 256, BF16, CPU, 1 thread",
        "decode_ops": counts,
        "eager_op_us": round(op_us, 1),
        "generate_outside_layers_us": round(outside, 1),
        "generate_loop_us": round(outside - counts["sdpa"]["ops_outside_layers"] * op_us, 1),
    }, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
