//! torchtitan's per-op selective checkpointing (`Checkpointing::PerOp`; torchtitan 9dec370
//! `parallelize_llama.py` l. 214–260, docs/frameworks/torchtitan.md): what each layer keeps beyond
//! full checkpointing's layer input, by hand, and what it recomputes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

#[path = "support/saved.rs"]
mod saved;

use saved::forward_activations as saved;
use vram_explorer::estimator::estimate;
use vram_explorer::scenario::*;

/// Llama-3.1-8B, micro-batch 2 × 8,192 tokens, BF16, flash attention, one GPU: torchtitan's
/// Table 1 row without its FSDP (the saved tensors do not depend on it).
fn llama31_8b(c: Checkpointing) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.head_dim) = (32, 4096, 32, 8, 128);
    (t.ffn, t.vocab, t.ffn_kind) = (14_336, 128_256, FfnKind::SwiGlu);
    t.tied_embeddings = false;
    (s.workload.micro_batch, s.workload.seq_len) = (2, 8192);
    s.workload.dropout = false;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.strategies.attention = AttentionKernel::Flash;
    s.strategies.checkpointing = c;
    s
}

/// Beyond the layer input, each layer keeps wq's output (b·s·4096), wv's (b·s·1024), w1's
/// (b·s·14336) and w2's (b·s·4096) in BF16, SDPA's output (b·s·4096, BF16) and its log-sum-exp
/// (b·32·s, FP32): 2 · 16,384 · (4096 + 1024 + 14,336 + 4096 + 4096) + 4 · 2 · 32 · 8192 =
/// 908,066,816 bytes, 32 layers.
#[test]
fn each_layer_keeps_every_other_matmul_and_the_attention_output() {
    let per_layer =
        2.0 * 16_384.0 * (4096.0 + 1024.0 + 14_336.0 + 4096.0 + 4096.0) + 4.0 * 2.0 * 32.0 * 8192.0;
    assert_eq!(per_layer, 908_066_816.0);
    let extra = saved(&llama31_8b(Checkpointing::PerOp)) - saved(&llama31_8b(Checkpointing::Full));
    assert!(
        (extra - 32.0 * per_layer).abs() < 1.0,
        "{extra} vs {}",
        32.0 * per_layer
    );
    // Far less than selective recomputation (attention core only) keeps, more than full.
    assert!(
        saved(&llama31_8b(Checkpointing::PerOp)) < saved(&llama31_8b(Checkpointing::Selective))
    );
}

/// Materialised attention runs SDPA's math path (`bmm`s, not in `_save_list`): nothing of the
/// attention is kept, only the matmul outputs.
#[test]
fn the_math_path_keeps_no_attention_output() {
    let mut flash = llama31_8b(Checkpointing::PerOp);
    let mut math = flash.clone();
    math.strategies.attention = AttentionKernel::Materialized;
    let (mut full_flash, mut full_math) = (flash.clone(), math.clone());
    full_flash.strategies.checkpointing = Checkpointing::Full;
    full_math.strategies.checkpointing = Checkpointing::Full;
    let kept_flash = saved(&flash) - saved(&full_flash);
    let kept_math = saved(&math) - saved(&full_math);
    let attention = 32.0 * (2.0 * 16_384.0 * 4096.0 + 4.0 * 2.0 * 32.0 * 8192.0);
    assert!((kept_flash - kept_math - attention).abs() < 1.0);
    flash.strategies.checkpointing = Checkpointing::None;
    math.strategies.checkpointing = Checkpointing::None;
    assert!(saved(&math) > saved(&flash));
}

/// The recomputation: wk, wo and w3 again (a third of the layer's matmul FLOPs for Llama-3.1-8B:
/// 4096 · (1024 + 4096 + 14,336) of 4096 · (2·4096 + 2·1024 + 3·14,336)), between selective and
/// full in hardware FLOPs.
#[test]
fn recomputes_every_other_matmul() {
    let hw = |c| estimate(&llama31_8b(c)).performance.hardware_flops;
    let (none, per_op, full) = (
        hw(Checkpointing::None),
        hw(Checkpointing::PerOp),
        hw(Checkpointing::Full),
    );
    assert!(none < per_op && per_op < full, "{none} {per_op} {full}");
    let share = (1024.0 + 4096.0 + 14_336.0) / (2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14_336.0);
    let matmul_per_token = 2.0 * 4096.0 * (2.0 * 4096.0 + 2.0 * 1024.0 + 3.0 * 14_336.0);
    let expected = 16_384.0 * 32.0 * matmul_per_token * share;
    assert!(
        ((per_op - none) / expected - 1.0).abs() < 1e-9,
        "{} vs {expected}",
        per_op - none
    );
}

