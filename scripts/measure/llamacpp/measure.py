#!/usr/bin/env python3
"""Measure llama.cpp's CPU buffers (model, KV, compute) on tiny GGUF models.

Writes tiny Llama-architecture GGUF files with the `gguf` package (weights are zero bytes of the
right size: buffer sizes do not depend on values), loads each with llama-cpp-python 0.3.36 (the
CPU build of llama.cpp@0c1e57098) with verbose logs, and records the printed
`CPU… model buffer size`, `CPU KV buffer size` and `CPU compute buffer size` lines for a grid of
n_ctx, n_ubatch, flash attention and cache types. Output: tests/data/measured/llamacpp-cpu.json.

Run (from the repository root):
    /work/venvs-measure/llamacpp/bin/python scripts/measure/llamacpp/measure.py

The committed records were made (2026-12-03) as
    LLAMA_CPP_LIB_PATH=<the pip build's build/bin> \
    PYTHONPATH=<sdist>/:<sdist>/vendor/llama.cpp/gguf-py \
    python scripts/measure/llamacpp/measure.py
with numpy, diskcache, jinja2 and typing-extensions installed (the sdist's package imports them).

Environment: `pip install llama-cpp-python==0.3.36 gguf` (CPU build). The committed records were
made with the libraries that pip build produced (its `build/bin`, loaded through
`LLAMA_CPP_LIB_PATH` with the sdist's `llama_cpp` package and its vendored `gguf-py` on
PYTHONPATH), which is what the wheel contains. Each load runs in its own process so that one failing
configuration does not stop the grid (tiny-a's Q8_0 file is invalid: n_ff 688 is not a multiple of
32, so it does not load; kept as a record with "loaded": false).
"""

import itertools
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

import numpy as np

MODELS = [
    # name, n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab
    ("tiny-a", 2, 256, 4, 2, 688, 1024),
    ("tiny-b", 3, 512, 8, 8, 1024, 4096),
    ("tiny-c", 4, 512, 8, 2, 1536, 32000),
]
FILE_TYPES = ["F32", "F16", "Q8_0"]
GRID = {
    "n_ctx": [256, 1024, 2048],
    "n_ubatch": [128, 512],
    "flash_attn": [False, True],
    "cache": [("f16", "f16"), ("q8_0", "q8_0")],
}

GGML_TYPE_ID = {"f32": 0, "f16": 1, "q8_0": 8}


