"""torchtitan's published Llama 3.1 H100 benchmark (FSDP2 / TP / PP / CP) memory as published-record JSON
(schema: tests/data/published/README.md).

Source: github.com/pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (first in the repo at 820504e20,
2025-06-13; text unchanged at b5bcd76c6, 2026-08-21), Tables 1-6, runs of torchtitan 9dec370 (2024-12-26) with torch
1963fc8 (2024-12-23) and torchao eab345c (2024-12-23) on Grand Teton hosts (8 x H100 96 GB HBM2e, 500 W, NVLink;
400 Gb/s RDMA per GPU). Every figure transcribed by hand (confidence T).
The statistic: the 'Memory(GiB)' column is torchtitan's logged 'memory:' figure, DeviceMemoryMonitor.get_peak_stats()
.max_reserved_gib = torch.cuda.memory_stats()['reserved_bytes.all.peak'] / 2**30 (torchtitan/metrics.py lines 56-64
at 9dec370), printed by train.py line 393 and reset after each log (train.py line 403; log_freq 10 steps). Footnote 1:
'Different PP ranks can have different peak memory usages. We take the maximum across all GPUs.'
Model settings from train_configs/llama3_{8b,70b,405b}.toml and torchtitan/models/llama/__init__.py at 9dec370.
Python 3 standard library only; run from tests/data/published/.
"""
import json

STAT = ("max_memory_reserved: torch.cuda.memory_stats()['reserved_bytes.all.peak'] / 2**30 (GiB), torchtitan "
        "DeviceMemoryMonitor.get_peak_stats().max_reserved_gib (torchtitan/metrics.py lines 56-64 at 9dec370), logged "
        "every 10 steps and reset after each log (train.py lines 393, 403); the maximum over all GPUs (the benchmark's "
        "footnote 1)")
