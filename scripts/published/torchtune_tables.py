"""torchtune's published peak-memory figures as published-record JSON (schema: tests/data/published/README.md).

Three sources in github.com/pytorch/torchtune, each figure transcribed by hand (confidence T), the run settings
read from the recipe config named by the source, at the commit that published the figure:
  A. README "Optimization flags" table (Llama 3.2 3B, one A100, "Peak Memory Active (GiB)"), added in 1814feb17
     (2024-11-18, version.txt 0.5.0 = main after the v0.4.0 branch cut);
  B. README "Memory and training speed" table (Llama 3.1 8B/70B/405B), added in 30b8519e8 (2024-09-24, version.txt
     0.3.0 = main during the v0.3.0 release);
  C. docs/source/tutorials/lora_finetune.rst and qlora_finetune.rst (Llama 2 7B LoRA/QLoRA, "peak memory
     reserved"), added in ff594c231 / 0914d5cfb (2024-04-15, version.txt 0.0.2, pyproject torchao==0.1).
The statistic: torchtune's get_memory_stats() (torchtune/training/memory.py at 1814feb17 lines 245-271;
at 30b8519e8 lines 187-214) reads torch.cuda.memory_stats()["active_bytes.all.peak"], max_memory_allocated()
and max_memory_reserved(), divides by 1024**3 (GiB), and resets the peak counters after each read; in April 2024
(torchtune/utils/memory.py memory_stats_log at ff594c231 lines 163-191) the same three were divided by 1e9 (GB).
Python 3 standard library only; run from tests/data/published/.
"""
import json

