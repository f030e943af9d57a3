"""Liger-Kernel's published GPU memory measurements as published-record JSON (schema: tests/data/published/README.md).

Sources (github.com/linkedin/Liger-Kernel, confidence T):
  A. examples/huggingface/README.md and img/qwen_mem_alloc.png (added 03fd6032, 2024-08-26; liger-kernel 0.1.1 at that
     commit): Qwen2-7B SFT with FSDP1 on 4 x A100 80GB, 'Peak Allocated Memory (MB)' with and without Liger; the chart
     prints the values (transcribed by hand from the image). The run's code: examples/huggingface/{training.py,
     callback.py,run_qwen.sh,config/fsdp_config.json,requirements.txt} at 03fd6032.
  B. benchmark/data/all_benchmark_data.csv (snapshot ead96b61, 2026-08-21): single-op forward+backward peaks
     (median of the repeats) written by benchmark/scripts/benchmark_{cross_entropy,fused_linear_cross_entropy,
     megatron_cross_entropy}.py at the commit that added each row (b5672a15, 90fb5e4a, 80f19ad7). These are op-level
     ('op_memory') records: the estimator's loss-head model can be checked against them in isolation.
B values are literal copies of the CSV rows (median y_value_50, with p20/p80). Python 3 standard library only; run from
tests/data/published/.
"""
import json

R = []

# ---- A. Qwen2-7B FSDP1 end to end -----------------------------------------------------------------------------------
QWEN2_7B = {"family": "Qwen2 (Transformers 4.43.3 Qwen2ForCausalLM, QKV bias)", "hf_id": "Qwen/Qwen2-7B", "layers": 28, "hidden": 3584,
            "heads": 28, "kv_heads": 4, "head_dim": 128, "ffn": 18944, "vocab": 152064, "tied_embeddings": False}
STAT_A = ("torch.cuda.max_memory_allocated() / 2**20 (MiB, 'MB' on the chart) from Liger's EfficiencyCallback "
          "(examples/huggingface/callback.py lines 9-10, 172, 218-229 at 03fd6032): reset at each step begin; the chart "
          "shows the logged peak (total_peak_memory_allocated_MB, the max over steps) of the logging rank (HF Trainer logs on rank 0)")
for bs, liger, mib in ((32, False, 51154.27), (32, True, 39300.01), (48, True, 42085.62), (64, True, 42709.12)):
    cfg = {"model": QWEN2_7B,
           "precision": "model loaded with torch_dtype=bfloat16 and --bf16: BF16 parameters, gradients and AdamW states (no FP32 master copy; FSDP1 flat parameters in BF16)",
           "optimizer": "torch AdamW (HF Trainer default adamw_torch), lr 6e-6, weight_decay 0.05",
           "layout": {"gpus": 4, "fsdp": "FSDP1 'full_shard auto_wrap' (transformer layer wrap), backward_prefetch backward_pre, forward_prefetch true", "per_device_batch": bs, "gradient_accumulation": 1},
           "activation_checkpointing": "FSDP activation_checkpointing true (config/fsdp_config.json): every decoder layer",
           "sequence": "Alpaca, max_seq_length 512, left-truncated, padded to the longest sample of the batch rounded up to a multiple of 16 (DataCollatorForCompletionOnlyLM pad_to_multiple_of 16)",
           "loss": "completion-only loss (labels before '### Response:' masked)",
           "liger": ("apply_liger_kernel_to_qwen2() AFTER the model was built (training.py lines 50-58): only the module-level "
                     "patches take effect, i.e. RoPE (apply_rotary_pos_emb) and Qwen2ForCausalLM.forward with the fused linear "
                     "cross-entropy (no materialised logits); the RMSNorm and SwiGLU class replacements do not touch the "
                     "already-built modules (src/liger_kernel/transformers/monkey_patch.py lines 172-182 at 03fd6032)") if liger else False}
    R.append({"id": f"liger-example-qwen2-7b-fsdp1-4xa100-bs{bs}-{'liger' if liger else 'hf'}", "kind": "training_memory", "role": "check",
              "framework": {"name": "Hugging Face Transformers + TRL SFTTrainer + PyTorch FSDP1" + (" + Liger-Kernel" if liger else ""),
                            "version": "transformers 4.43.3 (requirements.txt), liger-kernel 0.1.1 (setup.py at 03fd6032); trl and torch unpinned"},
              "hardware": {"gpu": "NVIDIA A100 80GB", "gpus": 4, "gpus_per_node": 4},
              "statistic": STAT_A, "value": mib, "unit": "MiB",
              "also_reported": {"without Liger at batch 48 and 64": "OOM"} if not liger else None,
              "config": cfg,
              "unpublished": ["the sequence length of the peak step (batch padded to its longest Alpaca sample, <= 512)",
                              "torch and trl versions; which rank's log the chart used",
                              "that the chart plots total (max over steps) rather than the last step's peak"],
              "source": {"citation": "Liger-Kernel Hugging Face example, QWEN benchmark chart 'Peak Allocated Memory (MB)'",
                         "locator": "github.com/linkedin/Liger-Kernel examples/huggingface/README.md and examples/huggingface/img/qwen_mem_alloc.png at 03fd6032 (2024-08-26); run_qwen.sh, training.py, callback.py, config/fsdp_config.json at the same commit",
                         "confidence": "T"}})
    if R[-1]["also_reported"] is None:
        del R[-1]["also_reported"]

