"""Hugging Face PEFT's MetaMathQA method-comparison runs (Transformers + PEFT on one L40S) as published-record JSON
(schema: tests/data/published/README.md).

Source: github.com/huggingface/peft method_comparison/MetaMathQA/results/<experiment>.json at 51c2ff666 (2026-07-20),
written by method_comparison/MetaMathQA/run.py; each result file records the package versions, the GPU, the full
train_config and peft_config, so the runs are exactly specified. Values copied from the JSON (confidence T).
The statistic: train_info.accelerator_memory_max = torch.cuda.max_memory_reserved() at the end of the run
(utils.py line 649 at 51c2ff666) minus max_memory_reserved() right after reset_peak_memory_stats() at start
(init_accelerator, utils.py lines 182-198; the run aborts if that exceeds 500 MiB, line 57), stored at line 708.
It is the reserved peak over the WHOLE run: the base-model wiki loss (batch 4, 768 tokens), 5000 training steps,
the validation generations every 250 steps and the final test generation (batch_size_eval 50, max_length 800,
run.py lines 305-320 and 368-376), and the final wiki loss. run.py empties the CUDA cache every 10 steps
(line 65, 363-364). Python 3 standard library only; run from tests/data/published/.
"""
import json

RES = "method_comparison/MetaMathQA/results/{name}.json"
MODEL = {"family": "Llama 3.2 (Transformers LlamaForCausalLM)", "hf_id": "meta-llama/Llama-3.2-3B (sha 13afe512)",
         "layers": 28, "hidden": 3072, "heads": 24, "kv_heads": 8, "head_dim": 128, "ffn": 8192, "vocab": 128256,
         "tied_embeddings": True}
TRAIN = {"dtype": "bfloat16 (AutoModelForCausalLM.from_pretrained(dtype=torch.bfloat16), no AMP)",
         "attention": "attn_implementation None (Transformers 5.13 default: SDPA)",
         "micro_batch": 4, "max_seq_length": 768,
         "sequence_note": "MetaMathQA query+response filtered to <= 768 tokens (data.py lines 27-46); batches bucketed by length (BUCKET_FACTOR 20) and padded to their longest sample",
         "gradient_checkpointing": False, "compile": False, "grad_norm_clip": 1.0,
         "generation_eval": "model.generate, batch 50, max_length 800, max_new_tokens 300, every 250 steps and at the end (KV cache of 50 sequences)"}
VERSIONS = "PEFT 0.19.2.dev0 (commit d787f51b), Transformers 5.13.1, torch 2.13.0+cu130, bitsandbytes 0.49.2 (installed, unused), datasets 4.2.0"

