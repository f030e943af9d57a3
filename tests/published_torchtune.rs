//! torchtune against its published GPU memory (issue 12 item 5): the README's optimization-flags
//! table (Llama 3.2 3B on an A100, `active_bytes.all.peak`), its Llama 3.1 table ("Peak Memory per
//! GPU", statistic unstated), the LoRA / QLoRA tutorials (`max_memory_reserved`, GB) and the e2e
//! tutorial's after-init log, in tests/data/published/torchtune-readme-tutorials.json (sources in
//! docs/published-memory.md).
//!
//! Each record is rebuilt from its config with `Profile::Torchtune` (docs/frameworks/torchtune.md):
//! `CEWithChunkedOutputLoss` as 8 output chunks, `torch.nn.CrossEntropyLoss` on the upcast logits as
//! one chunk, activation checkpointing, offloading and optimizer-in-backward as the recipe flags,
//! torchao NF4 (double-quantized) for QLoRA, FSDP2 as the generic ZeRO-3 rule. Check records:
//! nothing is fitted. Known misses name their mechanism and stay out of the modelled figures; the
//! table prints with `cargo test --test published_torchtune -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::too_many_lines,
    reason = "a test fails by panicking; table-driven tests run long"
)]

#[path = "support/published_table.rs"]
mod published_table;

use published_table::{Case, Stat, copy_dims, records, report, u, value_bytes};
use serde_json::Value;
use vram_explorer::estimator::{Component, estimate};
use vram_explorer::hardware::GpuId;
use vram_explorer::scenario::*;

const TORCHTUNE: &str = include_str!("data/published/torchtune-readme-tutorials.json");

/// A setting of the record's config: under `options` in the README table's rows, at the top
/// level elsewhere.
fn opt<'a>(c: &'a Value, key: &str) -> &'a Value {
    if c["options"][key].is_null() {
        &c[key]
    } else {
        &c["options"][key]
    }
}

