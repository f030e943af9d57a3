"""Megatron-LM functional tests' golden memory values as published-record JSON (schema: tests/data/published/README.md).

Source: github.com/NVIDIA/Megatron-LM tests/functional_tests/test_cases/gpt/<case>/golden_values_<env>_<platform>.json
and the case's model_config.yaml at the commit that last wrote the golden file (read from the snapshot at d98e8a64,
2026-08-22). These are real runs of pretrain_gpt.py in NVIDIA's CI on one DGX node (tests/test_utils/recipes/
{h100,gb200}/gpt.yaml: nodes 1, gpus 8) with --log-memory-to-tensorboard. The statistic: megatron/training/
training.py training_log() writes torch.cuda.memory_stats()['allocated_bytes.all.peak'] as 'mem-max-allocated-bytes'
and ['allocated_bytes.all.current'] as 'mem-allocated-bytes' every iteration (lines 1528-1538 at adc69dba2d,
2522-2532 at 6e091e1b68, 2678-2688 at 7e6a045a2a), with the TensorBoard writer that exists only on
rank == world_size - 1 (megatron/training/global_vars.py line 172 at adc69dba2d, 216 at 6e091e1b68 / 7e6a045a2a).
Megatron never resets the peak, so the value is the last rank's max_memory_allocated since process start.
Transcribed values are the last iteration's (the peak is flat after iteration 2). Python 3 standard library only;
run from tests/data/published/.
"""
import json

BLOB = "github.com/NVIDIA/Megatron-LM tests/functional_tests/test_cases/gpt/{case}/golden_values_{env}_{plat}.json and model_config.yaml at {commit} ({date}); recipe tests/test_utils/recipes/{platdir}/gpt.yaml (1 node x 8 GPUs)"


def stat(commit, lines, gv_line):
    return ("torch.cuda.memory_stats()['allocated_bytes.all.peak'] (= max_memory_allocated, bytes, never reset) of the "
            "LAST rank (world_size - 1), logged as 'mem-max-allocated-bytes' by megatron/training/training.py "
            f"training_log (lines {lines} at {commit}); TensorBoard writer only on the last rank "
            f"(megatron/training/global_vars.py line {gv_line})")


SEVEN_B = {
    "family": "GPT (Megatron-Core GPTModel, Transformer Engine layers)", "layers": 32, "hidden": 4096, "heads": 32,
    "kv_heads": 8, "head_dim": 128, "ffn": 16384, "activation": "GeLU (no --swiglu)",
    "normalization": "LayerNorm (default)", "position_embedding": "learned absolute, 8192 positions (default --position-embedding-type learned_absolute)",
    "vocab": "NullTokenizer --vocab-size 131072 (A100 golden) / 131073 (H100, GB200 golden); padded to a multiple of 128 x TP: 131200 at TP1, 131584 at TP4",
    "tied_embeddings": False, "bias": "linear biases on (default)",
}
SMALL = {
    "family": "GPT (Megatron-Core GPTModel, Transformer Engine layers)", "layers": 12, "hidden": 512, "heads": 8,
    "kv_heads": 8, "head_dim": 64, "ffn": 2048, "normalization": "LayerNorm (default)",
    "position_embedding": "learned absolute, 1024 positions", "vocab": "GPT-2 BPE 50257, padded to 50304 (multiple of 128 at TP1)",
    "tied_embeddings": True, "bias": "linear biases on (default)",
}
PREC = ("--bf16: BF16 parameters and activations; FP32 main gradients (megatron/training/arguments.py line 745 at adc69dba2d sets "
        "accumulate_allreduce_grads_in_fp32 for bf16) in the persistent DDP grad buffer; FP32 master parameters and Adam moments in the optimizer")

