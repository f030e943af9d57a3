"""Published vLLM and SGLang startup logs as kv_cache_capacity check records (schema: tests/data/published/README.md).

Every record quotes the log lines it was taken from (``log``), names the issue / pull request that published them
(``source.locator``) and carries the hand check the estimator will face: does the printed token count follow from
the printed memory with the page size derived in docs/engines/vllm.md / docs/engines/sglang.md?  The arithmetic is
done here (exact integers) and written into each record's ``notes``.

Run from the repository root: ``python3 scripts/published/engine_logs.py`` (Python 3 standard library only); it
writes tests/data/published/vllm-logs.json and sglang-logs.json.
"""
import json
import math

GiB = 1 << 30


def kv_bytes_per_token(layers, kv_heads, head_dim, elem, tp=1):
    """Standard attention: K and V, kv_heads split over TP (replicated when kv_heads < tp)."""
    heads = max(kv_heads // tp, 1)
    return layers * 2 * heads * head_dim * elem


def gib_range(printed):
    """A value printed with two decimals lies in [printed - 0.005, printed + 0.005) GiB."""
    return (printed - 0.005) * GiB, (printed + 0.005) * GiB


def pct(a, b):
    return f"{100.0 * (a - b) / b:+.2f} %"


def vllm_paged_check(avail_gib, block_bytes, block_size, printed_tokens):
    """num_blocks = floor(available / bytes_per_block); tokens = num_blocks x block_size."""
    avail = avail_gib * GiB
    blocks = int(avail // block_bytes)
    lo, hi = gib_range(avail_gib)
    blo, bhi = int(lo // block_bytes), int(hi // block_bytes)
    tokens = blocks * block_size
    within_rounding = blo * block_size <= printed_tokens <= bhi * block_size
    return blocks, tokens, blo, bhi, within_rounding


records_vllm = []
records_sgl = []

# ---------------------------------------------------------------------------------------------------- vLLM
LLAMA31_8B = {"hf_id": "meta-llama/Llama-3.1-8B-Instruct", "layers": 32, "kv_heads": 8, "head_dim": 128,
              "attention": "full (GQA)"}


def v0_064_record(case, max_len, total, peak_torch, non_torch, kv_gib, blocks_printed, conc_printed, log, extra_note=""):
    per_tok = kv_bytes_per_token(32, 8, 128, 2)
    block_bytes = 16 * per_tok
    blocks, tokens, blo, bhi, ok = vllm_paged_check(kv_gib, block_bytes, 16, blocks_printed * 16)
    budget = total * 0.90 - peak_torch - non_torch
    notes = (
        f"V0 (0.6.4) rule: kv_cache_size = total_gpu_memory x gpu_memory_utilization - peak_torch_memory - non_torch_memory "
        f"= {total} x 0.90 - {peak_torch} - {non_torch} = {budget:.3f} GiB (printed {kv_gib}). "
        f"Page: block_size 16 x 32 layers x 2 (K,V) x 8 KV heads x 128 x 2 B = {block_bytes:,} B per block (128 KiB per token). "
        f"num_gpu_blocks = floor({kv_gib} GiB / {block_bytes:,} B) = {blocks} (the printed GiB is rounded to 0.01: "
        f"[{blo}, {bhi}] blocks); printed {blocks_printed} -> {pct(blocks, blocks_printed)}, inside the rounding interval: {ok}. "
        f"KV tokens = {blocks_printed} x 16 = {blocks_printed * 16:,}; concurrency = {blocks_printed * 16:,} / {max_len:,} = "
        f"{blocks_printed * 16 / max_len:.4f} (printed {conc_printed}x). FOLLOWS." + extra_note
    )
    return {
        "id": f"vllm-issue10517-llama31-8b-rtx3090-{case}",
        "kind": "kv_cache_capacity",
        "role": "check",
        "framework": {"name": "vLLM", "version": "0.6.4 (V0 engine; inferred from the 'Memory profiling results: ... kv_cache_size=' line, which only 0.6.4 prints: added by PR #9352, replaced by PR #10511 in 0.6.5)"},
        "hardware": {"gpu": "NVIDIA GeForce RTX 3090 (24 GB; total_gpu_memory=23.58GiB)", "gpus": 1},
        "statistic": "vLLM's startup log: '# GPU blocks' x block_size = GPU KV-cache capacity in tokens (V0 worker.determine_num_available_blocks, gpu_executor.initialize_cache)",
        "value": blocks_printed * 16,
        "unit": "tokens (KV-cache slots, = '# GPU blocks' x block_size 16)",
        "also_reported": {"gpu_blocks": blocks_printed, "cpu_blocks": 2048, "kv_cache_size_gib": kv_gib,
                          "max_concurrency": conc_printed, "weights_gb": 14.9888,
                          "peak_torch_memory_gib": peak_torch, "non_torch_memory_gib": non_torch},
        "config": {
            "model": LLAMA31_8B,
            "engine": {"gpu_memory_utilization": 0.90, "max_model_len": max_len, "block_size": 16,
                       "kv_cache_dtype": "auto (bf16, the model dtype)", "tensor_parallel_size": 1,
                       "pipeline_parallel_size": 1, "swap_space": 4},
        },
        "log": log,
        "unpublished": [
            "vLLM version: not printed in the comment; 0.6.4 from the log format (see framework.version)",
            "dtype: assumed bf16 (the checkpoint's torch_dtype; 'Loading model weights took 14.9888 GB' = 8.03e9 params x 2 B)",
            "max_num_batched_tokens / max_num_seqs: defaults (the dummy batch is max(max_model_len, 512) tokens without chunked prefill, which is why peak_torch_memory changes with max_model_len)",
            "enforce_eager: not stated (V0 captured CUDA graphs after the KV cache was sized, so it does not change the printed figures)",
        ],
        "notes": notes,
        "source": {
            "citation": "vllm-project/vllm issue #10517, comment by kaspersiminski, 2024-12-02",
            "locator": "https://github.com/vllm-project/vllm/issues/10517 (comment of 2024-12-02, the '20k - OK' / '29k - BAD' logs)",
            "confidence": "T",
        },
    }


records_vllm.append(v0_064_record(
    "maxlen20000", 20000, 23.58, 17.06, 0.35, 3.81, 1952, 1.56,
    ["Loading model weights took 14.9888 GB",
     "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90",
     "GPU blocks: 1952, # CPU blocks: 2048",
     "Maximum concurrency for 20000 tokens per request: 1.56x"]))
records_vllm.append(v0_064_record(
    "maxlen29000", 29000, 23.58, 17.98, 0.35, 2.89, 1478, 0.82,
    ["Loading model weights took 14.9888 GB",
     "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90",
     "# GPU blocks: 1478, # CPU blocks: 2048",
     "Maximum concurrency for 29000 tokens per request: 0.82x",
     "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). ..."],
    extra_note=" The error line's 23648 = 1478 x 16 confirms tokens = blocks x block_size."))

# gateway-api-inference-extension PR #550: Llama-2-7b-hf with LoRA on an H100 80GB, V0 0.8.x
per_tok = kv_bytes_per_token(32, 32, 128, 2)
bb = 16 * per_tok
blocks, tokens, blo, bhi, ok = vllm_paged_check(56.18, bb, 16, 7191 * 16)
records_vllm.append({
    "id": "vllm-gaie-pr550-llama2-7b-lora-h100",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "0.8.x, V0 engine (the '[worker.py:267]' profiling lines and '[executor_base.py:111] # cuda blocks' are V0 0.8.0-0.8.2; --enable-lora kept V0 until 0.8.3 per gateway-api-inference-extension PR #573)"},
    "hardware": {"gpu": "NVIDIA H100 80GB (total_gpu_memory 79.19GiB)", "gpus": 1},
    "statistic": "'# cuda blocks' x block_size 16 = KV-cache capacity in tokens; 'the rest of the memory reserved for KV Cache' = requested - weights - non_torch - activation peak (V0 worker.determine_num_available_blocks since PR #10511)",
    "value": 7191 * 16,
    "unit": "tokens (KV-cache slots, = '# cuda blocks' x block_size 16)",
    "also_reported": {"gpu_blocks": 7191, "cpu_blocks": 512, "kv_cache_gib": 56.18, "requested_gib": 71.27,
                      "weights_gib": 12.55, "non_torch_gib": 0.16, "activation_peak_gib": 2.38},
    "config": {
        "model": {"hf_id": "meta-llama/Llama-2-7b-hf", "layers": 32, "kv_heads": 32, "head_dim": 128, "attention": "full (MHA)"},
        "engine": {"gpu_memory_utilization": 0.90, "block_size": 16, "kv_cache_dtype": "auto (fp16/bf16)",
                   "tensor_parallel_size": 1, "enable_lora": True, "max_cpu_loras": 12},
    },
    "log": [
        "[worker.py:267] the current vLLM instance can use total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB",
        "[worker.py:267] model weights take 12.55GiB; non_torch_memory takes 0.16GiB; PyTorch activation peak memory takes 2.38GiB; the rest of the memory reserved for KV Cache is 56.18GiB.",
        "[executor_base.py:111] # cuda blocks: 7191, # CPU blocks: 512",
    ],
    "unpublished": [
        "the model: the excerpt does not name it; the deployment manifest of that time (config/manifests/vllm/gpu-deployment.yaml, changed from Llama-2-7b-hf to Llama-3.1-8B by PR #578 five days later) served meta-llama/Llama-2-7b-hf with LoRA adapters, and 12.55 GiB = 6.74e9 x 2 B matches it",
        "max_model_len (the concurrency line is cut off in the excerpt; Llama-2 default 4096)",
        "max_loras / max_lora_rank (LoRA slots are allocated with the weights and sit inside 'model weights take')",
        "exact vLLM patch version",
    ],
    "notes": (
        f"Budget: 79.19 x 0.90 = 71.27; 71.27 - 12.55 - 0.16 - 2.38 = {71.27 - 12.55 - 0.16 - 2.38:.2f} GiB (printed 56.18). "
        f"Page: 16 x 32 layers x 2 x 32 KV heads x 128 x 2 B = {bb:,} B = 8 MiB per block. "
        f"floor(56.18 GiB / 8 MiB) = {blocks} (rounding interval [{blo}, {bhi}]); printed 7191 -> {pct(blocks, 7191)}. FOLLOWS."),
    "source": {
        "citation": "kubernetes-sigs/gateway-api-inference-extension PR #550 'Configure the vllm deployment with best practices for startup', comment by liu-cong (log of 2025-03-21)",
        "locator": "https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/550 (model from PR #578: https://github.com/kubernetes-sigs/gateway-api-inference-extension/pull/578)",
        "confidence": "S",
    },
})

# LMCache issue #1739: Qwen3-14B single GPU, V1 0.10.x/0.11
per_tok = kv_bytes_per_token(40, 8, 128, 2)
bb = 16 * per_tok
blocks, tokens, blo, bhi, ok = vllm_paged_check(6.51, bb, 16, 42656)
records_vllm.append({
    "id": "vllm-lmcache1739-qwen3-14b-1gpu",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "0.10.2, V1 engine (the logger locations gpu_worker.py:298 and kv_cache_utils.py:864/868 match the 0.10.2 wheel exactly; 0.10.1.1 logs at 276/849, 0.11.0 at 1087); with LMCache"},
    "hardware": {"gpu": "not stated (one GPU)", "gpus": 1},
    "statistic": "'GPU KV cache size: N tokens' = num_blocks x block_size (V1 kv_cache_utils._report_kv_cache_config, uniform full-attention model)",
    "value": 42656,
    "unit": "tokens",
    "also_reported": {"available_kv_cache_gib": 6.51, "max_concurrency": 1.30, "max_model_len": 32768},
    "config": {
        "model": {"hf_id": "Qwen/Qwen3-14B", "layers": 40, "kv_heads": 8, "head_dim": 128, "attention": "full (GQA)"},
        "engine": {"max_model_len": 32768, "block_size": 16, "kv_cache_dtype": "auto (bf16)", "tensor_parallel_size": 1,
                   "kv_transfer_config": "LMCacheConnectorV1 (kv_both)"},
    },
    "log": [
        "[gpu_worker.py:298] Available KV cache memory: 6.51 GiB",
        "[kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens",
        "[kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens per request: 1.30x",
    ],
    "unpublished": [
        "GPU model and gpu_memory_utilization (so the 6.51 GiB budget itself cannot be rebuilt; only tokens from it)",
        "vLLM version: not printed; 0.10.2 from the log's file:line tags",
    ],
    "notes": (
        f"Page (one layer) = 16 x 2 x 8 x 128 x 2 B = 65,536 B; x 40 layers = {bb:,} B per block (160 KiB per token). "
        f"num_blocks = floor(6.51 GiB / {bb:,}) = {blocks} (interval [{blo}, {bhi}]); tokens = {blocks} x 16 = {tokens:,} "
        f"vs printed 42,656 -> {pct(tokens, 42656)}; concurrency 42,656 / 32,768 = {42656 / 32768:.4f} (printed 1.30x). "
        "FOLLOWS exactly; the LMCache connector does not change the GPU pool."),
    "source": {
        "citation": "LMCache/LMCache issue #1739 'LMCache fails in retrieving KV Cache from local disk on 2x GPU environment (TP=2)', description by jaeyoun98 (single-GPU run)",
        "locator": "https://github.com/LMCache/LMCache/issues/1739",
        "confidence": "T",
    },
})

# vLLM issue #21348: Qwen3-235B-A22B-FP8, 4 x H100, TP 4 (vLLM side)
per_tok = kv_bytes_per_token(94, 4, 128, 2, tp=4)
bb = 16 * per_tok
blocks, tokens, blo, bhi, ok = vllm_paged_check(8.11, bb, 16, 178880)
need = 178880 * per_tok / GiB
records_vllm.append({
    "id": "vllm-issue21348-qwen3-235b-fp8-4xh100-tp4",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "V1, July 2025 (0.9.2 / 0.10.0 by date; not printed), with LMCacheConnectorV1"},
    "hardware": {"gpu": "NVIDIA H100 80GB", "gpus": 4, "gpus_per_node": 4},
    "statistic": "'GPU KV cache size: N tokens' per TP rank (= num_blocks x block_size)",
    "value": 178880,
    "unit": "tokens",
    "also_reported": {"available_kv_cache_gib": 8.11},
    "config": {
        "model": {"hf_id": "Qwen/Qwen3-235B-A22B-FP8", "layers": 94, "kv_heads": 4, "head_dim": 128,
                  "attention": "full (GQA); FP8 block-quantized weights, KV cache in bf16 ('auto')"},
        "engine": {"tensor_parallel_size": 4, "gpu_memory_utilization": "default (0.9 at that version)",
                   "block_size": 16, "kv_cache_dtype": "auto (bf16)",
                   "kv_transfer_config": "LMCacheConnectorV1 (kv_both)"},
    },
    "log": ["Available KV cache memory: 8.11 GiB", "GPU KV cache size: 178,880 tokens"],
    "unpublished": [
        "vLLM version, max_model_len (Qwen3 default 40,960) and the concurrency line",
        "which rank printed 'Available KV cache memory' (each worker logs its own; the engine takes the smallest num_blocks over workers)",
    ],
    "notes": (
        f"TP 4 splits the 4 KV heads to 1 per rank: page per layer = 16 x 2 x 1 x 128 x 2 B = 8,192 B; x 94 layers = {bb:,} B per block. "
        f"floor(8.11 GiB / {bb:,}) = {blocks} blocks (interval [{blo}, {bhi}]) = {tokens:,} tokens vs printed 178,880 -> {pct(tokens, 178880)}. "
        f"178,880 tokens need {need:.3f} GiB. WITHIN 2 % BUT NOT EXACT (outside the rounding interval): the likely cause is that "
        "the engine unifies the workers' KV configs to the smallest num_blocks over the 4 ranks while the quoted "
        "'Available KV cache memory' line is one worker's own figure (a rank with ~0.09 GiB less free memory gives exactly 11,180 blocks); "
        "the LMCache connector is the other candidate. An estimator that models one rank will be +1.15 % here."),
    "source": {
        "citation": "vllm-project/vllm issue #21348 '[Performance]: KV Cache Size Comparison vLLM vs SGLang', description by MMuzzammil1, 2025-07-22",
        "locator": "https://github.com/vllm-project/vllm/issues/21348",
        "confidence": "T",
    },
})

