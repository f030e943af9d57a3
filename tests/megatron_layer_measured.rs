//! One dense GPT layer of Megatron-Core 0.16.1's own modules (`--transformer-impl local`:
//! LayerNorm, `DotProductAttention`, GeLU MLP with biases), measured on CPU at TP 1 and TP 2, with
//! and without dropout (tests/data/measured/megatron-core-layer.json, made by
//! scripts/measure/megatron_moe.py --layers): the Megatron profile's per-layer saved activations
//! (Korthikanti §4.1, with the norms' FP32 statistics) and the global buffer's score input, to the
//! byte. The record ran with CPU dropout masks (the input's type), one BF16 softmax (what the GPU's
//! fused softmax keeps) and the torch softmax's causal mask (which the fused kernel does not make).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

#[path = "support/saved.rs"]
mod saved;

use saved::{forward_activations, resolved};
use vram_explorer::estimator::memory::frameworks::megatron;
use vram_explorer::scenario::{
    AttentionKernel, DropoutMask, Dtype, FfnKind, Mode, NormKind, PositionKind, PrecisionMode,
    Profile, Scenario,
};

const MEASURED: &str = include_str!("data/measured/megatron-core-layer.json");

/// The record's layer as a Megatron scenario of `layers` such layers.
fn scenario(layers: u32, tp: u32, dropout: bool) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.head_dim, t.ffn) = (layers, 512, 8, 8, 64, 2048);
    (t.ffn_kind, t.norm, t.bias) = (FfnKind::Gelu, NormKind::LayerNorm, true);
    (t.positions, t.vocab, t.max_positions) = (PositionKind::Learned, 1024, 1024);
    s.implementation.profile = Profile::Megatron;
    s.implementation.megatron_local_layers = true;
    s.implementation.dropout_mask = DropoutMask::Float;
    s.strategies.attention = AttentionKernel::Materialized;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.precision.attention_fp32 = false;
    s.parallel.tp = tp;
    s.workload.micro_batch = 1;
    s.workload.seq_len = 1024;
    s.workload.dropout = dropout;
    s
}

/// One layer's saved bytes: the difference between four and two layers, halved (what the first
/// and last stages add beside the layers cancels).
fn per_layer(tp: u32, dropout: bool) -> f64 {
    (forward_activations(&scenario(4, tp, dropout))
        - forward_activations(&scenario(2, tp, dropout)))
        / 2.0
}

#[test]
fn megatron_local_layer_saves_what_megatron_core_saves() {
    let doc: serde_json::Value = serde_json::from_str(MEASURED).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        let tp = u32::try_from(r["tp"].as_u64().unwrap()).unwrap();
        let dropout = r["dropout"].as_f64().unwrap() > 0.0;
        // The layer's input, made before the region, is what its first norm keeps: the estimate
        // counts it with the layer. The scalar loss (4 B) is another storage, and the s × s bool
        // causal mask the CPU's torch softmax keeps (`masked_fill_`) a third: at 1,024 keys a GPU
        // runs the fused softmax (Megatron-LM's default), which makes none.
        let input = 2.0 * 1024.0 * 512.0;
        let mask = 1024.0 * 1024.0;
        let measured = r["saved_for_backward"].as_f64().unwrap() + input - 4.0 - mask;
        let estimated = per_layer(tp, dropout);
        assert_eq!(estimated, measured, "{}", r["name"]);

        let (c, m, z) = resolved(&scenario(4, tp, dropout));
        let scores = megatron::gather_requests(&c, &m, &z, 4.0, false).scores;
        assert_eq!(
            scores,
            r["global_memory_buffer"].as_f64().unwrap(),
            "{}",
            r["name"]
        );
    }
}

/// Past 4,096 keys a GPU's fused softmax no longer runs: Megatron's own attention then keeps the
/// torch fallback's s × s bool causal mask in every layer (as the record's CPU rows do); Transformer
/// Engine's attention does not.
#[test]
fn megatron_local_attention_keeps_the_fallback_mask_past_4096_keys() {
    let extra = |seq: u32| {
        let with = |local: bool| {
            let mut s = scenario(4, 1, false);
            s.workload.seq_len = seq;
            s.model.transformer.max_positions = seq;
            s.implementation.megatron_local_layers = local;
            forward_activations(&s)
        };
        with(true) - with(false)
    };
    assert_eq!(extra(4096), 0.0);
    assert_eq!(extra(8192), 4.0 * 8192.0 * 8192.0);
}
