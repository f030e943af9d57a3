#!/usr/bin/env python3
"""What one frozen linear keeps for backward: plain nn.Linear vs bitsandbytes Linear4bit (NF4), bare and wrapped by
PEFT LoRA, measured with the tracker (forward and backward peaks also by torch.profiler: the allocator sees the
temporaries inside bitsandbytes custom ops, which a TorchDispatchMode cannot). saved_for_backward = bytes live at
the end of the forward beyond weights, the leaf input and the output (see probe()).

    python probe_linear4bit.py            # prints a JSON table
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from tracker import StorageTracker, profile_peak_delta  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

B, S, H, F = 2, 256, 256, 688


def make(kind, compute, quant="nf4", dq=False, lora=False):
    torch.manual_seed(0)
    if kind == "linear":
        layer = torch.nn.Linear(H, F, bias=False).to(compute)
    else:
        import bitsandbytes as bnb
        layer = bnb.nn.Linear4bit(H, F, bias=False, compute_dtype=compute, quant_type=quant, compress_statistics=dq)
        layer.weight = bnb.nn.Params4bit(torch.randn(F, H) * 0.02, requires_grad=False, quant_type=quant,
                                         compress_statistics=dq)._quantize("cpu")
        layer.support_avx512bf16_for_cpu = False
    layer.weight.requires_grad_(False)
    if lora:
        from peft import LoraConfig, get_peft_model
        m = torch.nn.Sequential()
        m.add_module("proj", layer)
        layer = get_peft_model(m, LoraConfig(r=8, lora_alpha=16, target_modules=["proj"], lora_dropout=0.0))
    return layer


def probe(name, layer, in_dtype):
    """x0 is a leaf that requires grad; the layer's input h = x0 * 2 (a mul by a constant saves nothing) is not
    referenced after the forward, so it stays live only if the layer saved it (or a copy of it)."""
    x0 = torch.randn(B, S, H, dtype=in_dtype, requires_grad=True)
    g_bytes = [0]
    tr = StorageTracker()
    with tr:
        tr.begin_region("fwd")
        tr.label([x0], "inputs")
        tr.classify_model(layer)
        tr.mark("start")
        tr.set_phase("forward")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as pf:
            h = x0 * 2.0
            y = layer(h)
            del h
        tr.label([y], "output")
        tr.mark("end_forward")
        tr.set_phase("backward")
        g = torch.ones_like(y)
        g_bytes[0] = g.numel() * g.element_size()
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as pb:
            y.backward(g)
        del y, g
        r = tr.end_region()
    ef = r["live_at"]["end_forward"]["detail"]
    saved = sum(v for k, v in ef.items() if k not in ("inputs", "output"))
    at_bwd = r["live_at"]["end_forward"]["total"] + g_bytes[0]
    return dict(probe=name, layer_input_bytes=x0.numel() * x0.element_size(), output_bytes=ef.get("output", 0),
                saved_for_backward=saved, saved_detail={k: v for k, v in ef.items() if k not in ("inputs", "output")},
                forward_peak_tracker=r["phase_peaks"].get("forward", 0) - r["start_total"],
                forward_peak_allocator=profile_peak_delta(pf)[0],
                backward_peak_tracker=r["phase_peaks"].get("backward", 0) - at_bwd,
                backward_peak_allocator=profile_peak_delta(pb)[0])


def main():
    torch.set_num_threads(2)
    rows = []
    f32, bf16 = torch.float32, torch.bfloat16
    rows.append(probe("nn.Linear frozen fp32", make("linear", f32), f32))
    rows.append(probe("nn.Linear frozen fp32 + LoRA r8", make("linear", f32, lora=True), f32))
    rows.append(probe("Linear4bit nf4 compute fp32", make("4bit", f32), f32))
    rows.append(probe("Linear4bit nf4+dq compute fp32", make("4bit", f32, dq=True), f32))
    rows.append(probe("Linear4bit nf4 compute bf16, fp32 input", make("4bit", bf16), f32))
    rows.append(probe("Linear4bit nf4 compute bf16, bf16 input", make("4bit", bf16), bf16))
    rows.append(probe("Linear4bit nf4 compute fp32 + LoRA r8", make("4bit", f32, lora=True), f32))
    rows.append(probe("Linear4bit nf4 compute bf16 + LoRA r8, fp32 input", make("4bit", bf16, lora=True), f32))
    import bitsandbytes
    import peft
    print(json.dumps(dict(shape=dict(b=B, s=S, h=H, f=F), torch=torch.__version__,
                          bitsandbytes=bitsandbytes.__version__, peft=peft.__version__, rows=rows), indent=1))


if __name__ == "__main__":
    main()
