"""DeepSpeed's published GPU memory figures as published-record JSON (schema: tests/data/published/README.md).

Sources (each value transcribed by hand, confidence T):
  A. DeepSpeedExamples training/bf16_master_weight/README.md at 6a3d817a (2025-12-20) and DeepSpeed
     blogs/core_api_update/README.md (20cfce004, 2025-12-20): ZeRO-3 training of a 6.86B plain transformer on 4 x H100,
     FP32 vs BF16 master weights / optimizer states; train.py, configs/*.json and gather_memory.py at the same commit.
  B. DeepSpeed blogs/muon-optimizer/README.md (de4730918, 2026-05-21): Qwen2.5-3B ZeRO-2 fine-tuning on 8 x A100-40GB,
     AdamW vs Muon peak memory per GPU.
  C. DeepSpeed docs/_tutorials/automatic-tensor-parallelism.md (3253e7db8, 2023-02-21): AutoTP inference, 'Memory
     Allocated per GPU' of T5-11B and OPT-13B in FP16 on V100-32GB at TP 1/2/4 (DeepSpeedExamples
     inference/huggingface/text-generation/inference-test.py at b0afe97c prints see_memory_usage after init_inference).
Python 3 standard library only; run from tests/data/published/.
"""
import json

R = []


def rec(rid, kind, fw_ver, gpu, gpus, stat, val, unit, cfg, un, src, also=None):
    r = {"id": "deepspeed-" + rid, "kind": kind, "role": "check",
         "framework": {"name": "DeepSpeed", "version": fw_ver}, "hardware": {"gpu": gpu, "gpus": gpus},
         "statistic": stat, "value": val, "unit": unit}
    if also:
        r["also_reported"] = also
    r.update({"config": cfg, "unpublished": un, "source": src})
    R.append(r)


# ---- A. BF16 low-precision master weights, ZeRO-3, 4 x H100 ---------------------------------------------------
STAT_A = ("torch.cuda.max_memory_allocated() since torch.cuda.reset_peak_memory_stats() before the model is built "
          "(DeepSpeedExamples training/bf16_master_weight/train.py lines 173-182 and 210 at 6a3d817a), printed as "
          "'SUMMARY ... peak_mem_bytes' by each rank and formatted by gather_memory.py format_bytes as bytes / 1024**3 "
          "labelled 'GB' (lines 33-36): GiB")
MODEL_A = {"family": "plain transformer of the example (train.py SimpleTransformerModel: token + learned position embeddings, "
                     "post-norm blocks of torch.nn.MultiheadAttention and LayerNorm, GELU MLP 4h, untied output Linear with bias)",
           "layers": 32, "hidden": 4096, "heads": 32, "head_dim": 128, "ffn": 16384,
           "vocab": "50257 (GPT-2 tokenizer, --use_real_data: train.py line 217)", "positions": 512,
           "params": "about 6.86e9 (README)", "tied_embeddings": False,
           "attention": "torch.nn.MultiheadAttention(x, x, x) with no mask (bidirectional) and need_weights left True, so the softmax weights are materialised (train.py lines 43-52)"}
SRC_A = {"citation": "DeepSpeedExamples BF16 low-precision master weights example (also in DeepSpeed's core API update blog)",
         "locator": "github.com/deepspeedai/DeepSpeedExamples training/bf16_master_weight/{README.md,train.py,configs/baseline.json,configs/bf16_full.json,gather_memory.py} at 6a3d817a (2025-12-20); github.com/deepspeedai/DeepSpeed blogs/core_api_update/README.md at 20cfce004",
         "confidence": "T"}
VER_A = "DeepSpeed master at the time of PR #7700 (DeepSpeed 20cfce004, 2025-12-20, version.txt 0.18.4); torch version not published"
common_a = {"layout": {"gpus": 4, "zero_stage": 3, "data_parallel": 4, "micro_batch": "1 (--batch_size 1; the config's train_micro_batch_size_per_gpu 4 is only DeepSpeed's bookkeeping)", "gradient_accumulation": 1},
            "sequence": 512, "activation_checkpointing": "every block (torch.utils.checkpoint, use_reentrant=False)",
            "zero": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "reduce_bucket_size": 5e7,
                     "stage3_param_persistence_threshold": 0,
                     "other": "DeepSpeed defaults: stage3_prefetch_bucket_size, stage3_max_live_parameters 1e9, stage3_max_reuse_distance 1e9, allgather/reduce buckets"},
            "optimizer": "DeepSpeed AdamW (FusedAdam), lr 1e-4, weight_decay 0.01",
            "loss": "torch.nn.CrossEntropyLoss on the full logits (50257 classes)"}
for rid, val, alloc, prec, autocast in (
        ("bf16-master-baseline-zero3-4xh100", 31.38, 25.74, "bf16 enabled: BF16 parameters and gradients, FP32 master weights, FP32 gradient partitions and FP32 Adam moments (per rank 1/4)", "off"),
        ("bf16-master-low-precision-zero3-4xh100", 18.93, 16.17, "bf16 with bf16_master_weights_and_grads and bf16_optimizer_states: BF16 master weights, gradients and Adam moments", "torch.autocast(bfloat16) on (model parameters BF16 under ZeRO-3)")):
    cfg = dict(common_a)
    cfg.update({"model": MODEL_A, "precision": prec, "torch_autocast": autocast})
    rec(rid, "training_memory", VER_A, "NVIDIA H100 (memory size not stated)", 4, STAT_A, val, "GiB (printed 'GB')", cfg,
        ["which rank's SUMMARY line the table took (every rank prints one)", "the torch and CUDA versions and the H100 variant",
         "the sequence length in training: wikitext lines tokenized with max_length 512 (padding to 512 is assumed)"],
        SRC_A, also={"Allocated Memory (torch.cuda.memory_allocated() at the end of training, GiB)": alloc, "avg_step_time_s": 0.6016 if "baseline" in rid else 0.6427})

