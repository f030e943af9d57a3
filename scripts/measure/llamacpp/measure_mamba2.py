#!/usr/bin/env python3
"""Mamba-2 (`mamba2`) in llama.cpp's CPU compute buffer at widths where the layer, not the logits, sets
the peak (llama.cpp@0c1e57098 src/models/mamba-base.cpp `build_mamba2_layer`): F16 zero weights, F32
norms, convolution and SSM parameters, a 4,096-token vocabulary:

- `mamba2-2.7b-width`: 2 layers at Mamba2-2.7B's width (n_embd 2560, d_inner 5120 in 80 heads of 64,
  d_state 128, one group, d_conv 4);
- `mamba2-8-groups`: 2 layers with 8 groups (n_embd 2048, d_inner 4096 in 64 heads, d_state 128),
  as Nemotron-H's and Codestral-Mamba's mixers have them.

Each at the layer-kinds grid and at -np 4 (unified and not: the state has 4 rows, the reserve 4
sequences of 128 tokens). Output: tests/data/measured/llamacpp-cpu-mamba2.json.

Run (from the repository root), with the loader built as load_context.cpp's header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_mamba2.py <load_context binary>
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402
import measure_layer_kinds as kinds  # noqa: E402

WIDTH_27B = {"n_layer": 2, "n_embd": 2560, "d_inner": 5120, "n_head": 80, "d_state": 128, "n_group": 1,
             "d_conv": 4, "n_vocab": 4096}
GROUPS_8 = {"n_layer": 2, "n_embd": 2048, "d_inner": 4096, "n_head": 64, "d_state": 128, "n_group": 8,
            "d_conv": 4, "n_vocab": 4096}
SETTINGS = [(c, False, 1) for c in kinds.GRID] + [((4096, 512, True, "f16"), True, 4),
                                                  ((4096, 512, True, "f16"), False, 4)]


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for name, model in (("mamba2-2.7b-width", WIDTH_27B), ("mamba2-8-groups", GROUPS_8)):
            path = os.path.join(tmp, f"{name}.gguf")
            kinds.write_mamba2(path, model)
            for (n_ctx, ub, fa, ct), unified, n_seq in SETTINGS:
                suffix = f"-np{n_seq}" + ("-kvu" if unified else "") if n_seq > 1 else ""
                rid = f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}{suffix}"
                setting = (n_ctx, ub, fa, ct, False, n_seq, unified)
                records.append(loader_mod.record(loader, path, rid, "mamba2", model, setting))
    loader_mod.write("measure_mamba2.py", "llamacpp-cpu-mamba2.json",
                     "llama.cpp CPU buffers of Mamba-2 files at widths where the layer sets the compute buffer's "
                     "peak (one group and eight); printed_mib sums the lines of one buffer type, kv_lines are "
                     "the recurrent state's lines as printed", records)


if __name__ == "__main__":
    main()
