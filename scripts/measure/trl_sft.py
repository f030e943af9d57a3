#!/usr/bin/env python3
"""TRL SFTTrainer: two optimizer steps of the tiny Llama (full fine-tune and PEFT LoRA), the second measured.

    python trl_sft.py --out records.json

The trainer's own step runs (Trainer.training_step -> SFTTrainer.compute_loss -> accelerator.backward ->
optimizer.step -> zero_grad). Phases are set from hooks, not by rewriting the step: a forward pre-hook on the model
starts "forward"; a forward hook starts "loss" (SFTTrainer.compute_loss's work after the model: loss, entropy and
token-accuracy metrics); accelerator.backward is wrapped to start "backward"; the callbacks
on_pre_optimizer_step / on_optimizer_step mark "optimizer" and "zero_grad". A pre-tokenised dataset of random ids
(no download) and an in-memory word-level tokenizer are used. Only train.step1/step2 are recorded (no inference).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from harness import env_versions, measure_and_write, optimizer_state_bytes, storage_bytes  # noqa: E402
from hf_peft import BATCH, SEQ, SHAPE, llama_config  # noqa: E402
from tracker import StorageTracker, profile_peak_delta  # noqa: E402

PACKAGES = ("trl", "transformers", "peft", "accelerate", "datasets", "numpy")


def tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(WordLevel(vocab={str(i): i for i in range(SHAPE["vocab"])}, unk_token="0"))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="0", eos_token="1", unk_token="0")


def measure(case):
    import trl
    from datasets import Dataset
    from transformers import LlamaForCausalLM, TrainerCallback
    from trl import SFTConfig, SFTTrainer
    t_all = time.time()
    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config("sdpa"))
    g = torch.Generator().manual_seed(1)
    rows = [torch.randint(2, SHAPE["vocab"], (SEQ,), generator=g).tolist() for _ in range(BATCH * 2)]
    ds = Dataset.from_dict({"input_ids": rows})
    peft_config = None
    if case["peft"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
                                 task_type="CAUSAL_LM")
    out_dir = tempfile.mkdtemp(prefix="trl-sft-")
    args = SFTConfig(output_dir=out_dir, max_steps=2, per_device_train_batch_size=BATCH, max_length=SEQ,
                     packing=False, report_to="none", save_strategy="no", logging_steps=1, use_cpu=True,
                     bf16=False, fp16=False, optim="adamw_torch", learning_rate=1e-4, lr_scheduler_type="constant",
                     dataloader_num_workers=0, seed=0, gradient_accumulation_steps=1, max_grad_norm=1.0)
    tr = StorageTracker()
    res, check, timings, state = {}, {}, {}, {}

    class Phases(TrainerCallback):
        def on_step_begin(self, a, st, c, **kw):
            name = f"step{st.global_step + 1}"
            state["name"] = name
            state["t0"] = time.time()
            state["prof"] = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            state["prof"].__enter__()
            tr.begin_region(name)
            m = kw["model"]
            opt = state["trainer"].optimizer
            tr.classify_model(m, getattr(opt, "optimizer", opt))
            tr.mark("start")

        def on_pre_optimizer_step(self, a, st, c, **kw):
            opt = state["trainer"].optimizer
            tr.classify_model(kw["model"], getattr(opt, "optimizer", opt))
            tr.mark("end_backward")
            tr.set_phase("optimizer")

        def on_optimizer_step(self, a, st, c, **kw):
            opt = state["trainer"].optimizer
            tr.classify_model(kw["model"], getattr(opt, "optimizer", opt))
            tr.mark("end_optimizer")
            tr.set_phase("zero_grad")

        def on_step_end(self, a, st, c, **kw):
            tr.mark("end_step")
            r = tr.end_region()
            state["prof"].__exit__(None, None, None)
            name = state["name"]
            timings[name] = round(time.time() - state["t0"], 2)
            ap, n = profile_peak_delta(state["prof"])
            check[name] = dict(allocator_peak_delta=ap, tracker_peak_delta=r["peak_total"] - r["start_total"],
                               diff_bytes=ap - (r["peak_total"] - r["start_total"]), n_alloc_events=n)
            res[name] = r

    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer(),
                         peft_config=peft_config, callbacks=[Phases()])
    state["trainer"] = trainer
    m = trainer.model
    def pre_hook(*_):
        tr.set_phase("forward")

    def post_hook(*_):
        tr.mark("end_forward_model")
        tr.set_phase("loss")
    m.register_forward_pre_hook(pre_hook)
    m.register_forward_hook(post_hook)
    acc = trainer.accelerator
    orig_backward = acc.backward

    def backward(loss, **kw):
        tr.mark("end_forward")
        tr.set_phase("backward")
        return orig_backward(loss, **kw)
    acc.backward = backward
    with tr:
        trainer.train()
    opt = trainer.optimizer
    opt = getattr(opt, "optimizer", opt)
    named = dict(m.named_parameters())
    n_params = sum(p.numel() for p in named.values())
    n_emb = sum(p.numel() for n, p in named.items() if "embed_tokens" in n)
    n_head = sum(p.numel() for n, p in named.items() if "lm_head" in n)
    settings = dict(trainer="SFTTrainer", peft=case["peft"], max_steps=2, per_device_train_batch_size=BATCH,
                    max_length=SEQ, packing=False, optim="adamw_torch", max_grad_norm=1.0, use_cpu=True,
                    n_params_trainable=sum(p.numel() for p in named.values() if p.requires_grad),
                    phases="forward = model forward; loss = SFTTrainer.compute_loss after the model (loss, entropy, "
                           "token accuracy); backward = accelerator.backward; optimizer = clip + step")
    if case["peft"] == "lora":
        settings.update(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    ckpt = bool(trainer.args.gradient_checkpointing)
    ckpt_kwargs = trainer.args.gradient_checkpointing_kwargs
    settings.update(gradient_checkpointing=ckpt, gradient_checkpointing_kwargs=ckpt_kwargs,
                    fused_lm_head="trl.trainer.utils.add_fused_lm_head (no b*s*V logits); on CPU its torch "
                                  "fallback tile (N x vocab-chunk FP32 temporaries) replaces the CUDA Triton kernel")
    return dict(
        name=f"trl-sft-llama-tiny_b{BATCH}_s{SEQ}_fp32_{'lora-qv-r8_drop0' if case['peft'] == 'lora' else 'full'}"
             "_adamw_sdpa" + ("_ckpt" if ckpt else ""),
        config=dict(model="llama-tiny", batch=BATCH, seq=SEQ, dtype_mode="fp32", optimizer="adamw", foreach=True,
                    checkpointing=ckpt, attn_impl="sdpa", dropout=False, dropout_kernel="native", inference=False),
        framework=dict(name="trl", version=trl.__version__, settings=settings),
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=SHAPE["hidden"] // SHAPE["heads"], ffn=SHAPE["ffn"], vocab=SHAPE["vocab"],
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=SEQ, batch=BATCH, dtype_mode="fp32", param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=ckpt, checkpointing_kwargs=ckpt_kwargs, attn_impl="sdpa",
        n_params=n_params, n_params_embeddings=n_emb, n_params_head=n_head, n_params_other=n_params - n_emb - n_head,
        param_bytes=storage_bytes(named.values()), optimizer_state_bytes=optimizer_state_bytes(opt), train=res,
        inference=None, attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(PACKAGES),
        attention_kernel={k: "sdpa_flash_cpu" for k in res},
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(2)
    cases = (dict(peft="none"), dict(peft="lora"))
    measure_and_write(a.out, [(f"sft peft={c['peft']}", lambda c=c: measure(c)) for c in cases])


if __name__ == "__main__":
    main()