# HF config dims: hf_id, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied
MODELS = {
    "llama-3.2-3b": ("meta-llama/Llama-3.2-3B-Instruct", 28, 3072, 24, 8, 128, 8192, 128256, True),
    "llama-3.1-8b": ("meta-llama/Meta-Llama-3.1-8B-Instruct", 32, 4096, 32, 8, 128, 14336, 128256, False),
    "llama-3.1-70b": ("meta-llama/Meta-Llama-3.1-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256, False),
    "llama-3.1-405b": ("meta-llama/Meta-Llama-3.1-405B-Instruct", 126, 16384, 128, 8, 128, 53248, 128256, False),
    "llama-2-7b": ("meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 128, 11008, 32000, False),
}


def model(key):
    hf, l, h, a, k, d, f, v, tied = MODELS[key]
    return {"family": "Llama (torchtune TransformerDecoder: RMSNorm, RoPE, SwiGLU, SDPA attention)", "hf_id": hf,
            "layers": l, "hidden": h, "heads": a, "kv_heads": k, "head_dim": d, "ffn": f, "vocab": v,
            "tied_embeddings": tied}


def lora(r, alpha, dropout, attn, mlp, head):
    return {"r": r, "alpha": alpha, "dropout": dropout,
            "targets": {"q": "q_proj" in attn, "k": "k_proj" in attn, "v": "v_proj" in attn,
                        "o": "output_proj" in attn, "mlp": mlp, "head": head}}


STAT_A = ("torch.cuda.memory_stats()['active_bytes.all.peak'] / 1024**3 (GiB), 'peak_memory_active' of "
          "torchtune.training.get_memory_stats (torchtune/training/memory.py lines 245-271 at 1814feb17); the recipe "
          "logs it every log_every_n_steps (1 in these configs) and resets the peak counters after each read, so it is "
          "the peak of one optimizer step; 'active' bytes are allocated bytes plus blocks freed but still awaiting a "
          "cross-stream event (record_stream), i.e. >= max_memory_allocated, equal without side streams")
STAT_B = ("'Peak Memory per GPU' (GiB, one row 'GB'); the README does not say which of torchtune's three logged peaks "
          "(get_memory_stats, torchtune/training/memory.py lines 187-214 at 30b8519e8: active_bytes.all.peak, "
          "max_memory_allocated, max_memory_reserved, each / 1024**3, reset after each read) it is")
STAT_C = ("torch.cuda.max_memory_reserved() / 1e9 (GB), 'GPU peak memory reserved' of torchtune.utils.memory_stats_log "
          "(torchtune/utils/memory.py lines 163-191 at ff594c231), logged by lora_finetune_single_device.py (lines "
          "475-485 at ff594c231) when total_training_steps % 100 == 0 and reset after each read: the reserved peak over "
          "a window of about 100 optimizer steps")

SRC_A = {"citation": "torchtune README, 'Optimization flags' table (Llama 3.2 3B, A100)",
         "locator": "github.com/pytorch/torchtune README.md at 1814feb17 (PR #2003, 2024-11-18), unchanged at bd2a0fc7 (2026-04-23); configs recipes/configs/llama3_2/3B_{full,lora,qlora}_single_device.yaml at 1814feb17",
         "confidence": "T"}
SRC_B = {"citation": "torchtune README, 'Memory and training speed' table (Llama 3.1)",
         "locator": "github.com/pytorch/torchtune README.md at 30b8519e8 (PR #1664, 2024-09-24), unchanged at bd2a0fc7; configs recipes/configs/llama3_1/{8B_full_single_device,8B_lora_single_device,8B_qlora_single_device,70B_full,70B_lora,405B_qlora}.yaml at 30b8519e8",
         "confidence": "T"}
SRC_C = {"citation": "torchtune tutorials 'Finetuning Llama2 with LoRA' (table of peak memory by LoRA layers and rank) and 'Finetuning Llama2 with QLoRA' (peak memory reserved, LoRA vs QLoRA)",
         "locator": "github.com/pytorch/torchtune docs/source/tutorials/lora_finetune.rst (ff594c231, 2024-04-15, PR #702) and docs/source/tutorials/qlora_finetune.rst (0914d5cfb, 2024-04-15, PR #693), unchanged at bd2a0fc7; configs recipes/configs/llama2/7B_{lora,qlora}_single_device.yaml at ff594c231",
         "confidence": "T"}

recs = []


def rec(rid, value, unit, stat, src, version, gpu, gpus, cfg, unpublished, also=None):
    r = {"id": "torchtune-" + rid, "kind": "training_memory", "role": "check",
         "framework": {"name": "torchtune", "version": version},
         "hardware": {"gpu": gpu, "gpus": gpus}, "statistic": stat, "value": value, "unit": unit}
    if also:
        r["also_reported"] = also
    r.update({"config": cfg, "unpublished": unpublished, "source": src})
    recs.append(r)


# ---- A. Llama 3.2 3B optimization flags (cumulative rows) -----------------------------------------------------
VER_A = "torchtune main at 1814feb17 (2024-11-18; version.txt 0.5.0, i.e. after v0.4.0); torch, torchao and bitsandbytes versions not published"
GPU_A = "NVIDIA A100 (memory size not stated; 60.0 GiB row implies 80 GB)"
UNPUB_A = [
    "the A100 variant (40/80 GB, SXM/PCIe) and the torch / torchao / bitsandbytes versions",
    "which logged step the figure is (each step's peak is logged separately); the figure is taken as the run's steady peak",
    "the baseline's overrides: the README gives only the final row's command, so the baseline (torch.nn.CrossEntropyLoss, no activation checkpointing, no optimizer_in_bwd, no offloading, torch AdamW, compile off, unpacked) is inferred from the cumulative rows",
    "whether torch.optim.AdamW ran fused/foreach in the full-finetune rows (the 3B_full_single_device config defaults to bitsandbytes PagedAdamW8bit + optimizer_in_bwd; the table's baseline turns those off)",
]
base_full = {
    "model": model("llama-3.2-3b"), "recipe": "full_finetune_single_device", "method": "full",
    "precision": "bf16 (torchtune dtype=bf16: parameters, gradients, optimizer states and activations in BF16; no FP32 master copy)",
    "layout": {"devices": 1, "micro_batch": 2, "gradient_accumulation": 1},
    "max_seq_length": 4096,
}
steps = [
    ("baseline", 25.5, {"packed": False, "compile": False, "loss": "torch.nn.CrossEntropyLoss on FP32 logits (the decoder casts the BF16 output projection with .float(): torchtune/modules/transformer.py lines 648-652 at 1814feb17, line 937 for tied embeddings)",
                        "activation_checkpointing": False, "optimizer_in_backward": False, "activation_offloading": False,
                        "optimizer": "torch.optim.AdamW (BF16 states)"}),
    ("packed", 60.0, {"packed": True}),
    ("compile", 51.0, {"compile": True}),
    ("chunked-ce", 42.9, {"loss": "torchtune.modules.loss.CEWithChunkedOutputLoss (8 chunks, each upcast to FP32 separately)"}),
    ("activation-checkpointing", 24.9, {"activation_checkpointing": "full, every decoder layer"}),
    ("optimizer-in-backward", 23.1, {"optimizer_in_backward": True}),
    ("activation-offloading", 21.8, {"activation_offloading": "torchtune OffloadActivations (saved tensors to pinned CPU memory on a side stream)"}),
    ("adamw-8bit", 17.6, {"optimizer": "8-bit AdamW (bitsandbytes; the config's default is bitsandbytes.optim.PagedAdamW8bit)"}),
]
opts = {}
for name, gib, delta in steps:
    opts.update(delta)
    cfg = dict(base_full)
    cfg["options"] = dict(opts)
    cfg["dataset"] = "alpaca_dataset (" + ("packed to 4096 tokens" if opts["packed"] else "not packed: each batch padded to its longest sample, truncated at 4096") + ")"
    un = list(UNPUB_A)
    if not opts["packed"]:
        un.insert(0, "the sequence length of the peak step: unpacked Alpaca batches are padded to their longest sample (a few hundred tokens), not 4096; the source gives only max_seq_len 4096")
    rec(f"llama-3.2-3b-full-{name}-1xa100", gib, "GiB", STAT_A, SRC_A, VER_A, GPU_A, 1, cfg, un)

lora_opts = {"packed": True, "compile": True, "loss": "torchtune.modules.loss.CEWithChunkedOutputLoss (8 chunks)",
             "activation_checkpointing": "full, every decoder layer", "optimizer_in_backward": False,
             "activation_offloading": "torchtune OffloadActivations", "optimizer": "torch.optim.AdamW(fused=True, weight_decay=0.01) on the adapters only"}
for method, gib in (("lora", 8.5), ("qlora", 4.6)):
    cfg = {"model": model("llama-3.2-3b"), "recipe": "lora_finetune_single_device", "method": method,
           "precision": "bf16 (frozen base and adapters in BF16)",
           "layout": {"devices": 1, "micro_batch": 2, "gradient_accumulation": 1}, "max_seq_length": 4096,
           "dataset": "alpaca_cleaned_dataset packed to 4096 tokens",
           "lora": lora(64, 128, 0.0, ["q_proj", "v_proj", "output_proj"], True, False),
           "options": lora_opts}
    if method == "qlora":
        cfg["quantize"] = ("torchao NF4 (to_nf4: block 64, per-block scales quantized to int8 in blocks of 256, i.e. double "
                           "quantization), compute in BF16; every linear of the decoder layers is NF4 (LoRALinear with "
                           "quantize_base, and FrozenNF4Linear for k_proj: torchtune/models/llama3/_component_builders.py "
                           "lines 365-380 at 1814feb17); embeddings and the tied output head stay BF16")
    rec(f"llama-3.2-3b-{method}-all-flags-1xa100", gib, "GiB", STAT_A, SRC_A, VER_A, GPU_A, 1, cfg,
        UNPUB_A[:2] + ["the torchao version (NF4 tensor implementation)"],
        also={"command_for_qlora_row": "tune run lora_finetune_single_device --config llama3_2/3B_qlora_single_device dataset.packed=True compile=True loss=torchtune.modules.loss.CEWithChunkedOutputLoss enable_activation_checkpointing=True optimizer_in_bwd=False enable_activation_offloading=True optimizer=torch.optim.AdamW tokenizer.max_seq_len=4096 gradient_accumulation_steps=1 epochs=1 batch_size=2"} if method == "qlora" else None)

# ---- B. Llama 3.1 README table ---------------------------------------------------------------------------------
VER_B = "torchtune main at 30b8519e8 (2024-09-24; version.txt 0.3.0); torch / torchao / bitsandbytes versions not published"
UNPUB_B = [
    "which statistic the column is (active, allocated or reserved peak)",
    "the exact command: the README states only 'batch size 2 (without gradient accumulation), a dataset packed to sequence length 2048, and torch compile enabled'; the row's named config is assumed for everything else",
]
common_b = {"layout_note": "batch size 2, no gradient accumulation", "max_seq_length": 2048,
            "dataset": "packed to 2048 tokens", "compile": True, "precision": "bf16"}
rows_b = [
    ("llama-3.1-8b-full-1x4090", "llama-3.1-8b", "full", "NVIDIA GeForce RTX 4090 (24 GB)", 1, 18.9, "GiB",
     {"recipe": "full_finetune_single_device (8B_full_single_device)", "optimizer": "bitsandbytes.optim.PagedAdamW8bit, optimizer_in_bwd=True", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True}, []),
    ("llama-3.1-8b-full-1xa6000", "llama-3.1-8b", "full", "NVIDIA RTX A6000 (48 GB)", 1, 37.4, "GiB",
     {"recipe": "full_finetune_single_device (8B_full_single_device)", "optimizer": "bitsandbytes.optim.PagedAdamW8bit, optimizer_in_bwd=True", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True},
     ["the A6000 figure is twice the 4090 figure for the same named method, so the A6000 run did not use the same settings (activation checkpointing off is the likely difference); low confidence in the config"]),
    ("llama-3.1-8b-lora-1x4090", "llama-3.1-8b", "lora", "NVIDIA GeForce RTX 4090 (24 GB)", 1, 16.2, "GiB",
     {"recipe": "lora_finetune_single_device (8B_lora_single_device)", "lora": lora(8, 16, 0.0, ["q_proj", "v_proj"], False, False), "optimizer": "torch.optim.AdamW(fused=True)", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True}, []),
    ("llama-3.1-8b-lora-1xa6000", "llama-3.1-8b", "lora", "NVIDIA RTX A6000 (48 GB)", 1, 30.3, "GiB",
     {"recipe": "lora_finetune_single_device (8B_lora_single_device)", "lora": lora(8, 16, 0.0, ["q_proj", "v_proj"], False, False), "optimizer": "torch.optim.AdamW(fused=True)", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True},
     ["the A6000 figure is about twice the 4090 figure for the same named method: settings differ from the config (activation checkpointing off is the likely difference); low confidence in the config"]),
    ("llama-3.1-8b-qlora-1x4090", "llama-3.1-8b", "qlora", "NVIDIA GeForce RTX 4090 (24 GB)", 1, 7.4, "GiB",
     {"recipe": "lora_finetune_single_device (8B_qlora_single_device)", "lora": lora(8, 16, 0.0, ["q_proj", "v_proj", "k_proj", "output_proj"], True, False),
      "quantize": "torchao NF4 (block 64, double-quantized scales), BF16 compute, on the LoRA linears (non-LoRA linears FrozenNF4Linear where present)",
      "optimizer": "torch.optim.AdamW(fused=True)", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True}, []),
    ("llama-3.1-70b-full-8xa100", "llama-3.1-70b", "full", "NVIDIA A100 (80 GB assumed)", 8, 13.9, "GiB",
     {"recipe": "full_finetune_distributed (70B_full)", "parallel": "FSDP2 fully_shard over 8 GPUs (ZeRO-3 like), custom_sharded_layers ['tok_embeddings','output'], fsdp_cpu_offload=True (parameters, gradients and optimizer states on CPU)", "optimizer": "torch.optim.AdamW(fused=True), stepped on the CPU-resident shards (the README's '** Uses CPU offload with fused optimizer'; 70B_full.yaml lines 79-84 and 98 at 30b8519e8; no optimizer_in_bwd)", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True},
     ["which rank the figure is: the README says per GPU; full_finetune_distributed.py logs rank 0 only (lines 677-689 at 30b8519e8)"]),
    ("llama-3.1-70b-lora-8xa100", "llama-3.1-70b", "lora", "NVIDIA A100 (80 GB assumed)", 8, 27.6, "GiB",
     {"recipe": "lora_finetune_distributed (70B_lora)", "parallel": "FSDP2 over 8 GPUs", "lora": lora(16, 32, 0.0, ["q_proj", "k_proj", "v_proj"], False, False), "optimizer": "torch.optim.AdamW(fused=True)", "loss": "CEWithChunkedOutputLoss", "activation_checkpointing": True},
     ["which rank the figure is (rank 0 logs)"]),
    ("llama-3.1-405b-qlora-8xa100", "llama-3.1-405b", "qlora", "NVIDIA A100 (80 GB assumed)", 8, 44.8, "GB (the README writes GB in this row, GiB elsewhere)",
     {"recipe": "lora_finetune_distributed (405B_qlora)", "parallel": "FSDP2 over 8 GPUs, fsdp.cpu_offload=False", "lora": lora(16, 32, 0.0, ["q_proj", "v_proj", "k_proj", "output_proj"], True, False),
      "quantize": "torchao NF4 (block 64, double-quantized scales), BF16 compute", "optimizer": "torch.optim.AdamW(fused=True)", "loss": "torch.nn.CrossEntropyLoss (config at 30b8519e8)", "activation_checkpointing": True, "config_batch_size": "1 in 405B_qlora.yaml; the README says all rows use batch 2"},
     ["which rank the figure is (rank 0 logs)", "whether the unit is GB or GiB"]),
]
for rid, mk, method, gpu, n, val, unit, extra, un in rows_b:
    cfg = {"model": model(mk), "method": method}
    cfg.update(common_b)
    cfg.update(extra)
    rec(rid, val, unit, STAT_B, SRC_B, VER_B, gpu, n, cfg, UNPUB_B + un)

# ---- C. Llama 2 7B tutorials (April 2024) ------------------------------------------------------------------------
VER_C = "torchtune main at ff594c231 (2024-04-15; version.txt 0.0.2, the v0.1.0 release week; pyproject torchao==0.1); torch version not published"
UNPUB_C = [
    "the GPU model (the tutorial says only 'most commodity GPUs which support bfloat16')",
    "the sequence length of the peak: alpaca_cleaned samples are truncated at max_seq_len 512 (torchtune/datasets/_alpaca.py line 66 at ff594c231) and batches are padded to their longest sample; 512 is the bound",
    "the torch version",
]
cfg_c = {"recipe": "lora_finetune_single_device", "precision": "bf16 (base and adapters BF16)",
         "layout": {"devices": 1, "micro_batch": 2}, "max_seq_length": 512,
         "dataset": "alpaca_cleaned_dataset, train_on_input=True, not packed",
         "optimizer": "torch.optim.AdamW (not fused, weight_decay 0.01) on the adapters",
         "loss": "torch.nn.CrossEntropyLoss", "activation_checkpointing": True, "compile": False}
rows_c = [
    ("llama-2-7b-lora-qv-r8", 15.57, lora(8, 16, 0.05, ["q_proj", "v_proj"], False, False), 64, None,
     {"model_init_reserved_GB": 13.98, "model_init_allocated_GB": 13.96, "model_init_active_GB": 13.96}),
    ("llama-2-7b-lora-all-r8", 15.87, lora(8, 16, 0.05, ["q_proj", "k_proj", "v_proj", "output_proj"], True, True), 64, None, None),
    ("llama-2-7b-lora-qv-r64", 15.86, lora(64, 128, 0.05, ["q_proj", "v_proj"], False, False), 64, None, None),
    ("llama-2-7b-lora-all-r64", 17.04, lora(64, 128, 0.05, ["q_proj", "k_proj", "v_proj", "output_proj"], True, True), 64, None, None),
    ("llama-2-7b-qlora-all-r8", 9.29, lora(8, 16, 0.05, ["q_proj", "v_proj", "k_proj", "output_proj"], True, False), 16,
     "torchao 0.1 NF4 (block 64, per-block scales double-quantized to int8 in blocks of 256), BF16 compute, on the LoRA linears only (here every attention and MLP linear; the output head stays BF16); in April 2024 non-LoRA linears were not quantized (qlora_finetune.rst)",
     {"model_init_reserved_GB": 9.13}),
]
for rid, gb, lo, ga, quant, also in rows_c:
    cfg = {"model": model("llama-2-7b"), "method": "qlora" if quant else "lora"}
    cfg.update(cfg_c)
    cfg["lora"] = lo
    cfg["gradient_accumulation"] = ga
    if quant:
        cfg["quantize"] = quant
    rec(rid, gb, "GB (10^9 B)", STAT_C, SRC_C, VER_C, "not stated (one bf16-capable NVIDIA GPU)", 1, cfg,
        UNPUB_C + ["lora_dropout: the builder default 0.05 (torchtune/models/llama2/_model_builders.py line 61 at ff594c231) is assumed; the config does not set it"],
        also=also)

# ---- D. End-to-end tutorial: memory after model init (Llama 3.2 3B LoRA) -------------------------------------------
rec("llama-3.2-3b-lora-after-model-init", 6.21, "GiB",
    ("torch.cuda.max_memory_allocated() / 1024**3 printed as 'GPU peak memory allocation' under 'Memory stats after model "
     "init' (torchtune.training.get_memory_stats, torchtune/training/memory.py lines 245-271 at 0cd8bc4ca; counters reset "
     "before: the peak of building the model and loading the checkpoint)"),
    {"citation": "torchtune tutorial 'End-to-End Workflow with torchtune', log excerpt",
     "locator": "github.com/pytorch/torchtune docs/source/tutorials/e2e_flow.rst at 0cd8bc4ca (2024-12-20), config recipes/configs/llama3_2/3B_lora_single_device.yaml at the same commit",
     "confidence": "T"},
    "torchtune main at 0cd8bc4ca (2024-12-20; version.txt 0.5.0)", "not stated", 1,
    {"model": model("llama-3.2-3b"), "recipe": "lora_finetune_single_device (3B_lora_single_device)", "method": "lora",
     "phase": "after model init (weights loaded, adapters built), before the optimizer and data",
     "precision": "bf16 (base and adapters)", "lora": lora(64, 128, 0.0, ["q_proj", "v_proj", "output_proj"], True, False)},
    ["the GPU model", "the torch version"],
    also={"GPU peak memory reserved, GiB": 6.27, "GPU peak memory active, GiB": 6.21,
          "the tutorial's training peak": "'a peak memory usage of ~16GB' at batch 4 (approximate, statistic not stated)"})

json.dump({"schema": "vram-explorer.published/1",
           "about": "torchtune's published peak memory (README tables and LoRA/QLoRA tutorials; issue 12's validation table; check records, never fitted)",
           "records": recs}, open("torchtune-readme-tutorials.json", "w"), indent=1, ensure_ascii=False)
print(len(recs))
