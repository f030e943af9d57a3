#!/usr/bin/env python3
"""Eager training of a mixture-of-experts layer: the bytes its routing and token-permutation ops read and write,
forward and backward, beyond what a dense layer of the same active width moves (issue 13: "the memory-bound
elementwise work ... timed by bytes moved"). Evidence for `estimator::performance::parts::elementwise::moe_routing`.

The accountant is elementwise_traffic_probe.py's (every non-view aten op moves its tensor inputs and outputs once;
matrix products, the attention kernel and Transformers 5.24's grouped expert GEMM `_grouped_mm` are timed by
FLOPs and left out). A layer is the 2-layer model's minus the 1-layer model's. Model: Hugging Face
`MixtralForCausalLM` (transformers 5.24.0, its default experts implementation), BF16, random init, CPU, SDPA, no
auxiliary loss, `use_cache=False`; the same attention and widths as the Llama case of eager-elementwise-traffic.json,
with E experts of the Llama FFN width and top-k routing. Terms in h, k·h, E and k and a constant are five unknowns:
the constant (160 B) and the k term (128 B per copy) are read from the per-op table (the ops whose bytes change with
neither h nor E), the other three solved from the first four shapes; the fifth, (8, 4, 512), is held out.

Run: python3 moe_routing_traffic_probe.py > ../../tests/data/measured/eager-moe-routing-traffic.json
(torch 2.15.0, transformers 5.24.0; requirements-hf.txt)
"""
import json, sys
import torch
import transformers
import elementwise_traffic_probe as p
from transformers import MixtralConfig, MixtralForCausalLM

p.COMPUTE.add("_grouped_mm")
# (experts, top-k, hidden): the first four solve the terms (with the constant fixed, below), the fifth checks them.
SHAPES = [(8, 2, 256), (8, 4, 256), (16, 2, 256), (8, 2, 512), (8, 4, 512)]


def case(experts, k, hidden):
    def build(layers):
        cfg = MixtralConfig(vocab_size=128, hidden_size=hidden, intermediate_size=p.F, num_hidden_layers=layers,
                            num_attention_heads=p.HEADS, num_key_value_heads=p.KV, max_position_embeddings=p.S,
                            num_local_experts=experts, num_experts_per_tok=k, attn_implementation="sdpa",
                            router_aux_loss_coef=0.0, output_router_logits=False)
        torch.manual_seed(0)
        return MixtralForCausalLM(cfg).to(torch.bfloat16).train()
    r = p.layer(build)
    tokens = p.B * p.S
    return {"experts": experts, "top_k": k, "hidden": hidden, "q": hidden, "kv": p.KV * hidden // p.HEADS,
            "expert_ffn": p.F, "forward_bytes_per_token": r["forward_bytes"] / tokens,
            "backward_bytes_per_token": r["backward_bytes"] / tokens,
            "forward_by_op_per_token": {o: b / tokens for o, b in r["forward_by_op"].items()}}


def main():
    out = {
        "what": "Eager PyTorch training, one Mixtral decoder layer: bytes per token read + written by the non-view, "
                "non-matmul, non-attention aten ops, forward and autograd backward, as the 2-layer model's minus "
                "the 1-layer model's, for four (experts, top-k, hidden) shapes",
        "source": "scripts/measure/moe_routing_traffic_probe.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "shape": {"batch": p.B, "seq": p.S, "heads": p.HEADS, "kv_heads": p.KV, "dtype": "bfloat16"},
        "cases": [case(*s) for s in SHAPES],
    }
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
