#!/usr/bin/env python3
"""DeepSeek-2/3 (`deepseek2`, multi-head latent attention) in llama.cpp's CPU compute buffer, with the
router options `build_moe_ffn` reads from the file (llama.cpp@0c1e57098 src/llama-graph.cpp): expert
groups (`expert_group_count`, `expert_group_used_count`: DeepSeek-V3 8 of which 4), the weights' scale
(`expert_weights_scale`: V3 2.5), their normalisation (`expert_weights_norm`), the gating function
and the selection bias (`exp_probs_b`), and DeepSeek-V2-Lite's direct Q projection (`q_lora_rank` 0:
`attn_q` instead of `attn_q_a` / `attn_q_b`). F16 zero weights, F32 norms, routers and biases:

- `deepseek2-v3-router`: the tiny shape of measure_layer_kinds.py (3 layers, the first dense) with
  8 experts in 4 groups, 2 groups used, sigmoid gating, the selection bias, normalised weights
  scaled by 2.5;
- `deepseek2-v2lite`: the same tiny shape as DeepSeek-V2-Lite routes (no q_lora, softmax, no bias,
  weights not normalised, not scaled, 2 shared experts);
- `deepseek2-router-bound`: a narrow file whose peak is the router (512 experts in 8 groups of which 4,
  the scale 2.5), and `deepseek2-router-bound-plain` without groups and scale: they tell the group
  selection's tensors apart;
- `deepseek2-v2lite-width`: 2 layers (one dense, one MoE) at DeepSeek-V2-Lite's width (n_embd 2048,
  16 heads, kv_lora 512, rope 64, nope 128, v 128, 64 experts of 1408, 6 used, 2 shared, dense FFN
  10944), vocabulary 4,096 (about 1.3 GB on disk while it runs).

Output: tests/data/measured/llamacpp-cpu-mla.json.

Run (from the repository root), with the loader built as load_context.cpp's header says:
    PYTHONPATH=<llama.cpp>/gguf-py python scripts/measure/llamacpp/measure_mla.py <load_context binary>
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import loader as loader_mod  # noqa: E402
import measure_layer_kinds as kinds  # noqa: E402

TINY = dict(kinds.DEEPSEEK2)
V3_ROUTER = {**TINY, "groups": 4, "groups_used": 2, "scale": 2.5, "norm": True, "gating": "sigmoid",
             "probs_b": True}
V2_LITE = {**TINY, "q_lora": 0, "n_shared": 2, "scale": 1.0, "norm": False, "gating": "softmax",
           "probs_b": False}
# A shape whose peak is the router (512 experts, narrow everything else, a 300-token vocabulary, a
# short context: ROUTER_GRID): with
# DeepSeek-V3's 8 groups of which 4 and the scale, and without them.
ROUTER_BOUND = {"n_layer": 3, "n_embd": 64, "n_head": 2, "q_lora": 32, "kv_lora": 48, "nope": 16, "rope": 16,
                "v": 16, "n_ff": 64, "n_expert": 512, "n_expert_used": 8, "n_shared": 1, "n_ff_exp": 16,
                "dense_lead": 1, "n_vocab": 300, "groups": 8, "groups_used": 4, "scale": 2.5, "norm": True,
                "gating": "sigmoid", "probs_b": True}
ROUTER_BOUND_PLAIN = {**ROUTER_BOUND, "groups": 0, "groups_used": 0, "scale": 1.0}
ROUTER_GRID = [(256, 512, True, "f16"), (256, 512, False, "f16"), (512, 256, True, "f16")]
V2_LITE_WIDTH = {"n_layer": 2, "n_embd": 2048, "n_head": 16, "q_lora": 0, "kv_lora": 512, "nope": 128,
                 "rope": 64, "v": 128, "n_ff": 10944, "n_expert": 64, "n_expert_used": 6, "n_shared": 2,
                 "n_ff_exp": 1408, "dense_lead": 1, "n_vocab": 4096, "scale": 1.0, "norm": False,
                 "gating": "softmax", "probs_b": False}


def write_mla(path, m):
    import gguf

    e, h = m["n_embd"], m["n_head"]
    kv_lora, rope, nope, v, q_lora = m["kv_lora"], m["rope"], m["nope"], m["v"], m["q_lora"]
    shape = (m["n_layer"], e, h, 1, m["n_ff"], m["n_vocab"])
    w = loader_mod.begin(gguf, path, "deepseek2", "tiny-deepseek2", shape, kv_lora + rope, rope, kv_lora)
    # 0 is a direct Q projection (the key is required unless the layer count says "lite").
    w.add_q_lora_rank(q_lora)
    w.add_kv_lora_rank(kv_lora)
    w.add_key_length_mla(nope + rope)
    w.add_value_length_mla(v)
    w.add_leading_dense_block_count(m["dense_lead"])
    w.add_expert_count(m["n_expert"])
    w.add_expert_used_count(m["n_expert_used"])
    w.add_expert_shared_count(m["n_shared"])
    w.add_expert_feed_forward_length(m["n_ff_exp"])
    w.add_expert_weights_scale(m["scale"])
    w.add_expert_weights_norm(m["norm"])
    gating = {"sigmoid": gguf.ExpertGatingFuncType.SIGMOID, "softmax": gguf.ExpertGatingFuncType.SOFTMAX}
    w.add_expert_gating_func(gating[m["gating"]])
    if m.get("groups"):
        w.add_expert_group_count(m["groups"])
        w.add_expert_group_used_count(m["groups_used"])
    tensor = kinds.tensor_writer(w)
    tensor("token_embd.weight", m["n_vocab"], e)
    for i in range(m["n_layer"]):
        tensor(f"blk.{i}.attn_norm.weight", e)
        if q_lora > 0:
            tensor(f"blk.{i}.attn_q_a_norm.weight", q_lora)
            tensor(f"blk.{i}.attn_q_a.weight", q_lora, e)
            tensor(f"blk.{i}.attn_q_b.weight", h * (nope + rope), q_lora)
        else:
            tensor(f"blk.{i}.attn_q.weight", h * (nope + rope), e)
        tensor(f"blk.{i}.attn_kv_a_norm.weight", kv_lora)
        tensor(f"blk.{i}.attn_kv_a_mqa.weight", kv_lora + rope, e)
        tensor(f"blk.{i}.attn_k_b.weight", h, kv_lora, nope)
        tensor(f"blk.{i}.attn_v_b.weight", h, v, kv_lora)
        tensor(f"blk.{i}.attn_output.weight", e, h * v)
        tensor(f"blk.{i}.ffn_norm.weight", e)
        if i < m["dense_lead"]:
            tensor(f"blk.{i}.ffn_gate.weight", m["n_ff"], e)
            tensor(f"blk.{i}.ffn_up.weight", m["n_ff"], e)
            tensor(f"blk.{i}.ffn_down.weight", e, m["n_ff"])
        else:
            f, n = m["n_ff_exp"], m["n_expert"]
            tensor(f"blk.{i}.ffn_gate_inp.weight", n, e, f32=True)
            if m["probs_b"]:
                tensor(f"blk.{i}.exp_probs_b.bias", n)
            tensor(f"blk.{i}.ffn_gate_exps.weight", n, f, e)
            tensor(f"blk.{i}.ffn_up_exps.weight", n, f, e)
            tensor(f"blk.{i}.ffn_down_exps.weight", n, e, f)
            s = f * m["n_shared"]
            tensor(f"blk.{i}.ffn_gate_shexp.weight", s, e)
            tensor(f"blk.{i}.ffn_up_shexp.weight", s, e)
            tensor(f"blk.{i}.ffn_down_shexp.weight", e, s)
    tensor("output_norm.weight", e)
    tensor("output.weight", m["n_vocab"], e)
    loader_mod.finish(w)


def main():
    loader = sys.argv[1]
    records = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        for name, model in (("deepseek2-v3-router", V3_ROUTER), ("deepseek2-v2lite", V2_LITE),
                            ("deepseek2-router-bound", ROUTER_BOUND),
                            ("deepseek2-router-bound-plain", ROUTER_BOUND_PLAIN),
                            ("deepseek2-v2lite-width", V2_LITE_WIDTH)):
            path = os.path.join(tmp, f"{name}.gguf")
            write_mla(path, model)
            for n_ctx, ub, fa, ct in (ROUTER_GRID if "router-bound" in name else kinds.GRID):
                rid = f"llamacpp-cpu-{name}-c{n_ctx}-ub{ub}-fa{int(fa)}-{ct}"
                setting = (n_ctx, ub, fa, ct, False, 1, False)
                records.append(loader_mod.record(loader, path, rid, "deepseek2", model, setting))
    loader_mod.write("measure_mla.py", "llamacpp-cpu-mla.json",
                     "llama.cpp CPU buffers of DeepSeek-2/3 (latent attention) files with the router options "
                     "build_moe_ffn reads (expert groups, weight scale and normalisation, gating, selection "
                     "bias) and DeepSeek-V2-Lite's direct Q projection; printed_mib sums the lines of one "
                     "buffer type, kv_lines are the cache lines as printed", records)


if __name__ == "__main__":
    main()
