#!/usr/bin/env python3
"""Eager training of a multi-head latent attention layer (DeepSeek-V2/V3): the bytes its memory-bound ops read and
write, forward and backward (issue 13: "the memory-bound elementwise work ... timed by bytes moved"). Evidence for
`estimator::performance::parts::elementwise::mla` (docs/time-model.md "Eager elementwise
work").

The accountant is elementwise_traffic_probe.py's (every non-view aten op moves its tensor inputs and outputs once;
matrix products and the attention kernel are timed by FLOPs and left out). A layer is the 2-layer model's minus the
1-layer model's. Model: Hugging Face `DeepseekV3ForCausalLM` (transformers 5.24.0), every layer dense
(`first_k_dense_replace` = layers: the MLP is a Llama SwiGLU of hidden 256 and FFN 640, as in the Llama record),
BF16, random init, CPU, SDPA, `use_cache=False`. The value head width is set to nope + rope: with a narrower value
CPU SDPA falls back to its unfused math path (a softmax and masks on CPU that a GPU's fused kernel does not run).

The accountant counts an in-place op's destination as an argument: `expand_kv`'s two `copy_` are 6 B per element
here, 4 B (read the source, write the destination) on any device; the comparison takes a third of each `copy_` off.
Two ops are CPU layout artefacts and are listed apart (`cpu_layout_bytes_*`): CPU SDPA returns its output in the
query's (batch, heads, seq, dim) layout, so Transformers' `transpose(1, 2).contiguous()` copies it (a `clone` of
heads x v per token), and backward copies the incoming gradient back into that layout (a `copy_` of the same size
with the destination as an argument: 6 B per element). CUDA's flash and memory-efficient kernels allocate their
output as (batch, seq, heads, dim) (PyTorch `aten/src/ATen/native/transformers/cuda/attention.cu`), where both are
no-ops. The Llama record has neither: its query is a transposed (batch, seq, heads, dim) tensor already.

Run: python3 mla_traffic_probe.py > ../../tests/data/measured/eager-mla-traffic.json
(torch 2.15.0, transformers 5.24.0; requirements-hf.txt)
"""
import json, sys
import torch
import transformers
import elementwise_traffic_probe as p
from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

# (heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, rope_interleave); the last is held out.
SHAPES = [(8, 96, 64, 32, 16, True), (16, 96, 64, 32, 16, True), (8, 192, 64, 32, 16, True),
          (8, 96, 128, 32, 16, True), (8, 96, 64, 64, 32, True), (8, 0, 64, 32, 16, True),
          (8, 96, 64, 32, 16, False), (12, 128, 96, 48, 16, True)]


def case(heads, q_lora, kv_lora, nope, rope, interleave):
    v = nope + rope

    def build(layers):
        cfg = DeepseekV3Config(vocab_size=128, hidden_size=p.H, intermediate_size=p.F, num_hidden_layers=layers,
                               first_k_dense_replace=layers, num_attention_heads=heads, num_key_value_heads=heads,
                               q_lora_rank=q_lora or None, kv_lora_rank=kv_lora, qk_nope_head_dim=nope,
                               qk_rope_head_dim=rope, v_head_dim=v, max_position_embeddings=p.S,
                               attn_implementation="sdpa", rope_interleave=interleave, attention_dropout=0.0)
        torch.manual_seed(0)
        return DeepseekV3ForCausalLM(cfg).to(torch.bfloat16).train()
    r = p.layer(build)
    tokens = p.B * p.S
    per = lambda d: {o: b / tokens for o, b in d.items()}
    return {"heads": heads, "q_lora_rank": q_lora, "kv_lora_rank": kv_lora, "qk_nope_head_dim": nope,
            "qk_rope_head_dim": rope, "v_head_dim": v, "rope_interleave": interleave,
            "forward_bytes_per_token": r["forward_bytes"] / tokens,
            "backward_bytes_per_token": r["backward_bytes"] / tokens,
            "cpu_layout_bytes_forward_per_token": 4 * heads * v,
            "cpu_layout_bytes_backward_per_token": 6 * heads * v,
            "forward_by_op_per_token": per(r["forward_by_op"]),
            "backward_by_op_per_token": per(r["backward_by_op"])}


def main():
    out = {
        "what": "Eager PyTorch training, one DeepSeek-V3 (MLA) decoder layer with a dense SwiGLU MLP: bytes per token "
                "read + written by the non-view, non-matmul, non-attention aten ops, forward and autograd backward, as "
                "the 2-layer model's minus the 1-layer model's, for eight attention shapes (the last held out)",
        "source": "scripts/measure/mla_traffic_probe.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "shape": {"batch": p.B, "seq": p.S, "hidden": p.H, "ffn": p.F, "dtype": "bfloat16"},
        "cases": [case(*s) for s in SHAPES],
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
