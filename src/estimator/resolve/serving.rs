//! The serving features of inference (`scenario/inference_features.rs`) clamped into their
//! `validate::RANGES`; destructured without `..` so a new field does not compile until handled.

use crate::estimator::Diagnostics;
use crate::scenario::{InferenceFeatures, Speculative};

/// The `RANGES` entry of a field, looked up at compile time.
macro_rules! r {
    ($name:literal) => {
        const { crate::scenario::validate::field($name) }
    };
}

pub(super) fn features(x: &InferenceFeatures, d: &mut Diagnostics) -> InferenceFeatures {
    let InferenceFeatures {
        speculative,
        shared_prefix_fraction,
        prefill_chunk_tokens,
        sequences_per_prompt,
        sampling,
        kv_offload_fraction,
        weights_offload_fraction,
    } = x;
    let dflt = InferenceFeatures::default();
    InferenceFeatures {
        speculative: speculative_of(speculative, d),
        shared_prefix_fraction: r!("inference.features.shared_prefix_fraction").clamp(
            *shared_prefix_fraction,
            dflt.shared_prefix_fraction,
            d,
        ),
        prefill_chunk_tokens: r!("inference.features.prefill_chunk_tokens")
            .clamp_u32(*prefill_chunk_tokens, d),
        sequences_per_prompt: r!("inference.features.sequences_per_prompt")
            .clamp_u32(*sequences_per_prompt, d),
        sampling: *sampling,
        kv_offload_fraction: r!("inference.features.kv_offload_fraction").clamp(
            *kv_offload_fraction,
            dflt.kv_offload_fraction,
            d,
        ),
        weights_offload_fraction: r!("inference.features.weights_offload_fraction").clamp(
            *weights_offload_fraction,
            dflt.weights_offload_fraction,
            d,
        ),
    }
}

fn speculative_of(s: &Speculative, d: &mut Diagnostics) -> Speculative {
    let Speculative {
        method,
        num_speculative_tokens,
        acceptance_rate,
        draft_params_b,
        draft_layers,
        draft_kv_heads,
        draft_head_dim,
    } = s;
    let dflt = Speculative::default();
    Speculative {
        method: *method,
        num_speculative_tokens: r!("inference.features.speculative.num_speculative_tokens")
            .clamp_u32(*num_speculative_tokens, d),
        acceptance_rate: r!("inference.features.speculative.acceptance_rate").clamp(
            *acceptance_rate,
            dflt.acceptance_rate,
            d,
        ),
        draft_params_b: r!("inference.features.speculative.draft_params_b").clamp(
            *draft_params_b,
            dflt.draft_params_b,
            d,
        ),
        draft_layers: r!("inference.features.speculative.draft_layers").clamp_u32(*draft_layers, d),
        draft_kv_heads: r!("inference.features.speculative.draft_kv_heads")
            .clamp_u32(*draft_kv_heads, d),
        draft_head_dim: r!("inference.features.speculative.draft_head_dim")
            .clamp_u32(*draft_head_dim, d),
    }
}
