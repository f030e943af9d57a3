"""Hugging Face PEFT docs: FSDP + QLoRA and DeepSpeed ZeRO-3 + QLoRA of Llama-2-70B on two GPUs, memory per GPU,
as published-record JSON (schema: tests/data/published/README.md).

Source: github.com/huggingface/peft docs/source/accelerate/fsdp.md and docs/source/accelerate/deepspeed.md,
'Memory usage' sections, added in 6008f272a (2024-03-13, 'Changes to support fsdp+qlora and dsz3+qlora', PEFT
0.9.1.dev0); the runs' commands are in the same sections and their configs in examples/sft/configs/
{fsdp_config_qlora,deepspeed_config_z3_qlora}.yaml and examples/sft/{train.py,utils.py} at that commit.
Transcribed by hand (confidence T). The docs do not say which statistic ('memory consumed per GPU', 'as seen in the
screenshot' elsewhere on the same pages, i.e. most likely a GPU-monitor reading). Python 3 standard library only;
run from tests/data/published/.
"""
import json

LLAMA2_70B = {"family": "Llama 2 (Transformers LlamaForCausalLM)", "hf_id": "meta-llama/Llama-2-70b-hf", "layers": 80, "hidden": 8192,
              "heads": 64, "kv_heads": 8, "head_dim": 128, "ffn": 28672, "vocab": 32000, "tied_embeddings": False}
COMMON = {
    "model": LLAMA2_70B, "method": "qlora",
    "quantize": ("bitsandbytes 4-bit NF4 (examples/sft/utils.py default bnb_4bit_quant_type 'nf4'), double quantization on "
                 "(--use_nested_quant), compute dtype bfloat16, bnb_4bit_quant_storage bfloat16 (packed 4-bit weights stored in "
                 "BF16 tensors so FSDP/ZeRO-3 can shard them), model loaded with dtype = quant storage dtype (bfloat16)"),
    "lora": {"r": 8, "alpha": 16, "dropout": 0.1, "targets": "all-linear (q, k, v, o, gate, up, down; not the LM head)"},
    "trainer": "TRL SFTTrainer via examples/sft/train.py, --bf16, --packing True (ultrachat-10k-chatml packed to 2048 tokens)",
    "layout": {"gpus": 2, "micro_batch": 2, "gradient_accumulation": 2},
    "sequence": 2048, "gradient_checkpointing": "True, use_reentrant True", "attention": "FlashAttention-2 (--use_flash_attn)",
    "optimizer": "HF Trainer default AdamW (torch) on the LoRA parameters",
}
UN = ["which statistic the figure is (allocated, reserved or nvidia-smi; the pages show GPU-monitor screenshots elsewhere)",
      "the GPU model (the text concludes the runs need '2X24GB' (FSDP) and '2X40GB' (DeepSpeed) GPUs; 35.6 and 36.6 GB cannot have been measured on 24 GB cards)",
      "exact versions: the docs require bitsandbytes>=0.43.0, accelerate>=0.28.0, transformers>4.38.2, trl>0.7.11, peft>0.9.0 (examples/sft/requirements.txt installs git main of each)"]
SRC = {"citation": "Hugging Face PEFT documentation, 'Fully Sharded Data Parallel' / 'DeepSpeed' guides, section 'Memory usage'",
       "confidence": "T"}
R = []
for rid, val, fw, par, loc, extra in (
        ("fsdp-qlora-llama-2-70b-cpu-offload-2gpu", 19.6, "PyTorch FSDP1 (Accelerate)",
         "FSDP1 FULL_SHARD over 2 GPUs, TRANSFORMER_BASED_WRAP, backward_prefetch BACKWARD_PRE, fsdp_offload_params true (parameters, gradients and optimizer states on CPU; CPU RAM about 107 GB), cpu_ram_efficient_loading, use_orig_params false, Accelerate mixed_precision 'no' (the model itself is BF16)",
         "docs/source/accelerate/fsdp.md ('In the above example, the memory consumed per GPU is 19.6 GB while CPU RAM usage is around 107 GB')", []),
        ("fsdp-qlora-llama-2-70b-no-offload-2gpu", 35.6, "PyTorch FSDP1 (Accelerate)",
         "as the offload run with fsdp_offload_params false",
         "docs/source/accelerate/fsdp.md ('When disabling CPU offloading, the GPU memory usage is 35.6 GB/ GPU')",
         ["that everything but the offload flag was unchanged"]),
        ("deepspeed-zero3-qlora-llama-2-70b-2gpu", 36.6, "DeepSpeed ZeRO-3 (Accelerate)",
         "DeepSpeed ZeRO stage 3 over 2 GPUs, no optimizer or parameter offload, zero3_init_flag true, Accelerate mixed_precision bf16; DeepSpeed defaults for buckets, prefetch and persistence threshold (configs/deepspeed_config_z3_qlora.yaml)",
         "docs/source/accelerate/deepspeed.md ('In the above example, the memory consumed per GPU is 36.6 GB')", [])):
    cfg = dict(COMMON)
    cfg["parallel"] = par
    R.append({"id": "peft-docs-" + rid, "kind": "training_memory", "role": "check",
              "framework": {"name": "Hugging Face Transformers + PEFT + TRL + bitsandbytes + " + fw,
                            "version": "git main of March 2024 (PEFT 0.9.1.dev0 at 6008f272a); bitsandbytes >= 0.43.0"},
              "hardware": {"gpu": "not stated (see unpublished)", "gpus": 2},
              "statistic": "'memory consumed per GPU' (GB); the statistic is not stated", "value": val, "unit": "GB (as printed)",
              "config": cfg, "unpublished": UN + extra,
              "source": dict(SRC, locator="github.com/huggingface/peft " + loc + " at 6008f272a (2024-03-13); command in the same section; examples/sft/configs/*.yaml and examples/sft/{train.py,utils.py} at 6008f272a")})
json.dump({"schema": "vram-explorer.published/1",
           "about": "PEFT docs: Llama-2-70B QLoRA with FSDP1 (with/without CPU offload) and DeepSpeed ZeRO-3 on two GPUs, memory per GPU (statistic not stated; check records, never fitted)",
           "records": R}, open("peft-docs-sharded-qlora-70b.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