CASES = [
    # case, env, platform, platdir, commit, date, mcore, te, training.py lines, global_vars line, gpu, peak, current, cfg
    ("gpt3_7b_tp1_pp4_memory_speed", "dev", "dgx_h100", "h100", "6e091e1b68", "2026-05-29", "0.18.0",
     "2.16.0 (the commit updates the Transformer Engine pin to 2.16.0 and regenerates this file)", "2522-2532", 216,
     "NVIDIA H100 80GB (DGX H100)", 60720852992, 24808996864, "tp1pp4"),
    ("gpt3_7b_tp1_pp4_memory_speed", "dev", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "pyproject pin transformer-engine>=2.7.0a0,<2.9.0 (dev container)", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 60489064448, 24510808064, "tp1pp4"),
    ("gpt3_7b_tp1_pp4_memory_speed", "dev", "dgx_gb200", "gb200", "7e6a045a2a", "2026-07-25", "0.19.0",
     "2.18 (the commit stabilises the Transformer Engine 2.18 upgrade and regenerates this file)", "2678-2688", 216,
     "NVIDIA GB200 (DGX GB200, 4 GPUs per tray; 8 GPUs in the recipe)", 60519342080, 24540168192, "tp1pp4"),
    ("gpt3_7b_tp4_pp1_memory_speed", "dev", "dgx_h100", "h100", "6e091e1b68", "2026-05-29", "0.18.0",
     "2.16.0", "2522-2532", 216, "NVIDIA H100 80GB (DGX H100)", 57143791616, 20663519232, "tp4pp1"),
    ("gpt3_7b_tp4_pp1_memory_speed", "dev", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "pyproject pin transformer-engine>=2.7.0a0,<2.9.0 (dev container)", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 58188115968, 20634103808, "tp4pp1"),
    ("gpt3_7b_tp4_pp1_memory_speed", "dev", "dgx_gb200", "gb200", "7e6a045a2a", "2026-07-25", "0.19.0",
     "2.18", "2678-2688", 216, "NVIDIA GB200 (DGX GB200)", 58217476096, 20663463936, "tp4pp1"),
    ("gpt3_mcore_te_tp1_pp1_uniform_full_recompute", "dev", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "pyproject pin transformer-engine>=2.7.0a0,<2.9.0 (dev container)", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 2534070272, 1232487936, "small-recompute"),
    ("gpt3_mcore_te_tp1_pp1_uniform_full_recompute", "lts", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "the 'lts' (long-term-support) container's Transformer Engine; version not in the repo", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 2531972608, 1230390272, "small-recompute"),
    ("gpt3_mcore_te_tp1_pp4_swiglu", "dev", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "pyproject pin transformer-engine>=2.7.0a0,<2.9.0 (dev container)", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 2684785152, 717420032, "small-swiglu-pp4"),
    ("gpt3_mcore_te_tp1_pp4_swiglu", "lts", "dgx_a100", "h100", "adc69dba2d", "2025-10-21", "0.16.0rc0",
     "the 'lts' container's Transformer Engine; version not in the repo", "1528-1538", 172,
     "NVIDIA A100 80GB (DGX A100)", 2683341824, 715322368, "small-swiglu-pp4"),
]