# vLLM PR #12569: Llama-3.1-70B w8a8, V1 0.7.x (blocks line, no memory line)
records_vllm.append({
    "id": "vllm-pr12569-llama31-70b-w8a8-1gpu",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "V1 engine (VLLM_USE_V1=1), late January 2025 (main before 0.7.1; kv_cache_utils.py:395)"},
    "hardware": {"gpu": "not stated (one GPU; 67.72 GiB of weights at gpu_memory_utilization 0.98 implies an 80 GB H100/A100)", "gpus": 1},
    "statistic": "'# GPU blocks' x block_size = KV-cache capacity in tokens (V1 before PR #13596 renamed the line)",
    "value": 1381 * 16,
    "unit": "tokens (KV-cache slots, = '# GPU blocks' x 16)",
    "also_reported": {"gpu_blocks": 1381, "max_concurrency": 10.79, "weights_gb": 67.7229},
    "config": {
        "model": {"hf_id": "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "layers": 80, "kv_heads": 8, "head_dim": 128,
                  "attention": "full (GQA); INT8 W8A8 weights, KV cache bf16"},
        "engine": {"max_model_len": 2048, "gpu_memory_utilization": 0.98, "block_size": 16, "kv_cache_dtype": "auto (bf16)",
                   "tensor_parallel_size": 1},
    },
    "log": [
        "[gpu_model_runner.py:848] Loading model weights took 67.7229 GB",
        "[kv_cache_utils.py:395] # GPU blocks: 1381",
        "[kv_cache_utils.py:398] Maximum concurrency for 2048 tokens per request: 10.79x",
    ],
    "unpublished": [
        "the available KV-cache memory (V1 did not log it yet), the GPU and its total memory: only the blocks -> tokens -> concurrency step can be checked",
    ],
    "notes": (
        f"Page = 16 x 80 layers x 2 x 8 x 128 x 2 B = {16 * kv_bytes_per_token(80, 8, 128, 2):,} B (5 MiB) per block, so the pool was "
        f"{1381 * 16 * kv_bytes_per_token(80, 8, 128, 2) / GiB:.3f} GiB. tokens = 1381 x 16 = 22,096; concurrency = 22,096 / 2,048 = "
        f"{22096 / 2048:.4f} (printed 10.79x). The memory -> tokens step is NOT CHECKABLE (no memory line); on an H100 "
        "(79.19 GiB) the budget 0.98 x 79.19 = 77.61 GiB less 67.72 GiB weights leaves 9.89 GiB, i.e. about 3.15 GiB for "
        "the 2,048-token profile peak, non-torch memory and the sampler (an inference, not a check)."),
    "source": {
        "citation": "vllm-project/vllm PR #12569 '[V1][Log] Add max request concurrency log to V1', description by mgoin, 2025-01-30",
        "locator": "https://github.com/vllm-project/vllm/pull/12569",
        "confidence": "T",
    },
})