/// A flag given as a boolean or as a description (a non-empty description means on).
fn on(v: &Value) -> bool {
    v.as_bool()
        .unwrap_or_else(|| v.as_str().is_some_and(|s| !s.is_empty()))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

fn model(s: &mut Scenario, m: &Value) {
    let t = &mut s.model.transformer;
    copy_dims(m, t);
    t.vocab = u(m, "vocab");
    t.tied_embeddings = m["tied_embeddings"].as_bool().unwrap();
    t.ffn_kind = FfnKind::SwiGlu;
    t.norm = NormKind::RmsNorm;
    t.positions = PositionKind::Rotary;
    t.bias = false;
    // The builder's `max_seq_len`, which sizes the RoPE cache (not the training length):
    // `lora_llama2_7b` 4096 (ff594c231 `_model_builders.py` line 42); the `llama3_1` and `llama3_2`
    // builders 131,072 (30b8519e8 / 1814feb17 `_model_builders.py`).
    t.max_positions = if llama3_scaled_rope(m) { 131_072 } else { 4096 };
}

/// Llama 3.1 / 3.2 are built by `llama3_1` / `llama3_2`, which pass one `Llama3ScaledRoPE` to every
/// layer (`_component_builders.py` line 205 at 30b8519e8, line 209 at 1814feb17); Llama 2's LoRA
/// attention builds its own (ff594c231 `lora_llama2_self_attention`).
fn llama3_scaled_rope(m: &Value) -> bool {
    let id = text(&m["hf_id"]);
    id.contains("Llama-3.1") || id.contains("Llama-3.2")
}

fn peft(s: &mut Scenario, c: &Value) {
    s.peft.method = match text(&c["method"]) {
        "lora" => PeftMethod::Lora,
        "qlora" => PeftMethod::Qlora,
        _ => PeftMethod::Full,
    };
    if s.peft.method == PeftMethod::Full {
        return;
    }
    let l = &c["lora"];
    s.peft.rank = u(l, "r");
    let t = &l["targets"];
    let mlp = t["mlp"] == true;
    s.peft.targets = LoraTargets {
        q: t["q"] == true,
        k: t["k"] == true,
        v: t["v"] == true,
        o: t["o"] == true,
        gate: mlp,
        up: mlp,
        down: mlp,
    };
    s.peft.lora_dropout = l["dropout"].as_f64().unwrap_or(0.0);
    // torchao NF4: block 64, scales quantized to int8 in groups of 256 (`to_nf4`).
    s.peft.double_quant = true;
}

fn gpu(r: &Value) -> GpuId {
    let g = text(&r["hardware"]["gpu"]);
    if g.contains("4090") {
        GpuId::Rtx4090
    } else if g.contains("A100") {
        GpuId::A100Sxm80
    } else {
        // The A6000 (48 GB) and the tutorials' unstated GPU: the tensor peak does not depend on
        // the card, the L40S has the A6000's 48 GB.
        GpuId::L40S
    }
}

/// The scenario a record's config describes.
fn scenario_for(r: &Value) -> Scenario {
    let c = &r["config"];
    let seq = c["max_seq_length"].as_u64().map_or(1, |v| v as u32);
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    model(&mut s, &c["model"]);
    s.workload.seq_len = seq;
    // "batch size 2" in every README row; the tutorials' configs say 2 as well.
    s.workload.micro_batch = c["layout"]["micro_batch"].as_u64().map_or(2, |v| v as u32);
    s.workload.grad_accum_steps = c["layout"]["gradient_accumulation"]
        .as_u64()
        .or_else(|| c["gradient_accumulation"].as_u64())
        .map_or(1, |v| v as u32);
    s.workload.dropout = false;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.strategies.attention = AttentionKernel::Flash;
    s.strategies.checkpointing = if on(opt(c, "activation_checkpointing")) {
        Checkpointing::Full
    } else {
        Checkpointing::None
    };
    let optimizer = text(opt(c, "optimizer"));
    s.optimizer.kind = if optimizer.contains("8-bit") || optimizer.contains("AdamW8bit") {
        OptimizerKind::Adam8bit
    } else {
        OptimizerKind::AdamW
    };
    // `fused=True` runs one kernel per parameter group, without foreach's temporaries.
    s.optimizer.foreach = !optimizer.contains("fused=True");
    // bitsandbytes' paged optimizers allocate their states with cudaMallocManaged
    // (bitsandbytes/functional.py `get_paged`), outside PyTorch's allocator and its statistics.
    s.peft.paged_optimizer = optimizer.contains("Paged");
    if optimizer.contains("torchao") {
        s.optimizer.eight_bit_library = EightBitLibrary::Torchao;
    }
    let tt = &mut s.implementation.torchtune;
    tt.output_chunks = if text(opt(c, "loss")).contains("Chunked") {
        8
    } else {
        1
    };
    tt.optimizer_in_backward =
        on(opt(c, "optimizer_in_backward")) || optimizer.contains("optimizer_in_bwd=True");
    tt.activation_offloading = on(opt(c, "activation_offloading"));
    tt.compile = on(opt(c, "compile"));
    // torchtune 0.1 (the Llama 2 tutorials): FP32 logits, a shifted copy kept through backward.
    tt.legacy_loss = text(&r["framework"]["version"]).contains("ff594c231");
    // torchtune's RMSNorm became `F.rms_norm` on 2024-11-25 (#2054): the README's tables
    // (1814feb17, 30b8519e8) and the 0.1 tutorials ran the cast-back RMSNorm.
    tt.legacy_rms_norm = ["ff594c231", "1814feb17", "30b8519e8"]
        .iter()
        .any(|c| text(&r["framework"]["version"]).contains(c));
    if llama3_scaled_rope(&c["model"]) {
        tt.rope_cache = RopeCache::Shared;
    }
    s.implementation.profile = Profile::Torchtune;
    peft(&mut s, c);
    let parallel = text(&c["parallel"]);
    if parallel.contains("FSDP2") {
        // FSDP2 `fully_shard` over 8 GPUs (torchtune's `shard_model`, one unit per layer).
        s.parallel.dp = u(&r["hardware"], "gpus");
        s.strategies.zero = ZeroStage::Stage3;
        s.implementation.sharding = vram_explorer::scenario::Sharding::Fsdp2;
        // 70B_full.yaml (line 97 at 30b8519e8): the embedding and the head are units of their own.
        s.implementation.fsdp.custom_sharded_layers = parallel.contains("custom_sharded_layers");
        if parallel.contains("fsdp_cpu_offload=True") {
            s.strategies.offload_params = OffloadTarget::Cpu;
            s.strategies.offload_optimizer = OffloadTarget::Cpu;
        }
    }
    s.gpu = GpuChoice::Catalog(gpu(r));
    s
}

/// Records whose gap has a mechanism the estimator does not model (or none found): id prefix and
/// reason.
const KNOWN_MISSES: [(&str, &str); 9] = [
    (
        "torchtune-llama-3.2-3b-full-baseline",
        "the peak step's sequence length is unpublished: unpacked Alpaca batches are padded to their \
         longest sample (a few hundred tokens); rebuilt at the 4096 bound",
    ),
    ("torchtune-llama-3.2-3b-full-chunked-ce", COMPILED_LAYERS),
    (
        "torchtune-llama-3.2-3b-full-activation-checkpointing",
        "the estimate's peak is the optimizer step (activations are gone there, so compiled \
         layers do not matter): foreach AdamW's one parameter-sized BF16 temporary (6.0 GiB) on \
         top of weights, gradients and moments (23.9 GiB); the published 24.9 GiB (active) leaves \
         no room for it. The README gives the optimizer only as AdamW: with fused=True (no \
         temporaries) the row is +2.3 %",
    ),
    (
        "torchtune-llama-3.1-8b-full-1x4090",
        "bitsandbytes PagedAdamW8bit allocates its states with cudaMallocManaged \
         (bitsandbytes/functional.py get_paged), outside PyTorch's allocator and its statistics: on \
         the 24 GB card they are not in the figure; `peft.paged_optimizer` moves states to host only \
         for LoRA / QLoRA, so the 15 GiB of 8-bit states stay in the estimate",
    ),
    (
        "torchtune-llama-3.1-8b-lora-1xa6000",
        "unexplained: the same config is published at 16.2 GiB on a 4090; the column's statistic is \
         unstated",
    ),
    ("torchtune-llama-3.1-70b-full-8xa100", FSDP_70B_FULL),
    (
        "torchtune-llama-3.1-70b-lora-8xa100",
        "unexplained (+11 %; +16 % before the FSDP units inside the blocks were measured, +28 % \
         before FSDP2's backward was modelled reduce-scattering only the adapters' gradients): \
         70B_lora.yaml at 30b8519e8 sets no custom_sharded_layers (it \
         appears, commented out, with #2072) and lora_finetune_distributed.py shards only \
         `layers.i`, so the embedding and the head stay in the root unit as modelled; the \
         statistic is unstated",
    ),
    (
        "torchtune-llama-3.1-405b-qlora-8xa100",
        "405B_qlora.yaml says batch 1 where the README says 2, the statistic is unstated; it sets \
         no custom_sharded_layers at 30b8519e8 (the embedding and head are root, as modelled); \
         +25 % (+45 % before FSDP2 gathered the NF4 blocks as stored, torchao's \
         fsdp_pre_all_gather; +58 % before the FSDP units inside the blocks were measured, +87 % \
         before FSDP2's backward held only the adapters' gradients)",
    ),
    (
        "torchtune-llama-2-7b-qlora-all-r8",
        "unexplained in detail: the reserved peak is already 9.13 GB after model init (also \
         reported), over twice the NF4 weights, so blocks allocated and freed at init stay reserved \
         by the caching allocator and set the figure (torchtune 0.1 builds one BF16 layer, \
         quantizes it and deep-copies it into every layer, then re-quantizes each loaded weight: \
         which blocks stay reserved is not traced; docs/frameworks/torchtune.md)",
    ),
];

/// 70B_full.yaml (30b8519e8, lines 97-98) sets `custom_sharded_layers: ['tok_embeddings',
/// 'output']` and `fsdp_cpu_offload: True`: both are modelled (`implementation.fsdp
/// .custom_sharded_layers`; the offload as `strategies.offload_params` / `offload_optimizer` on the
/// CPU, FSDP2 `CPUOffloadPolicy` keeping the sharded parameters, gradients and optimizer states
/// on the host), which moved the estimate from +72 % to +49 %; the FSDP units inside the blocks as
/// measured (docs/frameworks/fsdp.md "Inside the blocks": the current and the prefetched unit in
/// backward, no reduce-scatter buffers beside the first layer's backward) to +11 %.
const FSDP_70B_FULL: &str = "unexplained (+11 %; +49 % before the FSDP units inside the blocks \
    were measured): with custom_sharded_layers (embedding and head as FSDP2 units of their own) and \
    fsdp_cpu_offload modelled the rest is not found (statistic unstated)";

const COMPILED_LAYERS: &str = "compile=True also compiles every decoder layer \
    (training.compile_model): inductor's fused RMSNorm / SwiGLU / RoPE intermediates are not \
    modelled (the layers follow eager PyTorch); with chunked CE the published peak falls 8.1 GiB \
    below the unchunked compiled row where the estimate falls 0.2 GiB (1.7 GiB before the tied \
    head's weight gradient was counted in the output backward, measured on CPU): unexplained";

fn cases() -> Vec<Case> {
    records(TORCHTUNE)
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap().to_owned();
            let stat = Stat::of(r);
            let s = scenario_for(r);
            let m = estimate(&s).memory;
            let est = if text(&r["config"]["phase"]).starts_with("after model init") {
                // The log's peak before the optimizer and data exist: the loaded weights and the
                // module buffers built with the model (one shared RoPE cache, FP32
                // [max_seq_len, d/2, 2] + θ: 4·(131,072·128 + 64) B = 64 MiB).
                let d = f64::from(s.model.transformer.head_dim());
                let rope = 4.0 * (f64::from(s.model.transformer.max_positions) * d + d / 2.0);
                m.peak.get(Component::Weights).get() + rope
            } else {
                stat.pick(&m)
            };
            let note = KNOWN_MISSES
                .iter()
                .find(|(k, _)| id.starts_with(k))
                .map(|(_, why)| *why);
            Case {
                id,
                stat,
                published: value_bytes(r),
                estimate: Some(est),
                note,
            }
        })
        .collect()
}

