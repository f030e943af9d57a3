"""Shared by the measurement scripts that drive load_context.cpp: one load, and the record file."""

import json
import os
import platform
import re
import subprocess

TYPE_ID = {"f16": 1, "q8_0": 8}
PRINTED = re.compile(r"(\S+) (model|KV|RS|compute) buffer size =\s+([0-9.]+) MiB")
FOUR = re.compile(r"CPU compute buffer size is\s+([0-9.]+) MiB")


def run(loader, path, n_ctx, ub, fa, cache, swa_full=False, n_seq=1, unified=False):
    """Loads `path` at these settings (`swa_full`: llama-server's `--swa-full`; `n_seq`: `-np`;
    `unified`: `--kv-unified`); returns what llama.cpp printed (stderr)."""
    tid = str(TYPE_ID[cache])
    args = [loader, path, str(n_ctx), str(ub), str(int(fa)), tid, tid, str(int(swa_full)),
            str(n_seq), str(int(unified))]
    return subprocess.run(args, capture_output=True, text=True, timeout=600).stderr


def parse(err):
    """The printed buffers (MiB; lines of the same buffer type summed, e.g. the two caches of a
    sliding-window model) and the compute buffer to four decimals as the context prints it when
    freed (None if it did not load)."""
    printed = {}
    for m in PRINTED.findall(err):
        key = f"{m[0]} {m[1]}"
        printed[key] = round(printed.get(key, 0.0) + float(m[2]), 2)
    four = FOUR.search(err)
    return printed, float(four.group(1)) if four else None


def kv_lines(err):
    """The KV cache lines llama-server prints at its default verbosity (`llama_kv_cache…`; not the
    per-layer debug lines), stripped."""
    return [line.strip() for line in err.splitlines()
            if line.startswith(("llama_kv_cache", "llama_memory_recurrent"))
            and ": layer " not in line and ", layer " not in line and "attn_rot" not in line]


def record(loader, path, rid, arch, model, setting):
    """Loads `path` at `setting` = (n_ctx, ub, fa, cache, swa_full, n_seq, unified) and returns the
    record: the settings, the printed buffers, the cache lines and the compute buffer to four places."""
    n_ctx, ub, fa, cache, swa_full, n_seq, unified = setting
    err = run(loader, path, n_ctx, ub, fa, cache, swa_full, n_seq, unified)
    printed, four = parse(err)
    print(rid, printed, four, flush=True)
    return {
        "id": rid,
        "arch": arch,
        "model": model,
        "file_type": "F16",
        "engine": engine(n_ctx, ub, fa, cache, swa_full, n_seq, unified),
        "printed_mib": printed,
        "kv_lines": kv_lines(err),
        "compute_mib_4": four,
    }


def load(loader, path, n_ctx, ub, fa, cache):
    """`parse` of one load."""
    return parse(run(loader, path, n_ctx, ub, fa, cache))


def begin(gguf, path, arch, name, shape, head_dim=None, rope_dim=None, value_dim=None):
    """A GGUF writer for `arch` with the header and a byte-level tokenizer of n_vocab entries; shape is
    (n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab); head_dim defaults to n_embd / n_head. The
    caller adds its keys and tensors. rope_dim and value_dim default to the head size."""
    n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab = shape
    w = gguf.GGUFWriter(path, arch)
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    if head_dim is None:
        w.add_rope_dimension_count(n_embd // n_head)
    else:
        w.add_rope_dimension_count(rope_dim or head_dim)
        w.add_key_length(head_dim)
        w.add_value_length(value_dim or head_dim)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(1)
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    tokens += [f"t{i}" for i in range(n_vocab - len(tokens))]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n_vocab)
    w.add_token_types([2, 3, 3] + [6] * 256 + [1] * (n_vocab - 259))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    return w


def finish(w):
    """Writes a GGUF writer's header, keys and tensors, and closes it."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def engine(n_ctx, ub, fa, cache, swa_full=False, n_seq=1, unified=False):
    """The record's engine settings (n_batch = max(512, n_ubatch), as load_context sets it)."""
    e = {"c": n_ctx, "b": max(512, ub), "ub": ub, "fa": fa, "ctk": cache, "ctv": cache, "ngl": 0}
    if swa_full:
        e["swa_full"] = True
    if n_seq != 1 or unified:
        e["np"] = n_seq
        e["kv_unified"] = unified
    return e


def write(script, file_name, about, records):
    """Writes tests/data/measured/<file_name> with the provenance of `script`."""
    doc = {
        "schema": "vram-explorer.measured-llamacpp/1",
        "about": about,
        "provenance": {
            "script": f"scripts/measure/llamacpp/{script}",
            "loader": "scripts/measure/llamacpp/load_context.cpp",
            "llama_cpp_commit": "ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)",
            "build": "cmake Release, GGML_NATIVE=OFF, CPU backend only",
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "date": "2026-12-04",
        },
        "records": records,
    }
    out = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "data", "measured", file_name)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