# club-3090 issue #104: Qwen3.6-27B (hybrid GDN + full attention), 2 x 3090, TP 2, fp8_e5m2 KV, vLLM >= 0.21
# Qwen3.5/3.6-27B layout from GGUF metadata printed in llama.cpp PRs #23792 / #22105: 64 layers, full attention every
# 4th (16), 4 KV heads x 256, GDN: 16 K heads x 128, 48 V heads x 128, conv kernel 4.
TP = 2
attn_tok = (4 // TP) * (256 + 256) * 1                      # fp8_e5m2: 1 B; per token per layer per rank
conv_el = (16 * 128 * 2 + 48 * 128) // TP * (4 - 1)        # conv state (conv_dim / TP) x (kernel - 1)
ssm_el = (48 // TP) * 128 * 128                              # temporal state (V heads / TP) x head_v x head_k
mamba_page = conv_el * 2 + ssm_el * 4                        # conv bf16, SSM state fp32
align = 16
blk = align * math.ceil(mamba_page / (align * attn_tok))
page = blk * attn_tok
bpb = 16 * page                                              # 4 groups of 16 layers (1 attention + 3 GDN)
nb = int(9.84 * GiB // bpb)
nb_lo, nb_hi = int((9.835 * GiB) // bpb), int((9.845 * GiB) // bpb)
bpr = math.ceil(262144 / blk) + 3 * 2                        # attention blocks + 2 Mamba pages per GDN group ('align')
conc = nb / bpr
tokens = int(conc * 262144)
records_vllm.append({
    "id": "vllm-club3090-104-qwen36-27b-2x3090-tp2-fp8kv",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "0.21.0 (kv_cache_utils.py:1710/1711 and the int(concurrency x max_model_len) token count match the 0.21.0 wheel; default block size 16); V1, hybrid KV-cache manager"},
    "hardware": {"gpu": "NVIDIA GeForce RTX 3090 (24 GB), PCIe x8, power-capped", "gpus": 2, "gpus_per_node": 2},
    "statistic": "'GPU KV cache size: N tokens' = int(max_concurrency x max_model_len), max_concurrency = num_blocks / (sum over KV-cache groups of blocks one max_model_len request needs)",
    "value": 619202,
    "unit": "tokens",
    "also_reported": {"available_kv_cache_gib": 9.84, "max_concurrency": 2.36, "max_model_len": 262144,
                      "equivalent_utilization_without_cudagraph_profiling": 0.8592},
    "config": {
        "model": {"hf_id": "Qwen3.6-27B AutoRound (INT4 weights; exact repository not named)", "layers": 64,
                  "full_attention_layers": 16, "kv_heads": 4, "head_dim": 256,
                  "linear_attention": {"kind": "Gated DeltaNet", "layers": 48, "k_heads": 16, "v_heads": 48,
                                       "head_k_dim": 128, "head_v_dim": 128, "conv_kernel": 4},
                  "attention": "hybrid: Gated DeltaNet (fixed-size state) and full attention every 4th layer"},
        "engine": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.88, "kv_cache_dtype": "fp8_e5m2",
                   "max_model_len": 262144, "enable_prefix_caching": True, "mamba_cache_mode": "align (from prefix caching)",
                   "mamba_cache_dtype": "auto (bf16 conv state)", "mamba_ssm_cache_dtype": "float32 (the model's SSM state dtype)"},
    },
    "log": [
        "(Worker_TP0 pid=99) INFO 05-07 20:28:11 [gpu_worker.py:460] Available KV cache memory: 9.84 GiB",
        "[gpu_worker.py:475] CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.8800 is equivalent to --gpu-memory-utilization=0.8592 without CUDA graph memory profiling. ...",
        "(EngineCore pid=90) INFO 05-07 20:28:11 [kv_cache_utils.py:1710] GPU KV cache size: 619,202 tokens",
        "[kv_cache_utils.py:1711] Maximum concurrency for 262,144 tokens per request: 2.36x",
    ],
    "unpublished": [
        "the checkpoint's config: the layout above is Qwen3.5/3.6-27B's as printed in GGUF metadata in llama.cpp PRs #23792 (unsloth/Qwen3.6-27B-GGUF: 64 blocks, 4 KV heads x 256) and #22105 (ssm conv_kernel 4, state_size 128, group_count 16, time_step_rank 48, inner_size 6144, full_attention_interval 4)",
        "the SSM state dtype (float32), the attention kernel block alignment (16) and prefix caching on ('align', 2 Mamba pages per request): not printed; they are the only combination of the candidates tried (bf16/fp32 state, alignment 16/32/64, 1/2/3 Mamba pages) that reproduces the printed figures",
        "vLLM version: not printed; 0.21.0 from the file:line tags",
    ],
    "notes": (
        f"CUDA-graph estimate: (0.88 - 0.8592) x 23.56 GiB = ~0.49 GiB was charged before the 9.84 GiB. "
        f"Attention: 2 KV heads per rank x (256 + 256) x 1 B = {attn_tok:,} B per token per layer. GDN state per layer per rank: "
        f"conv {conv_el:,} x 2 B + SSM 24 x 128 x 128 = {ssm_el:,} x 4 B = {mamba_page:,} B. Attention block size raised to "
        f"16 x cdiv({mamba_page:,}, 16 x {attn_tok:,}) = {blk} tokens, page {page:,} B (Mamba page padded to it). 16 full-attention "
        f"+ 48 GDN layers -> 4 groups of 16; bytes_per_block = 16 x {page:,} = {bpb:,} B; num_blocks = floor(9.84 GiB / {bpb:,}) = {nb} "
        f"(rounding interval [{nb_lo}, {nb_hi}]). Blocks per 262,144-token request = cdiv(262,144, {blk}) = {math.ceil(262144 / blk)} "
        f"+ 3 GDN groups x 2 = {bpr}; concurrency = {nb} / {bpr} = {conc:.4f} (printed 2.36x); tokens = int({conc:.6f} x 262,144) = "
        f"{tokens:,} vs printed 619,202 -> {pct(tokens, 619202)}. FOLLOWS EXACTLY under the stated assumptions; "
        "9.84 GiB / 619,202 = 17,064 B per token is not a per-token KV cost (the GDN groups' fixed pages are inside it), "
        "so an estimator without the group/page rules of docs/engines/vllm.md section 3.4 misses this record by far more than 2 %."),
    "source": {
        "citation": "noonghunna/club-3090 issue #104 'Dual 3090 (PCIe x8, power-capped) - Qwen3.6-27B-AutoRound, fp8_e5m2 KV', description by alexpolo1",
        "locator": "https://github.com/noonghunna/club-3090/issues/104 (model layout: https://github.com/ggml-org/llama.cpp/pull/23792 and https://github.com/ggml-org/llama.cpp/pull/22105)",
        "confidence": "S",
    },
})

# vLLM issue #25350: fp8 KV, the page size pinned by vLLM's own error line (model not named), 0.10.2
page_fp8 = 16 * 49152                                         # 16 tokens x 49,152 B (L x 2 x H x d x 1 B)
need_221k = math.ceil(221000 / 16) * page_fp8
blocks, tokens, blo, bhi, ok = vllm_paged_check(10.55, page_fp8, 16, 230528)
records_vllm.append({
    "id": "vllm-issue25350-fp8kv-maxlen100000",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "0.10.2, V1 (kv_cache_utils.py:868 as in the 0.10.2 wheel)"},
    "hardware": {"gpu": "not stated", "gpus": 1},
    "statistic": "'GPU KV cache size: N tokens' = num_blocks x block_size (0.10.2, one attention kind)",
    "value": 230528,
    "unit": "tokens",
    "also_reported": {"available_kv_cache_gib": 10.55, "max_concurrency": 2.31, "max_model_len": 100000,
                      "weights_gib": 29.09, "second_run_needed_gib_for_221000": 10.12, "second_run_available_gib": 5.59,
                      "second_run_estimated_max_model_len": 122080},
    "config": {
        "model": {"hf_id": "not named in the issue (29.09 GiB of weights; 49,152 B of fp8 KV per token, e.g. 48 layers x 4 KV heads x 128)",
                  "attention": "full attention, one kind"},
        "engine": {"kv_cache_dtype": "fp8", "max_model_len": 100000, "block_size": 16},
    },
    "log": [
        "Available KV cache memory: 10.55 GiB",
        "GPU KV cache size: 230,528 tokens",
        "[kv_cache_utils.py:868] Maximum concurrency for 100,000 tokens per request: 2.31x",
        "(second run, --max-model-len 221000) ValueError: To serve at least one request with the models's max seq len (221000), (10.12 GiB KV cache is needed, which is larger than the available KV cache memory (5.59 GiB). Based on the available memory, the estimated maximum model length is 122080.",
    ],
    "unpublished": [
        "the model, GPU and gpu_memory_utilization: the page size is taken from vLLM's own error line instead (cdiv(221,000, 16) pages x page = 10.12 GiB)",
        "the GPU count: one GPU (TP 1) assumed; with TP the 49,152 B would be per rank",
    ],
    "notes": (
        f"Page from the error line: cdiv(221,000, 16) = 13,813 blocks x 16 x 49,152 B = {need_221k:,} B = {need_221k / GiB:.3f} GiB (printed 10.12), "
        f"i.e. 49,152 B per token of fp8 KV (96 KiB per token in bf16 - the issue's 'fp8 gives twice as many tokens'). "
        f"floor(10.55 GiB / {page_fp8:,}) = {blocks} blocks (interval [{blo}, {bhi}]) = {tokens:,} tokens vs printed 230,528 (= 14,408 blocks) -> "
        f"{pct(tokens, 230528)}, inside the rounding: FOLLOWS. Concurrency 230,528 / 100,000 = 2.305 (printed 2.31x). The second run's "
        "5.59 GiB -> [7,625, 7,639] blocks brackets the printed estimate 122,080 = 7,630 x 16. The issue's complaint (less memory with a longer "
        "max_model_len: 5.59 vs 10.55 GiB) is not explained by the page rule and the quoted lines do not show what grew; not analysed here."),
    "source": {
        "citation": "vllm-project/vllm issue #25350 '[Bug]: The maximum model length calculation should also take into account the kv-cache-dtype', description by ErykCh, 2025-09-21",
        "locator": "https://github.com/vllm-project/vllm/issues/25350",
        "confidence": "T",
    },
})

# eugr/spark-vllm-docker issue #396: MiniMax-M2.7 AWQ on 2 x DGX Spark (GB10), TP 2, vLLM 0.29.1rc1
tok_rank = kv_bytes_per_token(62, 8, 128, 2, tp=2)            # 126,976 B
page_mm = 16 * tok_rank
need = math.ceil(196608 / 16) * page_mm
blocks, tokens, blo, bhi, ok = vllm_paged_check(28.74, page_mm, 16, 240816)
c_pred = blocks / math.ceil(196608 / 16)
n_pred = int(c_pred * 196608)
b_printed = 240816 / 196608 * math.ceil(196608 / 16)
records_vllm.append({
    "id": "vllm-sparkdocker396-minimax-m27-awq-2xgb10-tp2",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM", "version": "0.29.1rc1.dev17+gd2d649e67 (stated)"},
    "hardware": {"gpu": "NVIDIA GB10 (DGX Spark, 128 GB unified memory)", "gpus": 2, "gpus_per_node": 1,
                 "interconnect": "two DGX Spark nodes"},
    "statistic": "'GPU KV cache size: N tokens, Maximum concurrency …' (0.29: one line, N = int(C x T))",
    "value": 240816,
    "unit": "tokens",
    "also_reported": {"available_kv_cache_gib": 28.74, "max_concurrency": 1.22, "max_model_len": 196608,
                      "first_run_available_gib": 22.5, "first_run_needed_gib": 23.25, "first_run_estimated_max_model_len": 190272},
    "config": {
        "model": {"hf_id": "MiniMax-M2.7 AWQ (recipe minimax-m2.7-awq)", "layers": 62, "kv_heads": 8, "head_dim": 128,
                  "attention": "full (GQA); INT4 AWQ weights, KV bf16"},
        "engine": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.85, "max_model_len": 196608, "block_size": 16,
                   "kv_cache_dtype": "auto (bf16)"},
    },
    "log": [
        "Available KV cache memory: 22.5 GiB",
        "ValueError: To serve at least one request with the model's max seq len (196608), 23.25 GiB KV cache is needed, which is larger than the available KV cache memory (22.5 GiB). Based on the available memory, the estimated maximum model length is 190272.",
        "(with --gpu-memory-utilization 0.85, as summarised by the reporter) 28.74 GiB KV -> 240,816 tokens, 1.22x concurrency at 196,608",
    ],
    "unpublished": [
        "the second run's log lines verbatim (the reporter summarises them) and which node's 'Available' figure was quoted",
        "the model's config: 62 layers x 8 KV heads x 128 (MiniMax-M2's) is what the error line's 23.25 GiB implies exactly",
    ],
    "notes": (
        f"TP 2: 4 KV heads per rank x (128 + 128) x 2 B x 62 layers = {tok_rank:,} B per token; one 196,608-token request = 12,288 blocks x "
        f"{page_mm:,} B = {need / GiB:.3f} GiB (printed 23.25: EXACT, so the page is right). Second run: floor(28.74 GiB / {page_mm:,}) = {blocks} "
        f"blocks (interval [{blo}, {bhi}]) -> C = {blocks} / 12,288 = {c_pred:.4f}, N = {n_pred:,} vs printed 240,816 (1.22x = {b_printed:.0f} blocks) -> "
        f"{pct(n_pred, 240816)}. WITHIN 2 % BUT NOT EXACT: 240,816 tokens need 15,051 blocks = 28.48 GiB, 0.26 GiB below the quoted 28.74. "
        "Likely the minimum over the two nodes (GB10 is an integrated GPU: vLLM takes its free memory from the host's available memory, which differs "
        "between the two Sparks), with the quoted figure from the other node."),
    "source": {
        "citation": "eugr/spark-vllm-docker issue #396 'minimax-m2.7-awq recipe fails to start: KV cache 0.75 GiB short at default gpu_memory_utilization: 0.8', description by BHCC2025, 2026-09-14",
        "locator": "https://github.com/eugr/spark-vllm-docker/issues/396",
        "confidence": "T",
    },
})

