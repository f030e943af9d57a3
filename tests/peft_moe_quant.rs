//! LoRA/QLoRA, mixture-of-experts and quantized weights: published figures and invariants.

use std::path::PathBuf;

use vram_explorer::estimator::{Component, estimate};
use vram_explorer::import::from_hf_config;
use vram_explorer::scenario::{ModelSpec, MoeSpec, Scenario, TransformerDims};

fn config(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hf")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {}", path.display()))
}

fn mixtral() -> ModelSpec {
    let mut m = ModelSpec::default();
    m.transformer = TransformerDims {
        vocab: 32_000,
        max_positions: 32_768,
        ..TransformerDims::default()
    };
    m.moe = MoeSpec::mixtral();
    m
}

#[test]
fn mixtral_total_and_active_parameters() {
    let s = Scenario {
        model: mixtral(),
        ..Scenario::default()
    };
    let p = estimate(&s).model.params;
    // Mixtral-8x7B: 46.7B total, 12.9B active (Jiang et al. 2024 "Mixtral of Experts" §2: "47B" /
    // "13B"; model card 46.7B / 12.9B). Exact [D]: 2·V·h + L·(2h² + 2·h·kv·d + 8·3·h·f + 8h + 2h) + h.
    assert_eq!(p.total, 46_702_792_704.0);
    // Active: the 6 experts a token skips in each layer are left out: total − 32·6·3·h·f.
    assert_eq!(p.active, 12_879_925_248.0);
    assert_eq!((p.total / 1e8).round() / 10.0, 46.7);
    assert_eq!((p.active / 1e8).round() / 10.0, 12.9);
}

#[test]
fn mixtral_config_json_imports() {
    let imported = from_hf_config(&config("mixtral-8x7b.json"), &ModelSpec::default()).unwrap();
    assert_eq!(imported.model.moe.experts, 8);
    assert_eq!(imported.model.moe.top_k, 2);
    let s = Scenario {
        model: imported.model,
        ..Scenario::default()
    };
    let e = estimate(&s);
    assert_eq!(e.model.params.total, 46_702_792_704.0);
    assert_eq!(e.model.params.active, 12_879_925_248.0);
    assert!(e.memory.peak.get(Component::Weights).as_gib() > 86.0);
}
