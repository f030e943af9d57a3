#!/usr/bin/env python3
"""Several sequences (`-np`) with and without a unified cache (`--kv-unified`), in llama.cpp's buffers:
llama-server's default `-np` is "auto", which tools/server/server.cpp turns into 4 slots sharing one
unified cache, so a bare `llama-server` command loads with n_seq_max = 4, kv_unified = true. What changes
with it (llama.cpp@0c1e57098): the sliding-window cache (GGML_PAD(min(n_ctx, n_swa × n_seq + n_ubatch), 256)
cells in one stream when unified, GGML_PAD(min(n_ctx / n_seq, n_swa + n_ubatch), 256) in each of n_seq streams
when not), the recurrent state (one row per sequence), the size lines (cells per stream, `n_seq/n_stream
seqs`) and the compute buffer (the worst-case graph is reserved for n_seq sequences of n_ubatch / n_seq
tokens; per stream attention when not unified).

Models: the tiny `qwen2`, `gemma3` and `mamba2` files of measure_layer_kinds.py, at -c 4096 and 1024,
-ub 512 and 128, flash attention on and off, -np 2 and 4, unified and not.

Output: tests/data/measured/llamacpp-cpu-slots.json.

Run (from the repository root), with the loader built as load_context.cpp's header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_slots.py <load_context binary>
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402
import measure_layer_kinds as kinds  # noqa: E402

GRID = [(4096, 512, True), (4096, 512, False), (1024, 128, True), (1024, 128, False)]
SLOTS = [(4, True), (4, False), (2, True), (2, False)]


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for name, arch, model, write in (("qwen2-qkv-bias", "qwen2", kinds.QWEN2, kinds.write_qwen2),
                                         ("gemma3-iswa", "gemma3", kinds.GEMMA3, kinds.write_gemma3),
                                         ("mamba2-recurrent", "mamba2", kinds.MAMBA2, kinds.write_mamba2)):
            path = os.path.join(tmp, f"{name}.gguf")
            write(path, model)
            for n_ctx, ub, fa in GRID:
                for n_seq, unified in SLOTS:
                    rid = f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-np{n_seq}" + ("-kvu" if unified else "")
                    setting = (n_ctx, ub, fa, "f16", False, n_seq, unified)
                    records.append(loader_mod.record(loader, path, rid, arch, model, setting))
    loader_mod.write("measure_slots.py", "llamacpp-cpu-slots.json",
                     "llama.cpp CPU buffers with several sequences (-np), with and without a unified cache "
                     "(llama-server's -np auto = 4 slots, unified); printed_mib sums the lines of one buffer type, "
                     "kv_lines are the cache lines as printed", records)


if __name__ == "__main__":
    main()