# OpenRLHF issue #336: Llama-3-70B under OpenRLHF PPO, V0 0.4.x/0.5.0 (blocks line + the max-seq-len error)
records_vllm.append({
    "id": "vllm-openrlhf336-llama3-70b-ppo",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "vLLM (inside OpenRLHF's LLMRayActor)", "version": "V0, mid-2024 (distributed_gpu_executor.py:45 and worker_base.py prints: 0.4.x-0.5.0; not printed)"},
    "hardware": {"gpu": "not stated (gpus = the actor's TP degree, inferred from the CPU-block count: see unpublished)", "gpus": 2},
    "statistic": "'# GPU blocks' x block_size = KV-cache capacity in tokens, confirmed by vLLM's own error text",
    "value": 378 * 16,
    "unit": "tokens (KV-cache slots, = '# GPU blocks' x 16)",
    "also_reported": {"gpu_blocks": 378, "cpu_blocks": 1638, "max_model_len": 8192},
    "config": {
        "model": {"hf_id": "meta-llama/Meta-Llama-3-70B(-Instruct) (the PPO actor)", "layers": 80, "kv_heads": 8, "head_dim": 128,
                  "attention": "full (GQA)"},
        "engine": {"max_model_len": 8192, "block_size": 16, "kv_cache_dtype": "auto (bf16)",
                   "gpu_memory_utilization": "OpenRLHF's setting, not stated", "tensor_parallel_size": "not stated"},
    },
    "log": [
        "(LLMRayActor pid=20770) INFO 06-28 06:11:45 distributed_gpu_executor.py:45] # GPU blocks: 378, # CPU blocks: 1638",
        "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (6048). (issue title)",
    ],
    "unpublished": [
        "GPU, tensor_parallel_size, gpu_memory_utilization and the memory profile (V0 of that time logged no memory figures): only blocks -> tokens can be checked",
        "swap_space: assumed vLLM's default 4 GiB (TP 1 would give 819 CPU blocks, TP 4 3,276; only TP 2 gives the printed 1,638)",
    ],
    "notes": (
        "tokens = 378 x 16 = 6,048, exactly the figure in vLLM's error ('maximum number of tokens that can be stored in KV cache (6048)'). "
        "Assuming the default swap_space of 4 GiB: 1,638 CPU blocks x page = 4 GiB gives a page of 4 GiB / 1,638 = 2,622,080 B vs 80 layers x 16 x 2 x (8 / TP) x 128 x 2 B "
        "= 5,242,880 / TP B: TP 2 gives 2,621,440 B (floor(4 GiB / 2,621,440) = 1,638, exact), so the actor ran with TP 2 and each rank held "
        "378 x 2,621,440 B = 0.923 GiB of KV cache. The memory -> tokens step is NOT CHECKABLE (no memory line); the swap space pins the page size."),
    "source": {
        "citation": "OpenRLHF/OpenRLHF issue #336 'vLLM related: model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV cache (6048).', description by mickelliu, 2024-06-28",
        "locator": "https://github.com/OpenRLHF/OpenRLHF/issues/336",
        "confidence": "T",
    },
})

