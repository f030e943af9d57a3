import json
MEG = "NVIDIA/Megatron-LM"
t1_src = {
  "citation": "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC21, arXiv:2104.04473), Table 1",
  "locator": "transcribed from the image images/cases_april2021.png of github.com/NVIDIA/Megatron-LM as added in commit 50a4b5fa0280a160cc1b03a1c15faddbc1b1da9a (2021-04-08, 'Release fixes'; read at 937571cfd49d0194c06123af93e310cd3637cf50^, removed in that commit); layouts from examples/academic_paper_scripts/sc21/run_table_1.sh at d98e8a64ddf34856e74b24714e3bedb2f5a39553",
  "confidence": "T",
}
# size, hidden, layers, params_b, mp, gpus, batch, tflops, pct, pflops ; tp, pp, mbs, heads, ddp, layers_per_virtual
t1 = [
 ("1.7B",2304,24,1.7,1,32,512,137,44,4.4, 1,1,16,24,"torch",None),
 ("3.6B",3072,30,3.6,2,64,512,138,44,8.8, 2,1,16,32,"torch",None),
 ("7.5B",4096,36,7.5,4,128,512,142,46,18.2, 4,1,16,32,"torch",None),
 ("18B",6144,40,18.4,8,256,1024,135,43,34.6, 8,1,8,48,"torch",None),
 ("39B",8192,48,39.1,16,512,1536,138,44,70.8, 8,2,4,64,"local",None),
 ("76B",10240,60,76.1,32,1024,1792,140,45,143.8, 8,4,2,80,"local",5),
 ("145B",12288,80,145.6,64,1536,2304,148,47,227.1, 8,8,2,96,"local",5),
 ("310B",16384,96,310.1,128,1920,2160,155,50,297.4, 8,16,1,128,"local",3),
 ("530B",20480,105,529.6,280,2520,2520,163,52,410.2, 8,35,1,128,"local",1),
 ("1T",25600,128,1008.0,512,3072,3072,163,52,502.0, 8,64,1,160,"local",None),
]
recs = []
for (size,h,l,pb,mp,g,b,tf,pct,pf,tp,pp,mbs,heads,ddp,lpv) in t1:
    assert tp*pp == mp, size
    dp = g // mp
    virtual = 1 if lpv is None else (l // pp) // lpv
    recs.append({
      "id": f"megatron-sc21-table1-{size}",
      "kind": "training_throughput",
      "role": "calibration",
      "framework": {"name": "Megatron-LM", "version": "April 2021 (SC21 artifact; fp16, --DDP-impl " + ddp + ")"},
      "hardware": {"gpu": "A100-SXM4-80GB", "gpus": g, "gpus_per_node": 8, "interconnect": "Selene: NVLink 3 within a node, 8 x 200 Gb/s HDR InfiniBand per node"},
      "statistic": "achieved TFLOP/s per GPU, Narayanan et al. 2021 Eq. 3 (counts the recompute forward: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration)",
      "value": tf, "unit": "TFLOP/s per GPU",
      "also_reported": {"percent_of_peak": pct, "aggregate_pflops": pf, "parameters_billion": pb},
      "config": {
        "model": {"family": "GPT (Megatron)", "layers": l, "hidden": h, "heads": heads, "ffn": 4*h, "vocab": 51200, "seq_len": 2048, "positions": "learned", "tied_embeddings": True},
        "layout": {"tp": tp, "pp": pp, "dp": dp, "micro_batch": mbs, "global_batch": b, "virtual_stages": virtual, "sequence_parallel": False},
        "precision": "fp16 mixed precision (--fp16, loss scale 8192), Adam",
        "recompute": "full (--activations-checkpoint-method uniform)",
      },
      "unpublished": [
        "vocab 51,200 and sequence 2,048 are from the repository README's description of these runs, not the table",
        "gradient accumulation = global batch / (micro-batch x DP), implied",
      ],
      "source": t1_src,
    })
json.dump({"schema": "vram-explorer.published/1", "about": "Narayanan et al. 2021 Table 1: the time model's calibration set (issue 13)", "records": recs}, open("megatron-sc21-table1.json","w"), indent=1, ensure_ascii=False)

ws_src = {
  "citation": "Megatron-LM README, Performance Benchmarking: weak-scaling table (Megatron-Core r0.8.0 on H100)",
  "locator": "transcribed from the image images/model_table.png of github.com/NVIDIA/Megatron-LM (added in f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4, 2024-07-15; unchanged at d98e8a64ddf34856e74b24714e3bedb2f5a39553); benchmark configuration from README.md at the same commit",
  "confidence": "T",
}
# size, heads, hidden, layers, tp, pp, dp, gpus, batch, tflops, mfu, pflops
ws = [
 ("1.7B",16,2048,24,1,1,48,48,192,408.8,41,19.6),
 ("7.1B",32,4096,30,2,1,48,96,192,465.9,47,44.7),
 ("16B",48,6144,32,4,1,48,192,192,489.1,49,93.9),
 ("32B",56,7168,48,8,1,48,384,192,459.6,46,176.5),
 ("70B",64,8192,84,8,2,48,768,384,419.7,42,322.3),
 ("119B",80,10240,92,8,4,48,1536,768,420.5,43,645.9),
 ("177B",96,12288,96,8,6,48,2304,1152,432.8,44,997.2),
 ("314B",128,16384,96,8,8,48,3072,1536,474.4,48,1457.4),
 ("462B",144,18432,112,8,16,48,6144,3072,459.9,47,2825.6),
]
# The settings docs/research/h100-weak-scaling-configs.md sourced or deduced (its §2.2, §3, §5): virtual
# stages per PP degree (one layer per virtual stage), micro-batch 4 at PP = 1 and 1 with a pipeline.
NOTE = "docs/research/h100-weak-scaling-configs.md"
WS_V = {2: 42, 4: 23, 6: 16, 8: 12, 16: 7}
WS_V_WHY = {
  2: "one layer per virtual stage, the uniform reading (guess; 2, 3, 6, 7, 14, 21 also divide 42)",
  4: "the only interleaving r0.8 allows for 23 layers per stage (deduced)",
  6: "one layer per virtual stage (guess within v >= 4 deduced from the README's strong-scaling figure, §3)",
  8: "one layer per virtual stage, the uniform reading (guess; 2, 3, 4, 6 also divide 12)",
  16: "the only interleaving r0.8 allows for 7 layers per stage (deduced)",
}

def ws_assumptions(tp, pp):
    out = []
    if pp == 1:
        out.append("micro-batch 4 (deduced, " + NOTE + " §5: with micro-batch 1 the sourced data-parallel overlap window (last micro-batch's backward, Megatron-Core r0.8 schedules.py l. 390-422 at f2e5db402c) leaves 34-59 % of the step exposed, beyond the measured MFU; NVIDIA's PP = 1 H100 configs of the time use 4), so one micro-batch per step")
    else:
        out.append("interleaved schedule, virtual stages %d: %s; the README's 'pipeline-parallel communication (enabled by default)' holds only for the interleaved schedule in r0.8 (arguments.py l. 271-277 at f2e5db402c), " % (WS_V[pp], WS_V_WHY[pp]) + NOTE + " §2.2")
        out.append("micro-batch 1 (deduced for 177B from the strong-scaling figure, guessed for the other PP rows; NVIDIA's PP configs of the time all use 1)")
    out.append("sequence parallelism %s (forced: --tp-comm-overlap asserts it, and r0.8 turns it off at TP 1; arguments.py l. 199-200, 468-469)" % ("on" if tp > 1 else "off"))
    out.append("distributed optimizer on (forced: --overlap-param-gather asserts it, arguments.py l. 279-281); FP32 gradient reduce-scatter (l. 299-305)")
    out.append("still unpublished: recomputation (none assumed), precision (BF16 assumed, " + NOTE + " §2.1), attention kernel (fused assumed), FFN (4h GELU assumed), positions (learned assumed), cross-entropy fusion (off assumed)")
    return out

recs = []
for (size,heads,h,l,tp,pp,dp,g,b,tf,mfu,pf) in ws:
    assert tp*pp*dp == g, size
    recs.append({
      "id": f"megatron-core-r0.8-weak-scaling-{size}",
      "kind": "training_throughput",
      "role": "calibration",
      "framework": {"name": "Megatron-Core", "version": "r0.8.0"},
      "hardware": {"gpu": "H100-SXM5-80GB", "gpus": g, "gpus_per_node": 8, "interconnect": "not published (Eos-class DGX H100 assumed: NVLink 4 within a node, 8 x 400 Gb/s NDR InfiniBand per node)"},
      "statistic": "model TFLOP/s per GPU (MFU x 989.4 dense BF16 peak; model FLOPs exclude recomputation)",
      "value": tf, "unit": "TFLOP/s per GPU",
      "also_reported": {"mfu_percent": mfu, "aggregate_pflops": pf},
      "config": {
        "model": {"family": "GPT (Megatron-Core)", "layers": l, "hidden": h, "heads": heads, "ffn": 4*h, "vocab": 131072, "seq_len": 4096, "tied_embeddings": False},
        "layout": {"tp": tp, "pp": pp, "dp": dp,
                   "micro_batch": 4 if pp == 1 else 1, "virtual_stages": 1 if pp == 1 else WS_V[pp],
                   "sequence_parallel": tp > 1, "distributed_optimizer": True, "global_batch": b},
        "communication": "--overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap, PP overlap (README)",
      },
      "unpublished": ws_assumptions(tp, pp),
      "source": ws_src,
    })
json.dump({"schema": "vram-explorer.published/1", "about": "Megatron-LM README weak-scaling table (H100): the time model's second calibration set (issue 13)", "records": recs}, open("megatron-core-weak-scaling-h100.json","w"), indent=1, ensure_ascii=False)

k_src = {
  "citation": "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models (arXiv:2205.05198), Table 5 (end-to-end iteration time, s)",
  "locator": "values as transcribed in calculon-ai/calculon calculon/llm/validation.py (seqsel_tab5) at caa4b11f8fe1fee3ba57adaacb7590d7deabd053; configurations from that repository's models/*.json and validation/seqsel/tab5/*.json",
  "confidence": "S",
}
kt = [
 ("22B","megatron-22B",6144,48,64,8,1,4,4,1,{"full":1.42,"seqsel":1.10}),
 ("175B","gpt3-175B",12288,96,96,8,8,64,1,3,{"full":18.13,"seqsel":13.75}),
 ("530B","turing-530B",20480,105,128,8,35,280,1,3,{"full":49.05,"seqsel":37.83}),
 ("1T","megatron-1T",25600,128,160,8,64,512,1,1,{"full":94.42,"seqsel":71.49}),
]
recs = []
for (size,cname,h,l,heads,tp,pp,b,mbs,inter,vals) in kt:
    for mode,v in vals.items():
        recs.append({
          "id": f"korthikanti-2022-table5-{size}-{mode}",
          "kind": "training_step_time",
          "role": "check",
          "framework": {"name": "Megatron-LM", "version": "2022 (sequence parallelism + selective recomputation)"},
          "hardware": {"gpu": "A100-SXM4-80GB", "gpus": tp*pp, "gpus_per_node": 8},
          "statistic": "end-to-end iteration time (one optimizer step, data-parallel size 1)",
          "value": v, "unit": "s",
          "config": {
            "model": {"family": "GPT", "layers": l, "hidden": h, "heads": heads, "ffn": 4*h, "seq_len": 2048, "calculon_model": cname},
            "layout": {"tp": tp, "pp": pp, "dp": 1, "micro_batch": mbs, "global_batch": b, "virtual_stages": inter, "sequence_parallel": mode == "seqsel"},
            "precision": "fp16 (calculon's description)",
            "recompute": "full" if mode == "full" else "selective (attention core only) with sequence parallelism",
          },
          "unpublished": ["vocabulary size: not in calculon's model description (calculon ignores the embedding); 51,200 as in the SC21 runs is assumed"],
          "source": k_src,
        })
json.dump({"schema": "vram-explorer.published/1", "about": "Korthikanti et al. 2022 Table 5: check records for the time model (not for fitting; issue 13)", "records": recs}, open("korthikanti-2022-table5.json","w"), indent=1, ensure_ascii=False)
print("ok")