CFG = {
    "tp1pp4": {
        "model": SEVEN_B, "precision": PREC,
        "layout": {"gpus": 8, "tp": 1, "pp": 4, "virtual_pp": 8, "num_layers_per_virtual_pipeline_stage": 1, "dp": 2,
                   "micro_batch": 1, "global_batch": 8, "microbatches_per_step": 4,
                   "schedule": "interleaved 1F1B (8 one-layer model chunks per rank)",
                   "logged_rank": "rank 7 = last pipeline stage (8 decoder layers + final LayerNorm + untied output layer + loss), DP rank 1"},
        "sequence": 8192,
        "optimizer": "Adam (default --optimizer adam, weight decay 0.01), --use-distributed-optimizer (FP32 master + moments sharded over DP=2), --overlap-grad-reduce, --overlap-param-gather",
        "recompute": "none",
        "attention": "Transformer Engine default backend (fused/flash attention), causal, GQA 8 groups",
        "other": "--deterministic-mode, --no-gradient-accumulation-fusion, --mock-data, --log-num-zeros-in-grad, --log-params-norm, env CUDA_DEVICE_MAX_CONNECTIONS=1, NCCL_ALGO=Ring, CUBLAS_WORKSPACE_CONFIG=:4096:8",
        "loss": "vocab-parallel cross-entropy (default; not --cross-entropy-loss-fusion)",
    },
    "tp4pp1": {
        "model": SEVEN_B, "precision": PREC,
        "layout": {"gpus": 8, "tp": 4, "pp": 1, "dp": 2, "sequence_parallel": False, "micro_batch": 2,
                   "global_batch": 8, "microbatches_per_step": 2,
                   "logged_rank": "rank 7 = TP rank 3 of DP rank 1 (all 32 layers, 1/4 of each weight matrix, 1/4 of the vocabulary)"},
        "sequence": 8192,
        "optimizer": "Adam (weight decay 0.01), --use-distributed-optimizer over DP=2, --overlap-grad-reduce, --overlap-param-gather",
        "recompute": "none",
        "attention": "Transformer Engine default backend (fused/flash attention), causal, GQA 8 groups (2 per TP rank)",
        "other": "--deterministic-mode, --no-gradient-accumulation-fusion, --mock-data, env CUDA_DEVICE_MAX_CONNECTIONS=1",
        "loss": "vocab-parallel cross-entropy (default)",
    },
    "small-recompute": {
        "model": dict(SMALL, activation="GeLU"), "precision": PREC,
        "layout": {"gpus": 8, "tp": 1, "pp": 1, "dp": 8, "micro_batch": 4, "global_batch": 32, "microbatches_per_step": 1,
                   "logged_rank": "rank 7 (DP rank 7; every rank holds the whole model)"},
        "sequence": 1024,
        "optimizer": "Adam (weight decay 0.01), NOT distributed (FP32 master + moments replicated on every DP rank)",
        "recompute": "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1 (every layer's input kept, the layer recomputed in backward)",
        "attention": "--attention-backend unfused (materialised b x heads x s x s scores), --attention-softmax-in-fp32",
        "other": "--deterministic-mode, --no-gradient-accumulation-fusion, real data (GPT-2 BPE text)",
        "loss": "vocab-parallel cross-entropy (default)",
    },
    "small-swiglu-pp4": {
        "model": dict(SMALL, ffn=1344, activation="SwiGLU (--swiglu; no --ffn-hidden-size, so arguments.py lines 828-837 at adc69dba2d set ffn = int(4 x 512 x 2/3 / 64) x 64 = 1344)"),
        "precision": PREC,
        "layout": {"gpus": 8, "tp": 1, "pp": 4, "dp": 2, "micro_batch": 4, "global_batch": 32, "microbatches_per_step": 4,
                   "schedule": "1F1B (non-interleaved)",
                   "logged_rank": "rank 7 = last pipeline stage (3 layers + final LayerNorm + output layer sharing the word embedding, + loss)"},
        "sequence": 1024,
        "optimizer": "Adam (weight decay 0.01), not distributed",
        "recompute": "none",
        "attention": "--attention-backend unfused, --attention-softmax-in-fp32",
        "other": "--deterministic-mode, --no-gradient-accumulation-fusion, real data",
        "loss": "vocab-parallel cross-entropy (default)",
    },
}

recs = []
for (case, env, plat, platdir, commit, date, mcore, te, lines, gvl, gpu, peak, cur, ck) in CASES:
    cfg = dict(CFG[ck])
    cfg["test_case"] = case
    un = [
        "the container's exact PyTorch, CUDA, cuDNN, NCCL and Transformer Engine builds (the 'dev' / 'lts' image tags are not in the repo)",
        "the golden file may predate its last commit (the test system refactor adc69dba2d moved older golden values into the repo)",
        "other ranks' peaks: only the last rank is logged",
    ]
    recs.append({
        "id": f"megatron-ft-{case}-{env}-{plat}",
        "kind": "training_memory", "role": "check",
        "framework": {"name": "Megatron-LM / Megatron-Core", "version": f"{mcore} (megatron/core/package_info.py at {commit}); Transformer Engine {te}"},
        "hardware": {"gpu": gpu, "gpus": 8, "gpus_per_node": 8},
        "statistic": stat(commit, lines, gvl),
        "value": peak, "unit": "B",
        "also_reported": {"mem-allocated-bytes (allocated_bytes.all.current after the step, same rank: weights, persistent FP32 grad buffer, optimizer shards)": cur},
        "config": cfg,
        "unpublished": un,
        "source": {"citation": "Megatron-LM functional test golden values",
                   "locator": BLOB.format(case=case, env=env, plat=plat, platdir=platdir, commit=commit, date=date),
                   "confidence": "T"},
    })

