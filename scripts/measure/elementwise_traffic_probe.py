#!/usr/bin/env python3
"""Eager training: the bytes the memory-bound ops of one decoder layer read and write, forward and backward
(issue 13: "the memory-bound elementwise work ... timed by bytes moved"). Evidence for
`estimator::performance::parts::elementwise::eager_layer` (docs/time-model.md "Eager elementwise work").

Every non-view aten op is one kernel on a GPU and moves its tensor arguments and results through memory once:
bytes = sum of numel x element size over the tensor inputs and outputs. Matrix products and the attention kernel
are left out (they are timed by FLOPs); so are views. A layer's figure is the 2-layer model's minus the 1-layer
model's, so the embedding, the final norm, the head and the loss cancel.

Models, BF16 weights and activations, random init, CPU (the dispatched ops are the ones a CUDA eager step runs;
only the attention kernel's name differs):
- Hugging Face `LlamaForCausalLM` (transformers 5.24.0), SDPA, no padding mask (GQA inside SDPA, no repeat_kv),
  `use_cache=False` (a training forward keeps no KV cache);
- torchtitan's Llama at 9dec370 (the December 2024 benchmarks' commit): pass the directory holding
  `git show 9dec370:torchtitan/models/llama/model.py` as model.py and `...models/norms.py` as norms.py.

Run: python3 elementwise_traffic_probe.py /tmp/tt > ../../tests/data/measured/eager-elementwise-traffic.json
(torch 2.15.0, transformers 5.24.0; requirements-hf.txt)
"""
import json, os, sys, types
import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

VIEWS = {"view", "_unsafe_view", "transpose", "t", "expand", "slice", "select", "unsqueeze", "squeeze",
         "as_strided", "detach", "alias", "permute", "split", "split_with_sizes", "unbind", "lift_fresh",
         "empty", "empty_strided", "_reshape_alias", "unflatten", "sym_size", "sym_stride", "is_same_size",
         "_local_scalar_dense", "resolve_conj", "resolve_neg", "result_type", "view_as_real", "view_as_complex",
         "zeros_like", "ones_like", "new_empty_strided", "new_empty", "_to_copy_noop"}
# Timed by FLOPs elsewhere.
COMPUTE = {"mm", "bmm", "addmm", "matmul", "linear", "_scaled_dot_product_flash_attention_for_cpu",
           "_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_efficient_attention",
           "_scaled_dot_product_flash_attention", "embedding", "embedding_dense_backward"}

B, S = 2, 64
H, HEADS, KV, F = 256, 8, 2, 640


def tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from tensors(y)


class Traffic(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.bytes = 0
        self.ops = {}

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in VIEWS or name in COMPUTE:
            return out
        ins = [t for t in tensors((args, kwargs)) if t.dim() > 0]
        outs = [t for t in tensors(out) if t.dim() > 0]
        # An op whose result shares an input's storage (an in-place op, a view) writes it once.
        in_ptrs = {t.untyped_storage().data_ptr() for t in ins}
        moved = sum(t.numel() * t.element_size() for t in ins)
        moved += sum(t.numel() * t.element_size() for t in outs if t.untyped_storage().data_ptr() not in in_ptrs
                     or name.endswith("_"))
        self.bytes += moved
        self.ops[name] = self.ops.get(name, 0) + moved
        return out


def step(model, ids):
    """(forward bytes, backward bytes, forward ops, backward ops) of one training step's forward and backward."""
    f, b = Traffic(), Traffic()
    # A training forward builds no KV cache (Transformers would otherwise copy K and V into a
    # DynamicCache: `use_cache` defaults to True).
    kwargs = {"use_cache": False} if hasattr(model, "config") else {}
    with f:
        logits = model(ids, **kwargs)
        logits = logits.logits if hasattr(logits, "logits") else logits
    loss = logits.float().sum()
    with b:
        loss.backward()
    return f.bytes, b.bytes, f.ops, b.ops


def hf(layers):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=128, hidden_size=H, intermediate_size=F, num_hidden_layers=layers,
                      num_attention_heads=HEADS, num_key_value_heads=KV, max_position_embeddings=S,
                      attn_implementation="sdpa", attention_dropout=0.0)
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).to(torch.bfloat16).train()


def torchtitan(path, layers):
    pkg = types.ModuleType("torchtitan")
    pkg.__path__ = []
    utils = types.ModuleType("torchtitan.utils")
    utils.device_module = torch.cuda
    models = types.ModuleType("torchtitan.models")
    models.__path__ = []
    sys.modules.update({"torchtitan": pkg, "torchtitan.utils": utils, "torchtitan.models": models})
    import importlib.util
    for name, file in (("torchtitan.models.norms", "norms.py"), ("tt_llama", "model.py")):
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, os.path.join(path, file))
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
    m = sys.modules["tt_llama"]
    # ffn: int(2·4h/3) rounded up to multiple_of; 4h = 1024 → 682 → 768 with multiple_of 256: set it to F.
    args = m.ModelArgs(dim=H, n_layers=layers, n_heads=HEADS, n_kv_heads=KV, vocab_size=128, multiple_of=128,
                       ffn_dim_multiplier=F / int(2 * 4 * H / 3), max_seq_len=S, norm_type="rmsnorm")
    torch.manual_seed(0)
    model = m.Transformer(args)
    model.init_weights()
    assert model.layers["0"].feed_forward.w1.out_features == F, model.layers["0"].feed_forward.w1
    # FSDP2's mixed precision casts the parameters, not the complex RoPE buffer (model.to would drop its
    # imaginary part).
    for prm in model.parameters():
        prm.data = prm.data.to(torch.bfloat16)
    return model.train()


def layer(build):
    ids = torch.randint(0, 128, (B, S))
    one, two = step(build(1), ids), step(build(2), ids)
    ops = lambda i: {k: two[i].get(k, 0) - one[i].get(k, 0) for k in sorted(set(two[i]) | set(one[i]))
                     if two[i].get(k, 0) != one[i].get(k, 0)}
    return {"forward_bytes": two[0] - one[0], "backward_bytes": two[1] - one[1],
            "forward_by_op": ops(2), "backward_by_op": ops(3)}


def main():
    tt_path = sys.argv[1] if len(sys.argv) > 1 else None
    out = {
        "what": "Eager PyTorch training, one decoder layer: bytes read + written by the non-view, non-matmul, "
                "non-attention aten ops (each a kernel on a GPU), forward and autograd backward, as the 2-layer "
                "model's minus the 1-layer model's; per op name in *_by_op",
        "source": "scripts/measure/elementwise_traffic_probe.py",
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "shape": {"batch": B, "seq": S, "hidden": H, "heads": HEADS, "kv_heads": KV, "head_dim": H // HEADS,
                  "ffn": F, "dtype": "bfloat16"},
        "hf_llama_sdpa": layer(hf),
    }
    if tt_path:
        out["torchtitan_9dec370_llama"] = layer(lambda n: torchtitan(tt_path, n))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
