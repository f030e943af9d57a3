#!/usr/bin/env python3
"""Models whose layers differ, in llama.cpp's buffers: the model buffer (every tensor of every layer
kind) and the KV cache (which layers cache what, how many cells), printed at load by llama.cpp@0c1e57098's
CPU backend through load_context.cpp. F16 zero weights, F32 norms and routers, n_vocab 4096:

- `gemma3` (8 layers, n_embd 512, 8 heads / 2 KV heads of 64, sliding window 128 on five of every six
  layers: llama.cpp's `llama_kv_cache_iswa` keeps those in a cache of
  GGML_PAD(min(n_ctx, n_swa + n_ubatch), 256) cells, the global layers in one of n_ctx cells);
- `deepseek2` (3 layers, the first dense: multi-head latent attention with q_lora 128, kv_lora 64,
  nope 32 + rope 32, v 32 per head, 8 heads; then 8 routed experts of 128 (2 used) and one shared
  expert): the MLA cache keeps kv_lora + rope per cell and layer, K only;
- both `gemma3` files again with `swa_full` (llama-server's `--swa-full`): the windowed layers' cache of n_ctx cells;
- `gemma3` at Gemma-3-1B's width and depth (26 layers, window 512), vocabulary 4,096;
- `qwen2` (4 layers, Q/K/V biases) and `qwen2moe` (3 layers, 8 experts of 128, 2 used, and one shared
  expert of 1,024 behind a gate row: Qwen2-MoE's shared expert is wider than a routed one), and 2-layer
  `qwen2moe` files at Qwen1.5-MoE-A2.7B's and Qwen2-57B-A14B's widths (up to 2 GB each on disk);
- `mamba2` (3 layers, n_embd 256, d_inner 512 in 8 heads, d_state 64, one group, d_conv 4): no KV cache, a
  recurrent state per sequence (`llama_memory_recurrent`: R = (d_conv − 1) × conv channels, S = d_state ×
  d_inner, F32, `RS buffer`).

Output: tests/data/measured/llamacpp-cpu-layer-kinds.json.

Run (from the repository root), with the loader built as load_context.cpp's header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_layer_kinds.py <load_context binary>
"""

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402

GRID = [(1024, 512, True, "f16"), (4096, 512, True, "f16"), (4096, 128, False, "f16"), (2048, 256, True, "q8_0")]
GEMMA3 = {"n_layer": 8, "n_embd": 512, "n_head": 8, "n_head_kv": 2, "head_dim": 64, "n_ff": 1024,
          "n_vocab": 4096, "sliding_window": 128, "swa_period": 6}
DEEPSEEK2 = {"n_layer": 3, "n_embd": 512, "n_head": 8, "q_lora": 128, "kv_lora": 64, "nope": 32, "rope": 32,
             "v": 32, "n_ff": 384, "n_expert": 8, "n_expert_used": 2, "n_shared": 1, "n_ff_exp": 128,
             "dense_lead": 1, "n_vocab": 4096}
# Gemma-3-1B's width and depth (26 layers, 4 heads / 1 KV head of 256, FFN 6912, window 512) with a
# 4,096-token vocabulary, so that the layers' peak is not hidden by the logits.
GEMMA3_1B = {"n_layer": 26, "n_embd": 1152, "n_head": 4, "n_head_kv": 1, "head_dim": 256, "n_ff": 6912,
             "n_vocab": 4096, "sliding_window": 512, "swa_period": 6}
# Qwen2 (Q/K/V biases, no output bias) and Qwen2-MoE (Qwen1.5-MoE-A2.7B's layer: routed experts, one
# shared expert wider than they are, behind a sigmoid gate of one F32 row).
QWEN2 = {"n_layer": 4, "n_embd": 512, "n_head": 8, "n_head_kv": 2, "head_dim": 64, "n_ff": 1024,
         "n_vocab": 4096}
QWEN2MOE = {"n_layer": 3, "n_embd": 512, "n_head": 8, "n_head_kv": 8, "head_dim": 64, "n_ff": 1408,
            "n_expert": 8, "n_expert_used": 2, "n_ff_exp": 128, "n_ff_shexp": 1024, "n_vocab": 4096}
# Two layers at Qwen1.5-MoE-A2.7B's and Qwen2-57B-A14B's widths (8 experts stored: the buffer is set by
# the k used, the experts' and the shared expert's widths; a 4,096-token vocabulary so that the
# logits do not hide the layers' peak).
QWEN2MOE_A27B = {"n_layer": 2, "n_embd": 2048, "n_head": 16, "n_head_kv": 16, "head_dim": 128, "n_ff": 5632,
                 "n_expert": 8, "n_expert_used": 4, "n_ff_exp": 1408, "n_ff_shexp": 5632, "n_vocab": 4096}
