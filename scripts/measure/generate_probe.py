#!/usr/bin/env python3
"""HF generate with sampling on the tiny Llama (4 sequences, 64 prompt + 64 new tokens, min_new_tokens=64): the peak
of live tensor storage above the weights and the op where it happens. Evidence for the sampling-step term of
src/estimator/memory/post_training/phases.rs (`sampling_step`): 5,963,132 B at a `where` of the last step with
transformers 5.24, torch 2.15 (CPU). Run: /work/venvs-measure/hf/bin/python generate_probe.py
"""
import sys, torch
sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from hf_peft import llama_config
from tracker import StorageTracker
from transformers import LlamaForCausalLM, GenerationConfig
torch.manual_seed(0); torch.set_num_threads(2)
m = LlamaForCausalLM(llama_config("sdpa"))
m.generation_config.eos_token_id = 1; m.generation_config.pad_token_id = 0
ids = torch.randint(2, 32000, (4, 64)); am = torch.ones_like(ids)
gc = GenerationConfig(max_new_tokens=64, min_new_tokens=64, do_sample=True, pad_token_id=0, bos_token_id=None, eos_token_id=1, temperature=1.0, top_p=1.0, top_k=0, min_p=None, repetition_penalty=1.0, cache_implementation=None, disable_compile=True)
tr = StorageTracker()
with tr, torch.no_grad():
    tr.begin_region("g"); tr.classify_model(m); tr.label([ids, am], "inputs"); tr.mark("start"); tr.set_phase("gen")
    out = m.generate(input_ids=ids, attention_mask=am, generation_config=gc)
    r = tr.end_region()
print(out.shape, r["peak_total"] - r["start_total"], r["peak_op"], r["peak_op_index"], r["n_ops"], r["peak_breakdown"]["detail"])
