"""Published measurements of what a GPU adds beyond the tensors (issue 12, item 3): CUDA context per GPU, NCCL
communicator memory, cuBLAS workspace, and allocated/reserved pairs of the caching allocator, as published-record
JSON (schema: tests/data/published/README.md). Derivations: docs/gpu-overheads.md.

Every figure is copied by hand from the GitHub issue or pull request named in its record (confidence T when the
number is printed verbatim, S when it is a maintainer's approximate statement). The arithmetic that separates the
overhead from a test tensor's allocator segment is in each record's `notes` (segment sizes per
c10/cuda/CUDACachingAllocator.cpp get_allocation_size: requests <= 1 MiB -> 2 MiB, 1-10 MiB -> 20 MiB, >= 10 MiB ->
rounded up to 2 MiB). New record kinds used here: `cuda_context`, `nccl_memory`, `library_workspace`,
`allocator_pair`. Python 3 standard library only; run from tests/data/published/.
"""
import json

MiB = 2 ** 20
R = []


def rec(rid, kind, fw, hw, stat, val, unit, cfg, un, cite, loc, conf, also=None, notes=None):
    r = {"id": "gpu-overheads-" + rid, "kind": kind, "role": "check", "framework": fw, "hardware": hw,
         "statistic": stat, "value": val, "unit": unit}
    if also:
        r["also_reported"] = also
    r["config"] = cfg
    r["unpublished"] = un
    if notes:
        r["notes"] = notes
    r["source"] = {"citation": cite, "locator": loc, "confidence": conf}
    R.append(r)


# ---------------------------------------------------------------- CUDA context
seg20 = 20 * MiB
rec("pytorch-pr86509-lazy", "cuda_context", {"name": "PyTorch", "version": "1.13 (release-branch cherry-pick PR)"},
    {"gpu": "not stated", "gpus": 1},
    "cudaMemGetInfo total - free after `torch.randn(20, 16, 50, 100).cuda()` (one FP32 tensor of 6,400,000 B), "
    "CUDA_MODULE_LOADING=LAZY (set by the PR)", 287047680, "B",
    {"module_loading": "lazy", "test_tensor_bytes": 6400000},
    ["GPU model, CUDA and driver versions", "whether other processes used the GPU (total - free counts them)"],
    "pytorch/pytorch PR #86509 '[1.13] Sets CUDA_MODULE_LOADING to LAZY when not set by the user' (description)",
    "https://github.com/pytorch/pytorch/pull/86509 (same figures in PR #85692)", "T",
    also={"same command with CUDA_MODULE_LOADING=DEFAULT (eager), B": 666632192,
          "context without the test tensor's 20 MiB allocator segment, lazy, B": 287047680 - seg20,
          "context without the segment, eager, B": 666632192 - seg20},
    notes="6,400,000 B is a 1-10 MiB request, so the caching allocator reserved one 20 MiB (20,971,520 B) segment: "
          "context = 287,047,680 - 20,971,520 = 266,076,160 B = 253.75 MiB (lazy); 645,660,672 B = 615.75 MiB (eager). "
          "The estimator's default cuda_context_mib 273.75 is the figure with the segment.")

rec("pytorch-issue107667-lazy", "cuda_context", {"name": "PyTorch", "version": "2.x (2023-08), CUDA >= 11.7"},
    {"gpu": "not stated", "gpus": 1}, "maintainer statement: memory of the CUDA context with lazy module loading "
    "(~300 MB), vs. before CUDA 11.7 (> 1000 MB)", 300, "MB (approximate)",
    {"module_loading": "lazy"}, ["GPU, exact versions, how measured"],
    "ptrblck in pytorch/pytorch issue #107667 (comments of 2023-08-23 and 2023-08-28)",
    "https://github.com/pytorch/pytorch/issues/107667", "S",
    also={"before CUDA 11.7 (all kernels loaded at init), MB": "> 1000"})

rec("pytorch-issue109888-lazy", "cuda_context", {"name": "PyTorch", "version": "2.x (2023-09), CUDA >= 11.7"},
    {"gpu": "not stated", "gpus": 1}, "maintainer statement: the first CUDA operation creates the CUDA context, "
    "'around 400MB if CUDA >= 11.7 is used and lazy module loading enabled'", 400, "MB (approximate)",
    {"module_loading": "lazy"}, ["GPU, exact versions, how measured"],
    "ptrblck in pytorch/pytorch issue #109888 (comment of 2023-09-23)",
    "https://github.com/pytorch/pytorch/issues/109888", "S")

