//! What a Megatron-Core mixture-of-experts layer saves beside its experts' MLPs (0.16.1,
//! `megatron/core/transformer/moe/`, default settings): the experts' input rows, whole under
//! sequence parallelism (the dispatcher all-gathers the tokens over the expert tensor-parallel
//! group); the router's top-k indices and FP32 softmax over the k chosen logits on the rank's own
//! tokens; the all-gather dispatcher's routing weights and map over every token (`masked_select`'s
//! input); no expert output (the routing weights multiply the activation inside the experts).
//! Before, the Hugging Face rule was used: two h-wide rows per routed token, both divided by the
//! sequence-parallel degree, and an FP32 softmax over every expert.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

#[path = "support/saved.rs"]
mod saved;

use saved::forward_activations;
use vram_explorer::estimator::{Diagnostic, estimate};
use vram_explorer::scenario::{Dtype, FfnKind, Mode, PrecisionMode, Profile, Scenario};

const LAYERS: u32 = 4;
const HIDDEN: u32 = 512;
const EXPERTS: u32 = 8;
const TOKENS: u32 = 1024;

/// A small Megatron decoder trained in BF16 at `tp`; `experts` > 0 makes its MLP a top-2 mixture
/// of experts of half the dense MLP's width (so the experts' own FFN tensors match the dense MLP's).
fn scenario(experts: u32, tp: u32, sequence_parallel: bool) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (LAYERS, HIDDEN, 8, 8, 1024);
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = 1000;
    s.model.moe.experts = experts;
    s.model.moe.top_k = 2;
    s.model.moe.expert_ffn = 512;
    s.implementation.profile = Profile::Megatron;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.parallel.tp = tp;
    s.parallel.sequence_parallel = sequence_parallel;
    s.workload.micro_batch = 1;
    s.workload.seq_len = TOKENS;
    s
}

/// Per layer, the mixture saves what the dense MLP saves, plus the experts' input (2 B × tokens × 2
/// rows × h, the same at TP 1 and at TP 2 with sequence parallelism), the router's indices and
/// softmax (12 B × tokens × top-2, halved by sequence parallelism at TP 2) and the dispatcher's
/// routing weights and map (3 B × tokens × E).
#[test]
fn megatron_experts_keep_their_gathered_input_and_the_router_its_shard() {
    let (bs, h, e) = (f64::from(TOKENS), f64::from(HIDDEN), f64::from(EXPERTS));
    for (tp, sp) in [(1, false), (2, true)] {
        let extra = forward_activations(&scenario(EXPERTS, tp, sp))
            - forward_activations(&scenario(0, tp, sp));
        let router = 12.0 * 2.0 * bs / f64::from(tp);
        let expected = f64::from(LAYERS) * (2.0 * 2.0 * bs * h + router + 3.0 * bs * e);
        assert_eq!(extra, expected, "TP {tp}, sequence parallel {sp}");
    }
}

/// Megatron-Core refuses to train a mixture of experts at TP > 1 without sequence parallelism
/// (`MoELayer.forward` raises a ValueError); a dense model or SP on is fine.
#[test]
fn megatron_refuses_moe_at_tp_without_sequence_parallelism() {
    let refused = |s: &Scenario| {
        estimate(s)
            .diagnostics
            .iter()
            .any(|d| d == Diagnostic::MegatronMoeNeedsSequenceParallel)
    };
    assert!(refused(&scenario(EXPERTS, 2, false)));
    assert!(!refused(&scenario(EXPERTS, 2, true)));
    assert!(!refused(&scenario(EXPERTS, 1, false)));
    assert!(!refused(&scenario(0, 2, false)));
}
