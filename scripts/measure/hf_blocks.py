#!/usr/bin/env python3
"""Issue 14's block kinds on CPU: tiny random-init Transformers models (MLA, sliding window, MoE, Mamba-2 and
hybrids, encoder-decoder) measured with the step protocol of harness.py.

    python hf_blocks.py --group mla --out ../../tests/data/measured/blocks-mla-cpu-steps.json [--only SUBSTR]
    python hf_blocks.py --list

Each record has the schema of tests/data/measured/pytorch-cpu-steps.json (train.step1/step2, inference.prefill/
decode, allocator_check ...) plus:
  cache_layout     per cache layer after prefill and after decode: layer class, tensor shapes/dtypes/bytes
  saved_by_module  every tensor autograd saves during one training forward (saved_tensors_hooks), deduplicated by
                   storage, attributed to the innermost module running when it was packed (parameters skipped)
  provenance       command, config kwargs, versions, machine
The cases are in hf_blocks_cases.py.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

from harness import (attention_kernel, env_versions, measure_and_write, optimizer_state_bytes,  # noqa: E402
                     run_inference, run_training, storage_bytes)
from hf_blocks_cases import GROUPS, WHISPER_DEC, case_name, expand  # noqa: E402
from hf_blocks_inspect import cache_layout, cache_tensors, saved_by_module  # noqa: E402

SEED = 0
PACKAGES = ("transformers", "accelerate", "numpy", "safetensors")


def build(c, s):
    import transformers
    from transformers import AutoConfig
    kw = dict(c["kw"])
    if c.get("encdec") == "whisper":
        kw["max_source_positions"] = s
    cfg = AutoConfig.for_model(c["model_type"], **kw)
    if c.get("attn"):
        cfg._attn_implementation = c["attn"]
    if c.get("experts"):
        cfg._experts_implementation = c["experts"]
    torch.manual_seed(SEED)
    model = getattr(transformers, c["cls"])(cfg)
    if c.get("untie_head"):
        # transformers 5.24's T5Config forces tie_word_embeddings = True (configuration_t5.py
        # `__post_init__`: "we tie weights always") and keeps `tie_word_embeddings=False` only as
        # `scale_decoder_outputs = False`. T5 v1.1 / flan-t5 checkpoints store their own lm_head: give
        # the head its own parameter, as those checkpoints (and transformers 4.x) have it.
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    model.train()
    return model, cfg, kw


def make_inputs(c, cfg, b, s, g):
    """(training kwargs, prefill kwargs, decode kwargs without cache) and the tensors to label as inputs."""
    v = cfg.vocab_size
    if c.get("encdec") == "t5":
        ids, lab = torch.randint(2, v, (b, s), generator=g), torch.randint(2, v, (b, s // 2), generator=g)
        pids, pdec = torch.randint(2, v, (b, s), generator=g), torch.randint(2, v, (b, s // 2), generator=g)
        dids = torch.randint(2, v, (b, 1), generator=g)
        return (dict(input_ids=ids, labels=lab), dict(input_ids=pids, decoder_input_ids=pdec),
                dict(decoder_input_ids=dids), [ids, lab], [pids, pdec], [dids])
    if c.get("encdec") == "whisper":
        feats = torch.randn(b, cfg.num_mel_bins, 2 * s, generator=g)
        lab = torch.randint(3, v, (b, WHISPER_DEC), generator=g)
        pfeats = torch.randn(b, cfg.num_mel_bins, 2 * s, generator=g)
        pdec = torch.randint(3, v, (b, WHISPER_DEC), generator=g)
        dids = torch.randint(3, v, (b, 1), generator=g)
        return (dict(input_features=feats, labels=lab), dict(input_features=pfeats, decoder_input_ids=pdec),
                dict(decoder_input_ids=dids), [feats, lab], [pfeats, pdec], [dids])
    ids = torch.randint(0, v, (b, s), generator=g)
    pids = torch.randint(0, v, (b, s), generator=g)
    dids = torch.randint(0, v, (b, 1), generator=g)
    return (dict(input_ids=ids, labels=ids.clone()), dict(input_ids=pids), dict(input_ids=dids),
            [ids], [pids], [dids])


def machine() -> dict:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return dict(machine=platform.machine(), cpu=cpu, os=platform.platform(), logical_cpus=os.cpu_count())


def measure(group, c, b, s, mode):
    import transformers
    t_all = time.time()
    model, cfg, kw = build(c, s)
    g = torch.Generator().manual_seed(SEED + 1)
    train_kw, pre_kw, dec_kw, train_in, pre_in, dec_in = make_inputs(c, cfg, b, s, g)
    amp = mode == "amp_bf16"

    def loss_fn():
        if amp:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return model(**train_kw).loss
        return model(**train_kw).loss

    saved = saved_by_module(model, loss_fn)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    train, tr, check, timings = run_training(model, opt, train_in, loss_fn)
    ops_seen = dict(tr.op_counts)
    opt_bytes = optimizer_state_bytes(opt)
    del opt, tr
    gc.collect()

    model.eval()
    model.config.use_cache = True
    layouts, keep = {}, {}

    def prefill():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            o = model(**pre_kw, use_cache=True)
        enc = getattr(o, "encoder_last_hidden_state", None)
        if enc is not None:
            keep["enc"] = enc
        layouts["prefill"] = cache_layout(o.cache)
        return o.logits, o.cache
    prefill.inputs = pre_in
    prefill.post_labels = lambda: {"encoder_states": [keep["enc"]]} if "enc" in keep else {}

    def decode(cache):
        extra = dict(encoder_outputs=(keep["enc"],)) if "enc" in keep else {}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            o = model(**dec_kw, **extra, cache=cache, use_cache=True)
        layouts["decode"] = cache_layout(o.cache)
        return o.logits, o.cache
    decode.inputs = dec_in

    inf, itr, icheck, itimings = run_inference(model, prefill, decode, cache_tensors)
    ops_seen.update(itr.op_counts)
    check.update(icheck)
    timings.update(itimings)

    named = dict(model.named_parameters())
    n_params = sum(p.numel() for p in named.values())
    rec = dict(
        name=case_name(group, c, b, s, mode),
        group=group,
        config=dict(model=c["name"], batch=b, seq=s, dtype_mode=mode, optimizer="adamw", foreach=True,
                    checkpointing=False, attn_impl=getattr(cfg, "_attn_implementation", None), dropout=False,
                    inference=True),
        framework=dict(name="transformers", version=f"transformers {transformers.__version__}",
                       settings=dict(model_type=c["model_type"], cls=c["cls"], config_kwargs=_jsonable(kw),
                                     experts_implementation=getattr(cfg, "_experts_implementation", None),
                                     decoder_tokens=(s // 2 if c.get("encdec") == "t5" else
                                                     WHISPER_DEC if c.get("encdec") == "whisper" else None))),
        family=c["model_type"], seq=s, batch=b, dtype_mode=mode, param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=False, n_params=n_params, param_bytes=storage_bytes(named.values()),
        optimizer_state_bytes=opt_bytes, train=train, inference=inf, cache_layout=layouts, saved_by_module=saved,
        attention_ops_seen=ops_seen, timings_s=timings, allocator_check=check, wall_s=round(time.time() - t_all, 1),
        env=env_versions(PACKAGES), machine=machine(),
        command=f"nice -n 10 python scripts/measure/hf_blocks.py --group {group} --only {case_name(group, c, b, s, mode)}",
        attention_kernel={k: attention_kernel(v) for k, v in ops_seen.items()},
    )
    return rec


def _jsonable(d):
    return {k: (v if isinstance(v, (int, float, str, bool, list, dict, type(None))) else str(v)) for k, v in d.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", choices=sorted(GROUPS))
    ap.add_argument("--out")
    ap.add_argument("--only", default=None, help="substrings (comma-separated) of the record names to run")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(2)
    runs = [r for r in expand() if a.group is None or r[0] == a.group]
    runs = [r for r in runs if not a.only or any(x in case_name(*r) for x in a.only.split(","))]
    if a.list or not a.out:
        print("\n".join(f"{r[0]:8} {case_name(*r)}" for r in runs))
        return
    t0 = time.time()
    measure_and_write(a.out, [(case_name(*r), lambda r=r: measure(*r)) for r in runs])
    print(f"wall {time.time() - t0:.0f} s for {len(runs)} records")


if __name__ == "__main__":
    main()