#[test]
fn torchtune_published_memory_table() {
    let cases = cases();
    assert_eq!(cases.len(), 24, "records");
    let s = report("torchtune (Profile::Torchtune)", &cases);
    assert_eq!(s.rebuilt, 24);
    assert_eq!(s.modelled, 15);
    // Issue 12's bars hold on the modelled rows: every allocated case within 10 %, the median
    // ≤ 3 % (3.0 %, the Llama-2 q/v r64 tutorial row; 3.5 % before the 8-bit row was rebuilt as
    // torchao's AdamW8bit, 4.6 % before the full fine-tune step was measured on CPU); worst 9.7 %;
    // all records median 6.2 %, worst 134 % (the unpacked baseline at the 4096 bound).
    s.hold(0.0301, 0.10, 0.07, 1.36);
}

/// torchtune 0.1's loss (`legacy_loss`, the Llama 2 tutorials): the recipe's local keeps the
/// shifted FP32 logits through the loss backward, 4·b·s·V = 4 × 2 × 512 × 32,000 B above the 0.6.1
/// recipe's peak there; the four LoRA rows move from −3.6 … −4.6 % to −2.8 … −3.8 %.
#[test]
fn torchtune_0_1_keeps_the_fp32_logits() {
    let mut n = 0;
    for r in records(TORCHTUNE) {
        let mut s = scenario_for(&r);
        let id = r["id"].as_str().unwrap();
        if !s.implementation.torchtune.legacy_loss || s.peft.method != PeftMethod::Lora {
            continue;
        }
        let legacy = estimate(&s).memory.tensor_peak.get();
        s.implementation.torchtune.legacy_loss = false;
        let recipe_0_6 = estimate(&s).memory.tensor_peak.get();
        assert_eq!(legacy - recipe_0_6, 4.0 * 2.0 * 512.0 * 32_000.0, "{id}");
        n += 1;
    }
    assert_eq!(n, 4);
}

