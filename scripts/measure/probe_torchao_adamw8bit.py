"""What torchao's AdamW8bit step allocates beside the parameter, its gradient and its states.

Issue 12 (torchtune README "Optimization flags", the "+ 8-bit AdamW" row). torchao 0.6.1
`torchao/prototype/low_bit_optim/adam.py` `_AdamBase.step` runs
`torch.compile(single_param_adam, fullgraph=True, dynamic=False)` once per parameter; inside,
`exp_avg.lerp(grad, 1 - beta1)` dequantizes the 8-bit state (`OptimState8bit`, codes + an FP32
scale per 256-element block) and `exp_avg.copy_(new_exp_avg)` re-quantizes it. What inductor
materialises for that graph is what the step holds on top of the model states.

The probe steps one BF16 parameter twice (the first call compiles and creates the states) and records,
for the second step:
- the peak of the CPU allocator's live bytes (torch.profiler `profile_memory=True`, the `[memory]`
  events of the step in time order), beside what existed before it;
- the buffers inductor's generated wrapper allocates (`TORCH_LOGS=output_code`, the
  `empty_strided_cpu(...)` lines), as a cross-check of the same figure.

Inductor decides which intermediates to realise before it generates code for a backend, so the
buffers are those of the graph, not of the CPU; a CUDA build fuses into Triton kernels instead of
C++ loops, which this probe cannot run. Run:
    python probe_torchao_adamw8bit.py OUT.json
"""

import json
import os
import platform
import re
import subprocess
import sys
from datetime import date

import torch
import torchao
from torch.profiler import ProfilerActivity, profile
from torchao.prototype.low_bit_optim import AdamW8bit


def step_peak(rows: int, cols: int) -> dict:
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(rows, cols, dtype=torch.bfloat16))
    p.grad = torch.randn_like(p)
    opt = AdamW8bit([p], lr=1e-3)
    opt.step()  # compiles the step for this shape and creates the 8-bit states
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        opt.step()
    events = sorted(
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]"
    )
    live = peak = 0
    for _, b in events:
        live += b
        peak = max(peak, live)
    n = rows * cols
    return {
        "shape": [rows, cols],
        "elements": n,
        "step_peak_bytes": peak,
        "step_peak_bytes_per_element": peak / n,
        "allocator_events": len(events),
    }


def inductor_buffers(rows: int, cols: int) -> list:
    """The `empty_strided_cpu` buffers of the compiled step's wrapper code (a child process run
    with `TORCH_LOGS=output_code`, which logs the generated module)."""
    env = dict(os.environ, TORCH_LOGS="output_code")
    child = subprocess.run(
        [sys.executable, __file__, "--step", str(rows), str(cols)],
        env=env, capture_output=True, text=True, check=True,
    )
    sizes = {"torch.float32": 4, "torch.bfloat16": 2, "torch.uint8": 1}
    out = []
    for name, shape, dtype in re.findall(
        r"(buf\d+) = empty_strided_cpu\(\(([\d, ]+)\), \([\d, ]+\), (torch\.\w+)\)",
        child.stderr + child.stdout,
    ):
        n = 1
        for d in (int(d) for d in shape.replace(" ", "").split(",") if d):
            n *= d
        out.append({"buffer": name, "shape": shape, "dtype": dtype, "bytes": n * sizes[dtype]})
    return out


def main() -> None:
    shapes = [(1024, 1024), (4096, 3072), (40, 256)]
    records = [step_peak(r, c) for r, c in shapes]
    buffers = inductor_buffers(1024, 1024)
    doc = {
        "about": __doc__,
        "framework": {"name": "torchao", "version": torchao.__version__,
                      "optimizer": "torchao.prototype.low_bit_optim.AdamW8bit (lr 1e-3, defaults)"},
        "env": {
            "torch": torch.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "date": date.today().isoformat(),
            "command": "python scripts/measure/probe_torchao_adamw8bit.py <out>",
        },
        "records": records,
        "inductor_buffers_1024x1024": buffers,
    }
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    if sys.argv[1] == "--step":
        step_peak(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
