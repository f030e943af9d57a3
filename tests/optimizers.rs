//! Lion, Muon and an optimizer given as state bytes per parameter (issue 12 item 6): model-state
//! bytes against hand-computed vectors on Llama-2-7B's shape (32 layers, h = 4096, f = 11008,
//! V = 32000, untied head: 6,738,415,616 parameters, of which 6,476,005,376 in the layers'
//! matrices, 262,144,000 in the embedding and the head, 266,240 in the norms), the step's
//! temporaries, and an old scenario file without the new field loading with its default.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, Diagnostic, Phase, estimate};
use vram_explorer::scenario::*;

const MATRICES: f64 = 6_476_005_376.0;
const EMBED_HEAD: f64 = 262_144_000.0;
const NORMS: f64 = 266_240.0;
const TOTAL: f64 = MATRICES + EMBED_HEAD + NORMS;

fn llama2_7b(kind: OptimizerKind) -> Scenario {
    let mut s = Scenario {
        mode: Mode::Training,
        ..Scenario::default()
    };
    let t = &mut s.model.transformer;
    (t.layers, t.hidden, t.heads, t.kv_heads, t.ffn, t.vocab) = (32, 4096, 32, 32, 11008, 32000);
    t.tied_embeddings = false;
    s.precision.mode = PrecisionMode::Amp; // FP32 master weights and states
    s.optimizer.kind = kind;
    s
}

fn states(s: &Scenario) -> f64 {
    let e = estimate(s);
    assert_eq!(e.model.params.total, TOTAL);
    e.memory
        .phases
        .get(Phase::OptimizerStep)
        .unwrap()
        .get(Component::OptimizerStates)
        .get()
}

fn step_transient(s: &Scenario) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(Phase::OptimizerStep)
        .unwrap()
        .get(Component::Transient)
        .get()
}

#[test]
fn lion_keeps_one_fp32_momentum_per_parameter() {
    // Chen et al. 2023 Alg. 1: m_t only; 4 B × Ψ, no step counters.
    assert_eq!(states(&llama2_7b(OptimizerKind::Lion)), 4.0 * TOTAL);
    // Half of AdamW's moments (AdamW adds a 4 B step tensor per parameter tensor: 2 + 32·9 + 1).
    let adamw = states(&llama2_7b(OptimizerKind::AdamW));
    assert_eq!(adamw, 8.0 * TOTAL + 4.0 * (2.0 + 32.0 * 9.0 + 1.0));
}

#[test]
fn muon_keeps_one_momentum_for_hidden_matrices_and_adamw_moments_for_the_rest() {
    // 4 B for each hidden-matrix element, 8 B (two FP32 moments) for embeddings, head and norms.
    let want = 4.0 * MATRICES + 8.0 * (EMBED_HEAD + NORMS);
    assert_eq!(states(&llama2_7b(OptimizerKind::Muon)), want);
    assert_eq!(want, 28_003_303_424.0);
}

#[test]
fn an_optimizer_given_as_state_bytes_counts_exactly_those() {
    let mut s = llama2_7b(OptimizerKind::StateBytes);
    s.optimizer.state_bytes_per_param = 3.0;
    assert_eq!(states(&s), 3.0 * TOTAL);
    s.optimizer.state_bytes_per_param = 0.0;
    assert_eq!(states(&s), 0.0);
    // Out of range: clamped to the documented bound (64 B) and said so.
    s.optimizer.state_bytes_per_param = 1e9;
    let e = estimate(&s);
    assert_eq!(
        e.memory
            .phases
            .get(Phase::OptimizerStep)
            .unwrap()
            .get(Component::OptimizerStates)
            .get(),
        64.0 * TOTAL
    );
    assert!(e.diagnostics.contains(Diagnostic::InputClamped));
}

#[test]
fn zero_shards_the_new_states_like_adams() {
    for kind in [OptimizerKind::Lion, OptimizerKind::Muon] {
        let one = states(&llama2_7b(kind));
        let mut s = llama2_7b(kind);
        s.parallel.dp = 8;
        s.strategies.zero = ZeroStage::Stage1;
        assert_eq!(states(&s), one / 8.0, "{kind:?}");
    }
}

#[test]
fn the_step_temporaries_follow_each_implementation() {
    // Lion foreach (lion-pytorch `foreach.py`): one clone of every momentum, 4 B × Ψ.
    let mut s = llama2_7b(OptimizerKind::Lion);
    s.optimizer.foreach = true;
    let foreach = step_transient(&s);
    s.optimizer.foreach = false;
    let single = step_transient(&s);
    // Per tensor (`update_fn`): two of the largest tensor (the 32000 × 4096 embedding), 4 B.
    assert_eq!(foreach - single, 4.0 * TOTAL - 2.0 * 4.0 * 32000.0 * 4096.0);
    // Muon: the Newton–Schulz transient of the largest hidden matrix (4096 × 11008, BF16) against
    // four FP32 copies of the largest AdamW tensor (the embedding): the latter is larger here.
    let muon = step_transient(&llama2_7b(OptimizerKind::Muon));
    let ns = 2.0 * (4.0 * 4096.0 * 11008.0 + 2.0 * 4096.0 * 4096.0);
    let aux = 4.0 * 4.0 * 32000.0 * 4096.0;
    assert!(aux > ns);
    assert_eq!(muon - single + 2.0 * 4.0 * 32000.0 * 4096.0, aux);
}

