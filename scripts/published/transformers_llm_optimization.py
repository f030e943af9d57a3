"""Hugging Face Transformers' 'Optimizing LLMs for Speed and Memory' tutorial: measured inference peaks of
bigcode/octocoder in BF16, bitsandbytes 8-bit and bitsandbytes 4-bit, and with a long prompt with and without
Flash Attention, as published-record JSON (schema: tests/data/published/README.md).

Source: github.com/huggingface/transformers docs/source/en/llm_tutorial_optimization.md (read at 008f5c8c); every
figure is the printed output of bytes_to_giga_bytes(torch.cuda.max_memory_allocated()) with
bytes_to_giga_bytes(b) = b / 1024 / 1024 / 1024, i.e. GiB; between experiments the tutorial deletes the model and
calls flush() = gc.collect(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats(), so each figure is the
allocated peak of loading that model plus the generation (the first one: since process start). Transcribed by hand
(confidence T). Python 3 standard library only; run from tests/data/published/.
"""
import json

OCTO = {"family": "GPTBigCode (StarCoder), multi-query attention", "hf_id": "bigcode/octocoder", "layers": 40, "hidden": 6144,
        "heads": 48, "kv_heads": 1, "head_dim": 128, "ffn": 24576, "vocab": 49152, "positions": 8192,
        "params": "about 15.5e9", "tied_embeddings": True}
STAT = ("torch.cuda.max_memory_allocated() / 1024**3 (GiB, called 'GB' in the text) right after the pipeline call; the peak "
        "counters were reset by flush() after the previous model was deleted, so the peak covers loading this model and "
        "the generation")
SHORT = "prompt 'Question: Please write a function in Python that transforms bytes to Giga bytes.\\n\\nAnswer:' (20 tokens, the tutorial's own printout), pipeline('text-generation') with max_new_tokens=60, greedy, KV cache on, batch 1"
LONG = "long_prompt = 10 x the tutorial's system prompt + the prompt (token count not printed; several thousand tokens), max_new_tokens=60, greedy, batch 1"
ROWS = [
    ("bf16-short-prompt", 29.0260648727417, "BF16 weights (torch_dtype=torch.bfloat16, device_map='auto')", SHORT, "Transformers default attention of the time (eager)", []),
    ("bnb-int8-short-prompt", 15.219234466552734, "bitsandbytes LLM.int8() (load_in_8bit=True: int8 weights with outlier threshold 6.0 default; non-quantized modules and the LM head in float16, transformers' default torch_dtype for bitsandbytes loads)", SHORT, "eager", []),
    ("bnb-4bit-fp4-short-prompt", 9.543574333190918, "bitsandbytes 4-bit with load_in_4bit=True and no BitsAndBytesConfig, i.e. the defaults: quant type FP4 (not NF4), no double quantization, compute dtype float32 (each matmul dequantizes its weight to an FP32 copy), non-quantized modules and LM head float16; low_cpu_mem_usage=True", SHORT, "eager", ["that the defaults of the transformers/bitsandbytes of the time applied (quant type fp4, double quant off, compute dtype float32)"]),
    ("bf16-long-prompt-eager", 37.668193340301514, "BF16 weights", LONG, "Transformers default attention (materialised b x heads x s x s scores in the prefill)", ["the long prompt's token count"]),
    ("bf16-long-prompt-flash", 32.617331981658936, "BF16 weights", LONG, "model.to_bettertransformer() and torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False): PyTorch SDPA FlashAttention kernel", ["the long prompt's token count"]),
]
R = []
for rid, gib, prec, gen, attn, extra in ROWS:
    R.append({"id": "transformers-llm-optimization-octocoder-" + rid, "kind": "inference_memory", "role": "check",
              "framework": {"name": "Hugging Face Transformers" + (" + bitsandbytes" if "bnb" in rid else "") + (" + Optimum BetterTransformer" if "flash" in rid else ""),
                            "version": "not published (the tutorial's versions are not printed; it dates from the 2023 'optimize LLM' guide)"},
              "hardware": {"gpu": "NVIDIA A100 40GB (the tutorial: 'can be run on a single 40 GB A100 GPU device chip')", "gpus": 1},
              "statistic": STAT, "value": gib, "unit": "GiB",
              "config": {"model": OCTO, "precision": prec, "generation": gen, "attention": attn},
              "unpublished": ["transformers, bitsandbytes, accelerate, optimum and torch versions", "that the GPU is the 40 GB A100 the text names"] + extra,
              "source": {"citation": "Hugging Face Transformers documentation, 'Optimizing LLMs for Speed and Memory' (llm_tutorial_optimization)",
                         "locator": "github.com/huggingface/transformers docs/source/en/llm_tutorial_optimization.md at 008f5c8c, sections '1. Lower Precision' and '2. Flash Attention'",
                         "confidence": "T"}})
json.dump({"schema": "vram-explorer.published/1",
           "about": "Transformers' LLM optimization tutorial: OctoCoder 15.5B inference allocated peaks in BF16, bitsandbytes int8 and 4-bit (FP4 defaults), and with a long prompt with/without Flash Attention (check records, never fitted)",
           "records": R}, open("transformers-llm-optimization-octocoder.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