# ---------------------------------------------------------------------------------------------------- SGLang


def sgl_mha_kv_size(tokens, page, layers, kv_heads_per_rank, head_dim, elem):
    """One of K or V: (tokens + page_size) slots x layers x heads x head_dim x bytes (MHATokenToKVPool allocates size + page_size)."""
    return (tokens + page) * layers * kv_heads_per_rank * head_dim * elem


k = sgl_mha_kv_size(367404, 1, 94, 1, 128, 2)
records_sgl.append({
    "id": "sglang-vllm21348-qwen3-235b-fp8-4xh100-tp4",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "SGLang", "version": "July 2025 (0.4.9.x by date; not printed)"},
    "hardware": {"gpu": "NVIDIA H100 80GB", "gpus": 4, "gpus_per_node": 4},
    "statistic": "'KV Cache is allocated. #tokens: N' = max_total_num_tokens of the token-to-KV pool per TP rank; K/V size in GiB (SGLang prints GB but divides by 2^30)",
    "value": 367404,
    "unit": "tokens",
    "also_reported": {"k_size_gib": 8.23, "v_size_gib": 8.23},
    "config": {
        "model": {"hf_id": "Qwen/Qwen3-235B-A22B-FP8", "layers": 94, "kv_heads": 4, "head_dim": 128, "attention": "full (GQA)"},
        "engine": {"tp": 4, "mem_fraction_static": 0.93, "page_size": 1, "kv_cache_dtype": "auto (bf16)"},
    },
    "log": ["KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"],
    "unpublished": [
        "free memory before the model load and after it (the 'Load weight begin/end ... avail mem' lines), so the budget "
        "rest = avail_after_load - pre_load x (1 - 0.93) cannot be rebuilt; only the cell size is checked",
        "SGLang version",
    ],
    "notes": (
        f"Cell size per token per rank = 94 layers x 1 KV head (4 / TP 4) x (128 + 128) x 2 B = {94 * 256 * 2:,} B. "
        f"K buffer = (367,404 + page_size 1) x 94 x 1 x 128 x 2 B = {k:,} B = {k / GiB:.4f} GiB (printed 8.23). "
        f"So the pool held {2 * k / GiB:.3f} GiB, and max_total_num_tokens = floor(rest / 48,128) = 367,404 puts the budget rest in [{367404 * 48128:,}, {367405 * 48128:,}) B. "
        "TOKENS FOLLOW FROM THE PRINTED K/V SIZE EXACTLY. Versus vLLM on the same GPUs (178,880 tokens in 8.11 GiB): SGLang "
        "reserves by a fraction of the pre-load free memory and so took ~16.5 GiB per rank, twice vLLM's profiled remainder."),
    "source": {
        "citation": "vllm-project/vllm issue #21348, description by MMuzzammil1, 2025-07-22 (the SGLang half of the comparison)",
        "locator": "https://github.com/vllm-project/vllm/issues/21348",
        "confidence": "T",
    },
})


