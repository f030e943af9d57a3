#!/usr/bin/env python3
"""Layer variants of llama.cpp's Llama-like graphs and their CPU compute buffer. Four 3-layer GGUFs of
the same shape (n_embd 512, 8 heads / 2 KV heads, n_ff 1536, n_vocab 4096, F16 zeros): a `qwen2` file
with Q/K/V biases (Qwen2 / Qwen2.5), a `llama` file with biases on every projection, the same `llama`
file without biases, and a `qwen3` file (per-head RMSNorm of Q and K), each loaded by load_context.cpp
(llama.cpp@0c1e57098's CPU backend) at four settings. The bias adds run in place
(`ggml_op_can_inplace(ADD)`, the matmul output's only consumer), so the first three plan alike.
Output: tests/data/measured/llamacpp-cpu-variants.json.

Run (from the repository root), with the loader built as its header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_variants.py <load_context binary>
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402

SHAPE = (3, 512, 8, 2, 1536, 4096)
FILES = [
    ("qwen2-qkv-biases", "qwen2", "qkv"),
    ("llama-all-biases", "llama", "all"),
    ("llama-no-bias", "llama", "none"),
    ("qwen3-qk-norm", "qwen3", "none"),
]
GRID = [(1024, 512, False, "f16"), (1024, 512, True, "f16"), (2048, 512, True, "q8_0"), (256, 128, False, "f16")]


def write(path, shape, arch, biases):
    """A GGUF of `shape` with F16 zero matrices; `biases` is "none", "qkv" or "all"."""
    import gguf

    n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = shape
    hd = n_embd // n_head
    w = loader_mod.begin(gguf, path, arch, "tiny-bias", shape)

    def matrix(name, rows, cols):
        w.add_tensor(name, np.zeros((rows, cols), dtype=np.float16))

    def vec(name, n):
        w.add_tensor(name, np.zeros((n,), dtype=np.float32))

    kv = n_head_kv * hd
    matrix("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        vec(f"blk.{i}.attn_norm.weight", n_embd)
        if arch == "qwen3":
            vec(f"blk.{i}.attn_q_norm.weight", hd)
            vec(f"blk.{i}.attn_k_norm.weight", hd)
        for t, rows in (("q", n_embd), ("k", kv), ("v", kv)):
            matrix(f"blk.{i}.attn_{t}.weight", rows, n_embd)
            if biases != "none":
                vec(f"blk.{i}.attn_{t}.bias", rows)
        matrix(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        vec(f"blk.{i}.ffn_norm.weight", n_embd)
        matrix(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        matrix(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        matrix(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
        if biases == "all":
            vec(f"blk.{i}.attn_output.bias", n_embd)
            vec(f"blk.{i}.ffn_gate.bias", n_ff)
            vec(f"blk.{i}.ffn_up.bias", n_ff)
            vec(f"blk.{i}.ffn_down.bias", n_embd)
    vec("output_norm.weight", n_embd)
    matrix("output.weight", n_vocab, n_embd)
    loader_mod.finish(w)


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, arch, biases in FILES:
            path = os.path.join(tmp, f"{name}.gguf")
            write(path, SHAPE, arch, biases)
            for n_ctx, ub, fa, ct in GRID:
                _, four = loader_mod.load(loader, path, n_ctx, ub, fa, ct)
                n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = SHAPE
                records.append({
                    "id": f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}",
                    "arch": arch,
                    "biases": biases,
                    "qk_norm": arch == "qwen3",
                    "model": {"n_layer": n_layer, "n_embd": n_embd, "n_head": n_head,
                              "n_head_kv": n_head_kv, "n_ff": n_ff, "n_vocab": n_vocab, "tied": False},
                    "file_type": "F16",
                    "engine": loader_mod.engine(n_ctx, ub, fa, ct),
                    "compute_mib_4": four,
                })
                print(records[-1]["id"], records[-1]["compute_mib_4"], flush=True)
    loader_mod.write("measure_variants.py", "llamacpp-cpu-variants.json", "llama.cpp CPU compute buffer of Llama-like layer variants (qwen2 Q/K/V biases, llama "
                 "biases on every projection or none, qwen3 Q/K norms; same shape); compute_mib_4 as the "
                 "context prints it when freed", records)


if __name__ == "__main__":
    main()
