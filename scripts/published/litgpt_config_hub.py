"""LitGPT's config-hub fine-tuning table as published-record JSON (schema: tests/data/published/README.md).

Source: Lightning-AI/litgpt config_hub/finetune/README.md at 00af8b0d (2024-09-27), 1xA10G rows of the
Llama-family models; each row's settings from config_hub/finetune/<model>/<method>.yaml at the same commit.
Model dimensions from the models' Hugging Face config.json files (tests/data/hf/ holds copies where the repo
has them). Python 3 standard library only.
"""
import json

SRC = {
    "citation": "LitGPT config hub, fine-tuning benchmark table (Lightning AI automated benchmarks on Alpaca2k)",
    "locator": "github.com/Lightning-AI/litgpt config_hub/finetune/README.md at 00af8b0d (2024-09-27; the table was added in 43c44323, 2024-04-24, and extended until then); settings from config_hub/finetune/<model>/<method>.yaml at 00af8b0d",
    "confidence": "T",
}
# HF config dims: layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied — tied as LitGPT builds the model:
# at 00af8b0d its Llama 3.2 configs (litgpt/config.py lines 956–991) set no `tie_embeddings`, `GPT` has its own
# `lm_head = nn.Linear` (litgpt/model.py line 25) and convert_hf_checkpoint.py (lines 206–207) copies the HF
# embedding into `lm_head.weight`: an untied head of V·h parameters although the HF checkpoint ties them.
MODELS = {
    "llama-2-7b": ("meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 128, 11008, 32000, False),
    "llama-3-8b": ("meta-llama/Meta-Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, False),
    "llama-3.1-8b": ("meta-llama/Meta-Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, False),
    "mistral-7b-v0.2": ("unsloth/Mistral-7B-v0.2", 32, 4096, 32, 8, 128, 14336, 32000, False),
    "tiny-llama": ("TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", 22, 2048, 32, 4, 64, 5632, 32000, False),
    "llama-3.2-1b": ("meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 64, 8192, 128256, False),
    "llama-3.2-3b": ("meta-llama/Llama-3.2-3B", 28, 3072, 24, 8, 128, 8192, 128256, False),
}
QV = {"q": True, "k": False, "v": True, "o": False, "mlp": False, "head": False}
ALL = {"q": True, "k": True, "v": True, "o": True, "mlp": True, "head": True}
# model, method, micro, global, r, alpha, dropout, targets, quantize, GB
ROWS = [
    ("llama-3-8b", "lora", 1, 8, 32, 16, 0.05, QV, None, 19.73),
    ("llama-3-8b", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 17.41),
    ("llama-3.1-8b", "lora", 1, 8, 32, 16, 0.05, QV, None, 19.73),
    ("llama-3.1-8b", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 17.41),
    ("llama-2-7b", "lora", 2, 8, 32, 16, 0.05, QV, None, 19.77),
    ("llama-2-7b", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 13.68),
    ("mistral-7b-v0.2", "lora", 2, 8, 32, 16, 0.05, QV, None, 20.66),
    ("mistral-7b-v0.2", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 14.29),
    ("tiny-llama", "full", 4, 32, None, None, None, None, None, 14.10),
    ("tiny-llama", "lora", 8, 8, 32, 16, 0.05, ALL, None, 13.50),
    ("tiny-llama", "qlora", 8, 8, 32, 16, 0.05, ALL, "bnb.nf4", 16.24),
    ("llama-3.2-1b", "full", 4, 64, None, None, None, None, None, 8.70),
    ("llama-3.2-1b", "lora", 1, 8, 32, 16, 0.05, QV, None, 4.49),
    ("llama-3.2-1b", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 5.53),
    ("llama-3.2-3b", "full", 4, 64, None, None, None, None, None, 16.51),
    ("llama-3.2-3b", "lora", 1, 8, 32, 16, 0.05, QV, None, 9.67),
    ("llama-3.2-3b", "qlora", 2, 8, 32, 16, 0.05, QV, "bnb.nf4", 10.30),
]

recs = []
for (model, method, micro, glob, r, alpha, drop, targets, quant, gb) in ROWS:
    hf, l, h, a, k, d, f, v, tied = MODELS[model]
    cfg = {
        "model": {"family": "Llama (LitGPT LLaMAMLP, RMSNorm, RoPE)", "hf_id": hf, "layers": l, "hidden": h,
                  "heads": a, "kv_heads": k, "head_dim": d, "ffn": f, "vocab": v, "tied_embeddings": tied},
        "method": method,
        "precision": "bf16-true (weights, gradients, AdamW states and activations in BF16)",
        "optimizer": "torch.optim.AdamW",
        "layout": {"devices": 1, "micro_batch": micro, "global_batch": glob},
        "max_seq_length": 512,
    }
    if r is not None:
        cfg["lora"] = {"r": r, "alpha": alpha, "dropout": drop, "targets": targets}
    if quant:
        cfg["quantize"] = quant
    recs.append({
        "id": f"litgpt-config-hub-{model}-{method}-1xa10g",
        "kind": "training_memory",
        "role": "check",
        "framework": {"name": "LitGPT", "version": "main, April to September 2024 (the row's exact commit and the litgpt, lightning, torch and bitsandbytes versions are not published)"},
        "hardware": {"gpu": "NVIDIA A10G (24 GB)", "gpus": 1},
        "statistic": "torch.cuda.max_memory_allocated() / 1e9 at the end of fit() (litgpt/utils.py create_finetuning_performance_report): the allocated peak over training, the periodic validation and the example generation",
        "value": gb, "unit": "GB (10^9 B)",
        "config": cfg,
        "unpublished": [
            "the sequence length of the peak step: LitGPT trains at min(longest tokenized Alpaca2k sample, max_seq_length 512) (finetune/lora.py fit(), get_longest_seq_length); 512 is assumed",
            "software versions (bitsandbytes' 4-bit matmul saved its input when the input needed a gradient in the 0.4x releases of that time)",
        ],
        "source": SRC,
    })
json.dump({"schema": "vram-explorer.published/1",
           "about": "LitGPT's published fine-tuning peak memory on one A10G (issue 12's validation table; check records, never fitted)",
           "records": recs}, open("litgpt-config-hub-a10g.json", "w"), indent=1, ensure_ascii=False)
print(len(recs))
