#!/usr/bin/env python3
"""What a Megatron-Core mixture-of-experts layer saves for backward, beside a dense MLP of the same per-token FFN
work, measured with the tracker on CPU with Megatron-Core's own modules (`MoELayer` with `SequentialMLP` experts,
the `allgather` dispatcher, `TopKRouter`; `MLP` from the local layer spec), BF16 parameters and input.

The shape is the one of tests/megatron_moe_saved.rs: hidden 512, 1,024 tokens (s 1024, b 1), 8 experts, top-2,
expert FFN 512, dense FFN 1,024, SwiGLU, no biases. The layer input is made before the region (in a model it is the
pre-MLP norm's output, which the norm's consumer keeps either way), so each row's `saved_for_backward` is what the
MLP alone adds.

World size 1 runs TP 1. With `--tp 2` (two processes under torch.distributed.run, gloo) rank 0 runs TP 2 with
sequence parallelism: its input is the [s/2, b, h] sequence shard. Each process prints its rows; rank 0's go to
the record.

With `--layers` it measures whole dense GPT layers of Megatron's own modules instead (`get_gpt_layer_local_spec`,
`--transformer-impl local`): hidden 512, 8 heads, FFN 2048, dropout 0 and 0.1, TP 1 or 2 without sequence
parallelism (tests/data/measured/megatron-core-layer.json).

With `--alltoall` the MoE layers run the `alltoall` dispatcher instead (`--tp 2` or `--ep 2` under torchrun; torch's
seed `--seed` before each layer is built fixes its routing), each row with the rows the expert-parallel all-to-all
brought to the rank (`received_rows`): fused and unfused SwiGLU. With `--etp 1` (and `--tp 2`) both dispatchers run
with `expert_tensor_parallel_size=1`: each expert whole on each TP rank.

    python megatron_moe.py > ../../tests/data/measured/megatron-core-moe.json
    torchrun --nproc-per-node 2 megatron_moe.py --tp 2 > /tmp/moe-tp2.json   # rows appended to the record
    python megatron_moe.py --alltoall > /tmp/a2a.json                          # rows appended, and --tp 2 / --ep 2
    torchrun --nproc-per-node 2 megatron_moe.py --tp 2 --etp 1 > /tmp/etp.json # ETP 1: both dispatchers, appended
"""
import argparse
import json
import os
import sys
import warnings
from importlib import metadata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tracker import StorageTracker  # noqa: E402

S, B, H, E, K, EXPERT_FFN, FFN = 1024, 1, 512, 8, 2, 512, 1024
HEADS = 8


def config(tp, fusion, dispatcher="allgather", ep=1, etp=None):
    from megatron.core.transformer.transformer_config import TransformerConfig
    return TransformerConfig(
        num_layers=1, hidden_size=H, num_attention_heads=8, ffn_hidden_size=FFN,
        num_moe_experts=E, moe_router_topk=K, moe_ffn_hidden_size=EXPERT_FFN,
        moe_token_dispatcher_type=dispatcher, expert_model_parallel_size=ep, expert_tensor_parallel_size=etp, moe_router_load_balancing_type="none", moe_aux_loss_coeff=0.0,
        gated_linear_unit=True, activation_func=F.silu, bias_activation_fusion=fusion, add_bias_linear=False,
        params_dtype=torch.bfloat16, bf16=True, use_cpu_initialization=True, perform_initialization=True,
        tensor_model_parallel_size=tp, sequence_parallel=tp > 1, hidden_dropout=0.0)


def build(kind, tp, fusion, dispatcher="allgather", ep=1, etp=None):
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.mlp import MLP
    from megatron.core.transformer.moe.moe_layer import MoELayer
    cfg = config(tp, fusion, dispatcher, ep, etp)
    if kind == "moe":
        spec = get_gpt_layer_local_spec(num_experts=E, moe_grouped_gemm=False)
        return MoELayer(cfg, submodules=spec.submodules.mlp.submodules)
    spec = get_gpt_layer_local_spec(num_experts=None)
    return MLP(cfg, submodules=spec.submodules.mlp.submodules)


