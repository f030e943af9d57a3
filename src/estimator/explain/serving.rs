//! The serving features in the weights and KV-cache explanations (`memory/serving.rs`): the
//! draft's weights and KV beside the target's, and the share offloaded to the host.

use super::Stage;
use super::parts::Parts;
use crate::estimator::memory::ctx::Ctx;
use crate::estimator::memory::{inference, serving};
use crate::estimator::{Component, Phase, ResolvedModel};
use crate::scenario::{InferenceFeatures, Mode, SpeculativeMethod};
use crate::units::{Bytes, fmt_sig};

/// Adds the draft's bytes to `p`'s terms and scales all of them to the share on the GPU; names the
/// features in the lead. Nothing changes when the features are off.
pub(super) fn adjust(
    c: &Ctx,
    m: &ResolvedModel,
    st: &Stage,
    k: Component,
    phase: Option<Phase>,
    p: &mut Parts,
) {
    // Only a transformer's inference runs the serving features (`memory::inference`).
    if c.mode != Mode::Inference
        || c.features == InferenceFeatures::default()
        || m.family != crate::scenario::ModelFamily::Transformer
    {
        return;
    }
    let x = &c.features;
    let (draft, on_gpu, what) = match k {
        Component::Weights => (
            serving::draft_weights(c, m, st.last),
            serving::weights_on_gpu(c),
            "weights",
        ),
        Component::KvCache => {
            let (prefill, decode) = inference::cached_tokens(c, m);
            let tokens = if phase == Some(Phase::Prefill) {
                prefill
            } else {
                decode
            };
            (
                serving::draft_kv_per_token(c, m, st.last) * tokens,
                serving::kv_on_gpu(c),
                "KV cache",
            )
        }
        _ => return,
    };
    if draft > 0.0 {
        p.terms.push((
            format!("{} of the {}", what, x.speculative.method.label()),
            Bytes(draft),
        ));
    }
    if on_gpu < 1.0 {
        for t in &mut p.terms {
            t.1 = Bytes(t.1.get() * on_gpu);
        }
        p.lead.push_str(&format!(
            "; × {} on the GPU ({} % offloaded to the host)",
            fmt_sig(on_gpu),
            fmt_sig(100.0 * (1.0 - on_gpu))
        ));
    }
    if k == Component::KvCache {
        p.lead.push_str(&kv_note(c));
    }
}

/// What changed the tokens held: lookahead slots, a shared prefix, n sequences per request.
fn kv_note(c: &Ctx) -> String {
    let x = &c.features;
    let mut s = String::new();
    if x.speculative.method != SpeculativeMethod::Off {
        s.push_str(&format!(
            "; + {} lookahead slots per sequence (speculative decoding)",
            x.speculative.num_speculative_tokens
        ));
    }
    let prefix = serving::shared_prefix_tokens(c);
    if c.dynamic_batching && prefix > 0.0 {
        s.push_str(&format!(
            "; a {}-token prefix in full blocks stored once (prefix caching)",
            fmt_sig(prefix)
        ));
    }
    if x.sequences_per_prompt > 1 {
        s.push_str(&format!(
            "; {} sequences per prompt ({})",
            x.sequences_per_prompt,
            if c.dynamic_batching {
                "sharing the prompt's full blocks"
            } else {
                "batch expanded, each with its own cache"
            }
        ));
    }
    s
}