rec("pytorch-issue20532-v100", "cuda_context", {"name": "PyTorch", "version": "1.1 (eager module loading)"},
    {"gpu": "NVIDIA V100 16 GB (AWS p3.8xlarge)", "gpus": 4},
    "GPU memory per process after `torch.cuda.FloatTensor(1)` (reporter's statement, nvidia-smi implied)", 400,
    "MB (upper end of the range given)", {"module_loading": "eager (CUDA 10, torch 1.1)"},
    ["exact figure (a range is given)", "CUDA and driver versions"],
    "pytorch/pytorch issue #20532 'Couple hundred MB are taken just by initializing cuda' (description)",
    "https://github.com/pytorch/pytorch/issues/20532", "T", also={"lower end of the range, MB": 300})

rec("pytorch-issue28394-titanv", "cuda_context", {"name": "PyTorch", "version": "1.3 (eager module loading)"},
    {"gpu": "NVIDIA Titan V", "gpus": 1},
    "NVML fb_memory_usage.used (pynvml) after moving a 2x3 FP32 tensor to the GPU, minus before", 1008.1875 - 0.9375,
    "MiB (printed as MB)", {"module_loading": "eager", "max_memory_cached_MiB": 2.0},
    ["CUDA and driver versions"],
    "pytorch/pytorch issue #28394 'Where did the GPU memory go' (description)",
    "https://github.com/pytorch/pytorch/issues/28394", "T",
    also={"used before, MiB": 0.9375, "used after, MiB": 1008.1875,
          "same experiment with PyCUDA instead of PyTorch (used after), MiB": 320.1875},
    notes="1007.25 MiB includes the allocator's one 2 MiB small-pool segment: context ~ 1005.25 MiB.")