requests = []  # bytes of each GlobalMemoryBuffer.get_tensor request in the current region


def record_requests():
    from megatron.core.utils import GlobalMemoryBuffer
    get_tensor = GlobalMemoryBuffer.get_tensor

    def wrapped(self, tensor_shape, dtype, name, *args, **kwargs):
        n = 1
        for d in tensor_shape:
            n *= d
        requests.append(n * torch.empty((), dtype=dtype).element_size())
        return get_tensor(self, tensor_shape, dtype, name, *args, **kwargs)

    GlobalMemoryBuffer.get_tensor = wrapped


def build_layer(tp, dropout):
    """A dense GPT layer of Megatron's own modules (`get_gpt_layer_local_spec`: LayerNorm, `DotProductAttention`,
    GeLU MLP, linear biases), as `--transformer-impl local` builds it."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig
    from megatron.core.transformer.transformer_layer import TransformerLayer
    cfg = TransformerConfig(
        num_layers=1, hidden_size=H, num_attention_heads=HEADS, ffn_hidden_size=4 * H,
        hidden_dropout=dropout, attention_dropout=dropout, params_dtype=torch.bfloat16, bf16=True,
        # Megatron-LM's defaults where core's differ (megatron/training/arguments.py: --attention-softmax-in-fp32
        # is off unless given). The softmax fusion (`masked_softmax_fusion`, on in Megatron-LM) needs the CUDA
        # kernel, so the torch fallback runs here: it keeps one BF16 softmax, as the fused kernel does, and also
        # the causal mask `masked_fill_` applied (s·s bytes), which the fused kernel does not make. The bias-GeLU
        # and bias-dropout-add fusions keep the same tensors as the unfused ops run here (core's defaults).
        attention_softmax_in_fp32=False,
        # No sequence parallelism: without Apex the local spec's norm is `WrappedTorchNorm`, which refuses it.
        use_cpu_initialization=True, tensor_model_parallel_size=tp, sequence_parallel=False)
    return TransformerLayer(cfg, get_gpt_layer_local_spec().submodules, layer_number=1)


def cpu_layer_shims():
    """Two more shims for a whole layer on CPU: the default causal mask (`transformer/utils.py`
    `get_default_causal_mask`, a fresh [s, s] bool made on "cuda" at every call) is made on the CPU instead, still
    fresh at every call; and the CUDA RNG tracker's `fork` (entered around attention dropout) is a no-op context, so
    dropout draws from torch's CPU generator. Neither changes what is saved."""
    import contextlib

    import megatron.core.fusions.fused_softmax as fused_softmax
    import megatron.core.transformer.utils as transformer_utils
    from megatron.core.tensor_parallel import random as mrandom

    def causal_mask(sq):
        return torch.triu(torch.ones(sq, sq), diagonal=1).bool()

    transformer_utils.get_default_causal_mask = causal_mask
    if hasattr(fused_softmax, "get_default_causal_mask"):
        fused_softmax.get_default_causal_mask = causal_mask

    @contextlib.contextmanager
    def fork(self, name=None):
        yield

    mrandom.CudaRNGStatesTracker.fork = fork


