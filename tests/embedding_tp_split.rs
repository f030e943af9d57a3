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
