"""Print the markdown table of docs/published-memory.md from the published memory-record files
(tests/data/published/*.json with kind training_memory / inference_memory / op_memory / training_max_sequence).
Python 3 standard library only; run from the repository root: python3 scripts/published/published_memory_table.py
"""
import json
import os
import re

FILES = ["torchtune-readme-tutorials.json", "megatron-functional-tests-memory.json", "torchtitan-llama3-h100-202412.json",
         "peft-metamathqa-l40s.json", "trl-notebooks-qlora.json", "deepspeed-published-memory.json",
         "liger-kernel-memory.json", "unsloth-context-length.json", "transformers-llm-optimization-octocoder.json",
         "peft-docs-sharded-qlora-70b.json"]
D = "tests/data/published"


def short_stat(s):
    s0 = s.lower()
    if "active_bytes" in s0 and s0.startswith("torch.cuda.memory_stats()['active"):
        return "active peak"
    if s0.startswith("'peak memory per gpu'") or "does not say which" in s0 or "does not name" in s0 or "not stated" in s0:
        return "not stated"
    if "largest padded sequence" in s0:
        return "max context that fits"
    if "max_memory_reserved" in s0 or "reserved_bytes.all.peak" in s0:
        return "max_memory_reserved"
    if "memory_allocated() / 1024**3 ('ma'" in s0:
        return "memory_allocated after init"
    if "max_memory_allocated" in s0 or "allocated_bytes.all.peak" in s0:
        return "max_memory_allocated"
    return s[:40]


def short_cfg(r):
    c = r["config"]
    m = c.get("model", {})
    parts = []
    if "hf_id" in m:
        parts.append(m["hf_id"].split(" ")[0])
    elif "layers" in m:
        parts.append(f"{m['layers']}L h{m['hidden']}")
    if c.get("op"):
        parts.append(f"{c['op']} [{c['provider']}] " + " ".join(f"{k}={v}" for k, v in c["shape"].items()))
    meth = c.get("method")
    if meth:
        parts.append(meth + (f" r{c['lora']['r']}" if isinstance(c.get("lora"), dict) and "r" in c["lora"] else ""))
    lay = c.get("layout", {})
    if isinstance(lay, dict):
        keys = [("tp", "TP"), ("pp", "PP"), ("cp", "CP"), ("dp", "DP"), ("fsdp_shard", "FSDP"), ("zero_stage", "ZeRO-"), ("tensor_parallel", "TP")]
        par = " ".join(f"{lab}{lay[k]}" for k, lab in keys if k in lay and lay[k] not in (None, 1) or (k == "zero_stage" and k in lay))
        if par:
            parts.append(par)
        mb = lay.get("micro_batch", lay.get("local_batch", lay.get("per_device_batch")))
        if mb is not None:
            parts.append(f"mb {str(mb).split(' ')[0]}")
    seq = c.get("sequence", c.get("max_seq_length", c.get("max_length")))
    if seq is not None and str(seq).split(" ")[0].isdigit():
        parts.append(f"seq {str(seq).split(' ')[0]}")
    for k, lab in (("recompute", "recompute"), ("activation_checkpointing", "AC"), ("float8", "FP8"), ("compile", "compile")):
        v = c.get(k)
        if v not in (None, False, "none"):
            parts.append(lab if not isinstance(v, str) or v.startswith("--") else f"{lab}: {v.split(' ')[0]}")
    if c.get("quantize"):
        parts.append("4-bit")
    opts = c.get("options")
    if isinstance(opts, dict):
        on = [k for k, v in opts.items() if v not in (False, None) and k in ("packed", "compile", "activation_checkpointing", "optimizer_in_backward", "activation_offloading")]
        if "Chunked" in str(opts.get("loss", "")):
            on.append("chunked CE")
        if "8-bit" in str(opts.get("optimizer", "")):
            on.append("8-bit AdamW")
        parts.append("+".join(on) if on else "baseline")
    return ", ".join(parts)


def fmt_val(r):
    v, u = r["value"], r["unit"]
    if v is None:
        return "OOM"
    if u == "B":
        return f"{v / 2**30:.2f} GiB"
    if isinstance(v, float) and len(repr(v).split(".")[-1]) > 3:
        v = round(v, 3)
    return f"{v} {u.split(' ')[0]}"


print("| id | framework | version | statistic | GPU | config | value | source |")
print("|---|---|---|---|---|---|---|---|")
n = 0
for f in FILES:
    for r in json.load(open(os.path.join(D, f)))["records"]:
        n += 1
        ver = re.sub(r" ?\([^()]*\)", "", r["framework"]["version"]).split(";")[0][:70]
        gpu = r["hardware"]["gpu"].split(" (")[0]
        if r["hardware"].get("gpus", 1) > 1:
            gpu = f"{r['hardware']['gpus']} x {gpu}"
        src = r["source"]["locator"].split(" at ")[0].replace("github.com/", "")[:70] + f" ({r['source']['confidence']})"
        print(f"| `{r['id']}` | {r['framework']['name'][:45]} | {ver} | {short_stat(r['statistic'])} | {gpu} | {short_cfg(r)} | {fmt_val(r)} | {src} |")
print(f"\n{n} records.")
