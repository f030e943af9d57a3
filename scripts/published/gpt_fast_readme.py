#!/usr/bin/env python3
"""Writes tests/data/published/gpt-fast-readme-a100.json: gpt-fast's published batch-1 decode rates on A100 80 GB
(issue 13, inference latencies: a check beyond the calibration set, never fitted), transcribed from the README of
pytorch-labs/gpt-fast at commit 0f925b5d4ce457b89a7ca6c9ce50f42bf2576945 (sections "Benchmarks", "Tensor
Parallelism", "Tensor Parallelism + Quantization"). Run from the repository root.
"""
import json

COMMIT = "0f925b5d4ce457b89a7ca6c9ce50f42bf2576945"
ROWS = [  # id, model, GPUs (TP), weights, tokens/s, the README's "Memory Bandwidth (GB/s)", table
    ("7b-bf16", "Llama-2-7B", 1, "bf16", 104.9, 1397.31, "Benchmarks: Base"),
    ("7b-int8", "Llama-2-7B", 1, "int8", 155.58, 1069.20, "Benchmarks: 8-bit"),
    ("7b-int4", "Llama-2-7B", 1, "int4-g32", 196.80, 862.69, "Benchmarks: 4-bit (G=32)"),
    ("70b-int8", "Llama-2-70B", 1, "int8", 19.13, 1322.58, "Benchmarks: 8-bit"),
    ("70b-int4", "Llama-2-70B", 1, "int4-g32", 25.25, 1097.66, "Benchmarks: 4-bit (G=32)"),
    ("7b-tp2", "Llama-2-7B", 2, "bf16", 168.84, 1181.99, "Tensor Parallelism"),
    ("7b-tp4", "Llama-2-7B", 4, "bf16", 254.02, 955.83, "Tensor Parallelism"),
    ("7b-tp8", "Llama-2-7B", 8, "bf16", 328.43, 704.10, "Tensor Parallelism"),
    ("70b-tp2", "Llama-2-70B", 2, "bf16", 21.32, 1481.87, "Tensor Parallelism"),
    ("70b-tp4", "Llama-2-70B", 4, "bf16", 38.01, 1340.76, "Tensor Parallelism"),
    ("70b-tp8", "Llama-2-70B", 8, "bf16", 62.50, 1135.29, "Tensor Parallelism"),
    ("70b-tp8-int8", "Llama-2-70B", 8, "int8", 80.44, 752.04, "Tensor Parallelism + Quantization"),
    ("70b-tp8-int4", "Llama-2-70B", 8, "int4-g32", 90.77, 548.10, "Tensor Parallelism + Quantization"),
]
DIMS = {
    "Llama-2-7B": dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000),
    "Llama-2-70B": dict(layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=32000),
}


def record(rid, model, tp, weights, tps, bw, table):
    return {
        "id": f"gpt-fast-a100-{rid}",
        "kind": "inference_decode_rate",
        "role": "check",
        "framework": {
            "name": "gpt-fast (native PyTorch: torch.compile mode='reduce-overhead', fullgraph, static KV cache, "
                    "so every decode step replays a CUDA graph)",
            "version": f"pytorch-labs/gpt-fast README.md at {COMMIT}",
        },
        "hardware": {
            "gpu": "NVIDIA A100-SXM 80 GB, power limited to 330 W",
            "gpus": tp,
            "gpus_per_node": 8,
            "interconnect": "8xA100 hybrid cube mesh (NVLink); tensor parallelism with ENABLE_INTRA_NODE_COMM=1",
        },
        "statistic": "decode tokens/s at batch size 1 (= tokens/s/user) after a 5-token prompt; the README's "
                     "'Memory Bandwidth (GB/s)' column is the model's bytes × tokens/s",
        "value": tps,
        "unit": "tokens/s",
        "also_reported": {"memory_bandwidth_gb_s": bw, "table": table},
        "config": {"model": dict(name=model, **DIMS[model]), "weights": weights, "tp": tp, "batch": 1,
                   "prompt_tokens": 5},
        "unpublished": [
            "tokens generated per run: generate.py's default max_new_tokens = 200 is taken",
            "the host CPU (irrelevant under CUDA graphs)",
            "the latency of PyTorch's intra-node all-reduce (ENABLE_INTRA_NODE_COMM); the estimate charges its "
            "own collective model (timing.link_latency_us)",
        ],
        "source": {
            "citation": "pytorch-labs/gpt-fast, README.md",
            "locator": f"github.com/pytorch-labs/gpt-fast/blob/{COMMIT}/README.md, section '{table.split(':')[0]}'",
            "confidence": "T",
        },
    }


doc = {
    "schema": "vram-explorer.published/1",
    "about": "gpt-fast's published batch-1 decode rates on A100 80 GB (issue 13: inference latencies; check records, "
             "never fitted)",
    "records": [record(*r) for r in ROWS],
}
with open("tests/data/published/gpt-fast-readme-a100.json", "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