def dsa_cell(layers=61):
    # fp8 DSA MLA row: 512 fp8 latent + 4 fp32 scales (512/128 tiles) + 64 bf16 rope = 656 B; indexer: 128 fp8 + 128/128 x 4 B scale = 132 B
    return layers * 656, layers * 132


mla, idx = dsa_cell()
after = (975424 + 64) * (mla + idx)
before_kv = (1462784 + 64) * mla
before_all = (1462784 + 64) * (mla + idx)
records_sgl.append({
    "id": "sglang-pr11309-deepseek-v32-exp-8xb200-dp8-with-indexer",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "SGLang", "version": "main of 2025-10-07 with PR #11309 (0.5.3 development)"},
    "hardware": {"gpu": "NVIDIA B200", "gpus": 8, "gpus_per_node": 8},
    "statistic": "'KV Cache is allocated. #tokens: N, KV size: X GB' per DP rank (MLA pool: one latent buffer, GiB)",
    "value": 975424,
    "unit": "tokens",
    "also_reported": {"kv_size_gib": 43.67, "avail_mem_after_pool_gib": 37.71},
    "config": {
        "model": {"hf_id": "deepseek-ai/DeepSeek-V3.2-Exp", "layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                  "index_head_dim": 128, "attention": "MLA with DeepSeek sparse attention (lightning indexer)"},
        "engine": {"tp": 8, "dp": 8, "enable_dp_attention": True, "mem_fraction_static": "default (auto)",
                   "kv_cache_dtype": "fp8_e4m3 (NSA default)", "page_size": 64},
    },
    "log": [
        "$ python -m sglang.launch_server --model deepseek-ai/DeepSeek-V3.2-Exp --tp 8 --dp 8 --enable-dp-attention",
        "[2025-10-07 23:17:19 DP0 TP0] KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB",
        "[2025-10-07 23:17:19 DP0 TP0] Memory pool end. avail mem=37.71 GB",
    ],
    "unpublished": [
        "pre-load and post-load free memory and the resolved mem_fraction_static, so the budget cannot be rebuilt; the cell size is checked",
        "the FP8 KV layout (656 B per latent row) and page size 64 are the NSA defaults of that code, not printed",
    ],
    "notes": (
        f"Cell = 61 layers x (656 B fp8 latent row [512 fp8 + 4 x 4 B scales + 64 x 2 B rope] + 132 B indexer key [128 fp8 + 4 B scale]) = {mla + idx:,} B per token. "
        f"(975,424 + 64) x {mla + idx:,} = {after:,} B = {after / GiB:.4f} GiB (printed 43.67, which after PR #11309 includes the indexer). "
        "TOKENS FOLLOW FROM THE PRINTED KV SIZE EXACTLY."),
    "source": {
        "citation": "sgl-project/sglang PR #11309 '[DeepSeek-V3.2] Include indexer kv cache when estimating kv cache size', description by trevor-m, 2025-10-07",
        "locator": "https://github.com/sgl-project/sglang/pull/11309",
        "confidence": "T",
    },
})
records_sgl.append({
    "id": "sglang-pr11309-deepseek-v32-exp-8xb200-dp8-before-fix",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "SGLang", "version": "main of 2025-10-07 before PR #11309 (hard-coded mem_fraction_static 0.8 for this model)"},
    "hardware": {"gpu": "NVIDIA B200", "gpus": 8, "gpus_per_node": 8},
    "statistic": "'KV Cache is allocated. #tokens: N, KV size: X GB' per DP rank; before the fix the printed size left out the indexer buffer",
    "value": 1462784,
    "unit": "tokens",
    "also_reported": {"kv_size_gib": 54.52, "kv_size_incl_indexer_gib_per_author": 65.49, "avail_mem_after_pool_gib": 15.38},
    "config": {
        "model": {"hf_id": "deepseek-ai/DeepSeek-V3.2-Exp", "layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                  "index_head_dim": 128, "attention": "MLA with DeepSeek sparse attention (lightning indexer)"},
        "engine": {"tp": 8, "dp": 8, "enable_dp_attention": True, "mem_fraction_static": 0.8,
                   "kv_cache_dtype": "fp8_e4m3 (NSA default)", "page_size": 64},
    },
    "log": [
        "[2025-10-07 22:29:11 DP0 TP0] KV Cache is allocated. #tokens: 1462784, KV size: 54.52 GB",
        "[2025-10-07 22:29:11 DP0 TP0] Memory pool end. avail mem=15.38 GB",
    ],
    "unpublished": ["pre-load free memory, so the 0.8 budget cannot be rebuilt"],
    "notes": (
        f"Latent only: (1,462,784 + 64) x 61 x 656 B = {before_kv:,} B = {before_kv / GiB:.4f} GiB (printed 54.52). "
        f"With the indexer: (1,462,784 + 64) x {mla + idx:,} B = {before_all / GiB:.2f} GiB (the author's 65.49). "
        "TOKENS FOLLOW FROM THE LATENT CELL (656 B x 61), i.e. before PR #11309 the token count was sized without the "
        "indexer (11 GiB over budget per rank): an estimator must follow the version's cell-size rule, not the physically right one."),
    "source": {
        "citation": "sgl-project/sglang PR #11309, description by trevor-m, 2025-10-07 ('With main (hardcoded mem-fraction-static=0.8)')",
        "locator": "https://github.com/sgl-project/sglang/pull/11309",
        "confidence": "T",
    },
})