/// The compiled loss is the mechanism of the compile rows' old gap: with `compile=True` modelled
/// (the loss keeps the logits chunks, not an FP32 log-softmax) every row the eager loss put more
/// than 10 % high moves towards the published figure.
#[test]
fn torchtune_compiled_loss_is_the_mechanism() {
    let mut n = 0;
    for r in records(TORCHTUNE) {
        let mut s = scenario_for(&r);
        if !s.implementation.torchtune.compile {
            continue;
        }
        let id = r["id"].as_str().unwrap();
        let published = value_bytes(&r);
        let modelled = Stat::of(&r).pick(&estimate(&s).memory) / published - 1.0;
        s.implementation.torchtune.compile = false;
        let eager = Stat::of(&r).pick(&estimate(&s).memory) / published - 1.0;
        println!(
            "{id}: eager loss {:+.1}%, compiled loss {:+.1}%",
            eager * 100.0,
            modelled * 100.0
        );
        // Never farther where the eager loss was high; closer wherever the peak is at the loss.
        if eager > 0.10 {
            assert!(
                modelled.abs() <= eager.abs(),
                "{id}: {modelled:.3} vs {eager:.3}"
            );
            n += usize::from(modelled.abs() < eager.abs());
        }
    }
    // 9 since FSDP2's LoRA backward holds only the adapters' gradients (the 70B LoRA row's peak
    // moved to the loss); 8 since the FSDP units inside the blocks were measured (its peak is in
    // the layers' backward again, where the loss does not matter); 9 since FSDP2 gathers the 405B
    // QLoRA row's NF4 blocks as stored (its peak moved to the loss); 8 since torchtune's loss runs
    // after the model's forward, where FSDP holds no all-gather output and prefetches no block
    // (`implementation.fsdp.loss`, measured on CPU): that row's peak left the loss again.
    assert_eq!(n, 8);
}