# name, method label, created, value, reserved_99th, reserved_avg, max 'mem allocated avg', trainable params, peft cfg, optimizer
ROWS = [
    ("full-finetuning--llama-3.2-3B-lr_0.00001", "full", "2026-07-14", 38868615168, 37345097154, 34338935878, 26074783977, 3212749824,
     None, "torch.optim.AdamW(lr 1e-5), states in BF16 (parameters are BF16)"),
    ("lora--llama-3.2-3B-rank32", "lora", "2026-07-15", 22292725760, 20120076288, 14397338969, 6934523007, 9175040,
     {"r": 32, "alpha": 64, "dropout": 0.0, "targets": {"q": True, "k": False, "v": True, "o": False, "mlp": False, "head": False}},
     "torch.optim.AdamW(lr 1e-4, weight_decay 0.1) on the adapters"),
    ("lora--llama-3.2-3B-rank64", "lora", "2026-07-15", 22552772608, 20369637376, 14680105104, 7081463124, 18350080,
     {"r": 64, "alpha": 128, "dropout": 0.0, "targets": {"q": True, "k": False, "v": True, "o": False, "mlp": False, "head": False}},
     "torch.optim.AdamW(lr 1e-4, weight_decay 0.1) on the adapters"),
    ("lora--llama-3.2-3B-rank32-dora", "dora", "2026-07-15", 24532484096, 22179479552, 15414576807, 6932987611, 9289728,
     {"r": 32, "alpha": 64, "dropout": 0.0, "use_dora": True, "targets": {"q": True, "k": False, "v": True, "o": False, "mlp": False, "head": False}},
     "torch.optim.AdamW(lr 1e-4, weight_decay 0.1) on the adapters and DoRA magnitudes"),
    ("lora--llama-3.2-3B-rank32-lorafa", "lora-fa", "2026-07-15", 22240296960, 20078133248, 14369596165, 6890622292, 3670016,
     {"r": 32, "alpha": 64, "dropout": 0.0, "targets": {"q": True, "k": False, "v": True, "o": False, "mlp": False, "head": False}},
     "PEFT LoRA-FA optimizer (optimizer_type 'lora-fa': A frozen, only B trained; lr 1e-4, weight_decay 0.1)"),
    ("lora--llama-3.2-3B-rank10-target-mlp", "lora", "2026-07-15", 24698159104, 22064136192, 15499421286, 6939337990, 9461760,
     {"r": 10, "alpha": 20, "dropout": 0.0, "targets": {"q": False, "k": False, "v": False, "o": False, "mlp": True, "head": False}},
     "torch.optim.AdamW(lr 1e-4, weight_decay 0.1) on the adapters"),
]
recs = []
for (name, method, created, val, r99, ravg, aavg, trainable, lora, opt) in ROWS:
    cfg = {"model": MODEL, "method": method, "training": TRAIN, "optimizer": opt, "steps": 5000,
           "layout": {"devices": 1, "micro_batch": 4, "gradient_accumulation": 1}}
    if lora:
        cfg["lora"] = lora
        cfg["adapter_dtype"] = "FP32 adapters (get_peft_model(..., autocast_adapter_dtype=True) casts adapter weights of a BF16 base to float32)"
    recs.append({
        "id": "peft-metamathqa-" + name.replace("--llama-3.2-3B", "").replace("_", "-").lower() + "-l40s",
        "kind": "training_memory", "role": "check",
        "framework": {"name": "Hugging Face Transformers + PEFT", "version": VERSIONS},
        "hardware": {"gpu": "NVIDIA L40S (48 GB)", "gpus": 1},
        "statistic": ("torch.cuda.max_memory_reserved() over the whole run (training, validation/test generation with batch 50, "
                      "wiki-loss passes) minus the reserved memory at start (<= 500 MiB, normally 0): PEFT MetaMathQA "
                      "train_info.accelerator_memory_max (method_comparison/MetaMathQA/utils.py lines 182-198, 649, 708 at 51c2ff666)"),
        "value": val, "unit": "B",
        "also_reported": {
            "accelerator_memory_reserved_99th (99th percentile of memory_reserved() read after each training step, minus init)": r99,
            "accelerator_memory_reserved_avg": ravg,
            "largest 'mem allocated avg' of a 250-step window (memory_allocated() read after the optimizer step: weights, gradients (zero_grad runs before the next forward), optimizer states)": aavg,
            "num_trainable_params": trainable, "run_created_at": created},
        "config": cfg,
        "unpublished": [
            "which phase holds the reserved peak: a training step of the longest batch (4 x <= 768 tokens, FP32 upcast logits of 128256 classes) or a batch-50 generation (KV cache, 50 x 128256 logits per step); the file gives only the maximum",
            "the allocated peak (only reserved is recorded); fragmentation differs with the length mix, and the cache is emptied every 10 steps",
        ],
        "source": {"citation": "Hugging Face PEFT method comparison, MetaMathQA benchmark results",
                   "locator": "github.com/huggingface/peft " + RES.format(name=name) + " at 51c2ff666 (2026-07-20); harness method_comparison/MetaMathQA/{run.py,utils.py,data.py,default_training_params.json} at the same commit",
                   "confidence": "T"},
    })
json.dump({"schema": "vram-explorer.published/1",
           "about": "Hugging Face Transformers + PEFT: MetaMathQA method-comparison runs on one L40S, reserved peak over the run (issue 12's validation table; check records, never fitted)",
           "records": recs}, open("peft-metamathqa-l40s.json", "w"), indent=1, ensure_ascii=False)
print(len(recs))