k = sgl_mha_kv_size(580364, 1, 15, 1, 256, 2)
records_sgl.append({
    "id": "sglang-ktransformers1870-qwen35-moe-2x4090-tp2",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "SGLang (with kvcache-ai/ktransformers CPU experts)", "version": "February 2026 (not printed)"},
    "hardware": {"gpu": "NVIDIA GeForce RTX 4090 (24 GB)", "gpus": 2, "gpus_per_node": 2},
    "statistic": "'KV Cache is allocated. #tokens: N' = full-attention token pool of a hybrid GDN model per TP rank; Mamba state pool printed separately",
    "value": 580364,
    "unit": "tokens",
    "also_reported": {"k_size_gib": 4.15, "v_size_gib": 4.15, "max_mamba_cache_size": 82, "conv_state_gib": 0.13,
                      "ssm_state_gib": 7.29, "avail_after_load_gib": 19.08, "weights_on_gpu_gib": 3.76,
                      "avail_after_pool_gib": 4.02, "context_len": 8192, "max_running_requests": 1},
    "config": {
        "model": {"hf_id": "Qwen3.5 MoE (Qwen3_5MoeForConditionalGeneration; size not named)", "full_attention_layers": 15,
                  "kv_heads": 2, "head_dim": 256, "attention": "hybrid: Gated DeltaNet + full attention every 4th layer"},
        "engine": {"tp": 2, "kv_cache_dtype": "bf16", "chunked_prefill_size": 2048, "context_length": 8192, "page_size": 1},
    },
    "log": [
        "[TP0] Load weight end. elapsed=653.47 s, type=Qwen3_5MoeForConditionalGeneration, dtype=torch.bfloat16, avail mem=19.08 GB, mem usage=3.76 GB.",
        "[TP0] Using KV cache dtype: torch.bfloat16",
        "[TP0] Mamba Cache is allocated. max_mamba_cache_size: 82, conv_state size: 0.13GB, ssm_state size: 7.29GB",
        "[TP0] KV Cache is allocated. #tokens: 580364, K size: 4.15 GB, V size: 4.15 GB",
        "[TP0] Memory pool end. avail mem=4.02 GB",
        "[TP0] max_total_num_tokens=580364, chunked_prefill_size=2048, max_prefill_tokens=16384, max_running_requests=1, context_len=8192, available_gpu_mem=3.63 GB",
    ],
    "unpublished": [
        "which Qwen3.5 MoE: the issue does not name the checkpoint; 15 full-attention layers with 2 KV heads x 256 is the layout the printed K size implies, and it is Qwen3.5-397B-A17B's (60 layers, 45 linear + 15 full attention every 4th, 2 KV heads x 256, per ai-dynamo/aiconfigurator PR #410)",
        "mem_fraction_static and the pre-load free memory (so the budget split between the Mamba pool and the token pool cannot be rebuilt)",
    ],
    "notes": (
        f"Cell per token per rank = 15 full-attention layers x 1 KV head (2 / TP 2) x (256 + 256) x 2 B = {15 * 512 * 2:,} B; "
        f"K buffer = (580,364 + 1) x 15 x 1 x 256 x 2 B = {k:,} B = {k / GiB:.4f} GiB (printed 4.15). "
        "TOKENS FOLLOW FROM THE PRINTED K/V SIZE given 15 attention layers (an inferred layout: with 10 or 12 layers the K size would be 2.77 or 3.32 GiB). "
        "The linear-attention layers' state lives in the separate Mamba pool (82 slots, 0.13 + 7.29 = 7.42 GiB), sized before the token pool: "
        f"7.42 / (4.15 + 4.15) = {7.42 / 8.30:.3f}, close to the default mamba_full_memory_ratio 0.9 (docs/engines/sglang.md section 2.4; the joint solve also charges the extra slot and intermediate buffers, not reproduced here)."),
    "source": {
        "citation": "kvcache-ai/ktransformers issue #1870 'qwen3.5 4090 functional_call', description by weifengliuhen, 2026-02-27",
        "locator": "https://github.com/kvcache-ai/ktransformers/issues/1870",
        "confidence": "T",
    },
})

