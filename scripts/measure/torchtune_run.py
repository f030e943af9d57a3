#!/usr/bin/env python3
"""torchtune (with its older torch pin) on CPU: the tiny Llama from torchtune's own component builders, full,
LoRA and QLoRA (base weights as torchao NF4Tensor), measured through the step of its single-device recipes
(recipes/lora_finetune_single_device.py and full_finetune_single_device.py `_loss_step` + `train`, the same
step): logits = model(tokens); labels shifted with an ignore column; loss = loss_fn(logits, labels); `del logits`;
loss.backward(); optimizer.step(); zero_grad. Training only. `--full-steps`: the full fine-tune cases (tied
`llama3_2` head, activation checkpointing, the optimizer in backward, bitsandbytes' 8-bit AdamW) on torch 2.15.

    python torchtune_run.py --out records.json
    python torchtune_run.py --full-steps --out ../../tests/data/measured/torchtune-full-cpu-steps.json
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (env_versions, measure_and_write, optimizer_state_bytes, run_training,  # noqa: E402
                     selected, storage_bytes)

SEED = 0
BATCH, SEQ = 2, 256
BASE = dict(n_layers=4, hidden=256, heads=4, kv_heads=2, vocab=32000, max_positions=2048)
PACKAGES = ("torchtune", "torchao", "bitsandbytes", "numpy")


def build(case):
    from torchtune.models.llama3._component_builders import llama3, lora_llama3
    torch.manual_seed(SEED)
    kw = dict(vocab_size=BASE["vocab"], num_layers=BASE["n_layers"], num_heads=BASE["heads"],
              num_kv_heads=BASE["kv_heads"], embed_dim=BASE["hidden"], max_seq_len=BASE["max_positions"],
              intermediate_dim=case["ffn"], attn_dropout=0.0, norm_eps=1e-5, rope_base=500000)
    mods = {"qv": ["q_proj", "v_proj"], "all": ["q_proj", "k_proj", "v_proj", "output_proj"],
            # the README's 3B LoRA / QLoRA configs: q, v and the output projection, and the MLP
            "qvo-mlp": ["q_proj", "v_proj", "output_proj"]}.get(case.get("targets"))
    lora_kw = dict(lora_attn_modules=mods, apply_lora_to_mlp=case.get("targets") in ("all", "qvo-mlp"),
                   apply_lora_to_output=False, lora_rank=8, lora_alpha=16, lora_dropout=0.0,
                   quantize_base=case["method"] == "qlora")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[case["base"]]
    # `--full-steps` builds as the recipes' `_setup_model` does, under `training.set_default_dtype`:
    # parameters in the model's type, the RoPE cache in FP32 (its `theta` is `.float()`); the first
    # five records cast the built model instead (`.to`, which casts the cache too; FP32 there).
    from torchtune import training
    with training.set_default_dtype(dtype if case.get("recipe_dtype") else torch.float32):
        if case.get("tied"):  # Llama 3.2's builders: the head is a TiedLinear over the embedding
            from torchtune.models.llama3_2._component_builders import llama3_2, lora_llama3_2
            model = (llama3_2(tie_word_embeddings=True, **kw) if case["method"] == "full" else
                     lora_llama3_2(tie_word_embeddings=True, **lora_kw, **kw))
        elif case["method"] == "full":
            model = llama3(**kw)
        else:
            model = lora_llama3(**lora_kw, **kw)
    if case["method"] != "full":
        from torchtune.modules.peft import get_adapter_params, set_trainable_params
        set_trainable_params(model, get_adapter_params(model))
    if case.get("recipe_dtype"):
        pass
    elif case["method"] != "qlora":
        model = model.to(dtype)
    else:  # recipes load the NF4 base in the compute dtype; adapters in the same dtype
        for n, p in model.named_parameters():
            if type(p.data) is torch.Tensor:
                p.data = p.data.to(dtype)
    model.train()
    if case.get("ckpt"):  # recipes/full_finetune_single_device.py `_setup_model`
        from torchtune import modules, training
        training.set_activation_checkpointing(model, auto_wrap_policy={modules.TransformerSelfAttentionLayer})
    return model


class InBackward:
    """`optimizer_in_bwd=True` (`_setup_optimizer`): one optimizer per parameter, stepped by the
    post-accumulate-grad hooks of `training.register_optim_in_bwd_hooks`; the recipe never calls
    step() or zero_grad() itself, so the harness's optimizer phase runs nothing. `state` merges the
    per-parameter states for the tracker's labels."""

    def __init__(self, optim_dict):
        self.optim_dict = optim_dict

    @property
    def state(self):
        merged = {}
        for o in self.optim_dict.values():
            merged.update(o.state)
        return merged

    def step(self):
        pass

    def zero_grad(self, set_to_none=True):
        pass


