#!/usr/bin/env python3
"""PyTorch FSDP1 (`FullyShardedDataParallel`) and FSDP2 (`fully_shard`) on CPU with gloo: the tiny Llama
(the deepspeed_run.py shape), one `LlamaDecoderLayer` per unit plus the root, FP32, torch AdamW foreach;
world size 1 and 2 (torch.multiprocessing, loopback), reshard_after_forward on/off (FSDP1: FULL_SHARD /
SHARD_GRAD_OP). Step 1 then step 2 (measured) on rank 0; every rank runs the same step on its own batch.
`--lora`: FSDP2 over a PEFT LoRA model (r 8 on q_proj/v_proj, no dropout; the frozen base sharded with the
adapters in each layer's unit), AdamW over the adapters only (needs peft: requirements-fsdp-lora.txt).

    python fsdp_run.py --out ../../tests/data/measured/fsdp-cpu-steps.json
    python fsdp_run.py --lora --out ../../tests/data/measured/fsdp-lora-cpu-steps.json
    python fsdp_run.py --lora --vocab 512 --out small.json   # appended to the LoRA file
    python fsdp_run.py --custom-sharded --out cs.json        # fsdp-custom-sharded-cpu-steps.json
    python fsdp_run.py --loss-outside --out lo.json           # fsdp-loss-outside-cpu-steps.json, with
    python fsdp_run.py --loss-outside --root-auto --world-sizes 2 --out lo-auto.json   # appended
    python fsdp_run.py --lora --seq 16 --world-sizes 2 --out s16.json    # fsdp-root-regather-cpu-steps.json, with
    python fsdp_run.py --lora --seq 16 --root-auto --world-sizes 2 --out s16-auto.json   # appended
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

from harness import env_versions, gloo_rank0_records, local_bytes, measure_region, optimizer_state_bytes  # noqa: E402
from tracker import StorageTracker, watch_storage_resize  # noqa: E402

SHAPE = dict(n_layers=4, hidden=256, heads=4, kv_heads=2, ffn=688, vocab=32000, max_positions=2048)
# `--seq` reaches the spawned ranks through the environment (each re-imports this module).
BATCH, SEQ = 2, int(os.environ.get("FSDP_RUN_SEQ", "256"))
CASES = [(v, raf, ws, False) for ws in (1, 2) for v in ("fsdp1", "fsdp2") for raf in (True, False)]
# Mixed precision (param_dtype = reduce_dtype = bfloat16, FP32 shards), world size 2: `--mp`.
MP_CASES = [(v, raf, 2, True) for v in ("fsdp1", "fsdp2") for raf in (True, False)]
# FSDP2 over LoRA (`--lora`): FP32 at world size 1 and 2, and BF16 mixed precision at 2.
LORA_CASES = [("fsdp2", raf, ws, False) for ws in (1, 2) for raf in (True, False)] + \
    [("fsdp2", raf, 2, True) for raf in (True, False)]
LORA = dict(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], lora_dropout=0.0)


def wrap(model, variant, raf, mp_on=False, lora=False, custom=False, root_auto=False):
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    if variant == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        mpp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16) if mp_on else \
            MixedPrecisionPolicy()
        inner = model.base_model.model if lora else model
        # torchtune's `training.shard_model` (0.6.1 `_distributed.py`) walks the modules in reverse:
        # the head, the layers from the last, the embedding (`custom_sharded_layers`), then the root.
        if custom:
            fully_shard(inner.lm_head, reshard_after_forward=raf, mp_policy=mpp)
        for layer in reversed(list(inner.model.layers)):
            fully_shard(layer, reshard_after_forward=raf, mp_policy=mpp)
        if custom:
            fully_shard(inner.model.embed_tokens, reshard_after_forward=raf, mp_policy=mpp)
        # The root given `reshard_after_forward` explicitly (torchtune, torchtitan) is resharded after its
        # forward from torch 2.8; left out (`--root-auto`), the root stays unsharded, as every root did
        # up to torch 2.7 (`_fsdp_state.py` `_lazy_init`).
        if root_auto:
            fully_shard(model, mp_policy=mpp)
        else:
            fully_shard(model, reshard_after_forward=raf, mp_policy=mpp)
        return model, dict(api="fully_shard", reshard_after_forward=raf, custom_sharded_layers=custom,
                           root_reshard_after_forward="auto" if root_auto else raf,
                           mixed_precision=dict(param_dtype="bfloat16", reduce_dtype="bfloat16") if mp_on else None)
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    strat = ShardingStrategy.FULL_SHARD if raf else ShardingStrategy.SHARD_GRAD_OP
    m = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({LlamaDecoderLayer}), sharding_strategy=strat,
             device_id=torch.device("cpu"), use_orig_params=False,
             mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16) if mp_on else None)
    return m, dict(api="FullyShardedDataParallel", sharding_strategy=strat.name, use_orig_params=False,
                   backward_prefetch="BACKWARD_PRE", forward_prefetch=False,
                   mixed_precision=dict(param_dtype="bfloat16", reduce_dtype="bfloat16") if mp_on else None)


def measure(variant, raf, ws, rank, mp_on=False, lora=False, vocab=None, ckpt=False, custom=False,
            loss_outside=False, root_auto=False):
    from transformers import LlamaConfig, LlamaForCausalLM
    t_all = time.time()
    torch.manual_seed(0)
    vocab = vocab or SHAPE["vocab"]
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=SHAPE["hidden"], intermediate_size=SHAPE["ffn"],
                      num_hidden_layers=SHAPE["n_layers"], num_attention_heads=SHAPE["heads"],
                      num_key_value_heads=SHAPE["kv_heads"], max_position_embeddings=SHAPE["max_positions"],
                      tie_word_embeddings=False, attn_implementation="sdpa")
    model = LlamaForCausalLM(cfg)
    if ckpt:
        # Every decoder layer recomputed in backward, inside its FSDP unit (non-reentrant).
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=dict(use_reentrant=False))
    if lora:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(**LORA))
    model, settings = wrap(model, variant, raf, mp_on, lora, custom, root_auto)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    g = torch.Generator().manual_seed(1 + rank)
    ids = torch.randint(0, vocab, (BATCH, SEQ), generator=g)
    tr = StorageTracker()
    check, timings, out = {}, {}, {}

    def step():
        tr.label([ids], "inputs")
        tr.classify_model(model, opt)
        tr.mark("start")
        tr.set_phase("forward")
        if loss_outside:
            # torchtune / torchtitan / LitGPT: the model returns the logits and the recipe computes the
            # loss after the root's forward (same loss function, so the same tensors).
            logits = model(input_ids=ids).logits
            loss = model.loss_function(logits=logits, labels=ids, vocab_size=vocab)
            del logits
        else:
            loss = model(input_ids=ids, labels=ids).loss
        tr.mark("end_forward")
        tr.set_phase("backward")
        loss.backward()
        del loss
        tr.classify_model(model, opt)
        tr.mark("end_backward")
        tr.set_phase("optimizer")
        opt.step()
        tr.classify_model(model, opt)
        tr.mark("end_optimizer")
        tr.set_phase("zero_grad")
        opt.zero_grad(set_to_none=True)
        tr.mark("end_step")

    with tr, watch_storage_resize(tr):
        for name in ("step1", "step2"):
            out[name] = measure_region(tr, name, step, check, timings)
    n_params = sum(p.numel() for p in model.parameters())  # global numel (DTensor / flat incl. padding)
    settings.update(world_size=ws, backend="gloo", device="cpu", rank=rank,
                    units="lm_head + LlamaDecoderLayer + embed_tokens + root" if custom else "LlamaDecoderLayer + root",
                    loss="after the root's forward" if loss_outside else "inside the root's forward (labels)")
    env_packages = ("transformers", "numpy")
    if lora:
        import peft
        settings.update(method="lora", lora_r=LORA["r"], lora_alpha=LORA["lora_alpha"], targets="qv",
                        lora_dropout=LORA["lora_dropout"], peft_version=peft.__version__,
                        trainable_params=sum(p.numel() for p in trainable))
        env_packages += ("peft",)
    return dict(
        name=f"{variant}-{'reshard' if raf else 'noreshard'}-ws{ws}-llama-tiny_b{BATCH}_s{SEQ}"
             f"_{'mpbf16' if mp_on else 'fp32'}_{'lora-qv-r8_' if lora else ''}adamw_sdpa"
             f"{'' if vocab == SHAPE['vocab'] else f'_v{vocab}'}{'_ckpt' if ckpt else ''}"
             f"{'_custom-sharded' if custom else ''}{'_loss-outside' if loss_outside else ''}"
             f"{'_root-auto' if root_auto else ''}",
        config=dict(model="llama-tiny", batch=BATCH, seq=SEQ, dtype_mode="fsdp_mp_bf16" if mp_on else "fp32", optimizer="adamw", foreach=True,
                    checkpointing=ckpt, attn_impl="sdpa", dropout=False, dropout_kernel="native", inference=False),
        framework=dict(name=variant, version=torch.__version__, settings=settings),
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=64, ffn=SHAPE["ffn"], vocab=vocab,
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=SEQ, batch=BATCH, dtype_mode="fsdp_mp_bf16" if mp_on else "fp32", param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=ckpt,
        checkpointing_kwargs=dict(use_reentrant=False) if ckpt else None, attn_impl="sdpa", n_params=n_params,
        n_params_embeddings=vocab * SHAPE["hidden"], n_params_head=vocab * SHAPE["hidden"],
        param_bytes=local_bytes(model.parameters()), optimizer_state_bytes=optimizer_state_bytes(opt), train=out,
        inference=None, attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(env_packages),
        attention_kernel={k: "sdpa_flash_cpu" for k in out})


def worker(rank, ws, port, cases, path, lora=False, vocab=None, ckpt=False, custom=False, loss_outside=False,
           root_auto=False):
    gloo_rank0_records(rank, ws, port, path, [
        lambda v=v, raf=raf, m=m: measure(v, raf, ws, rank, m, lora, vocab, ckpt, custom, loss_outside, root_auto)
        for v, raf, m in cases])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--world-sizes", default="1,2")
    ap.add_argument("--mp", action="store_true", help="the mixed-precision cases (MP_CASES) instead")
    ap.add_argument("--lora", action="store_true", help="FSDP2 over PEFT LoRA (LORA_CASES) instead")
    ap.add_argument("--vocab", type=int, default=None,
                    help="a smaller vocabulary, so that backward peaks inside the layers, not at the loss")
    ap.add_argument("--ckpt", action="store_true", help="activation checkpointing of every decoder layer")
    ap.add_argument("--custom-sharded", action="store_true",
                    help="FSDP2 only: the embedding and the head as units of their own (torchtune's "
                         "custom_sharded_layers)")
    ap.add_argument("--loss-outside", action="store_true",
                    help="the loss computed after the model's forward, as torchtune and torchtitan do")
    ap.add_argument("--root-auto", action="store_true",
                    help="FSDP2 only: the root's fully_shard without reshard_after_forward")
    ap.add_argument("--seq", type=int, default=None, help="tokens per sequence (default 256)")
    a = ap.parse_args()
    if a.seq:
        os.environ["FSDP_RUN_SEQ"] = str(a.seq)
    recs = []
    table = LORA_CASES if a.lora else MP_CASES if a.mp else CASES
    if a.custom_sharded or a.root_auto:
        table = [c for c in table if c[0] == "fsdp2"]
    if a.root_auto:  # the root's argument matters only with resharding
        table = [c for c in table if c[1]]
    for ws in map(int, a.world_sizes.split(",")):
        cases = [(v, raf, m) for v, raf, w, m in table if w == ws]
        if not cases:
            continue
        part = f"{a.out}.ws{ws}"
        mp.spawn(worker, args=(ws, 29600 + ws, cases, part, a.lora, a.vocab, a.ckpt, a.custom_sharded,
                                         a.loss_outside, a.root_auto),
                 nprocs=ws, join=True)
        with open(part) as f:
            recs += json.load(f)
        os.remove(part)
    with open(a.out, "w") as f:
        json.dump(recs, f, indent=1)


if __name__ == "__main__":
    main()