MODELS = {
    "8B": {"family": "Llama 3.1 (torchtitan llama3 Transformer: RMSNorm, RoPE theta 5e5, SwiGLU, SDPA)", "hf_id": "meta-llama/Llama-3.1-8B", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn": 14336, "vocab": 128256, "tied_embeddings": False},
    "70B": {"family": "Llama 3.1 (torchtitan llama3)", "hf_id": "meta-llama/Llama-3.1-70B", "layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "head_dim": 128, "ffn": 28672, "vocab": 128256, "tied_embeddings": False},
    "405B": {"family": "Llama 3.1 (torchtitan llama3)", "hf_id": "meta-llama/Llama-3.1-405B", "layers": 126, "hidden": 16384, "heads": 128, "kv_heads": 8, "head_dim": 128, "ffn": 53248, "vocab": 128256, "tied_embeddings": False},
}
PREC = ("FSDP2 mixed precision: FP32 sharded parameters, BF16 unsharded (all-gathered) parameters for compute "
        "(--training.mixed_precision_param bfloat16), FP32 gradient reduce-scatter (mixed_precision_reduce float32); "
        "AdamW (foreach, not fused: --optimizer.fused defaults off) with FP32 moments on the shards")
F8 = ("torchao Float8Linear on every nn.Linear except the output projection (torchtitan/float8.py line 99 at 9dec370); "
      "tensorwise scaling (dynamic by default); FP8 casts of inputs, weights and grad outputs")
AC = {"selective": "selective per-op AC ('op' policy: keeps the outputs of the ops in _save_list, e.g. SDPA, and of every second aten.mm, recomputes the rest; torchtitan/parallelisms/parallelize_llama.py lines 214-260 at 9dec370)",
      "full": "full activation checkpointing of every TransformerBlock"}
SRC_LOC = "github.com/pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table {t} (file added 820504e20, 2025-06-13; runs at torchtitan 9dec370 / torch 1963fc8 / torchao eab345c, Dec 2024)"

# table, row label, model, gpus, fsdp, tp, pp, cp, local batch, seq, compile, float8, async_tp, ac, schedule, GiB, TPS/GPU
ROWS = [
    (1, "FSDP", "8B", 8, 8, 1, 1, 1, 2, 8192, False, False, False, "selective", None, 82.4, 5762),
    (1, "FSDP + torch.compile", "8B", 8, 8, 1, 1, 1, 2, 8192, True, False, False, "selective", None, 77.0, 6667),
    (1, "FSDP + torch.compile + Float8", "8B", 8, 8, 1, 1, 1, 2, 8192, True, True, False, "selective", None, 76.8, 8532),
    (2, "FSDP 8, CP 1", "8B", 8, 8, 1, 1, 1, 1, 32768, True, True, False, "full", None, 83.9, 3890),
    (2, "FSDP 4, CP 2", "8B", 8, 4, 1, 1, 2, 1, 65536, True, True, False, "full", None, 84.2, 2540),
    (2, "FSDP 2, CP 4", "8B", 8, 2, 1, 1, 4, 1, 131072, True, True, False, "full", None, 84.0, 1071),
    (2, "FSDP 1, CP 8", "8B", 8, 1, 1, 1, 8, 1, 262144, True, True, False, "full", None, 84.5, 548),
    (3, "FSDP", "8B", 128, 128, 1, 1, 1, 2, 8192, False, False, False, "selective", None, 67.0, 5605),
    (3, "FSDP + torch.compile", "8B", 128, 128, 1, 1, 1, 2, 8192, True, False, False, "selective", None, 62.0, 6514),
    (3, "FSDP + torch.compile + Float8", "8B", 128, 128, 1, 1, 1, 2, 8192, True, True, False, "selective", None, 61.8, 8380),
    (4, "2D", "70B", 256, 32, 8, 1, 1, 16, 8192, True, True, False, "full", None, 71.9, 829),
    (4, "2D + AsyncTP", "70B", 256, 32, 8, 1, 1, 16, 8192, True, True, True, "full", None, 67.6, 876),
    (5, "1F1B", "405B", 512, 8, 8, 8, 1, 32, 8192, True, True, True, "full", "1F1B", 82.5, 100),
    (5, "Interleaved 1F1B", "405B", 512, 8, 8, 8, 1, 32, 8192, True, True, True, "full", "Interleaved1F1B", 72.7, 128),
    (6, "FSDP 8, CP 1", "405B", 512, 8, 8, 8, 1, 8, 32768, True, True, True, "full", "1F1B", 75.3, 76),
    (6, "FSDP 4, CP 2", "405B", 512, 4, 8, 8, 2, 8, 65536, True, True, True, "full", "1F1B", 75.9, 47),
    (6, "FSDP 2, CP 4", "405B", 512, 2, 8, 8, 4, 8, 131072, True, True, True, "full", "1F1B", 77.1, 31),
    (6, "FSDP 1, CP 8", "405B", 512, 1, 8, 8, 8, 8, 262144, True, True, True, "full", "1F1B", 84.9, 16),
]
recs = []
for (t, label, mk, gpus, fsdp, tp, pp, cp, lb, seq, comp, f8, atp, ac, sched, gib, tps) in ROWS:
    slug = label.lower().replace(" + ", "-").replace(", ", "-").replace(" ", "").replace(".", "")
    layout = {"gpus": gpus, "fsdp_shard": fsdp, "tp": tp, "pp": pp, "cp": cp, "local_batch": lb,
              "fsdp": "FSDP2 fully_shard per TransformerBlock and the root; reshard_after_forward=True without PP, False with PP (parallelize_llama.py lines 329-339 at 9dec370)"}
    if tp > 1:
        layout["tp_note"] = "TP with sequence parallel on norms (torchtitan's plan)" + ("; asynchronous TP (symmetric-memory micro-pipelining)" if atp else "")
    if pp > 1:
        layout["pp_schedule"] = sched
    if cp > 1:
        layout["cp_note"] = "context parallel (ring attention over SDPA) on the same ranks as FSDP"
    un = ["the global batch and microbatch count under PP (the table gives the local batch only; Table 5 says global 256 at local 32, Table 6 gives none)",
          "the dataset (c4 in the tomls) and whether sequences are packed (torchtitan always trains on full seq_len windows)",
          "the torch.compile mode (torchtitan compiles each TransformerBlock with fullgraph=True: parallelize_llama.py lines 297-303) and the float8 FSDP all-gather settings (the 405B toml enables enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp; the 8B/70B tomls leave them off)"]
    if t in (1, 3):
        un.append("global batch: 16 (Table 1) / 256 (Table 3), i.e. no gradient accumulation")
    if pp > 1:
        un.append("the PP rank the figure belongs to (the maximum over all GPUs is reported) and the number of microbatches")
    recs.append({
        "id": f"torchtitan-h100-202412-t{t}-{mk.lower()}-{slug}",
        "kind": "training_memory", "role": "check",
        "framework": {"name": "torchtitan (PyTorch FSDP2 / DTensor TP / pipelining / CP)", "version": "torchtitan 9dec370 (2024-12-26), torch 1963fc8 (2024-12-23 nightly), torchao eab345c"},
        "hardware": {"gpu": "NVIDIA H100 96 GB HBM2e (Grand Teton, 500 W power limit)", "gpus": gpus, "gpus_per_node": 8, "interconnect": "NVLink within host, 400 Gb/s RDMA per GPU"},
        "statistic": STAT, "value": gib, "unit": "GiB",
        "also_reported": {"tokens_per_sec_per_gpu": tps, "table_row": f"Table {t}: {label}"},
        "config": {"model": MODELS[mk], "precision": PREC, "float8": F8 if f8 else False, "compile": comp,
                   "activation_checkpointing": AC[ac], "layout": layout, "sequence": seq},
        "unpublished": un,
        "source": {"citation": "torchtitan Llama 3 H100 benchmarks (end of 2024)", "locator": SRC_LOC.format(t=t), "confidence": "T"},
    })
json.dump({"schema": "vram-explorer.published/1",
           "about": "torchtitan's Llama 3.1 H100 benchmark tables, reserved peak per GPU (PyTorch FSDP2 profile; issue 12's validation table; check records, never fitted)",
           "records": recs}, open("torchtitan-llama3-h100-202412.json", "w"), indent=1, ensure_ascii=False)
print(len(recs))