def make_optimizer(case, model):
    trainable = [p for p in model.parameters() if p.requires_grad]

    def one(params):
        if case.get("opt", "adamw") == "adamw8bit":  # bitsandbytes.optim.AdamW8bit (its CPU kernels)
            import bitsandbytes as bnb
            return bnb.optim.AdamW8bit(params, lr=1e-4)
        return torch.optim.AdamW(params, lr=1e-4, foreach=True)
    if not case.get("in_bwd"):
        return one(trainable), trainable
    from torchtune import training
    optim_dict = {p: one([p]) for p in model.parameters()}
    training.register_optim_in_bwd_hooks(model=model, optim_dict=optim_dict)
    return InBackward(optim_dict), trainable


def case_name(c):
    tag = c["method"] if c["method"] == "full" else f"{c['method']}-{c['targets']}-r8_drop0"
    tag += "_tied" if c.get("tied") else ""
    opt = c.get("opt", "adamw") + ("-in-bwd" if c.get("in_bwd") else "")
    ckpt = "_ckpt" if c.get("ckpt") else ""
    return f"torchtune-llama-tiny_f{c['ffn']}_b{BATCH}_s{c.get('seq', SEQ)}_{c['base']}_{tag}_{opt}_sdpa{ckpt}"


def measure(case):
    import torchtune
    from torchtune.modules.loss import CEWithChunkedOutputLoss
    t_all = time.time()
    model = build(case)
    loss_fn = CEWithChunkedOutputLoss(num_output_chunks=8)
    model.set_num_output_chunks(loss_fn.num_output_chunks)
    opt, trainable = make_optimizer(case, model)
    g = torch.Generator().manual_seed(SEED + 1)
    tokens = torch.randint(0, BASE["vocab"], (BATCH, case.get("seq", SEQ)), generator=g)
    labels = tokens.clone()
    ignore = torch.full((BATCH, 1), -100, dtype=labels.dtype)

    def step_loss():  # recipes/{lora,full}_finetune_single_device.py `_loss_step`
        logits = model(tokens)
        lab = torch.hstack((labels[..., 1:], ignore))
        if not isinstance(logits, list):
            lab = lab.reshape(-1)
            logits = logits.reshape(-1, logits.size(-1))
        loss = loss_fn(logits, lab)
        del logits
        return loss

    train, tr, check, timings = run_training(model, opt, [tokens, labels, ignore], step_loss)
    named = dict(model.named_parameters())

    def logical(p):
        return p.numel()
    n_params = sum(logical(p) for p in named.values())
    n_emb = sum(p.numel() for n, p in named.items() if n.startswith("tok_embeddings"))
    n_head = sum(p.numel() for n, p in named.items() if n.startswith("output"))
    from tracker import flat_tensors
    pbytes = storage_bytes(flat_tensors(list(named.values())))
    family = "llama3_2" if case.get("tied") else "llama3"
    builder = (f"torchtune.models.{family}._component_builders."
               + (family if case["method"] == "full" else f"lora_{family}"))
    settings = dict(method=case["method"], builder=builder,
                    loss="torchtune.modules.loss.CEWithChunkedOutputLoss(num_output_chunks=8)",
                    n_params_trainable=sum(p.numel() for p in trainable),
                    nf4_base=case["method"] == "qlora", optimizer_in_bwd=bool(case.get("in_bwd")),
                    activation_checkpointing=bool(case.get("ckpt")),
                    optimizer=("bitsandbytes.optim.AdamW8bit" if case.get("opt") == "adamw8bit"
                               else "torch.optim.AdamW(foreach=True)"))
    if case["method"] != "full":
        settings.update(lora_rank=8, lora_alpha=16, lora_dropout=0.0, targets=case["targets"])
    pd = {"fp32": "float32", "bf16": "bfloat16"}[case["base"]]
    return dict(
        name=case_name(case),
        config=dict(model=f"llama-tiny-f{case['ffn']}", batch=BATCH, seq=case.get("seq", SEQ), dtype_mode=case["base"],
                    optimizer=case.get("opt", "adamw"), foreach=True, checkpointing=bool(case.get("ckpt")),
                    attn_impl="sdpa", dropout=False,
                    dropout_kernel="native", inference=False),
        framework=dict(name="torchtune", version=torchtune.__version__, settings=settings),
        family="llama", n_layers=BASE["n_layers"], hidden=BASE["hidden"], heads=BASE["heads"],
        kv_heads=BASE["kv_heads"], head_dim=BASE["hidden"] // BASE["heads"], ffn=case["ffn"], vocab=BASE["vocab"],
        max_positions=BASE["max_positions"], tied_embeddings=bool(case.get("tied")), mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=case.get("seq", SEQ), batch=BATCH, dtype_mode=case["base"],
        param_dtype=pd if case["method"] != "qlora" else "nf4", optimizer=case.get("opt", "adamw"),
        optimizer_foreach=True, checkpointing=bool(case.get("ckpt")), checkpointing_kwargs=None, attn_impl="sdpa", n_params=n_params,
        n_params_embeddings=n_emb, n_params_head=n_head, n_params_other=n_params - n_emb - n_head,
        param_bytes=pbytes, optimizer_state_bytes=optimizer_state_bytes(opt), train=train, inference=None,
        attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(PACKAGES),
        attention_kernel={k: "sdpa_flash_cpu" for k in train},
    )


