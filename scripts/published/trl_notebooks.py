"""Hugging Face TRL example notebooks' saved GPU memory printouts (TRL + Transformers + PEFT + bitsandbytes QLoRA)
as published-record JSON (schema: tests/data/published/README.md).

Source: github.com/huggingface/trl examples/notebooks/*.ipynb; each notebook prints, from its own cells,
round(torch.cuda.max_memory_reserved() / 1024**3, 3) before trainer.train() ('GB of memory reserved') and after it
('Peak reserved memory'), labelled GB but computed in GiB, and the committed notebook keeps the printed outputs of
the author's Colab run. The record's settings are the code cells of the same commit; the TRL version default values
from trl/trainer/{sft,grpo}_config.py at the last commit before the run. Values copied by hand (confidence T).
Model dimensions from tests/data/hf/qwen3-8b.json and the models' Hugging Face config.json.
Python 3 standard library only; run from tests/data/published/.
"""
import json

STAT = ("torch.cuda.max_memory_reserved() / 1024**3 (GiB, printed as 'GB') after trainer.train(), i.e. the reserved "
        "peak since process start, covering model loading/quantization and training (the notebook's own cell)")
QLORA_BNB = {"method": "qlora", "quantize": "bitsandbytes 4-bit NF4, double quantization on (bnb_4bit_use_double_quant=True), compute dtype float16, non-quantized weights float16 (dtype=torch.float16)",
             "kbit_preparation": "TRL prepare_peft_model calls PEFT prepare_model_for_kbit_training for a 4-bit model (trl/models/utils.py lines 526-544 at d8543c02), which upcasts every non-quantized float16/bfloat16 parameter (embeddings, norms, untied LM head) to FP32 and enables gradient checkpointing on the input embeddings",
             "lora": {"r": 32, "alpha": 32, "dropout": 0.0, "targets": {"q": True, "k": True, "v": True, "o": True, "mlp": True, "head": False}}}