tensor_49877 = 64 * 16 * 200 * 200 * 4  # 163,840,000 B -> 156.25 MiB -> 158 MiB segment
seg_49877 = 2 * MiB * -(-tensor_49877 // (2 * MiB))
rec("pytorch-issue49877-rtx3090", "cuda_context", {"name": "PyTorch", "version": "1.7.1+cu110 (CUDA 11.1, eager)"},
    {"gpu": "NVIDIA GeForce RTX 3090 (24 GB)", "gpus": 1},
    "nvidia-smi memory used after `torch.randn(64,16,200,200).to('cuda:0')`", 1644, "MiB",
    {"module_loading": "eager", "test_tensor_bytes": tensor_49877},
    ["driver version", "other processes on the GPU"],
    "pytorch/pytorch issue #49877 'The same tensor requires more memory on RTX3090' (description)",
    "https://github.com/pytorch/pytorch/issues/49877", "T",
    also={"context without the tensor's segment, MiB": 1644 - seg_49877 / MiB},
    notes="163,840,000 B = 156.25 MiB >= 10 MiB -> one segment of 2 MiB x ceil(156.25/2) = 158 MiB: context = 1486 MiB.")

rec("pytorch-issue49877-rtx2080ti", "cuda_context", {"name": "PyTorch", "version": "1.6.0+cu101 (CUDA 10.1, eager)"},
    {"gpu": "NVIDIA GeForce RTX 2080 Ti (11 GB)", "gpus": 1},
    "nvidia-smi memory used after `torch.randn(64,16,200,200).to('cuda:0')`", 1035, "MiB",
    {"module_loading": "eager", "test_tensor_bytes": tensor_49877},
    ["driver version", "other processes on the GPU"],
    "pytorch/pytorch issue #49877 (description; the reporter's GTX2090Ti/GTX2080Ti is the RTX 2080 Ti)",
    "https://github.com/pytorch/pytorch/issues/49877", "T",
    also={"context without the tensor's segment, MiB": 1035 - seg_49877 / MiB},
    notes="Same 158 MiB segment as the RTX 3090 record: context = 877 MiB. torch and CUDA versions differ between "
          "the two rows, not only the GPU.")

rec("pytorch-issue28113-k40c", "cuda_context", {"name": "PyTorch", "version": "1.3.0 (CUDA 10.1.243, eager)"},
    {"gpu": "NVIDIA Tesla K40c", "gpus": 2},
    "nvidia-smi memory used after `torch.cuda.synchronize()` with memory_allocated() = 0, on different machines",
    700, "MB (upper end of '200+mb to 700+mb')", {"module_loading": "eager"},
    ["which machine gave which figure", "driver and GPU of the other machines"],
    "pytorch/pytorch issue #28113 'Ghost memory usage when start cuda' (description; SsnL: 'That is the size of "
    "the CUDA context')", "https://github.com/pytorch/pytorch/issues/28113", "T",
    also={"lower end, MB": 200})

rec("transformers-model-memory-anatomy-v100", "cuda_context",
    {"name": "Hugging Face Transformers docs (PyTorch)", "version": "as in the doc"},
    {"gpu": "NVIDIA V100", "gpus": 1},
    "NVML used memory after `torch.ones((1, 1)).to('cuda')` ('GPU memory occupied')", 1343, "MiB (printed as MB)",
    {"module_loading": "as in the doc's environment"}, ["torch/CUDA versions of the run"],
    "Transformers documentation 'Model training anatomy' (docs/source/en/model_memory_anatomy.md), as already used "
    "in docs/model.md section 8", "huggingface/transformers docs/source/en/model_memory_anatomy.md", "S",
    notes="Includes the 2 MiB small-pool segment of the 1x1 tensor.")

rec("pytorch-issue86849-rank-on-gpu0", "cuda_context", {"name": "PyTorch", "version": "1.12.1 (CUDA 11.3)"},
    {"gpu": "not stated", "gpus": 2},
    "nvidia-smi: extra memory on GPU 0 created by the rank-1 process (context + NCCL) when all_reduce runs "
    "without the current device set", 800, "MB (approximate)", {"backend": "nccl", "world_size": 2},
    ["GPU model", "NCCL version"],
    "pytorch/pytorch issue #86849 '`torch.distributed.all_reduce` allocates excess GPU memory when using NCCL "
    "backend' (description)", "https://github.com/pytorch/pytorch/issues/86849", "T",
    notes="Not a per-GPU context figure: the cost of a second process's context and NCCL state on a GPU it "
          "should not touch; does not occur with torch 1.9.0 / CUDA 11.1 per the reporter.")

# ---------------------------------------------------------------- NCCL
rec("nccl-issue964-a100x4", "nccl_memory", {"name": "PyTorch + NCCL", "version": "not stated (2023-08)"},
    {"gpu": "NVIDIA A100", "gpus": 4, "gpus_per_node": 4, "interconnect": "NVLink"},
    "GPU memory per rank added by one process group after one 4 MB all-reduce in it (2-rank groups)", 544, "MB",
    {"collective": "all_reduce 4 MB", "group_sizes": [2, 3, 4]},
    ["torch and NCCL versions", "how memory was read (nvidia-smi implied)", "channel count"],
    "NVIDIA/nccl issue #964 'Question about GPU memory consumption of NCCL' (description)",
    "https://github.com/NVIDIA/nccl/issues/964", "T",
    also={"per group of 3 or 4 ranks, MB": 688},
    notes="In units of the 12 MiB per channel-peer of docs/gpu-overheads.md section 3: 544 MB ~ 43 and "
          "688 MB ~ 55; the channel counts and algorithms of this run are not published, so the decomposition is "
          "not checked. Not fitted.")

rec("nccl-issue864", "nccl_memory", {"name": "NCCL", "version": "not stated (2023-06)"},
    {"gpu": "not stated", "gpus": "not stated"},
    "GPU memory after one communicator is established and an all-reduce runs", 1.6, "GB",
    {"communicators": 1}, ["GPU, interconnect, world size, versions"],
    "NVIDIA/nccl issue #864 'The more NCCL communicators, the more GPU memory?' (description)",
    "https://github.com/NVIDIA/nccl/issues/864", "T",
    also={"with >= 3 communicators, GB": 6},
    notes="sjeaugey's answer (quoted in NVIDIA/nccl#986): more communicators = more memory unless split with shared "
          "resources; memory is linear in the number of channels; Ring uses 2 connections regardless of scale.")

rec("nccl-issue1685-h100x8-alltoall", "nccl_memory", {"name": "PyTorch + NCCL", "version": "not stated (2025-04)"},
    {"gpu": "NVIDIA H100", "gpus": 8, "gpus_per_node": 8, "interconnect": "NVLink/NVSwitch"},
    "per-GPU memory excluding PyTorch's, after the first all_to_all_single", 4.34, "GB",
    {"collective": "all_to_all_single, intra-node", "channels_per_gpu_pair": 32},
    ["NCCL and torch versions", "message size"],
    "NVIDIA/nccl issue #1685 'All-to-all seems to trigger connection of many channels thus a large memory "
    "usage?' (kwen2501, description)", "https://github.com/NVIDIA/nccl/issues/1685", "T",
    also={"before the first all_to_all_single, GB": 1.06,
          "NCCL ALLOC sizes logged, B": [10485760, 2097152]},
    notes="10,485,760 B = LL 524,288 + LL128 4,915,200 + Simple 4,194,304 = 9,633,792 B (NCCL src/init.cc "
          "computeBuffSizes defaults) + sizeof(ncclRecvMem), aligned to CUDA_IPC_MIN = 2 MiB: the receive side of one "
          "channel-peer connection (src/transport/p2p.cc p2pRecvSetup, write mode); 2,097,152 B = the send side's "
          "ncclSendMem aligned to 2 MiB. The count of each allocation size is in the issue (not transcribed here).")

rec("verl-issue6266-megatron-moe-h100x8", "nccl_memory", {"name": "verl + Megatron-LM + NCCL", "version": "2026-05"},
    {"gpu": "NVIDIA H100", "gpus": 8, "gpus_per_node": 8},
    "GPU memory held per rank by idle NCCL communicators (channel buffers), measured by the author", 10, "GB (upper "
    "end of '7-10 GB/rank')", {"layout": "Megatron 3D parallel + expert parallel, MoE, colocated training/rollout"},
    ["model and exact parallel sizes in the excerpt", "NCCL version"],
    "verl-project/verl issue #6266 '[RFC] Support NCCL Suspend/Resume in verl Colocated Mode' (section 2)",
    "https://github.com/verl-project/verl/issues/6266", "T", also={"lower end, GB": 7})

rec("nccl-issue2363-single-rank-net-buffer", "nccl_memory",
    {"name": "PyTorch + NCCL", "version": "NCCL 2.28.9, PyTorch 2.11.0 + CUDA 13.0"},
    {"gpu": "NVIDIA B300", "gpus": 8, "gpus_per_node": 8, "interconnect": "NVLink"},
    "size of the failed CUDA calloc for a single-rank communicator's NET shared P2P buffer", 536870912, "B",
    {"communicator_ranks": 1, "collective": "all_reduce on a singleton group"},
    ["memory of the rest of the communicator"],
    "NVIDIA/nccl issue #2363 '[Issue]: Single-rank communicator initializes a large NET shared P2P buffer'",
    "https://github.com/NVIDIA/nccl/issues/2363", "T")

# ---------------------------------------------------------------- cuBLAS workspace
rec("pytorch-issue95668-cublas-workspace-a10g", "library_workspace",
    {"name": "PyTorch", "version": "2.0.0.dev20230227+cu118"}, {"gpu": "NVIDIA A10G", "gpus": 1},
    "torch.cuda.memory_allocated() left after `nn.Linear(1,1)` forward on a (1,1) input, all Python tensors freed",
    8519680, "B", {"op": "nn.Linear forward (cuBLAS)"}, ["CUBLAS_WORKSPACE_CONFIG (assumed unset)"],
    "pytorch/pytorch issue #95668 'Nightly is leaking memory with a simple Linear layer' (description)",
    "https://github.com/pytorch/pytorch/issues/95668", "T",
    notes="8,519,680 = 2 x 4096 KiB + 8 x 16 KiB: the default ':4096:2:16:8' cuBLAS workspace "
          "(CublasHandlePool.cpp parseChosenWorkspaceSize), allocated through the caching allocator since torch 2.0 "
          "and kept per (handle, stream); 1.13 did not show it (reporter). At torch 2.15 this caching is off by default "
          "(TORCH_CUBLAS_WORKSPACE_CACHE unset): the workspace is a transient of each matmul, so a 2.15 run would "
          "leave only the 1 MiB cuBLASLt workspace, if a Lt matmul ran.")

# ---------------------------------------------------------------- allocated / reserved pairs
rec("pytorch-issue40989-param1", "allocator_pair", {"name": "PyTorch", "version": "not stated (2020-07)"},
    {"gpu": "not stated", "gpus": 1},
    "torch.cuda.memory_summary() peak usage after empty_cache() and reset_peak_memory_stats(): GPU reserved memory "
    "(value) and allocated memory (also_reported)", 16726, "MB (memory_summary units: MiB)",
    {"workload": "the reporter's test_function(param=1)"}, ["workload details, GPU, versions"],
    "pytorch/pytorch issue #40989 'Difference between allocated and reserved CUDA memory' (description table)",
    "https://github.com/pytorch/pytorch/issues/40989", "T",
    also={"allocated peak, MB": 15006}, notes="(R - A)/A = 11.5 %.")

rec("pytorch-issue40989-param2", "allocator_pair", {"name": "PyTorch", "version": "not stated (2020-07)"},
    {"gpu": "not stated", "gpus": 1}, "as gpu-overheads-pytorch-issue40989-param1", 19354,
    "MB (memory_summary units: MiB)", {"workload": "the reporter's test_function(param=2)"},
    ["workload details, GPU, versions"], "pytorch/pytorch issue #40989 (description table)",
    "https://github.com/pytorch/pytorch/issues/40989", "T", also={"allocated peak, MB": 17402},
    notes="(R - A)/A = 11.2 %.")

rec("sglang-pr18865-diffusion", "allocator_pair", {"name": "SGLang diffusion", "version": "2026-02 (PR)"},
    {"gpu": "not stated", "gpus": 1},
    "perf dump after the forward: peak_reserved_mb (value) and peak_allocated_mb (also_reported)", 62406.0, "MB",
    {"workload": "diffusion pipeline forward (the PR's example dump)"}, ["model, resolution, GPU"],
    "sgl-project/sglang PR #18865 '[diffusion] logging: improve peak vram logging' (description)",
    "https://github.com/sgl-project/sglang/pull/18865", "T",
    also={"peak allocated, MB": 53044.04, "before forward: allocated / reserved, MB": [33905.64, 34308.0]},
    notes="(R - A)/A = 17.6 % at the peak; 1.2 % before the forward (weights only).")

rec("compressed-tensors-pr587-oom", "allocator_pair",
    {"name": "llm-compressor / compressed-tensors offloading", "version": "2026-02 (PR)"},
    {"gpu": "80 GB class (79.18 GiB total capacity)", "gpus": 1},
    "CUDA OOM message: memory allocated by PyTorch (also_reported) and 'reserved by PyTorch but unallocated' "
    "(value) at the failing allocation, after the allocator's release-and-retry", 1.83, "GiB",
    {"workload": "llama3.3 70B example (calibration with CPU offloading)"}, ["torch version", "expandable segments"],
    "vllm-project/compressed-tensors PR #587 '[Bugfix] [Offloading] Even more reserved memory, scaling with model "
    "size' (description)", "https://github.com/vllm-project/compressed-tensors/pull/587", "T",
    also={"allocated by PyTorch, GiB": 75.31, "in use by the process (incl. non-PyTorch), GiB": 78.09,
          "free, GiB": 1.08, "tried to allocate, GiB": 1.96},
    notes="Reserved-but-unallocated / allocated = 2.4 % at an OOM (segments already released where possible); "
          "non-PyTorch memory of the process = 78.09 - 75.31 - 1.83 = 0.95 GiB (CUDA context and any library memory "
          "outside the caching allocator; cuBLAS workspaces are inside it).")

rec("hf-hub-inflect-micro-v2-rtx4080s", "allocator_pair", {"name": "PyTorch", "version": "2.10.0+cu128"},
    {"gpu": "NVIDIA GeForce RTX 4080 SUPER (Windows 11)", "gpus": 1},
    "VRAM reserved (value) vs VRAM peak allocated (also_reported) after synthesizing a 125 s clip with a 37.53 MB "
    "TTS model", 558, "MB", {"workload": "TTS inference, variable clip length (3 s, 16 s, 125 s in sequence)"},
    ["whether reserved is the peak or current figure", "MB vs MiB"],
    "Hugging Face Hub discussion owensong/Inflect-Micro-v2 #6 'Measured runtime memory usage (pyTorch)'",
    "https://huggingface.co/owensong/Inflect-Micro-v2/discussions/6", "T",
    also={"peak allocated at 125 s, MB": 262, "16 s clip: allocated / reserved, MB": [260, 380],
          "3 s clip: allocated / reserved, MB": [87, 110], "model loaded: allocated / reserved, MB": [39, 46]},
    notes="(R - A)/A = 26 % (3 s), 46 % (16 s), 113 % (125 s): variable shapes on a small model, the "
          "growth-after-free case of docs/gpu-overheads.md section 1.9.")

json.dump({"schema": "vram-explorer.published/1",
           "about": "Published measurements of GPU-only overheads (CUDA context per GPU, NCCL communicator memory, "
                    "cuBLAS workspace, caching-allocator allocated/reserved pairs) for docs/gpu-overheads.md; check "
                    "records, never fitted",
           "records": R}, open("gpu-overheads.json", "w"), indent=1, ensure_ascii=False)
print(len(R))
