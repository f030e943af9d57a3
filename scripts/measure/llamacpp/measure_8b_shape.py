#!/usr/bin/env python3
"""Measure llama.cpp's CPU compute buffer at a real model's width: a 2-layer GGUF with
Llama-3.1-8B's dimensions (n_embd 4096, 32 heads / 8 KV heads, n_ff 14336, n_vocab 128256; Q8_0
zero weights, written by measure.py's `write_gguf`), loaded by load_context.cpp (llama.cpp@0c1e57098's
CPU backend) for a grid of n_ctx, n_ubatch, flash attention and cache types.
Output: tests/data/measured/llamacpp-cpu-8b-shape.json.

Run (from the repository root), with the loader built as its header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_8b_shape.py <load_context binary>
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402
from measure import write_gguf  # noqa: E402

MODEL = ("l8b2", 2, 4096, 32, 8, 14336, 128256)
GRID = [
    # n_ctx, n_ubatch, flash_attn, cache type
    (8192, 512, False, "f16"),
    (8192, 512, True, "f16"),
    (32768, 512, False, "f16"),
    (32768, 512, True, "q8_0"),
    (65536, 512, True, "f16"),
    (4096, 2048, True, "f16"),
    (4096, 2048, False, "f16"),
    (16384, 1024, True, "q8_0"),
]


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "l8b2-Q8_0.gguf")
        write_gguf(path, MODEL, "Q8_0")
        for n_ctx, ub, fa, ct in GRID:
            printed, four = loader_mod.load(loader, path, n_ctx, ub, fa, ct)
            _, n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = MODEL
            records.append({
                "id": f"llamacpp-cpu-8b-shape-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}",
                "model": {"n_layer": n_layer, "n_embd": n_embd, "n_head": n_head,
                          "n_head_kv": n_head_kv, "n_ff": n_ff, "n_vocab": n_vocab, "tied": False},
                "file_type": "Q8_0",
                "engine": loader_mod.engine(n_ctx, ub, fa, ct),
                "buffers_mib": printed,
                "compute_mib_4": four,
            })
            print(records[-1]["id"], printed, records[-1]["compute_mib_4"], flush=True)
    loader_mod.write("measure_8b_shape.py", "llamacpp-cpu-8b-shape.json", "llama.cpp CPU buffers at Llama-3.1-8B's width (2 layers), printed at load; "
                 "compute_mib_4 is the compute buffer the context prints when freed (4 decimals)", records)


if __name__ == "__main__":
    main()