def cpu_alltoall_shims():
    """The `alltoall` dispatcher's device-to-host copies run on a side CUDA stream
    (`MoEAlltoAllTokenDispatcher.cuda_dtoh_stream`, an event synchronised at the sync point): here a
    stand-in stream whose event is already done, and `maybe_move_tensor_to_cpu` returns the split
    counts as NumPy arrays as its CUDA branch does (on the CPU it would return the tensor itself).
    Neither changes a tensor the layer saves or keeps."""
    import contextlib

    from megatron.core.transformer.moe import token_dispatcher

    class Event:
        def synchronize(self):
            pass

    class Stream:
        def wait_stream(self, other):
            pass

        def record_event(self):
            return Event()

    token_dispatcher.MoEAlltoAllTokenDispatcher.cuda_dtoh_stream = Stream()
    torch.cuda.current_stream = lambda *a, **k: None
    torch.cuda.stream = lambda s: contextlib.nullcontext()

    def to_cpu(tensor, as_numpy=False, record_stream=False):
        if torch.is_tensor(tensor) and as_numpy:
            return tensor.numpy()
        return tensor

    token_dispatcher.maybe_move_tensor_to_cpu = to_cpu


def measure(kind, tp, fusion, dropout=0.0, dispatcher="allgather", ep=1, seed=None, etp=None):
    if seed is not None:
        torch.manual_seed(seed)  # the layer's initial weights, hence the routing
    layer = build_layer(tp, dropout) if kind == "layer" else build(kind, tp, fusion, dispatcher, ep, etp)
    g = torch.Generator().manual_seed(0)
    sp = tp > 1 and kind != "layer"
    rows = S // tp if sp else S
    x = torch.randn(rows, B, H, generator=g).to(torch.bfloat16).requires_grad_(True)
    tr = StorageTracker()
    name = f"{kind} tp{tp}{' sp' if tp > 1 else ''} bias_activation_fusion={fusion}"
    if dispatcher != "allgather" or ep > 1:
        name += f" dispatcher={dispatcher} ep{ep}"
    if etp is not None:
        name += f" etp{etp}"
    if kind == "layer":
        name = f"layer tp{tp} dropout={dropout}"
    with tr:
        tr.begin_region(name)
        tr.label(list(layer.parameters()), "params")
        tr.label([x], "inputs")
        # Megatron's persistent gather buffer (`GlobalMemoryBuffer`, "mpu"): made here with one
        # element, so it is pre-existing in every region; `get_tensor` is wrapped to record the
        # largest request the layer makes (what the buffer grows to), per region.
        from megatron.core.parallel_state import get_global_memory_buffer
        buf = get_global_memory_buffer()
        buf.get_tensor([1], torch.bfloat16, "mpu")
        tr.label(list(buf.buffer.values()), "buffers")
        requests.clear()
        tr.mark("start")
        tr.set_phase("forward")
        out = layer(x, attention_mask=None) if kind == "layer" else layer(x)
        out = out[0] if isinstance(out, tuple) else out
        # The rows this rank's experts received (routing is data-dependent: under EP it is not the
        # rows the rank sent).
        received = _received_rows(layer)
        loss = out.float().sum()
        del out
        tr.mark("end_forward")
        tr.set_phase("backward")
        loss.backward()
        del loss
        tr.mark("end_backward")
        r = tr.end_region()
    ef = r["live_at"]["end_forward"]
    if kind == "layer":
        fusion = layer.config.bias_activation_fusion
    extra = {} if dispatcher == "allgather" and ep == 1 else dict(dispatcher=dispatcher, ep=ep, received_rows=received)
    if etp is not None:
        extra["etp"] = etp
    return dict(name=name, kind=kind, tp=tp, sequence_parallel=sp, bias_activation_fusion=fusion, dropout=dropout,
                **extra,
                input_shape=[rows, B, H], saved_for_backward=ef["total"] - r["start_total"],
                forward_peak_above_start=r["phase_peaks"].get("forward", 0) - r["start_total"],
                backward_peak_above_start=r["phase_peaks"].get("backward", 0) - r["start_total"],
                # the largest request the layer made of the buffer, bytes (0: it made none)
                global_memory_buffer=max(requests, default=0),
                end_forward=ef, end_backward=r["live_at"]["end_backward"],
                # what the forward made that outlives the backward (module attributes)
                kept_after_backward=r["live_at"]["end_backward"]["detail"].get("created_in_forward", 0))