/// A fused QKV projection (GPT-2's `c_attn`) is one `aten.mm`: the 1st (kept) is QKV, the 2nd the
/// output projection, the 3rd (kept) `c_fc`, the 4th `c_proj`. GPT-2 small at 2 × 1,024 tokens,
/// BF16, flash: beyond the layer input each layer keeps QKV (b·s·3·768), `c_fc`'s output
/// (b·s·3072) and SDPA's output and log-sum-exp: 2 · 2048 · (2304 + 3072 + 768) + 4 · 2 · 12 ·
/// 1024 = 25,264,128 bytes, 12 layers; it recomputes only `c_proj` and the MLP's `c_proj`.
#[test]
fn a_fused_qkv_projection_is_one_matmul() {
    let gpt2 = |c| {
        let mut s = llama31_8b(c);
        let t = &mut s.model.transformer;
        (t.layers, t.hidden, t.heads, t.kv_heads, t.head_dim) = (12, 768, 12, 12, 64);
        (t.ffn, t.vocab, t.ffn_kind) = (3072, 50_257, FfnKind::Gelu);
        (t.fused_qkv, t.tied_embeddings) = (true, true);
        s.workload.seq_len = 1024;
        s
    };
    let per_layer = 2.0 * 2048.0 * (2304.0 + 3072.0 + 768.0) + 4.0 * 2.0 * 12.0 * 1024.0;
    assert_eq!(per_layer, 25_264_128.0);
    let extra = saved(&gpt2(Checkpointing::PerOp)) - saved(&gpt2(Checkpointing::Full));
    assert!((extra - 12.0 * per_layer).abs() < 1.0, "{extra}");
    // Recomputed: the two output projections, 768·768 + 3072·768 of 4·768² + 2·768·3072 per token.
    let hw = |c| estimate(&gpt2(c)).performance.hardware_flops;
    let share = (768.0 * 768.0 + 3072.0 * 768.0) / (4.0 * 768.0 * 768.0 + 2.0 * 768.0 * 3072.0);
    let expected = 2048.0 * 12.0 * 2.0 * (4.0 * 768.0 * 768.0 + 2.0 * 768.0 * 3072.0) * share;
    let got = hw(Checkpointing::PerOp) - hw(Checkpointing::None);
    assert!((got / expected - 1.0).abs() < 1e-9, "{got} vs {expected}");
}

/// Measured with torchtitan's own code on CPU (scripts/measure/torchtitan_sac.py, torchtitan 0.2.2,
/// torch 2.15.0; tests/data/measured/torchtitan-per-op-sac-cpu.json): its llama3 `Transformer` (4
/// layers, dim 256, 4 heads, 2 KV heads, FFN 768, FP32, 2 × 128 tokens) under `apply_ac` with the
/// `op` policy keeps, beyond full checkpointing's layer inputs, exactly the outputs of wq, wv, w1
/// and w2. On CPU SDPA runs `_scaled_dot_product_flash_attention_for_cpu`, which is not in the save
/// list, so its output is recomputed: the estimator's rule without a kept attention output (the
/// math path's) is the one to compare, and it matches to the byte.
#[test]
fn torchtitans_own_policy_on_cpu_keeps_what_the_rule_says() {
    let rec: serde_json::Value =
        serde_json::from_str(include_str!("data/measured/torchtitan-per-op-sac-cpu.json")).unwrap();
    let sh = &rec["shape"];
    let n = |k: &str| u32::try_from(sh[k].as_u64().unwrap()).unwrap();
    let run = |mode: &str| {
        rec["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mode"] == mode)
            .unwrap()["saved_in_forward_bytes"]
            .as_f64()
            .unwrap()
    };
    let measured = run("op") - run("full");
    assert_eq!(measured, 5_767_168.0);
    let titan = |c| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        let t = &mut s.model.transformer;
        (t.layers, t.hidden, t.heads, t.kv_heads) =
            (n("n_layers"), n("dim"), n("n_heads"), n("n_kv_heads"));
        (t.head_dim, t.ffn, t.vocab) = (n("head_dim"), n("ffn"), n("vocab_size"));
        (t.ffn_kind, t.tied_embeddings) = (FfnKind::SwiGlu, false);
        (s.workload.micro_batch, s.workload.seq_len) = (n("batch"), n("seq"));
        s.workload.dropout = false;
        s.precision.mode = PrecisionMode::Uniform;
        s.precision.compute = Dtype::Fp32;
        s.strategies.attention = AttentionKernel::Materialized;
        s.strategies.checkpointing = c;
        s
    };
    let estimated = saved(&titan(Checkpointing::PerOp)) - saved(&titan(Checkpointing::Full));
    assert!(
        (estimated - measured).abs() < 1.0,
        "{estimated} vs {measured}"
    );
    // The whole forward, each mode: the estimator's saved activations (the Hugging Face layer
    // rules, which include the logits) against what torchtitan's forward left live (its storages
    // plus the logits), to the byte once the Hugging Face rotary tables are taken out: Transformers
    // builds cos and sin per forward ([s, head_dim] FP32 each, kept for backward), torchtitan keeps
    // `freqs_cis` as a buffer. Eager SDPA on CPU keeps its output and log-sum-exp as flash does;
    // under the `op` policy the CPU kernel's are not kept (above), the CUDA kernels' are: each
    // layer's b·s·heads·d output and b·heads·s log-sum-exp, FP32, come off the estimate here.
    let (b, seq) = (f64::from(n("batch")), f64::from(n("seq")));
    let (heads, d) = (f64::from(n("n_heads")), f64::from(n("head_dim")));
    let rotary = 2.0 * seq * d * 4.0;
    let cuda_only = f64::from(n("n_layers")) * (4.0 * b * seq * heads * d + 4.0 * b * heads * seq);
    let logits = rec["runs"][0]["logits_bytes"].as_f64().unwrap();
    for (mode, c, cpu_kernel) in [
        ("none", Checkpointing::None, 0.0),
        ("full", Checkpointing::Full, 0.0),
        ("op", Checkpointing::PerOp, cuda_only),
    ] {
        let mut s = titan(c);
        s.strategies.attention = AttentionKernel::Flash;
        let estimated = saved(&s) - rotary - cpu_kernel;
        let measured = run(mode) + logits;
        assert!(
            (estimated - measured).abs() < 1.0,
            "{mode}: {estimated} vs {measured}"
        );
    }
}