QWEN2MOE_57B = {"n_layer": 2, "n_embd": 3584, "n_head": 28, "n_head_kv": 4, "head_dim": 128, "n_ff": 18944,
                "n_expert": 8, "n_expert_used": 8, "n_ff_exp": 2560, "n_ff_shexp": 20480, "n_vocab": 4096}
MAMBA2 = {"n_layer": 3, "n_embd": 256, "d_inner": 512, "n_head": 8, "d_state": 64, "n_group": 1, "d_conv": 4,
          "n_vocab": 4096}


def tensor_writer(w):
    def tensor(name, *shape, f32=False):
        w.add_tensor(name, np.zeros(shape, dtype=np.float32 if f32 or len(shape) == 1 else np.float16))
    return tensor


def write_gemma3(path, m):
    import gguf

    e, hd = m["n_embd"], m["head_dim"]
    shape = (m["n_layer"], e, m["n_head"], m["n_head_kv"], m["n_ff"], m["n_vocab"])
    w = loader_mod.begin(gguf, path, "gemma3", "tiny-gemma3", shape, hd)
    w.add_sliding_window(m["sliding_window"])
    tensor = tensor_writer(w)
    tensor("token_embd.weight", m["n_vocab"], e)
    for i in range(m["n_layer"]):
        for n in ("attn_norm", "post_attention_norm", "ffn_norm", "post_ffw_norm"):
            tensor(f"blk.{i}.{n}.weight", e)
        tensor(f"blk.{i}.attn_q_norm.weight", hd)
        tensor(f"blk.{i}.attn_k_norm.weight", hd)
        tensor(f"blk.{i}.attn_q.weight", m["n_head"] * hd, e)
        tensor(f"blk.{i}.attn_k.weight", m["n_head_kv"] * hd, e)
        tensor(f"blk.{i}.attn_v.weight", m["n_head_kv"] * hd, e)
        tensor(f"blk.{i}.attn_output.weight", e, m["n_head"] * hd)
        tensor(f"blk.{i}.ffn_gate.weight", m["n_ff"], e)
        tensor(f"blk.{i}.ffn_up.weight", m["n_ff"], e)
        tensor(f"blk.{i}.ffn_down.weight", e, m["n_ff"])
    tensor("output_norm.weight", e)  # the output is tied to token_embd (Gemma)
    loader_mod.finish(w)


def write_deepseek2(path, m):
    """The tiny `deepseek2` file: DeepSeek-V3's router (sigmoid, the selection bias, normalised weights,
    scale 1) without expert groups (measure_mla.write_mla)."""
    import measure_mla

    measure_mla.write_mla(path, {**m, "scale": 1.0, "norm": True, "gating": "sigmoid", "probs_b": True})


def write_qwen2(path, m, arch="qwen2"):
    """`qwen2` or `qwen2moe`: Q/K/V biases (F32) on every layer; the MoE file's FFN is `n_expert`
    routed experts, an F32 router, one shared expert of `n_ff_shexp` and its F32 gate row
    (llama.cpp@0c1e57098 src/models/qwen2moe.cpp `load_arch_tensors`)."""
    import gguf

    e, hd = m["n_embd"], m["head_dim"]
    shape = (m["n_layer"], e, m["n_head"], m["n_head_kv"], m["n_ff"], m["n_vocab"])
    w = loader_mod.begin(gguf, path, arch, f"tiny-{arch}", shape, hd)
    moe = arch == "qwen2moe"
    if moe:
        w.add_expert_count(m["n_expert"])
        w.add_expert_used_count(m["n_expert_used"])
        w.add_expert_feed_forward_length(m["n_ff_exp"])
        w.add_expert_shared_feed_forward_length(m["n_ff_shexp"])
    tensor = tensor_writer(w)
    tensor("token_embd.weight", m["n_vocab"], e)
    for i in range(m["n_layer"]):
        tensor(f"blk.{i}.attn_norm.weight", e)
        for t, rows in (("q", m["n_head"] * hd), ("k", m["n_head_kv"] * hd), ("v", m["n_head_kv"] * hd)):
            tensor(f"blk.{i}.attn_{t}.weight", rows, e)
            tensor(f"blk.{i}.attn_{t}.bias", rows)
        tensor(f"blk.{i}.attn_output.weight", e, m["n_head"] * hd)
        tensor(f"blk.{i}.ffn_norm.weight", e)
        if moe:
            f, n, s = m["n_ff_exp"], m["n_expert"], m["n_ff_shexp"]
            tensor(f"blk.{i}.ffn_gate_inp.weight", n, e, f32=True)
            tensor(f"blk.{i}.ffn_gate_exps.weight", n, f, e)
            tensor(f"blk.{i}.ffn_up_exps.weight", n, f, e)
            tensor(f"blk.{i}.ffn_down_exps.weight", n, e, f)
            tensor(f"blk.{i}.ffn_gate_inp_shexp.weight", e)
            tensor(f"blk.{i}.ffn_gate_shexp.weight", s, e)
            tensor(f"blk.{i}.ffn_up_shexp.weight", s, e)
            tensor(f"blk.{i}.ffn_down_shexp.weight", e, s)
        else:
            tensor(f"blk.{i}.ffn_gate.weight", m["n_ff"], e)
            tensor(f"blk.{i}.ffn_up.weight", m["n_ff"], e)
            tensor(f"blk.{i}.ffn_down.weight", e, m["n_ff"])
    tensor("output_norm.weight", e)
    tensor("output.weight", m["n_vocab"], e)
    loader_mod.finish(w)