# sglang PR #18263: Qwen3-30B-A3B on one AMD MI355X (288 GB), July 2026 main + the PR's debugging prints
cell = 48 * 4 * (128 + 128) * 2
rest_printed = 219721119039
cand = 164149629787
pre = 230.20 + 56.98
records_sgl.append({
    "id": "sglang-pr18263-qwen3-30b-a3b-mi355x-tp1",
    "kind": "kv_cache_capacity",
    "role": "check",
    "framework": {"name": "SGLang", "version": "main of July 2026 with PR #18263's patch (the token count comes from the PR's reduced budget; the budget line 'initial available_bytes' is main's rule)"},
    "hardware": {"gpu": "AMD Instinct MI355X (288 GB; inferred from 230.20 + 56.98 = 287.18 GiB free before the weights)", "gpus": 1},
    "statistic": "'KV Cache is allocated. dtype: …, #tokens: N, K size, V size' (GiB) and the PR's debug print of the budget 'initial available_bytes' (= rest of docs/engines/sglang.md section 1 step 4)",
    "value": 1669816,
    "unit": "tokens",
    "also_reported": {"rest_bytes_main_rule": rest_printed, "candidate_kv_budget_bytes_pr": cand, "k_size_gib": 76.44,
                      "v_size_gib": 76.44, "avail_after_load_gib": 230.20, "weights_gib": 56.98,
                      "mem_fraction_static": 0.911, "avail_after_pool_gib": 74.01},
    "config": {
        "model": {"hf_id": "Qwen/Qwen3-30B-A3B-Instruct (Qwen3MoeForCausalLM)", "layers": 48, "kv_heads": 4, "head_dim": 128,
                  "attention": "full (GQA)"},
        "engine": {"tp": 1, "mem_fraction_static": "0.911 (default, printed by the PR)", "kv_cache_dtype": "bf16",
                   "attention_backend": "aiter", "page_size": 1},
    },
    "log": [
        "[2026-07-15 13:14:53] Load weight end. elapsed=19.09 s, type=Qwen3MoeForCausalLM, avail mem=230.20 GB, mem usage=56.98 GB.",
        "self.server_args.mem_fraction_static 0.911",
        "initial available_bytes 219721119039 / 204.63 GB",
        "Case 2: candidate_kv_budget 164149629787 / 152.88 GB",
        "[2026-07-15 13:14:54] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1669816, K size: 76.44 GB, V size: 76.44 GB",
        "[2026-07-15 13:14:54] Memory pool end. avail mem=74.01 GB",
    ],
    "unpublished": [
        "the pre-load free memory is not printed: taken as avail-after-load + mem usage = 287.18 GiB (the 'Load weight begin' line is not quoted)",
        "the GPU model and TP (the default 0.911 and the 287 GiB reproduce only with one 288-GiB GPU at TP 1)",
    ],
    "notes": (
        f"Default mem_fraction_static (0.5.x rule, docs/engines/sglang.md section 3): gpu_mem 294,912 MiB (>= 160 GiB tier: chunked_prefill_size 16,384, decode max_bs 512); "
        f"prefill CUDA graphs are off by default off CUDA (ROCm): reserved = 512 + 1.5 x 16,384 + 1 x 1 / 8 x 1,024 + 2 x 512 = 26,240 MiB -> "
        f"round((294,912 - 26,240) / 294,912, 3) = {round((294912 - 26240) / 294912, 3)} (printed 0.911). "
        f"Budget: rest = 230.20 - 287.18 x (1 - 0.911) = {230.20 - pre * 0.089:.3f} GiB vs printed {rest_printed / GiB:.3f} GiB: 0.01 GiB (0.005 %) apart, the pre-load free memory being reconstructed from two rounded figures rather than printed. "
        f"Cell = 48 x 4 x (128 + 128) x 2 B = {cell:,} B: main's rule would give floor({rest_printed:,} / {cell:,}) = {rest_printed // cell:,} tokens; "
        f"the PR's reduced budget gives floor({cand:,} / {cell:,}) = {cand // cell:,} = the printed 1,669,816, and K = (1,669,816 + 1) x 48 x 4 x 128 x 2 B = "
        f"{(1669816 + 1) * 48 * 4 * 128 * 2 / GiB:.4f} GiB (printed 76.44). FOLLOWS EXACTLY, including the default fraction; the printed "
        "tokens are the patched branch's (the PR's point is that main's 2,235,118 tokens plus AITER's 51.75 GB workspace overrun the 0.911 budget)."),
    "source": {
        "citation": "sgl-project/sglang PR #18263 '[AMD][AITER attention backend] Adjust available_bytes in KVCacheConfigurator to avoid OOMs in AITER attention backend buffers allocation', description by fxmarty-amd",
        "locator": "https://github.com/sgl-project/sglang/pull/18263",
        "confidence": "T",
    },
})


def dump(path, about, recs):
    with open(path, "w") as f:
        json.dump({"schema": "vram-explorer.published/1", "about": about, "records": recs}, f, indent=1, ensure_ascii=False)
        f.write("\n")


dump("tests/data/published/vllm-logs.json",
     "vLLM startup logs people published (GitHub issues / PRs), with the KV-cache capacity vLLM printed; check records for issue 15 (the 2 % KV-capacity test), each with its hand check in notes",
     records_vllm)
dump("tests/data/published/sglang-logs.json",
     "SGLang startup logs people published (GitHub issues / PRs), with the token-pool size SGLang printed; check records for issue 15, each with its hand check in notes",
     records_sgl)
print(len(records_vllm), "vLLM records,", len(records_sgl), "SGLang records")
for r in records_vllm + records_sgl:
    print(r["id"], "|", r["notes"][-160:])
