#!/usr/bin/env python3
"""Where an encoder-decoder's training backward peaks (docs/import.md "Towers measured"): the encdec cases of
hf_blocks_cases.py (T5 at (2, 128), Whisper at (1, 128) and (2, 128)) run with plain SGD (no optimizer state,
so the step's overall peak is the backward's) through harness.run_training; prints the step-2 peak's phase, op
and what was live (params, grads, created in forward / in backward). Not a record; evidence for the rule in
src/estimator/memory/towers.rs `encoder_backward`.

    cd scripts/measure && nice -n 10 /work/venvs-measure/hf/bin/python encdec_backward_probe.py
"""
import sys, os, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from hf_blocks import build, make_inputs
from hf_blocks_cases import expand, GROUPS
from harness import run_training
torch.set_num_threads(2)
for (group, c, b, s, mode) in expand():
    if group != "encdec" or mode != "fp32": continue
    if not ((c["name"].startswith("whisper") and (b, s) in [(2,128),(1,128)]) or (c["name"].startswith("t5") and (b,s)==(2,128))): continue
    model, cfg, kw = build(c, s)
    g = torch.Generator().manual_seed(1)
    train_kw, *_rest = make_inputs(c, cfg, b, s, g)
    train_in = _rest[2]
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loss_fn = lambda: model(**train_kw).loss
    out, tr, check, t = run_training(model, opt, train_in, loss_fn)
    st = out["step2"]
    print(c["name"], b, s, st["peak_phase"], st["peak_op"], st["peak_op_index"], st["n_ops"], json.dumps(st["peak_breakdown"]))
