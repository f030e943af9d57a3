#!/usr/bin/env python3
"""What one torchtune 0.6.1 decoder layer saves for backward, eager and compiled (`training.compile_model`,
inductor), counted with `saved_tensors_hooks` (parameters, buffers and the layer's input left out). BF16, built
under `training.set_default_dtype` as the recipes build. Prints the total and the largest saved tensors.

    python probe_torchtune_compiled_layer.py H F S COMPILED     # e.g. 256 768 256 1

6 December 2026 (torch 2.15.0 CPU inductor): the compiled layer saves exactly
e·(3·b·s·f + 3·b·s·h + 4·b·s·a·d) + 4·b·a·s + 8·b·s bytes (h 256 / f 768 / s 256 and h 384 / f 1024 / s 128), 38 %
less than eager; not modelled (docs/frameworks/torchtune.md, "compile, layers").
"""
import sys, torch
from torchtune.models.llama3_2._component_builders import llama3_2
from torchtune import training
torch.manual_seed(0)
h, f, s, b = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), 2
compiled = sys.argv[4] == "1"
with training.set_default_dtype(torch.bfloat16):
    m = llama3_2(vocab_size=512, num_layers=1, num_heads=4, num_kv_heads=2, embed_dim=h, max_seq_len=2048,
                 intermediate_dim=f, tie_word_embeddings=True)
layer = m.layers[0]
if compiled:
    training.compile_model(m)  # compiles each TransformerSelfAttentionLayer
    layer = m.layers[0]
x = torch.randn(b, s, h, dtype=torch.bfloat16, requires_grad=True)
params = {p.untyped_storage().data_ptr() for p in m.parameters()}
bufs = {p.untyped_storage().data_ptr() for p in m.buffers()}
def run():
    saved = {}
    def pack(t):
        st = t.untyped_storage()
        k = st.data_ptr()
        if k not in params and k not in bufs and k != x.untyped_storage().data_ptr():
            saved[k] = (st.nbytes(), t.dtype, tuple(t.shape))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = layer(x)
    return saved, y
run()  # warm-up / compile
saved, y = run()
tot = sum(v[0] for v in saved.values())
print("compiled" if compiled else "eager", h, f, s, "saved", tot, "per bsh", tot / (b * s * h))
for v in sorted(saved.values(), key=lambda v: -v[0])[:14]:
    print("   ", v)