# ---- B. op-level benchmarks ------------------------------------------------------------------------------------------
OPS = [
    ('cross_entropy', 'liger', 'V', 4096, 256.32861328125, 256.32861328125, 256.32861328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'liger', 'V', 8192, 512.32861328125, 512.32861328125, 512.32861328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'liger', 'V', 16384, 1024.32861328125, 1024.32861328125, 1024.32861328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'liger', 'V', 32768, 2048.32861328125, 2048.32861328125, 2048.32861328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'liger', 'V', 65536, 4096.32861328125, 4096.32861328125, 4096.32861328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'liger', 'V', 131072, 8192.328125, 8192.328125, 8192.328125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 4096, 1280.1259765625, 1280.1259765625, 1280.1259765625, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 8192, 2560.1259765625, 2560.1259765625, 2560.1259765625, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 16384, 5120.1259765625, 5120.1259765625, 5120.1259765625, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 32768, 10240.1259765625, 10240.1259765625, 10240.1259765625, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 65536, 20480.125, 20480.125, 20480.125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('cross_entropy', 'huggingface', 'V', 131072, 40960.125, 40960.125, 40960.125, 'NVIDIA A100-SXM4-80GB', '2024-09-03 15:31:42', '0.2.1'),
    ('fused_linear_cross_entropy', 'liger', 'BT', 4096, 4245.5478515625, 4245.5478515625, 4245.5478515625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:25', '0.4.2'),
    ('fused_linear_cross_entropy', 'liger', 'BT', 8192, 4466.9697265625, 4466.9697265625, 4466.9697265625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:25', '0.4.2'),
    ('fused_linear_cross_entropy', 'liger', 'BT', 16384, 4910.4384765625, 4910.4384765625, 4910.4384765625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:25', '0.4.2'),
    ('fused_linear_cross_entropy', 'liger', 'BT', 32768, 5794.6259765625, 5794.6259765625, 5794.6259765625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:25', '0.4.2'),
    ('fused_linear_cross_entropy', 'huggingface', 'BT', 4096, 6092.2822265625, 6092.2822265625, 6092.2822265625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:53', '0.4.2'),
    ('fused_linear_cross_entropy', 'huggingface', 'BT', 8192, 9162.3134765625, 9162.3134765625, 9162.3134765625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:53', '0.4.2'),
    ('fused_linear_cross_entropy', 'huggingface', 'BT', 16384, 15302.3759765625, 15302.3759765625, 15302.3759765625, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:53', '0.4.2'),
    ('fused_linear_cross_entropy', 'huggingface', 'BT', 32768, 27582.5, 27582.5, 27582.5, 'NVIDIA A100-SXM4-80GB', '2024-11-22 17:46:53', '0.4.2'),
    ('megatron_cross_entropy', 'liger', 'V', 4096, 256.15771484375, 256.15771484375, 256.15771484375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'liger', 'V', 8192, 512.15771484375, 512.15771484375, 512.15771484375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'liger', 'V', 16384, 1024.15771484375, 1024.15771484375, 1024.15771484375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'liger', 'V', 32768, 2048.15771484375, 2048.15771484375, 2048.15771484375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'liger', 'V', 65536, 4096.15771484375, 4096.15771484375, 4096.15771484375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'liger', 'V', 131072, 8192.158203125, 8192.158203125, 8192.158203125, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 4096, 384.16552734375, 384.16552734375, 384.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 8192, 768.16552734375, 768.16552734375, 768.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 16384, 1536.16552734375, 1536.16552734375, 1536.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 32768, 3072.16552734375, 3072.16552734375, 3072.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 65536, 6144.16552734375, 6144.16552734375, 6144.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-fused', 'V', 131072, 12288.166015625, 12288.166015625, 12288.166015625, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 4096, 256.16552734375, 256.16552734375, 256.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 8192, 512.16552734375, 512.16552734375, 512.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 16384, 1024.16552734375, 1024.16552734375, 1024.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 32768, 2048.16552734375, 2048.16552734375, 2048.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 65536, 4096.16552734375, 4096.16552734375, 4096.16552734375, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
    ('megatron_cross_entropy', 'megatron-unfused', 'V', 131072, 8192.166015625, 8192.166015625, 8192.166015625, 'NVIDIA H100 80GB HBM3', '2026-06-15 22:13:03', '0.8.0'),
]
SCRIPT = {"cross_entropy": ("benchmark/scripts/benchmark_cross_entropy.py", "b5672a15", "2024-09-03"),
          "fused_linear_cross_entropy": ("benchmark/scripts/benchmark_fused_linear_cross_entropy.py", "90fb5e4a", "2024-11-22"),
          "megatron_cross_entropy": ("benchmark/scripts/benchmark_megatron_cross_entropy.py", "80f19ad7", "2026-06-16")}
SETUP = {
    "cross_entropy": ("input logits torch.randn(B*T, V, float32, requires_grad) and int64 targets allocated before the "
                      "measurement and counted in the peak; fwd = torch.nn.CrossEntropyLoss (huggingface) or "
                      "LigerCrossEntropyLoss (liger), then loss.backward(); the input's .grad is never cleared between "
                      "repeats (accumulated); B=8, T=2048"),
    "fused_linear_cross_entropy": ("hidden states torch.randn(BT, H=4096, bfloat16, requires_grad) and targets; BOTH "
                                   "modules are built on the GPU whatever the provider (a torch Linear(4096, 128256, "
                                   "bias=False) + CrossEntropyLoss, and Liger's FusedLinearCrossEntropy with its own "
                                   "Linear), i.e. two BF16 weight matrices of 4096 x 128256 resident; fwd+backward; "
                                   "'huggingface' materialises BF16 logits and torch's CE on them"),
    "megatron_cross_entropy": ("logits torch.randn(S=2048, B=4, V, bfloat16, requires_grad) and targets; one warm-up "
                               "step, then per repeat reset_peak_memory_stats, logits.grad=None, loss = fwd(logits, "
                               "target).sum().backward(); providers: Megatron-Core vocab_parallel_cross_entropy "
                               "('megatron-unfused'), fused_vocab_parallel_cross_entropy ('megatron-fused', "
                               "cross_entropy_loss_fusion), LigerMegatronCrossEntropy ('liger'); TP=1 under a "
                               "one-process NCCL group"),
}
STAT_B = {
    "cross_entropy": "median over 10 repeats of torch.cuda.max_memory_allocated() / 2**20 after reset_peak_memory_stats() (benchmark/scripts/utils.py _test_memory at b5672a15); MiB",
    "fused_linear_cross_entropy": "median over 10 repeats of torch.cuda.max_memory_allocated() / 2**20 after reset_peak_memory_stats() (benchmark/scripts/utils.py _test_memory at 90fb5e4a); MiB",
    "megatron_cross_entropy": "median over 5 repeats of torch.cuda.max_memory_allocated() / 2**20 after reset_peak_memory_stats() (benchmark_megatron_cross_entropy.py _bench_memory_one at 80f19ad7); MiB",
}
for (kern, prov, xname, x, y50, y20, y80, gpu, ts, ver) in OPS:
    path, commit, date = SCRIPT[kern]
    if kern == "cross_entropy":
        shape = {"B": 8, "T": 2048, "V": x, "logits_dtype": "float32"}
    elif kern == "fused_linear_cross_entropy":
        shape = {"BT": x, "H": 4096, "V": 128256, "dtype": "bfloat16"}
    else:
        shape = {"S": 2048, "B": 4, "V": x, "TP": 1, "logits_dtype": "bfloat16"}
    fwname = {"liger": "Liger-Kernel", "huggingface": "PyTorch (torch.nn.CrossEntropyLoss / nn.Linear)",
              "megatron-fused": "Megatron-Core fused_vocab_parallel_cross_entropy", "megatron-unfused": "Megatron-Core vocab_parallel_cross_entropy",
              "liger_fused_add_rms_norm": "Liger-Kernel"}.get(prov, prov)
    R.append({"id": f"liger-bench-{kern.replace('_', '-')}-{prov}-{xname.lower()}{x}", "kind": "op_memory", "role": "check",
              "framework": {"name": fwname, "version": f"liger-kernel {ver} (CSV column liger_version); torch / megatron-core versions not recorded"},
              "hardware": {"gpu": gpu, "gpus": 1},
              "statistic": STAT_B[kern], "value": y50, "unit": "MiB",
              "also_reported": {"p20": y20, "p80": y80, "timestamp": ts},
              "config": {"op": kern, "provider": prov, "mode": "forward + backward ('full')", "shape": shape, "setup": SETUP[kern]},
              "unpublished": ["torch (and for Megatron rows megatron-core / transformer-engine) versions"],
              "source": {"citation": "Liger-Kernel benchmark data (all_benchmark_data.csv)",
                         "locator": f"github.com/linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv at ead96b61 (row timestamp {ts}); harness {path} and benchmark/scripts/utils.py at {commit} ({date})",
                         "confidence": "T"}})

json.dump({"schema": "vram-explorer.published/1",
           "about": "Liger-Kernel: Qwen2-7B FSDP1 end-to-end allocated peaks with/without Liger, and op-level forward+backward peaks of cross-entropy / fused linear cross-entropy / Megatron vocab-parallel cross-entropy (kind op_memory); check records, never fitted",
           "records": R}, open("liger-kernel-memory.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