QWEN3_8B = {"family": "Qwen3 (Transformers Qwen3ForCausalLM, q/k RMSNorm)", "hf_id": "Qwen/Qwen3-8B", "layers": 36, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn": 12288, "vocab": 151936, "tied_embeddings": False}
QWEN3_14B = {"family": "Qwen3 (Qwen3ForCausalLM)", "hf_id": "unsloth/qwen3-14b-unsloth-bnb-4bit (pre-quantized Qwen/Qwen3-14B)", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 8, "head_dim": 128, "ffn": 17408, "vocab": 151936, "tied_embeddings": False}
QWEN2_7B = {"family": "Qwen2 (Qwen2ForCausalLM, QKV bias)", "hf_id": "Qwen/Qwen2-7B-Instruct", "layers": 28, "hidden": 3584, "heads": 28, "kv_heads": 4, "head_dim": 128, "ffn": 18944, "vocab": 152064, "tied_embeddings": False}

R = []


def rec(rid, gpu, val, before, ver, cfg, un, loc):
    R.append({"id": "trl-notebook-" + rid, "kind": "training_memory", "role": "check",
              "framework": {"name": "Hugging Face TRL + Transformers + PEFT + bitsandbytes", "version": ver},
              "hardware": {"gpu": gpu, "gpus": 1}, "statistic": STAT, "value": val, "unit": "GiB",
              "also_reported": {"max_memory_reserved before trainer.train() (after loading and quantizing), GiB": before,
                                "difference printed as 'Peak reserved memory for training', GiB": round(val - before, 3)},
              "config": cfg, "unpublished": un,
              "source": {"citation": "TRL example notebook, saved cell outputs of the author's Colab run", "locator": loc, "confidence": "T"}})


UN_COMMON = ["exact package versions: the notebook runs `pip install -Uq` (latest PyPI releases on the run date); torch and CUDA are Colab's of that date",
             "the sequence length of the peak step (conversational samples, truncated at max_length, padded per batch)"]

rec("sft-qwen3-8b-qlora-a100-40gb", "NVIDIA A100-SXM4-40GB (Colab; 39.557 GiB visible)", 13.615, 11.959,
    "TRL 0.24.x (the PyPI release current on 2025-10-20: TRL main was 0.25.0.dev0); transformers, peft, bitsandbytes, liger-kernel and torch: PyPI/Colab versions of that day, not printed",
    {"model": QWEN3_8B, **QLORA_BNB, "trainer": "SFTTrainer(model=<4-bit model>, peft_config)",
     "dataset": "HuggingFaceH4/Multilingual-Thinking (1000 conversations; thinking merged into the assistant content)",
     "layout": {"devices": 1, "micro_batch": 2, "gradient_accumulation": 8}, "max_length": "1024 (SFTConfig default, trl/trainer/sft_config.py at d8543c02)",
     "gradient_checkpointing": True, "optimizer": "adamw_8bit (bitsandbytes 8-bit AdamW)", "attention": "sdpa",
     "loss": "Transformers causal-LM loss on full logits (no Liger); packing and padding_free off (defaults)", "steps": 40},
    UN_COMMON, "github.com/huggingface/trl examples/notebooks/sft_trl_lora_qlora.ipynb at 28bba8c6b (2025-10-20, 'Added SFT LoRA notebook'), cells 20-34")

rec("sft-qwen3-14b-unsloth-bnb4-qlora-t4", "NVIDIA Tesla T4 (Colab; 14.741 GiB visible)", 14.041, 12.074,
    "TRL 0.24.x (the PyPI release current on 2025-10-24, the Unix time of the Trackio run id 1761318512; TRL main was 0.25.0.dev0); other packages: PyPI/Colab versions of that day, not printed",
    {"model": QWEN3_14B, **QLORA_BNB,
     "quantize": "pre-quantized checkpoint unsloth/qwen3-14b-unsloth-bnb-4bit ('Unsloth Dynamic' bitsandbytes NF4: the checkpoint's own quantization_config, which keeps some modules in 16 bit, governs; the notebook's BitsAndBytesConfig (NF4, double quant, float16 compute) is passed as quantization_config)",
     "trainer": "SFTTrainer(model=model_id, quantization_config, peft_config), model_init_kwargs dtype float16, attn sdpa",
     "dataset": "HuggingFaceH4/Multilingual-Thinking", "layout": {"devices": 1, "micro_batch": 1, "gradient_accumulation": 4},
     "max_length": 1024, "gradient_checkpointing": "True (SFTConfig default)", "optimizer": "paged_adamw_8bit",
     "loss": "use_liger_kernel=True (Liger fused linear cross-entropy: no full logits)",
     "activation_offloading": "True (TRL activation offloading: saved activations to CPU)", "steps": 30},
    UN_COMMON + ["which modules the Unsloth dynamic checkpoint keeps in 16 bit (its quantization_config llm_int8_skip_modules list is not in the notebook)"],
    "github.com/huggingface/trl examples/notebooks/sft_trl_lora_qlora.ipynb at f6834206a (2025-10-31, 'Update SFT QLoRA notebook with 14B model on free Colab'), cells 20-34")

rec("grpo-qwen2-7b-qlora-t4", "NVIDIA Tesla T4 (Colab; 14.741 GiB visible)", 8.832, 6.773,
    "TRL 0.26.x (the PyPI release current around 2025-12-23: TRL main was 0.27.0.dev0); other packages: PyPI/Colab versions of that day, not printed",
    {"model": QWEN2_7B, **QLORA_BNB, "trainer": "GRPOTrainer(model=<4-bit model>, reward_funcs=[think_format_reward, reasoning_accuracy_reward], peft_config)",
     "dataset": "AI-MO/NuminaMath-TIR train[:5%] (3622 prompts)",
     "layout": {"devices": 1, "micro_batch": 8, "num_generations": 8, "gradient_accumulation": "1 (default)"},
     "generation": "Transformers generate (use_vllm off), max_completion_length 256, prompts not truncated (max_prompt_length None, trl/trainer/grpo_config.py line 793-794 at 5e6ceed0)",
     "reference_model": "none (beta default 0.0, grpo_config.py lines 582-583 at 5e6ceed0: no KL term, no reference copy)",
     "gradient_checkpointing": "True, use_reentrant False", "optimizer": "paged_adamw_8bit",
     "loss": "use_liger_kernel=True (Liger fused GRPO loss over chunks of the LM head)", "steps": 500},
    UN_COMMON + ["the prompt length distribution and which phase (generation with KV cache vs. the loss backward) holds the peak"],
    "github.com/huggingface/trl examples/notebooks/grpo_trl_lora_qlora.ipynb at c9a9e2572 (2025-12-23, 'Add GRPO QLoRA free notebook'), cells 9-38")

json.dump({"schema": "vram-explorer.published/1",
           "about": "TRL example notebooks' saved reserved-peak printouts of QLoRA SFT and GRPO runs on Colab GPUs (issue 12's validation table; check records, never fitted)",
           "records": R}, open("trl-notebooks-qlora.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
