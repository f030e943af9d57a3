//! What a Megatron-Core mixture-of-experts layer saves beside its experts' MLPs (0.16.1,
//! `megatron/core/transformer/moe/`): the experts' input rows, whole under sequence parallelism
//! (the dispatcher all-gathers the tokens over the expert tensor-parallel group), and the router's
//! FP32 softmax on the rank's own tokens; no expert output (the routing weights multiply the
//! activation inside the experts). Before, the Hugging Face rule was used: two h-wide rows per
//! routed token, both divided by the sequence-parallel degree, and the router's softmax whole.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::float_cmp,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Phase, estimate};
use vram_explorer::scenario::{Dtype, FfnKind, Mode, PrecisionMode, Profile, Scenario};

const LAYERS: u32 = 4;
const HIDDEN: u32 = 512;
const EXPERTS: u32 = 8;
const TOKENS: u32 = 1024;

/// A small Megatron decoder trained in BF16 at TP 2; `experts` > 0 makes its MLP a top-1 mixture
/// of experts of the dense MLP's width.
fn scenario(experts: u32, sequence_parallel: bool) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn) = (LAYERS, HIDDEN, 8, 8, 1024);
    t.ffn_kind = FfnKind::SwiGlu;
    t.vocab = 1000;
    s.model.moe.experts = experts;
    s.model.moe.top_k = 1;
    s.model.moe.expert_ffn = 1024;
    s.implementation.profile = Profile::Megatron;
    s.precision.mode = PrecisionMode::Uniform;
    s.precision.compute = Dtype::Bf16;
    s.parallel.tp = 2;
    s.parallel.sequence_parallel = sequence_parallel;
    s.workload.micro_batch = 1;
    s.workload.seq_len = TOKENS;
    s
}

fn forward_activations(s: &Scenario) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(Phase::Forward)
        .expect("a forward phase")
        .get(Component::Activations)
        .get()
}

/// Per layer, the mixture saves what the dense MLP of the same width saves, plus the experts' input
/// (2 B × tokens × h, the same with and without sequence parallelism) and the router's softmax
/// (4 B × tokens × E, halved by sequence parallelism at TP 2).
#[test]
fn megatron_experts_keep_their_gathered_input_and_the_router_its_shard() {
    let (bs, h, e) = (f64::from(TOKENS), f64::from(HIDDEN), f64::from(EXPERTS));
    for sp in [false, true] {
        let extra =
            forward_activations(&scenario(EXPERTS, sp)) - forward_activations(&scenario(0, sp));
        let router = 4.0 * bs * e / if sp { 2.0 } else { 1.0 };
        let expected = f64::from(LAYERS) * (2.0 * bs * h + router);
        assert_eq!(extra, expected, "sequence parallel {sp}");
    }
}
