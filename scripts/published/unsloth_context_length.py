"""Unsloth README's maximum-context-length tables (Unsloth vs. Hugging Face + FlashAttention-2, QLoRA) as
published-record JSON (schema: tests/data/published/README.md).

Source: github.com/unslothai/unsloth README.md 'Context length benchmarks' at e3162dc5bf (2025-01-14; unsloth
__version__ 2025.1.5 in unsloth/models/_utils.py line 15 at that commit; the section was removed in c60636695c,
2026-03-17). Transcribed by hand (confidence T).
These are capacity figures, kind 'training_max_sequence': the largest padded sequence length (batch 1) that trained
without running out of memory on a GPU with the named memory size. A scenario checks them by asking whether the
estimated peak at that length fits the VRAM and at a slightly larger one does not. Both columns are exactly linear in
the VRAM size (Unsloth +4719 tokens per GB, Hugging Face +404.75 tokens per GB between every pair of rows), so the rows
are a linear fit through a few measurements, not one run per row; the statistic the fit used is not stated.
Python 3 standard library only; run from tests/data/published/.
"""
import json

LLAMA31_8B = {"family": "Llama 3.1", "hf_id": "meta-llama/Llama-3.1-8B-Instruct", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8,
              "head_dim": 128, "ffn": 14336, "vocab": 128256, "tied_embeddings": False}
LLAMA33_70B = {"family": "Llama 3.3", "hf_id": "meta-llama/Llama-3.3-70B-Instruct", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8,
               "head_dim": 128, "ffn": 28672, "vocab": 128256, "tied_embeddings": False}
# model key, GPU VRAM (GB), Unsloth tokens, HF+FA2 tokens (None = OOM)
ROWS = [
    ("llama-3.1-8b", 8, 2972, None), ("llama-3.1-8b", 12, 21848, 932), ("llama-3.1-8b", 16, 40724, 2551),
    ("llama-3.1-8b", 24, 78475, 5789), ("llama-3.1-8b", 40, 153977, 12264), ("llama-3.1-8b", 48, 191728, 15502),
    ("llama-3.1-8b", 80, 342733, 28454),
    ("llama-3.3-70b", 48, 12106, None), ("llama-3.3-70b", 80, 89389, 6916),
]
FW = {"unsloth": ("Unsloth", "2025.1.5 (README commit e3162dc5bf); pyproject requires transformers>=4.46.1, peft>=0.7.1, bitsandbytes>=0.43.3"),
      "hf": ("Hugging Face Transformers + PEFT + bitsandbytes, FlashAttention-2", "not published (contemporary with Unsloth 2025.1)")}
MECH = {"unsloth": "Unsloth: its own QLoRA kernels (fused LoRA MLP/QKV, fast RoPE/RMSNorm), 'unsloth' gradient checkpointing that offloads the saved layer inputs to CPU, chunked/fused cross-entropy (Apple cut-cross-entropy, credited in the same README); from the README and Unsloth docs, not read from its code here",
        "hf": "Transformers eager model with attn_implementation flash_attention_2, PEFT LoRA on bitsandbytes Linear4bit; gradient checkpointing and loss implementation not stated"}
R = []
for mk, gb, uns, hf in ROWS:
    model = LLAMA31_8B if mk == "llama-3.1-8b" else LLAMA33_70B
    for fw, val in (("unsloth", uns), ("hf", hf)):
        name, ver = FW[fw]
        R.append({
            "id": f"unsloth-readme-ctx-{mk}-{gb}gb-{fw}",
            "kind": "training_max_sequence", "role": "check",
            "framework": {"name": name, "version": ver},
            "hardware": {"gpu": f"a GPU with {gb} GB of memory" + (" (the 70B rows: 'a 80GB A100')" if mk == "llama-3.3-70b" else ""), "gpus": 1, "vram_GB": gb},
            "statistic": "largest padded sequence length that trained without out-of-memory at batch 1 on a GPU of the stated memory (a linear fit across the rows; null with outcome 'oom' = OOM at any length)",
            "value": val, "unit": "tokens",
            **({"outcome": "oom"} if val is None else {}),
            "config": {"model": model, "method": "qlora",
                       "quantize": "bitsandbytes 4-bit (NF4 assumed; double quantization and compute dtype not stated)",
                       "lora": {"r": 32, "alpha": "not stated", "dropout": "not stated", "targets": {"q": True, "k": True, "v": True, "o": True, "mlp": True, "head": False}},
                       "layout": {"devices": 1, "micro_batch": 1}, "sequence": "every sample padded to the tested length",
                       "implementation": MECH[fw]},
            "unpublished": ["LoRA alpha/dropout, optimizer (AdamW 8-bit is Unsloth's default in its notebooks), gradient checkpointing mode of the HF column, bitsandbytes/transformers versions",
                            "how the OOM boundary was found and that the rows are a linear extrapolation (they are exactly linear)",
                            "the GPU models other than the 70B rows' A100 80GB"],
            "source": {"citation": "Unsloth README, 'Context length benchmarks' (Llama 3.1 8B and Llama 3.3 70B max. context length)",
                       "locator": "github.com/unslothai/unsloth README.md at e3162dc5bf (2025-01-14), removed in c60636695c (2026-03-17)",
                       "confidence": "T"},
        })
json.dump({"schema": "vram-explorer.published/1",
           "about": "Unsloth README: maximum trainable context length (QLoRA, batch 1) per GPU memory size, Unsloth vs Hugging Face + FA2 (kind training_max_sequence; check records, never fitted)",
           "records": R}, open("unsloth-context-length.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