def write_qwen2moe(path, m):
    write_qwen2(path, m, "qwen2moe")


def write_mamba2(path, m):
    import gguf

    e, di, ds, ng, nh, dc = m["n_embd"], m["d_inner"], m["d_state"], m["n_group"], m["n_head"], m["d_conv"]
    conv = di + 2 * ng * ds
    w = loader_mod.begin(gguf, path, "mamba2", "tiny-mamba2", (m["n_layer"], e, 0, 0, 0, m["n_vocab"]), 1)
    w.add_ssm_conv_kernel(dc)
    w.add_ssm_inner_size(di)
    w.add_ssm_state_size(ds)
    w.add_ssm_time_step_rank(nh)
    w.add_ssm_group_count(ng)
    tensor = tensor_writer(w)
    tensor("token_embd.weight", m["n_vocab"], e)
    for i in range(m["n_layer"]):
        tensor(f"blk.{i}.attn_norm.weight", e)
        tensor(f"blk.{i}.ssm_in.weight", 2 * di + 2 * ng * ds + nh, e)
        tensor(f"blk.{i}.ssm_conv1d.weight", conv, dc, f32=True)
        tensor(f"blk.{i}.ssm_conv1d.bias", conv)
        tensor(f"blk.{i}.ssm_dt.bias", nh)
        tensor(f"blk.{i}.ssm_a", nh, 1, f32=True)
        tensor(f"blk.{i}.ssm_d", nh, 1, f32=True)
        tensor(f"blk.{i}.ssm_norm.weight", ng, di // ng, f32=True)
        tensor(f"blk.{i}.ssm_out.weight", e, di)
    tensor("output_norm.weight", e)
    tensor("output.weight", m["n_vocab"], e)
    loader_mod.finish(w)


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for name, arch, model, write in (("gemma3-iswa", "gemma3", GEMMA3, write_gemma3),
                                         ("deepseek2-mla", "deepseek2", DEEPSEEK2, write_deepseek2),
                                         ("mamba2-recurrent", "mamba2", MAMBA2, write_mamba2),
                                         ("gemma3-1b-width", "gemma3", GEMMA3_1B, write_gemma3),
                                         ("qwen2-qkv-bias", "qwen2", QWEN2, write_qwen2),
                                         ("qwen2moe-shared-expert", "qwen2moe", QWEN2MOE, write_qwen2moe),
                                         ("qwen2moe-a2.7b-width", "qwen2moe", QWEN2MOE_A27B, write_qwen2moe),
                                         ("qwen2moe-57b-width", "qwen2moe", QWEN2MOE_57B, write_qwen2moe)):
            path = os.path.join(tmp, f"{name}.gguf")
            write(path, model)
            # llama-server's `--swa-full` on the files with sliding-window layers: both caches of -c cells.
            swa_full = [(c, False) for c in GRID] + ([(c, True) for c in GRID[:2]] if arch == "gemma3" else [])
            for (n_ctx, ub, fa, ct), full in swa_full:
                rid = f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}" + ("-swafull" if full else "")
                setting = (n_ctx, ub, fa, ct, full, 1, False)
                records.append(loader_mod.record(loader, path, rid, arch, model, setting))
    loader_mod.write("measure_layer_kinds.py", "llamacpp-cpu-layer-kinds.json",
                     "llama.cpp CPU buffers of models whose layers differ: Gemma 3's interleaved sliding-window "
                     "layers (two caches) and DeepSeek's latent attention (a K-only cache) with a dense first "
                     "layer and routed + shared experts, Qwen2's Q/K/V biases, Qwen2-MoE's wider gated shared expert; printed_mib sums the lines of one buffer type, kv_lines "
                     "are the cache lines as printed", records)


if __name__ == "__main__":
    main()
