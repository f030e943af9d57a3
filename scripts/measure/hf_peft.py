#!/usr/bin/env python3
"""Transformers + PEFT (LoRA, QLoRA through bitsandbytes) on a tiny random-init Llama, measured on CPU.

    python hf_peft.py --out records.json [--only NAME_SUBSTRING]

Writes a list of records with the schema of tests/data/measured/pytorch-cpu-steps.json plus "framework".
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (attention_kernel, env_versions, measure_and_write, optimizer_state_bytes,  # noqa: E402
                     run_inference, run_training, selected, storage_bytes)
from tracker import quant_state_bytes  # noqa: E402

SEED = 0
SHAPE = dict(n_layers=4, hidden=256, heads=4, kv_heads=2, ffn=688, vocab=32000, max_positions=2048)
BATCH, SEQ = 2, 256
PACKAGES = ("transformers", "peft", "bitsandbytes", "accelerate", "trl", "numpy", "safetensors")


def llama_config(attn):
    from transformers import LlamaConfig
    return LlamaConfig(vocab_size=SHAPE["vocab"], hidden_size=SHAPE["hidden"], intermediate_size=SHAPE["ffn"],
                       num_hidden_layers=SHAPE["n_layers"], num_attention_heads=SHAPE["heads"],
                       num_key_value_heads=SHAPE["kv_heads"], max_position_embeddings=SHAPE["max_positions"],
                       tie_word_embeddings=False, attention_dropout=0.0, attn_implementation=attn)


def build(case):
    from transformers import LlamaForCausalLM
    torch.manual_seed(SEED)
    cfg = llama_config(case["attn"])
    if case["quant"] == "none":
        model = LlamaForCausalLM(cfg)
        if case["base"] == "bf16":
            model = model.to(torch.bfloat16)
    else:
        from transformers import BitsAndBytesConfig
        tmp = tempfile.mkdtemp(prefix="tiny-llama-")
        LlamaForCausalLM(cfg).save_pretrained(tmp)
        cd = {"fp32": torch.float32, "bf16": torch.bfloat16}[case["compute"]]
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=case["quant"] == "nf4-dq", bnb_4bit_compute_dtype=cd)
        model = LlamaForCausalLM.from_pretrained(tmp, quantization_config=q, device_map="cpu", dtype=cd,
                                                 attn_implementation=case["attn"])
    model.config.use_cache = False
    if case["peft"] == "lora":
        from peft import LoraConfig, get_peft_model
        if case["quant"] != "none" and case.get("prepare", True):
            from peft import prepare_model_for_kbit_training
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
        targets = ["q_proj", "v_proj"] if case["targets"] == "qv" else "all-linear"
        lc = LoraConfig(r=case["r"], lora_alpha=2 * case["r"], lora_dropout=case["lora_dropout"],
                        target_modules=targets, task_type="CAUSAL_LM", bias="none")
        model = get_peft_model(model, lc)
    if case["quant"] != "none":
        # bitsandbytes' CPU-only inference repacking (Linear4bit.forward: _convert_weight_packed_for_cpu when
        # AVX512-BF16 is present and not training) rewrites the weights into a CPU layout at the first no-grad
        # forward; it has no CUDA counterpart, so it is switched off: inference takes the same
        # dequantize + matmul path (gemm_4bit) as training and as CUDA for batch > 1.
        import bitsandbytes as bnb
        for m in model.modules():
            if isinstance(m, bnb.nn.Linear4bit):
                m.support_avx512bf16_for_cpu = False
    model.train()
    return model


def logical_numel(p):
    qs = getattr(p, "quant_state", None)
    if qs is not None and getattr(qs, "shape", None) is not None:
        return int(torch.Size(qs.shape).numel())
    return p.numel()


def kv_tensors(cache):
    out = []
    if cache is None:
        return out
    for layer in getattr(cache, "layers", []) or []:
        for n in ("keys", "values"):
            t = getattr(layer, n, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    for n in ("key_cache", "value_cache"):
        for t in getattr(cache, n, []) or []:
            if isinstance(t, torch.Tensor):
                out.append(t)
    return out


def case_name(c):
    dt = c["base"] if c["quant"] == "none" else f"{c['quant']}-{c['compute']}"
    if c["peft"] == "none":
        tag = "full"
    else:
        tag = f"{'qlora' if c['quant'] != 'none' else 'lora'}-{c['targets']}-r{c['r']}_drop{c['lora_dropout']:g}"
    return f"llama-tiny_b{BATCH}_s{SEQ}_{dt}_{tag}_adamw_{c['attn']}"


def measure(case):
    import peft
    import transformers
    t_all = time.time()
    model = build(case)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    g = torch.Generator().manual_seed(SEED + 1)
    ids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=g)
    labels = ids.clone()

    def loss_fn():
        return model(input_ids=ids, labels=labels).loss

    train, tr, check, timings = run_training(model, opt, [ids, labels], loss_fn)
    ops_seen = {k: v for k, v in tr.op_counts.items()}
    opt_bytes = optimizer_state_bytes(opt)
    del opt, tr
    gc.collect()

    model.eval()
    model.config.use_cache = True
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    base.config.use_cache = True
    pids = torch.randint(0, SHAPE["vocab"], (BATCH, SEQ), generator=g)
    dids = torch.randint(0, SHAPE["vocab"], (BATCH, 1), generator=g)

    def prefill():
        o = model(input_ids=pids, use_cache=True)
        return o.logits, o.cache
    prefill.inputs = [pids]

    def decode(cache):
        o = model(input_ids=dids, cache=cache, use_cache=True)
        return o.logits, o.cache
    decode.inputs = [dids]

    inf, itr, icheck, itimings = run_inference(model, prefill, decode, kv_tensors)
    ops_seen.update(itr.op_counts)
    check.update(icheck)
    timings.update(itimings)

    named = dict(model.named_parameters())
    n_params = sum(logical_numel(p) for p in named.values())
    n_emb = sum(logical_numel(p) for n, p in named.items() if "embed_tokens" in n)
    n_head = sum(logical_numel(p) for n, p in named.items() if "lm_head" in n)
    n_adapter = sum(p.numel() for n, p in named.items() if "lora_" in n)
    n_train = sum(p.numel() for p in named.values() if p.requires_grad)
    qs_bytes = quant_state_bytes(model)
    param_bytes = storage_bytes(named.values()) + qs_bytes
    base_dtype = {"none": {"fp32": "float32", "bf16": "bfloat16"}.get(case["base"])}.get(case["quant"], "nf4")
    settings = dict(peft=case["peft"], quant=case["quant"], base_dtype=base_dtype)
    if case["peft"] == "lora":
        settings.update(r=case["r"], lora_alpha=2 * case["r"], lora_dropout=case["lora_dropout"],
                        target_modules=["q_proj", "v_proj"] if case["targets"] == "qv" else "all-linear",
                        adapter_dtype=str(next(p for n, p in named.items() if "lora_A" in n).dtype).replace("torch.", ""),
                        autocast_adapter_dtype=True)
    if case["quant"] != "none":
        settings.update(bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=case["quant"] == "nf4-dq",
                        bnb_4bit_compute_dtype={"fp32": "float32", "bf16": "bfloat16"}[case["compute"]],
                        prepare_model_for_kbit_training=case.get("prepare", True),
                        cpu_packed_inference=False,
                        quant_state_bytes=qs_bytes)
    settings.update(n_params_trainable=n_train, n_params_adapter=n_adapter)
    dtype_mode = case["base"] if case["quant"] == "none" else f"{case['quant']}_{case['compute']}"
    rec = dict(
        name=case_name(case),
        config=dict(model="llama-tiny", batch=BATCH, seq=SEQ, dtype_mode=dtype_mode, optimizer="adamw", foreach=True,
                    checkpointing=False, attn_impl=case["attn"], dropout=case.get("lora_dropout", 0.0) > 0,
                    dropout_kernel="native", inference=True),
        framework=dict(name=("transformers+peft" if case["peft"] == "lora" else "transformers")
                       + ("+bitsandbytes" if case["quant"] != "none" else ""),
                       version=f"transformers {transformers.__version__}"
                       + (f", peft {peft.__version__}" if case["peft"] == "lora" else "") + (
                           f", bitsandbytes {__import__('bitsandbytes').__version__}" if case["quant"] != "none" else ""),
                       settings=settings),
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=SHAPE["hidden"] // SHAPE["heads"], ffn=SHAPE["ffn"], vocab=SHAPE["vocab"],
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm",
        dropout_p=case.get("lora_dropout", 0.0), dropout_kernel="native", seq=SEQ, batch=BATCH, dtype_mode=dtype_mode,
        param_dtype=base_dtype, optimizer="adamw", optimizer_foreach=True, checkpointing=False,
        checkpointing_kwargs=None, attn_impl=case["attn"], n_params=n_params, n_params_embeddings=n_emb,
        n_params_head=n_head, n_params_other=n_params - n_emb - n_head, param_bytes=param_bytes,
        optimizer_state_bytes=opt_bytes, train=train, inference=inf, attention_ops_seen=ops_seen,
        timings_s=timings, allocator_check=check, wall_s=round(time.time() - t_all, 1),
        env=env_versions(PACKAGES),
        attention_kernel={k: attention_kernel(v) for k, v in ops_seen.items()},
    )
    return rec


def cases():
    out = [dict(peft="none", quant="none", base=b, attn="sdpa") for b in ("fp32", "bf16")]
    for base in ("fp32", "bf16"):
        for targets in ("qv", "all"):
            for d in (0.0, 0.1):
                out.append(dict(peft="lora", quant="none", base=base, targets=targets, r=8, lora_dropout=d,
                                attn="sdpa"))
    for quant in ("nf4", "nf4-dq"):
        for compute in ("fp32", "bf16"):
            out.append(dict(peft="lora", quant=quant, base="fp32", compute=compute, targets="all", r=8,
                            lora_dropout=0.0, attn="sdpa"))
    out.append(dict(peft="lora", quant="nf4", base="fp32", compute="fp32", targets="qv", r=8, lora_dropout=0.0,
                    attn="sdpa"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None, help="substrings (comma-separated) of the record names to run")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(2)
    chosen = selected(cases(), case_name, a.only)
    if a.list:
        print("\n".join(case_name(c) for c in chosen))
        return
    measure_and_write(a.out, [(case_name(c), lambda c=c: measure(c)) for c in chosen])


if __name__ == "__main__":
    main()
