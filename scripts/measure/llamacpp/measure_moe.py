#!/usr/bin/env python3
"""Mixture-of-experts layers in llama.cpp's graph and their CPU buffers. GGUFs (F16 zeros, F32 routers)
whose FFN is `build_moe_ffn` (llama.cpp@0c1e57098 src/llama-graph.cpp): 3-layer tiny files (n_embd 512,
8 heads / 2 KV heads, n_vocab 4096) — a `qwen3moe` file (Qwen3-30B-A3B's layer: Q/K norms, 8 experts of
width 256, 2 used) and `llama` files with experts (Mixtral's layer: 8 experts of width 384, 2 or 4 used;
4 experts, 1 used) — and 2-layer files at Qwen3-30B-A3B's and Mixtral-8x7B's widths, each loaded by
load_context.cpp (CPU backend) at four settings. The wide files take up to 3 GB on disk (TMPDIR).
Output: tests/data/measured/llamacpp-cpu-moe.json.

Run (from the repository root), with the loader built as load_context.cpp's header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_moe.py <load_context binary>
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402

# Attention shapes: (n_layer, n_embd, n_head, n_head_kv, head_dim, n_vocab).
TINY = (3, 512, 8, 2, 64, 4096)
# Qwen3-30B-A3B's and Mixtral-8x7B's widths with 2 layers and a 4,096-token vocabulary, so that the
# logits do not hide the experts' peak.
QWEN3_30B = (2, 2048, 32, 4, 128, 4096)
MIXTRAL = (2, 4096, 32, 8, 128, 4096)
SMALL_GRID = [(1024, 512, False, "f16"), (1024, 512, True, "f16"), (2048, 512, True, "q8_0"), (256, 128, False, "f16")]
WIDE_GRID = [(4096, 512, True, "f16"), (4096, 1024, True, "f16"), (2048, 2048, True, "q8_0"), (1024, 512, False, "f16")]
# (name, arch, attention shape, n_expert, n_expert_used, expert width, grid)
FILES = [
    ("qwen3moe-e8-k2", "qwen3moe", TINY, 8, 2, 256, SMALL_GRID),
    ("llama-moe-e8-k2", "llama", TINY, 8, 2, 384, SMALL_GRID),
    ("llama-moe-e8-k4", "llama", TINY, 8, 4, 384, SMALL_GRID),
    ("llama-moe-e4-k1", "llama", TINY, 4, 1, 384, SMALL_GRID),
    # 128 experts of 768, 8 used (Qwen3-30B-A3B's FFN); Mixtral's 14,336-wide experts, 2 of 4 used
    # (its 8 experts would only add router rows: the compute buffer is that of the used ones).
    ("qwen3moe-30b-a3b-width", "qwen3moe", QWEN3_30B, 128, 8, 768, WIDE_GRID),
    ("llama-moe-mixtral-width", "llama", MIXTRAL, 4, 2, 14336, WIDE_GRID),
]


def write(path, arch, attn, n_expert, n_used, n_ff_exp):
    """A GGUF with F16 zero matrices whose every layer's FFN is `n_expert` experts of width `n_ff_exp`."""
    import gguf

    n_layer, n_embd, n_head, n_head_kv, hd, n_vocab = attn
    shape = (n_layer, n_embd, n_head, n_head_kv, n_ff_exp, n_vocab)
    w = loader_mod.begin(gguf, path, arch, "tiny-moe", shape, None if hd == n_embd // n_head else hd)
    w.add_expert_count(n_expert)
    w.add_expert_used_count(n_used)
    if arch == "qwen3moe":
        w.add_expert_feed_forward_length(n_ff_exp)

    def tensor(name, *shape, f32=False):
        w.add_tensor(name, np.zeros(shape, dtype=np.float32 if f32 or len(shape) == 1 else np.float16))

    kv = n_head_kv * hd
    tensor("token_embd.weight", n_vocab, n_embd)
    for i in range(n_layer):
        tensor(f"blk.{i}.attn_norm.weight", n_embd)
        if arch == "qwen3moe":
            tensor(f"blk.{i}.attn_q_norm.weight", hd)
            tensor(f"blk.{i}.attn_k_norm.weight", hd)
        for t, rows in (("q", n_head * hd), ("k", kv), ("v", kv)):
            tensor(f"blk.{i}.attn_{t}.weight", rows, n_embd)
        tensor(f"blk.{i}.attn_output.weight", n_embd, n_head * hd)
        tensor(f"blk.{i}.ffn_norm.weight", n_embd)
        # The router stays F32 in real files (convert_hf_to_gguf.py forces FFN_GATE_INP to F32).
        tensor(f"blk.{i}.ffn_gate_inp.weight", n_expert, n_embd, f32=True)
        tensor(f"blk.{i}.ffn_gate_exps.weight", n_expert, n_ff_exp, n_embd)
        tensor(f"blk.{i}.ffn_up_exps.weight", n_expert, n_ff_exp, n_embd)
        tensor(f"blk.{i}.ffn_down_exps.weight", n_expert, n_embd, n_ff_exp)
    tensor("output_norm.weight", n_embd)
    tensor("output.weight", n_vocab, n_embd)
    loader_mod.finish(w)


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for name, arch, attn, n_expert, n_used, n_ff_exp, grid in FILES:
            n_layer, n_embd, n_head, n_head_kv, hd, n_vocab = attn
            path = os.path.join(tmp, f"{name}.gguf")
            write(path, arch, attn, n_expert, n_used, n_ff_exp)
            for n_ctx, ub, fa, ct in grid:
                printed, four = loader_mod.load(loader, path, n_ctx, ub, fa, ct)
                records.append({
                    "id": f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}",
                    "arch": arch,
                    "qk_norm": arch == "qwen3moe",
                    "model": {"n_layer": n_layer, "n_embd": n_embd, "n_head": n_head, "n_head_kv": n_head_kv,
                              "head_dim": hd, "n_ff": n_ff_exp, "n_vocab": n_vocab, "tied": False,
                              "n_expert": n_expert, "n_expert_used": n_used},
                    "file_type": "F16",
                    "engine": loader_mod.engine(n_ctx, ub, fa, ct),
                    "printed_mib": printed,
                    "compute_mib_4": four,
                })
                print(records[-1]["id"], printed, four, flush=True)
            os.remove(path)
    loader_mod.write("measure_moe.py", "llamacpp-cpu-moe.json",
                     "llama.cpp CPU buffers of mixture-of-experts layers (qwen3moe; llama with 8 experts, 1, 2 or 4 "
                     "used); printed_mib as the load prints them, compute_mib_4 as the context prints the compute "
                     "buffer when freed", records)


if __name__ == "__main__":
    main()
