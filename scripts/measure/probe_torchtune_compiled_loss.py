"""What torchtune's compiled chunked cross-entropy keeps for backward (issue 12, torchtune `compile=True`).

torchtune 0.6.1 `training/_compile.py` `compile_loss` replaces `CEWithChunkedOutputLoss.compute_cross_entropy`
(`F.cross_entropy(logits.float(), labels, reduction="sum")`, `modules/loss/ce_chunked_output_loss.py`) with
`torch.compile(compute_cross_entropy, backend="inductor")`. A `TorchDispatchMode` (the accountant) does not see
inside inductor's kernels, so this probe records what autograd saves with `torch.autograd.graph.saved_tensors_hooks`
(AOTAutograd saves through an autograd.Function, which the hooks see), eager and compiled, for the 8 chunks of a
BF16 and an FP32 logits batch, as in the recipe (the chunks are the model's outputs, the loss is summed over them).

The loss module is torchtune's own file, loaded alone (the package's __init__ needs torchao 0.10, whose NF4 tensor
this probe does not use). Run: python probe_torchtune_compiled_loss.py TORCHTUNE_SRC OUT.json
(TORCHTUNE_SRC = the unpacked torchtune-0.6.1 wheel).
"""

import datetime
import importlib.util
import json
import platform
import sys

import torch

SRC, OUT = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location(
    "ce_chunked_output_loss", f"{SRC}/torchtune/modules/loss/ce_chunked_output_loss.py"
)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)

B, S, V, CHUNKS = 2, 256, 32000, 8


def run(dtype, compiled):
    torch.manual_seed(0)
    loss_fn = mod.CEWithChunkedOutputLoss(num_output_chunks=CHUNKS)
    if compiled:
        # compile_loss, torchtune 0.6.1 training/_compile.py: only the upcast + cross-entropy.
        loss_fn.compute_cross_entropy = torch.compile(loss_fn.compute_cross_entropy, backend="inductor")
    logits = [
        torch.randn(B, S // CHUNKS, V, dtype=dtype).requires_grad_() for _ in range(CHUNKS)
    ]
    labels = torch.randint(0, V, (B, S))
    chunk_ptrs = {c.untyped_storage().data_ptr() for c in logits}
    saved = {}

    def pack(t):
        st = t.untyped_storage()
        saved[st.data_ptr()] = {
            "shape": list(t.shape),
            "dtype": str(t.dtype).replace("torch.", ""),
            "storage_bytes": st.nbytes(),
            "is_a_logits_chunk": st.data_ptr() in chunk_ptrs,
        }
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = loss_fn(logits, labels)
    loss.backward()
    tensors = sorted(saved.values(), key=lambda r: -r["storage_bytes"])
    new_bytes = sum(r["storage_bytes"] for r in tensors if not r["is_a_logits_chunk"])
    chunk_bytes = sum(r["storage_bytes"] for r in tensors if r["is_a_logits_chunk"])
    return {
        "dtype": str(dtype).replace("torch.", ""),
        "compiled": compiled,
        "saved_distinct_storages": len(tensors),
        "saved_bytes_beyond_the_logits": new_bytes,
        "saved_logits_chunk_bytes": chunk_bytes,
        "saved": tensors,
    }


records = [run(d, c) for d in (torch.bfloat16, torch.float32) for c in (False, True)]
doc = {
    "about": __doc__,
    "shape": {"batch": B, "seq": S, "vocab": V, "output_chunks": CHUNKS, "b_s_v": B * S * V},
    "framework": {"name": "torchtune", "version": "0.6.1", "settings": {"compile": True}},
    "env": {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": datetime.date.today().isoformat(),
        "command": "python scripts/measure/probe_torchtune_compiled_loss.py <torchtune-0.6.1 wheel> <out>",
    },
    "records": records,
}
with open(OUT, "w") as f:
    json.dump(doc, f, indent=1)
for r in records:
    print(r["dtype"], "compiled" if r["compiled"] else "eager", r["saved_bytes_beyond_the_logits"], r["saved_logits_chunk_bytes"])
