#!/usr/bin/env python3
"""Eager decode of a mixture-of-experts layer: the aten ops one decode step of a Hugging Face Mixtral
dispatches per decoder layer (issue 13: a served request's fixed overhead; `estimator::performance::launch`
`EAGER_MOE_LAYER_OPS`). Counts only, deterministic: the per-op host cost is `decode_ops_probe.py`'s.

Transformers 5.x runs the experts through `experts_implementation`, "grouped_mm" by default
(`PreTrainedModel.get_correct_experts_implementation`); on CUDA `torch._grouped_mm` is used from compute
capability 8.0 with torch > 2.8 (`integrations/moe.py` `_can_use_grouped_mm`), so the ops dispatched are the ones
counted here on CPU. Counted for several expert counts and top-k: the count does not depend on them.

Run: /work/venvs-measure/hf/bin/python moe_decode_ops_probe.py > tests/data/measured/hf-moe-decode-ops.json
(transformers 5.24.0, torch 2.15.0, CPU)
"""
import json
import torch
import transformers
from transformers import DynamicCache, MixtralConfig, MixtralForCausalLM

# The same view-free op counter as the dense probe (run from scripts/measure/).
from decode_ops_probe import Count  # noqa: E402


def model(layers, experts, top_k):
    cfg = MixtralConfig(dtype=torch.bfloat16, vocab_size=256, hidden_size=64, intermediate_size=128,
                        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=512, num_local_experts=experts, num_experts_per_tok=top_k,
                        attn_implementation="sdpa")
    torch.manual_seed(0)
    return MixtralForCausalLM(cfg).to(torch.bfloat16).eval()


def decode_ops(layers, experts, top_k):
    m = model(layers, experts, top_k)
    ids = torch.randint(0, 256, (1, 16))
    with torch.no_grad():
        out = m(input_ids=ids, past_key_values=DynamicCache(config=m.config), use_cache=True)
        nxt = out.logits[:, -1:].argmax(-1)
        c = Count()
        with c:
            m(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
    return c.ops, m.config._experts_implementation


rows = []
for experts, top_k in ((8, 2), (8, 1), (16, 2), (64, 8)):
    (a, impl), (b, _) = decode_ops(2, experts, top_k), decode_ops(4, experts, top_k)
    per_layer = (sum(b.values()) - sum(a.values())) / 2
    rows.append({"experts": experts, "top_k": top_k, "experts_implementation": impl,
                 "ops_per_layer": per_layer, "ops_outside_layers": sum(a.values()) - 2 * per_layer,
                 "layer_ops": {k: (b[k] - a[k]) / 2 for k in sorted(b) if b[k] != a[k]}})
print(json.dumps({
    "source": "scripts/measure/moe_decode_ops_probe.py",
    "versions": {"transformers": transformers.__version__, "torch": torch.__version__},
    "model": "MixtralForCausalLM, hidden 64, 4 heads / 2 KV heads, expert FFN 128, vocab 256, BF16, SDPA, CPU",
    "decode_ops": rows,
}, indent=1, sort_keys=True))
