//! Tensor parallelism splits the word embeddings over the vocabulary but not the position table:
//! Megatron-Core's `LanguageModelEmbedding` builds `position_embeddings` as a plain
//! `torch.nn.Embedding` (megatron/core/models/common/embeddings/language_model_embedding.py at
//! d98e8a6), as vLLM's and Transformers' GPT-2 `wpe` are.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use vram_explorer::estimator::{Component, estimate};
use vram_explorer::scenario::{Mode, PositionKind, Profile, Scenario};

/// The weights per GPU a learned position table adds, at tensor-parallel degree `tp`.
fn position_table_bytes(tp: u32) -> f64 {
    let weights = |positions: PositionKind| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.implementation.profile = Profile::Megatron;
        s.model.transformer.positions = positions;
        s.parallel.tp = tp;
        estimate(&s).memory.peak.get(Component::Weights).get()
    };
    weights(PositionKind::Learned) - weights(PositionKind::Rotary)
}

#[test]
fn the_position_table_stays_whole_on_every_tensor_parallel_rank() {
    let whole = position_table_bytes(1);
    assert!(whole > 0.0);
    for tp in [2, 4] {
        let rank = position_table_bytes(tp);
        assert!(
            (rank / whole - 1.0).abs() < 1e-9,
            "TP {tp}: {rank} of {whole}"
        );
    }
}

/// FSDP counts its units' embedding and head as the inventory does: under a pipeline a tied
/// head's last stage holds its own copy of the word table (unsharded in backward, with its
/// gradient), so the last stage's peak is the untied one's, whose head is the same V × h matrix;
/// and the position table stays whole on each tensor-parallel rank.
#[test]
fn fsdp_units_hold_the_tied_copy_and_the_whole_position_table() {
    use vram_explorer::scenario::{Sharding, ZeroStage};
    let last_stage_peak = |tied: bool, positions: PositionKind, tp: u32| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.implementation.sharding = Sharding::Fsdp2;
        s.strategies.zero = ZeroStage::Stage3;
        s.model.transformer.tied_embeddings = tied;
        s.model.transformer.positions = positions;
        s.parallel.pp = 2;
        s.parallel.dp = 8;
        s.parallel.tp = tp;
        let e = estimate(&s);
        let last = e.memory.stage_classes().last().expect("stages").peak;
        last.tensor_total().get()
    };
    let (tied, untied) = (
        last_stage_peak(true, PositionKind::Rotary, 1),
        last_stage_peak(false, PositionKind::Rotary, 1),
    );
    assert!((tied / untied - 1.0).abs() < 1e-9, "{tied} vs {untied}");
    // A learned position table is the first stage's, whole at TP 2 as at TP 1.
    let first_stage = |positions: PositionKind, tp: u32| {
        let mut s = Scenario {
            mode: Mode::Training,
            ..Scenario::default()
        };
        s.implementation.sharding = Sharding::Fsdp2;
        s.strategies.zero = ZeroStage::Stage3;
        s.model.transformer.positions = positions;
        s.parallel.tp = tp;
        s.parallel.dp = 8;
        estimate(&s).memory.peak.get(Component::Weights).get()
    };
    let table = |tp| first_stage(PositionKind::Learned, tp) - first_stage(PositionKind::Rotary, tp);
    let (one, two) = (table(1), table(2));
    assert!(
        one > 0.0 && (two / one - 1.0).abs() < 1e-9,
        "{one} vs {two}"
    );
}