def cases():
    return [dict(method="full", base="fp32", ffn=688),
            dict(method="lora", base="fp32", ffn=688, targets="qv"),
            dict(method="lora", base="fp32", ffn=768, targets="all"),
            dict(method="qlora", base="fp32", ffn=768, targets="all"),
            dict(method="qlora", base="bf16", ffn=768, targets="all")]


def full_step_cases():
    """The README's full fine-tune rows at tiny size (BF16 like `dtype: bf16`): the tied Llama 3.2
    head, full activation checkpointing, the optimizer in backward, bitsandbytes' 8-bit AdamW; built
    as the recipes build (`recipe_dtype`)."""
    out = []
    for tied in (False, True):
        for ckpt in (False, True):
            for in_bwd in (False, True):
                out.append(dict(method="full", base="bf16", ffn=688, tied=tied, ckpt=ckpt, in_bwd=in_bwd))
    out.append(dict(method="full", base="bf16", ffn=688, tied=True, ckpt=True, in_bwd=True, opt="adamw8bit"))
    out.append(dict(method="full", base="bf16", ffn=688, tied=True, ckpt=True, in_bwd=False, opt="adamw8bit"))
    # The README's 3B LoRA / QLoRA rows (tied head, q/v/output + MLP adapters, checkpointing),
    # without compile and offloading (CPU).
    for method in ("lora", "qlora"):
        for ckpt in (False, True):
            out.append(dict(method=method, base="bf16", ffn=768, tied=True, ckpt=ckpt, targets="qvo-mlp"))
    # 32 tokens: the head's weight gradient (3·V·h summed over the chunks) outweighs the loss's
    # b·s·V tensors, so the output projection's backward is the backward's peak
    for tied in (False, True):
        for in_bwd in (False, True):
            out.append(dict(method="full", base="bf16", ffn=688, tied=tied, ckpt=True, in_bwd=in_bwd, seq=32))
    for c in out:
        c["recipe_dtype"] = True
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None, help="substrings (comma-separated) of the record names to run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--full-steps", action="store_true",
                    help="the full fine-tune cases (tied head, checkpointing, optimizer in backward, 8-bit AdamW)")
    a = ap.parse_args()
    torch.set_num_threads(2)
    chosen = selected(full_step_cases() if a.full_steps else cases(), case_name, a.only)
    if a.list:
        print("\n".join(case_name(c) for c in chosen))
        return
    measure_and_write(a.out, [(case_name(c), lambda c=c: measure(c)) for c in chosen])


if __name__ == "__main__":
    main()