# ---- B. Muon vs AdamW, ZeRO-2, 8 x A100-40GB ---------------------------------------------------------------------
QWEN25_3B = {"family": "Qwen2.5 (Transformers Qwen2ForCausalLM)", "hf_id": "Qwen/Qwen2.5-3B", "layers": 36, "hidden": 2048, "heads": 16,
             "kv_heads": 2, "head_dim": 128, "ffn": 11008, "vocab": 151936, "tied_embeddings": True}
for rid, val, opt in (("muon-blog-qwen2.5-3b-adamw-zero2-8xa100", 34.5, "AdamW (FP32 moments on the ZeRO-2 partitions)"),
                      ("muon-blog-qwen2.5-3b-muon-zero2-8xa100", 31.4, "DeepSpeed Muon: one FP32 momentum buffer for 2D hidden weights, AdamW (two moments) for embeddings, norms, biases and lm_head")):
    rec(rid, "training_memory", "DeepSpeed master around 2026-05-21 (blog commit de4730918; version.txt 0.19.1)", "NVIDIA A100-40GB", 8,
        "'Peak Memory per GPU' (GiB); the blog does not name the statistic (the demo it uses, github.com/delock/deepspeed_finetune_demo, is not in this snapshot)",
        val, "GiB",
        {"model": QWEN25_3B, "precision": "bf16 (DeepSpeed bf16: BF16 parameters/gradients, FP32 master weights and optimizer states)",
         "optimizer": opt, "layout": {"gpus": 8, "zero_stage": 2, "data_parallel": 8, "batch": "32 (the blog's 'batch size 32'; per GPU or global not stated)"},
         "dataset": "tatsu-lab/alpaca"},
        ["the statistic (allocated, reserved or nvidia-smi)", "whether 32 is the per-GPU or global batch", "sequence length / padding",
         "activation checkpointing", "the DeepSpeed config beyond 'ZeRO Stage 2, bf16' (bucket sizes, overlap_comm, contiguous_gradients)"],
        {"citation": "DeepSpeed blog 'Using Muon Optimizer with DeepSpeed', section 'Measured GPU Memory: Qwen2.5-3B Finetuning'",
         "locator": "github.com/deepspeedai/DeepSpeed blogs/muon-optimizer/README.md at de4730918 (2026-05-21), unchanged in the table at edaa72212", "confidence": "T"})

# ---- C. AutoTP inference weights per GPU ---------------------------------------------------------------------------
STAT_C = ("'Memory Allocated per GPU' (GB): torch.cuda.memory_allocated() / 1024**3 ('MA' of deepspeed.runtime.utils."
          "see_memory_usage, deepspeed/runtime/utils.py lines 827-830 at 8be8c012, v0.8.2) as printed by inference-test.py after "
          "deepspeed.init_inference; the no-TP figures equal the FP16 weight bytes / 2**30 of each model")
T5 = {"family": "T5 encoder-decoder (Transformers T5ForConditionalGeneration)", "hf_id": "t5-11b", "layers": "24 encoder + 24 decoder",
      "hidden": 1024, "heads": 128, "head_dim": 128, "ffn": 65536, "vocab": 32128, "params": "about 11.3e9", "tied_embeddings": True}
OPT = {"family": "OPT (Transformers OPTForCausalLM)", "hf_id": "facebook/opt-13b", "layers": 40, "hidden": 5120, "heads": 40, "head_dim": 128,
       "ffn": 20480, "vocab": 50272, "positions": 2048, "params": "about 12.85e9", "tied_embeddings": True}
for mname, model, rows in (("t5-11b", T5, ((1, 21.06, 64, 9.29), (2, 10.56, 320, 13.04), (4, 5.31, 768, 14.04))),
                           ("opt-13b", OPT, ((1, 23.94, 2, 1.65), (2, 12.23, 20, 4.61), (4, 6.36, 56, 4.90)))):
    for tp, gb, mbs, tfl in rows:
        rec(f"autotp-{mname}-tp{tp}-v100", "inference_memory", "DeepSpeed 0.8.x (tutorial added 2023-02-21; DeepSpeed 8be8c012 is v0.8.2)",
            "NVIDIA V100 SXM2 32GB", tp, STAT_C, gb, "GiB (printed 'GB')",
            {"model": model, "precision": "float16 weights (inference-test.py --dtype float16)",
             "layout": {"tensor_parallel": tp, "method": "DeepSpeed automatic tensor parallelism (init_inference with tp_size, no kernel injection)"},
             "phase": "after model load and init_inference, before generation (weights only)"},
            ["that the column is the post-init 'MA' reading (inferred: the TP 1 values equal the FP16 weight bytes in GiB)",
             "torch / transformers versions"],
            {"citation": "DeepSpeed tutorial 'Automatic Tensor Parallelism for HuggingFace Models', Memory tables",
             "locator": "github.com/deepspeedai/DeepSpeed docs/_tutorials/automatic-tensor-parallelism.md at 3253e7db8 (2023-02-21); DeepSpeedExamples inference/huggingface/text-generation/inference-test.py at b0afe97c (lines 57-84)",
             "confidence": "T"},
            also={"max_batch_size": mbs, "max_throughput_per_gpu_tflops": tfl})

json.dump({"schema": "vram-explorer.published/1",
           "about": "DeepSpeed's published GPU memory (ZeRO-3 BF16 master-weight example, Muon blog, AutoTP inference tutorial; issue 12's validation table; check records, never fitted)",
           "records": R}, open("deepspeed-published-memory.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