def write_gguf(path, model, ftype):
    import gguf

    name, n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = model
    head_dim = n_embd // n_head
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type({"F32": 0, "F16": 1, "Q8_0": 7}[ftype])
    # SentencePiece-style vocabulary: 3 specials, 256 byte tokens, fillers.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"t{i}" for i in range(n_vocab - len(tokens))]
    types = [2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def matrix(tname, rows, cols):
        if ftype == "F32":
            w.add_tensor(tname, np.zeros((rows, cols), dtype=np.float32))
        elif ftype == "F16":
            w.add_tensor(tname, np.zeros((rows, cols), dtype=np.float16))
        else:  # Q8_0: 34 bytes per 32 weights
            w.add_tensor(
                tname,
                np.zeros((rows, cols // 32 * 34), dtype=np.uint8),
                raw_dtype=gguf.GGMLQuantizationType.Q8_0,
            )

    def vec(tname, n):
        w.add_tensor(tname, np.ones((n,), dtype=np.float32))

    kv = n_head_kv * head_dim
    matrix("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        vec(f"blk.{i}.attn_norm.weight", n_embd)
        matrix(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        matrix(f"blk.{i}.attn_k.weight", kv, n_embd)
        matrix(f"blk.{i}.attn_v.weight", kv, n_embd)
        matrix(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        vec(f"blk.{i}.ffn_norm.weight", n_embd)
        matrix(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        matrix(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        matrix(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    vec("output_norm.weight", n_embd)
    matrix("output.weight", n_vocab, n_embd)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


CHILD = r"""
import sys, json
from llama_cpp import Llama
cfg = json.loads(sys.argv[1])
llm = Llama(model_path=cfg["path"], n_ctx=cfg["n_ctx"], n_batch=cfg["n_batch"],
            n_ubatch=cfg["n_ubatch"], n_gpu_layers=0, flash_attn=cfg["flash_attn"],
            type_k=cfg["type_k"], type_v=cfg["type_v"], n_threads=1, verbose=True)
print("LOADED", file=sys.stderr)
"""

LINE = re.compile(r"^\S+:\s+(\S+) (model|KV|compute) buffer size =\s+([0-9.]+) MiB")


def run(path, cfg):
    arg = dict(cfg, path=path)
    p = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(arg)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = {}
    for line in p.stderr.splitlines():
        m = LINE.match(line.strip())
        if m:
            key = f"{m.group(1)} {m.group(2)}"
            out[key] = out.get(key, 0.0) + float(m.group(3))
    ok = "LOADED" in p.stderr
    return ok, out, [l for l in p.stderr.splitlines() if "buffer size" in l or "n_ctx" in l]


def main():
    import llama_cpp

    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for model, ftype in itertools.product(MODELS, FILE_TYPES):
            path = os.path.join(tmp, f"{model[0]}-{ftype}.gguf")
            write_gguf(path, model, ftype)
            for n_ctx, n_ubatch, fa, (ctk, ctv) in itertools.product(*GRID.values()):
                if ctv != "f16" and not fa:
                    continue  # a quantized V cache needs flash attention
                if ftype != "F16" and (n_ctx, n_ubatch, ctk) != (1024, 512, "f16"):
                    continue  # other file types: model buffers at one setting
                cfg = {
                    "n_ctx": n_ctx,
                    "n_batch": 512,
                    "n_ubatch": n_ubatch,
                    "flash_attn": fa,
                    "type_k": GGML_TYPE_ID[ctk],
                    "type_v": GGML_TYPE_ID[ctv],
                }
                ok, buffers, lines = run(path, cfg)
                name, n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = model
                rec = {
                    "id": f"llamacpp-cpu-{name}-{ftype.lower()}-c{n_ctx}-ub{n_ubatch}"
                    f"-fa{int(fa)}-{ctk}",
                    "model": {
                        "n_layer": n_layer,
                        "n_embd": n_embd,
                        "n_head": n_head,
                        "n_head_kv": n_head_kv,
                        "n_ff": n_ff,
                        "n_vocab": n_vocab,
                        "tied": False,
                    },
                    "file_type": ftype,
                    "engine": {
                        "c": n_ctx,
                        "b": 512,
                        "ub": n_ubatch,
                        "fa": fa,
                        "ctk": ctk,
                        "ctv": ctv,
                        "ngl": 0,
                        "mmap": True,
                    },
                    "loaded": ok,
                    "buffers_mib": buffers,
                    "log": lines,
                }
                print(rec["id"], ok, buffers, flush=True)
                records.append(rec)
    doc = {
        "schema": "vram-explorer.measured-llamacpp/1",
        "about": "llama.cpp CPU buffers printed at load (verbose log), tiny Llama GGUFs written "
        "by scripts/measure/llamacpp/measure.py with zero weights; each figure is the printed "
        "'<buffer type> <kind> buffer size' in MiB (%8.2f of bytes / 2^20)",
        "provenance": {
            "script": "scripts/measure/llamacpp/measure.py",
            "llama_cpp_python": llama_cpp.__version__,
            "llama_cpp_commit": "ggml-org/llama.cpp@0c1e57098 (vendored, CHANGELOG of 0.3.36)",
            "build": "pip install llama-cpp-python==0.3.36 (CPU backend, default CMake flags)",
            "gguf": __import__("gguf").__version__ if hasattr(__import__("gguf"), "__version__") else "pypi",
            "machine": f"{platform.machine()} {platform.processor() or ''} {os.cpu_count()} cores".strip(),
            "python": platform.python_version(),
        },
        "records": records,
    }
    out = os.path.join("tests", "data", "measured", "llamacpp-cpu.json")
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", out, len(records), "records")


if __name__ == "__main__":
    main()