#[test]
fn a_scenario_written_before_these_fields_loads_with_the_default() {
    let old = "(kind: Lion, foreach: false)";
    let o: Optimizer = ron::from_str(old).unwrap();
    assert_eq!(o.kind, OptimizerKind::Lion);
    assert_eq!(o.state_bytes_per_param, 8.0);
    let adam: Optimizer = ron::from_str("(kind: AdamW, foreach: true)").unwrap();
    assert_eq!(adam, Optimizer::default());
}

fn component(s: &Scenario, c: Component) -> f64 {
    estimate(s)
        .memory
        .phases
        .get(Phase::OptimizerStep)
        .unwrap()
        .get(c)
        .get()
}

#[test]
fn transformer_engine_fp8_keeps_a_copy_and_a_transpose_of_every_layer_matrix() {
    let base = llama2_7b(OptimizerKind::AdamW);
    let w0 = component(&base, Component::Weights);
    assert_eq!(w0, 4.0 * TOTAL); // AMP: FP32 weights
    let mut s = base.clone();
    s.precision.fp8_recipe = Fp8Recipe::TeDelayed;
    // 2 B per layer-matrix element; 32 layers × 4 GEMMs × 5 FP8 tensors × (1024 history + scale +
    // scale_inv) × 4 B.
    let meta = 32.0 * 4.0 * 5.0 * 1026.0 * 4.0;
    assert_eq!(
        component(&s, Component::Weights),
        w0 + 2.0 * MATRICES + meta
    );
    s.precision.fp8_recipe = Fp8Recipe::TeCurrent;
    let meta = 32.0 * 4.0 * 5.0 * 3.0 * 4.0;
    assert_eq!(
        component(&s, Component::Weights),
        w0 + 2.0 * MATRICES + meta
    );
    // Inference: no recipe.
    s.mode = Mode::Inference;
    let mut plain = base.clone();
    plain.mode = Mode::Inference;
    assert_eq!(
        estimate(&s).memory.tensor_peak,
        estimate(&plain).memory.tensor_peak
    );
}

#[test]
fn deepseek_v3_block_wise_fp8_keeps_bf16_moments_fp32_master_and_gradients() {
    let mut s = llama2_7b(OptimizerKind::AdamW);
    s.precision.fp8_recipe = Fp8Recipe::DeepSeekBlockwise;
    // BF16 weights + FP8 copies of the layer matrices with one FP32 scale per 128 × 128 block.
    assert_eq!(
        component(&s, Component::Weights),
        2.0 * TOTAL + (1.0 + 4.0 / 16384.0) * MATRICES
    );
    assert_eq!(component(&s, Component::MasterWeights), 4.0 * TOTAL);
    assert_eq!(component(&s, Component::Gradients), 4.0 * TOTAL);
    // Two BF16 moments and the step counters.
    assert_eq!(
        component(&s, Component::OptimizerStates),
        4.0 * TOTAL + 4.0 * (2.0 + 32.0 * 9.0 + 1.0)
    );
}

#[test]
fn a_scenario_without_an_fp8_recipe_loads_with_none() {
    let p: PrecisionSpec = ron::from_str("(mode: MasterWeights, compute: Bf16)").unwrap();
    assert_eq!(p.fp8_recipe, Fp8Recipe::None);
}

/// Over every training preset: one momentum (Lion) never exceeds AdamW's two; Muon lies between
/// them (one momentum for the matrices, two for the rest); a given state size is linear in the
/// bytes.
#[test]
fn the_new_optimizers_order_as_their_state_counts_on_every_training_preset() {
    let mut seen = 0;
    for entry in std::fs::read_dir("presets").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "ron") {
            continue;
        }
        let mut s = vram_explorer::presets::load(&path).unwrap();
        if s.mode != Mode::Training || s.peft.method != PeftMethod::Full {
            continue;
        }
        seen += 1;
        let name = path.display().to_string();
        let with = |s: &Scenario, k: OptimizerKind| {
            let mut s = s.clone();
            s.optimizer.kind = k;
            component(&s, Component::OptimizerStates)
        };
        let (adamw, lion, muon) = (
            with(&s, OptimizerKind::AdamW),
            with(&s, OptimizerKind::Lion),
            with(&s, OptimizerKind::Muon),
        );
        assert!(
            lion <= adamw && lion <= muon && muon <= adamw,
            "{name}: {lion} {muon} {adamw}"
        );
        s.optimizer.kind = OptimizerKind::StateBytes;
        s.optimizer.state_bytes_per_param = 2.0;
        let two = component(&s, Component::OptimizerStates);
        s.optimizer.state_bytes_per_param = 6.0;
        let six = component(&s, Component::OptimizerStates);
        // The peak may sit on another pipeline stage for each: the first holds the position
        // table, the last a tied head's copy of the word embeddings alone (< 0.1 % apart).
        assert!((six - 3.0 * two).abs() <= 1e-3 * six, "{name}: {two} {six}");
    }
    assert!(seen >= 3, "training presets seen: {seen}");
}