EXTRA = [
    ('gpt3_mcore_te_tp2_pp2', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 1900158464, 487096832, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '2', '--pipeline-model-parallel-size': '2', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--attention-backend': 'unfused'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NCCL_ALGO': 'Ring', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8'}),
    ('gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 2245028864, 437944832, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '2', '--pipeline-model-parallel-size': '2', '--cross-entropy-loss-fusion': 'true', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '1'}),
    ('gpt3_mcore_te_tp1_pp4_vp1', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 4122704384, 733860352, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '1', '--pipeline-model-parallel-size': '4', '--num-layers-per-virtual-pipeline-stage': '1', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--attention-backend': 'unfused'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NCCL_ALGO': 'Ring', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8', 'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True'}),
    ('gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 4673069568, 552128512, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '1', '--pipeline-model-parallel-size': '1', '--use-distributed-optimizer': 'true', '--no-mmap-bin-files': 'true', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--attention-backend': 'unfused'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NCCL_ALGO': 'Ring', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8'}),
    ('gpt3_mcore_tp1_pp4', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 2748673024, 782094336, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'local', '--tensor-model-parallel-size': '1', '--pipeline-model-parallel-size': '4', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--apply-query-key-layer-scaling': 'true'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NCCL_ALGO': 'Ring', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8'}),
    ('gpt3_mcore_te_tp1_pp4_untie_embeddings_and_outputs', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 2685758976, 719180288, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '1', '--pipeline-model-parallel-size': '4', '--untie-embeddings-and-output-weights': 'true', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--attention-backend': 'unfused'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NCCL_ALGO': 'Ring', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8'}),
    ('gpt3_mcore_te_tp2_pp2_cp2', 'dev_dgx_a100', 'adc69dba2d', '2025-10-21', '0.16.0rc0', 857134592, 433619456, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '4', '--global-batch-size': '32', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '2', '--pipeline-model-parallel-size': '2', '--context-parallel-size': '2', '--sequence-parallel': 'true', '--hidden-dropout': '0.0', '--attention-dropout': '0.0', '--no-gradient-accumulation-fusion': 'true', '--attention-softmax-in-fp32': 'true', '--use-mcore-models': 'true', '--bf16': 'true', '--attention-backend': 'flash'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0'}),
    ('gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap', 'dev_dgx_h100', '93ebf8d72f', '2026-08-19', '0.20.0', 883747328, 476258816, {'--num-layers': '12', '--hidden-size': '512', '--num-attention-heads': '8', '--micro-batch-size': '2', '--global-batch-size': '128', '--seq-length': '1024', '--max-position-embeddings': '1024', '--transformer-impl': 'transformer_engine', '--tensor-model-parallel-size': '2', '--pipeline-model-parallel-size': '2', '--sequence-parallel': 'true', '--tp-comm-overlap': 'true', '--tp-comm-overlap-cfg': 'tests/functional_tests/test_cases/gpt/gpt3_weekly_mcore_tp2_pp2_current_scaling_native_fp8_tp_pp_sp_tp_overlap/tp_comm_overlap_cfg.yaml', '--deterministic-mode': 'true', '--no-gradient-accumulation-fusion': 'true', '--fp8-format': 'hybrid', '--fp8-recipe': 'tensorwise', '--fp8-param-gather': 'true', '--use-distributed-optimizer': 'true', '--attention-softmax-in-fp32': 'true', '--bf16': 'true', '--normalization': 'RMSNorm'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '1', 'NVTE_ALLOW_NONDETERMINISTIC_ALGO': '0', 'NON_DETERMINSTIC_RESULTS': '1', 'CUBLAS_WORKSPACE_CONFIG': ':4096:8', 'NCCL_ALGO': 'Ring'}),
]

# Further cases, transcribed generically: the case's MODEL_ARGS (paths, logging, checkpointing and learning-rate
# arguments dropped) and ENV_VARS at the golden file's commit, the layout derived from them and the recipe's one node
# of 8 GPUs (tests/test_utils/recipes/{h100,gb200}/gpt.yaml spec: nodes 1, gpus 8).
GV_LINE = {"adc69dba2d": (172, "1528-1538"), "93ebf8d72f": (241, "3423-3433")}
for (case, plat, commit, date, ver, peak, cur, args, env) in EXTRA:
    tp = int(args.get("--tensor-model-parallel-size", 1)); pp = int(args.get("--pipeline-model-parallel-size", 1))
    cp = int(args.get("--context-parallel-size", 1)); dp = 8 // (tp * pp * cp)
    mbs = int(args["--micro-batch-size"]); gbs = int(args["--global-batch-size"])
    vpad = -(-50257 // (128 * tp)) * (128 * tp)
    layers = int(args["--num-layers"]); hidden = int(args["--hidden-size"]); heads = int(args["--num-attention-heads"])
    swiglu = args.get("--swiglu") == "true"
    model = {"family": "GPT (Megatron-Core GPTModel, " + ("local (non-TE) layers" if args.get("--transformer-impl") == "local" else "Transformer Engine layers") + ")",
             "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads, "head_dim": hidden // heads,
             "ffn": (int(4 * hidden * 2 / 3 / 64) * 64) if swiglu else 4 * hidden,
             "activation": "SwiGLU" if swiglu else "GeLU", "normalization": args.get("--normalization", "LayerNorm"),
             "position_embedding": args.get("--position-embedding-type", "learned_absolute") + f", {args['--max-position-embeddings']} positions",
             "vocab": f"GPT-2 BPE 50257, padded to {vpad} (multiple of 128 x TP{tp})",
             "tied_embeddings": args.get("--untie-embeddings-and-output-weights") != "true",
             "bias": "off (--disable-bias-linear)" if args.get("--disable-bias-linear") == "true" else "linear biases on (default)"}
    layout = {"gpus": 8, "tp": tp, "pp": pp, "cp": cp, "dp": dp, "micro_batch": mbs, "global_batch": gbs,
              "microbatches_per_step": gbs // (mbs * dp), "sequence_parallel": args.get("--sequence-parallel") == "true",
              "logged_rank": "rank 7 (world_size - 1): last pipeline stage" + (", last TP rank" if tp > 1 else "") + (", last CP rank" if cp > 1 else "")}
    if "--num-layers-per-virtual-pipeline-stage" in args:
        layout["virtual_pp"] = layers // pp // int(args["--num-layers-per-virtual-pipeline-stage"])
    gvl, lines = GV_LINE.get(commit, (216, "training_log"))
    recs.append({
        "id": f"megatron-ft-{case}-{plat}".replace("dev_dgx_", "dev-dgx_"),
        "kind": "training_memory", "role": "check",
        "framework": {"name": "Megatron-LM / Megatron-Core", "version": f"{ver} (megatron/core/package_info.py at {commit}); Transformer Engine of the 'dev' container (not in the repo)"},
        "hardware": {"gpu": "NVIDIA H100 80GB (DGX H100)" if "h100" in plat else "NVIDIA A100 80GB (DGX A100)", "gpus": 8, "gpus_per_node": 8},
        "statistic": stat(commit, lines, gvl),
        "value": peak, "unit": "B",
        "also_reported": {"mem-allocated-bytes (allocated_bytes.all.current after the step, same rank)": cur},
        "config": {"test_case": case, "model": model, "precision": PREC + ("; FP8 (see megatron_args: --fp8-format, --fp8-recipe, --fp8-param-gather)" if "--fp8-format" in args else ""),
                   "layout": layout, "sequence": int(args["--seq-length"]),
                   "optimizer": "Adam, " + ("distributed optimizer over DP" if args.get("--use-distributed-optimizer") == "true" else "not distributed"),
                   "megatron_args": args, "env": env},
        "unpublished": ["the container's exact PyTorch, CUDA and Transformer Engine builds",
                        "the golden file may predate its last commit (older golden values were moved into the repo by adc69dba2d)",
                        "other ranks' peaks: only the last rank is logged"],
        "source": {"citation": "Megatron-LM functional test golden values",
                   "locator": f"github.com/NVIDIA/Megatron-LM tests/functional_tests/test_cases/gpt/{case}/golden_values_{plat}.json and model_config.yaml at {commit} ({date}); recipe 1 node x 8 GPUs",
                   "confidence": "T"},
    })

json.dump({"schema": "vram-explorer.published/1",
           "about": "Megatron-LM CI functional tests: last-rank max_memory_allocated of real 8-GPU runs with exact configs (issue 12's validation table; check records, never fitted)",
           "records": recs}, open("megatron-functional-tests-memory.json", "w"), indent=1, ensure_ascii=False)
print(len(recs))