def _received_rows(layer):
    """Rows the alltoall dispatcher's all-to-all brought to this rank (its `output_splits`, or the routed rows
    without EP); None for other layers."""
    d = getattr(layer, "token_dispatcher", None)
    if d is None or not hasattr(d, "output_splits"):
        return None
    if d.output_splits is not None:
        return int(sum(int(v) for v in d.output_splits))
    return int(d.num_out_tokens)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--layers", action="store_true", help="whole dense layers (local spec) instead of MLP / MoE")
    ap.add_argument("--alltoall", action="store_true",
                    help="MoE layers with the alltoall dispatcher (beside a dense MLP) instead of allgather")
    ap.add_argument("--ep", type=int, default=1, help="expert-parallel size (with --alltoall)")
    ap.add_argument("--seed", type=int, default=0, help="torch's seed before each alltoall layer is built")
    ap.add_argument("--etp", type=int, default=None,
                    help="expert tensor-parallel size (with --tp 2: 1 keeps the experts whole on each TP rank)")
    args = ap.parse_args()
    if args.ep > 1 and not args.alltoall:
        ap.error("--ep > 1 measures the alltoall dispatcher: add --alltoall")
    tp = args.tp
    torch.set_num_threads(2)
    warnings.filterwarnings("ignore")
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29563")
    rank = int(os.environ.get("RANK", "0"))
    dist.init_process_group("gloo", rank=rank, world_size=int(os.environ.get("WORLD_SIZE", "1")))
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import model_parallel_cuda_manual_seed
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, expert_model_parallel_size=args.ep,
                                             expert_tensor_parallel_size=args.etp)
    try:
        model_parallel_cuda_manual_seed(0)
    except Exception:  # noqa: BLE001 - CPU only: the CUDA RNG tracker is not needed without dropout
        pass
    # TopKRouter.gating moves a CPU-resident weight "to the GPU" (torch.cuda.current_device()); here that device is
    # the CPU, which leaves the weight where it is (a one-time parameter move, no activation).
    torch.cuda.current_device = lambda: "cpu"
    # Without Transformer Engine, 0.16.1's RouterGatingLinearFunction reads an undefined `te_general_gemm`; None
    # selects its torch.mm branch, which saves the same tensors (input, weight, bias).
    from megatron.core.transformer.moe import moe_utils
    if not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None
    record_requests()
    # One throwaway region first: the layer's own requests grow the gather buffer to its size, so
    # in the recorded regions it is pre-existing (not growth counted as saved) while each region's
    # requests are still recorded.
    if args.etp is not None:
        # Both dispatchers with the experts' own tensor-parallel size.
        cpu_alltoall_shims()
        measure("mlp", tp, True)
        rows = [measure("moe", tp, True, dispatcher=d, seed=args.seed, etp=args.etp) for d in ("allgather", "alltoall")]
    elif args.alltoall:
        cpu_alltoall_shims()
        measure("mlp", tp, True)
        rows = [measure("moe", tp, fusion, dispatcher="alltoall", ep=args.ep, seed=args.seed) for fusion in (True, False)]
    elif args.layers:
        cpu_layer_shims()
        measure("layer", tp, True)
        rows = [measure("layer", tp, True, dropout) for dropout in (0.0, 0.1)]
    else:
        measure("mlp", tp, True)
        rows = [measure(kind, tp, fusion) for fusion in (True, False) for kind in ("mlp", "moe")]
    env = {p: metadata.version(p) for p in ("megatron-core",)} if _installed("megatron-core") else {}
    env.update(torch=torch.__version__, threads=torch.get_num_threads(), world_size=dist.get_world_size())
    if rank == 0:
        print(json.dumps(dict(env=env, shape=dict(s=S, b=B, h=H, experts=E, top_k=K, expert_ffn=EXPERT_FFN,
                                                  ffn=FFN, dtype="bfloat16"), rows=rows), indent=1))
    dist.destroy_process_group()


def _installed(name):
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
