#!/usr/bin/env python3
"""Markdown table of measured records: python summarize.py FILE.json [...]"""
import json
import sys

for path in sys.argv[1:]:
    recs = json.load(open(path))
    print(f"\n`{path.split('/')[-1]}`\n")
    print("| record | param bytes | optimizer states | saved at end of forward (step 2) | step 2 forward | "
          "step 2 backward | step 2 optimizer | prefill | decode | max \\|allocator − tracker\\| |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        s2 = r["train"]["step2"]
        ef = s2["live_at"]["end_forward"]
        st = s2["live_at"]["start"]
        saved = ef["total"] - st["total"]
        pp = s2["phase_peaks"]
        chk = max(abs(v["diff_bytes"]) for v in r["allocator_check"].values())
        print(f"| {r['name']} | {r['param_bytes']:,} | {r['optimizer_state_bytes']:,} | {saved:,} | "
              f"{pp.get('forward', 0):,} | {pp.get('backward', 0):,} | {pp.get('optimizer', 0):,} | "
              f"{r['inference']['prefill']['peak_total']:,} | {r['inference']['decode']['peak_total']:,} | {chk:,} |")