const THROUGHPUT: &str = include_str!("data/published/torchtune-readme-throughput.json");

/// torchtune's published tokens per second beside the same table's memory
/// (tests/data/published/torchtune-readme-throughput.json): checks of the step-time model (issue
/// 13), never fitted. Each row is rebuilt from its memory record's config. The LoRA rows carry
/// the mechanism the parts model missed: a frozen matrix's backward computes no weight gradient
/// (2 GEMM passes, not 3), −20.8 / −19.0 % before, −3.9 / −1.8 % now. The compiled full
/// fine-tunes run 8–13 % faster than estimated, not explained: the eager packed row is within
/// 1 % and checkpointing's cost matches (+27 % step time, published and estimated), so it is
/// what compiling buys (published 1.16 → 0.91 s a step, estimated 1.15 → 1.01 s); a higher GEMM
/// share on one GPU than the A100 share fitted to Megatron-LM's 2021 runs would explain it but
/// would put the compiled LoRA rows 5–10 % above. Guards a little above today's errors; the
/// table prints with `-- --nocapture`.
#[test]
fn torchtune_published_throughput() {
    let configs = records(TORCHTUNE);
    println!("torchtune tokens per second (check records)");
    println!(
        "{:<60} {:>9} {:>9} {:>8}",
        "record", "published", "estimate", "error"
    );
    let mut errors = Vec::new();
    for r in records(THROUGHPUT) {
        let id = r["id"].as_str().unwrap();
        let same = r["config"]["same_as"].as_str().unwrap();
        let config = configs.iter().find(|c| c["id"] == same).expect(same);
        let estimated = estimate(&scenario_for(config))
            .performance
            .throughput
            .tokens_per_s;
        let published = r["value"].as_f64().unwrap();
        let error = estimated / published - 1.0;
        println!(
            "{id:<60} {published:>9.0} {estimated:>9.0} {:>+7.1}%",
            100.0 * error
        );
        if let Some(why) = r["known_miss"].as_str() {
            println!("    known miss: {why}");
            continue;
        }
        errors.push((id.to_owned(), error));
    }
    assert_eq!(errors.len(), 9, "rows compared");
    let mean = errors.iter().map(|(_, e)| e.abs()).sum::<f64>() / errors.len() as f64;
    println!("{} rows: mean |error| {:.1} %", errors.len(), 100.0 * mean);
    for (id, error) in &errors {
        let bound = if id.contains("lora") { 0.05 } else { 0.14 };
        assert!(error.abs() <= bound, "{id}: {:+.1} %", 100.0 * error);
    }
    assert!(mean <= 0.09, "mean |error| {:.1} %", 100.0 * mean);
}
